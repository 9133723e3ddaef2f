"""Negotiated MOLBA and ILBA: the ``molba`` protocol with ``mode = "negotiated"``.

The replicated mode (``brokers/molba/agent.py``) broadcasts every job and has every site
compute the central plan; the aggregates mode decides locally but drops ILBA. Here no site
ever holds more than its own book (the jobs it will run, own or hosted, with their starts)
and what it was told in messages; no site computes the global plan. L is the slowest
link's latency (``GridInfo.max_latency``), r is ``protocol.retries``.

Messages (typed kinds, below):
  * ``load`` (the offer of step 1, the replicated mode's kind): C_loc, work Σ p·q, p_max, m.
  * ``ask`` (a request): job_id, its owner, q, its length p and ``deadline``: the host may take
    the job only if it *ends strictly before* the deadline there.
  * ``granted``: job_id and the start the host booked it at (schedule-relative).
  * ``refused``: job_id, ``reason`` (1: q > the host's m; 2: no room ending before the
    deadline) and ``earliest``, the earliest end the host could have offered (-1 for reason 1).
  * ``span`` (the offer of step 3): the site's machine makespan once MOLBA's requests are
    settled, and its m.
  * ``moved``: a host that passed a job it hosted on to another host in ILBA tells the owner
    where the job now goes (job_id, host).
  * ``job``: the kernel's transfer, once, from the owner to the final host, at the end.

Steps:
  1. t = 0: each site list-schedules its own jobs (Highest First, Algorithm 5.1), books them
     at their local starts and broadcasts its ``load``.
  2. With every load (by L) each site knows W̄, p_max and whether it is itself in O' (C_loc
     > αW̄ + p_max; α = 2 under the meta-algorithm). A site of O' asks for each of its jobs
     that start after αW̄ in its local schedule (MOLBA line 15), in Highest-First order
     (line 17), the host with the earliest *estimated* room: its C_loc from its load,
     raised by p·q/m for every job already asked there; ties by id. The deadline is the
     job's end at home. A host judges asks in delivery order on its own book: the earliest
     time q processors are free for p (backfilling, as BLS, Algorithm 5.2), granted if the
     job then ends before the deadline. On ``granted`` the owner frees the job's home slot;
     on ``refused`` it raises its estimate of that host to the host's ``earliest`` and asks
     the next host (hosts that refused it excluded), up to r times, then keeps the job at its
     local start (never released, so that cannot fail). Every answer is in by (3 + 2r)L;
     T1 = (3.5 + 2r)L (:data:`MARGIN`).
  3. ILBA (when ``ilba`` is on), at T1: every site broadcasts its ``span``. With every span
     (by T1 + L) each site knows the order of Algorithm 5.4 (non-decreasing makespan, ties
     by id). A site at position k > 0 takes the jobs of its book by start (ties by id,
     hosted ones included) and asks, for each, the site before it in the order with the
     earliest estimated room (its span, raised by p·q/m per job asked there; ties by
     position), if that estimate is before the job's start at home once the jobs before it
     are put back without the ones asked away (a trial :class:`Ledger` of the jobs it keeps:
     line 8's BLS over the emptied machine and its hosts, on estimates). The deadline is the
     job's current end, so a grant moves the job strictly earlier. Hosts judge as in step 2;
     a refused job stays where it is (no retry). Every answer is in by T1 + 3L; at T1 + 3.5L
     each site empties its book and puts its jobs back by start, each at its earliest room
     (the machine's own step of ILBA, which never delays a job: :func:`compact`), and gives
     every job of its book to the planned scheduler at T0 + its start. Every ``moved`` is in
     by T1 + 4L; at T1 + 5L each owner sends each job it does not run to its final host.
  4. T0 = T1 + 6.5L = (10 + 2r)L with ILBA: every job has arrived by then. Without ILBA step
     3 is the planning and the transfers alone, at T1, and T0 = T1 + 1.5L = (5 + 2r)L
     (:func:`negotiated_time`).

Choices where the thesis is silent (it gives MOLBA and ILBA as central algorithms only):
  * O' is chosen from the loads, as MOLBA does; but the jobs of O' are not mixed over the
    machines of O' (lines 10-12): each site of O' keeps its own local schedule and offers the
    jobs that start after αW̄ there. With one site in O' this is line 12 exactly.
  * Hosts are chosen from estimates (C_loc or span plus the work asked there over m), not
    from the hosts' free-processor profiles, which are never sent: a host's refusal is what
    corrects an estimate. Several sites of O' may crowd one host; its book settles it.
  * A host refuses a job that would not end strictly before the deadline (the job's end at
    home in MOLBA, its current end in ILBA), so no job ends later than it did before the
    request and no organization ends later than alone. It does not refuse past MOLBA's
    (α + 1)·max(W̄, p_max): a refused job would end later still at home. So the bound is a
    figure (``within_molba_bound`` in the summary), not a guarantee, in this mode.
  * ILBA runs all machines at once, each on the spans of the others, instead of one machine
    after the other: one round of asks, no retries, then each machine's own re-placing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.brokers.agent import GridInfo
from gridemu.brokers.molba.agent import MolbaAgent, bringing, grid_bounds
from gridemu.brokers.molba.list_scheduling import list_schedule, makespan
from gridemu.model.messages import message

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.molba.protocol import MolbaParams

ASK = message("ask", job_id=int, owner=int, q=int, p=float, deadline=float)
GRANTED = message("granted", job_id=int, start=float)
REFUSED = message("refused", job_id=int, reason=int, earliest=float)
SPAN = message("span", span=float, m=int)
MOVED = message("moved", job_id=int, host=int)
MESSAGES = (ASK, GRANTED, REFUSED, SPAN, MOVED)

#: ``refused.reason``: the job is wider than the host's machine; no room ends before the deadline.
TOO_WIDE, TOO_LATE = 1, 2


#: Each phase ends half a delay after its last message is due: a delivery time is a sum of
#: latencies, and (a + b) + c may differ from a + (b + c) in the last bit.
MARGIN = 0.5


def settle_time(max_latency: float, retries: int) -> float:
    """T1: loads (L), then a request and its answer per try (2L each, 1 + r tries), and MARGIN."""
    return (3 + 2 * retries + MARGIN) * max_latency


def negotiated_time(max_latency: float, retries: int, balance: bool) -> float:
    """T0 of the negotiated mode: with ILBA, spans, asks and answers (3L), ``moved`` (L) and the
    jobs (L) after T1, each phase with its MARGIN; without, the jobs alone."""
    return settle_time(max_latency, retries) + ((5 + 3 * MARGIN) if balance else (1 + MARGIN)) * max_latency


class Ledger:
    """A machine's book: job id -> (start, p, q), schedule-relative, counted by processors."""

    def __init__(self, m: int):
        self.m = m
        self.rows: dict[int, tuple[float, float, int]] = {}
        self._steps: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, job_id: int, start: float, p: float, q: int) -> None:
        self.rows[job_id] = (start, p, q)
        self._steps = None

    def remove(self, job_id: int) -> tuple[float, float, int]:
        self._steps = None
        return self.rows.pop(job_id)

    def makespan(self) -> float:
        return max((s + p for s, p, _ in self.rows.values()), default=0.0)

    def steps(self) -> tuple[np.ndarray, np.ndarray]:
        """The busy-processor count as a step function: (times, count on [times[i], times[i+1]))."""
        if self._steps is None:
            rows = np.array(list(self.rows.values()), dtype=float).reshape(-1, 3)
            starts, ends, q = rows[:, 0], rows[:, 0] + rows[:, 1], rows[:, 2]
            times = np.unique(np.concatenate([starts, ends]))
            delta = np.zeros(len(times))
            np.add.at(delta, np.searchsorted(times, starts), q)
            np.add.at(delta, np.searchsorted(times, ends), -q)
            self._steps = (times, np.cumsum(delta))
        return self._steps

    def earliest(self, after: float, p: float, q: int) -> float:
        """The first time ≥ ``after`` at which q processors are free during [t, t + p) (q ≤ m):
        the backfilling of BLS on one machine."""
        times, used = self.steps()
        blocked = np.flatnonzero(used > self.m - q)
        t = after
        while True:
            first = max(int(np.searchsorted(times, t, "right")) - 1, 0)
            k = int(np.searchsorted(blocked, first))
            if k == len(blocked) or times[blocked[k]] >= t + p:
                return t
            t = float(times[blocked[k] + 1])  # the blocked step ends there; nothing earlier fits


def compact(ledger: Ledger) -> None:
    """Empty ``ledger`` and put its jobs back one by one, by start (ties by id), each at its
    earliest room among those already put back: ILBA's step on one machine (Algorithm 5.4,
    lines 3-8). No job starts later (Prop. 5.14's argument): a job put back at s' ≤ s covers,
    from any later start t on, only time it covered before ([s', s' + p) ∩ [t, ∞) ⊆ [s, s + p)
    ∩ [t, ∞)), so each next job's own slot is still free."""
    rows = sorted(ledger.rows.items(), key=lambda item: (item[1][0], item[0]))
    ledger.rows, ledger._steps = {}, None
    for job_id, (start, p, q) in rows:
        ledger.add(job_id, min(start, ledger.earliest(0.0, p, q)), p, q)


class MolbaNegotiatedAgent(MolbaAgent):
    """One site's negotiated MOLBA and ILBA (module doc). From the replicated agent it keeps
    the site's own jobs, their slots and the ``load`` report; the rest is its own."""

    name = "molba_negotiated"

    def __init__(self, site, grid: GridInfo, params: MolbaParams):
        super().__init__(site, grid, params)
        self.alpha = 2.0 if self.alpha is None else self.alpha  # the meta-algorithm selects with α = 2
        lat = grid.max_latency
        self.t1 = settle_time(lat, self.retries)
        self.t0 = negotiated_time(lat, self.retries, self.balance)
        self.latency = lat
        self.ledger = Ledger(site.m)
        self.owner: dict[int, int] = {}  # job id -> owner, for every job of the ledger
        self.where: dict[int, int] = {}  # own job id -> the site that will run it
        self.estimate: dict[int, float] = {}  # host -> its estimated earliest room
        self.asked: dict[int, list[int]] = {}  # own job id -> hosts asked so far (MOLBA)
        self.spans: dict[int, tuple[float, int]] = {}
        self.reported = False

    # step 1 --------------------------------------------------------------------------
    def on_timer(self, now: float, tag: Any) -> None:
        if tag == "report":
            self._report(now)
        elif tag == "span":
            self.broadcast(now, "span", span=self.ledger.makespan(), m=self.site.m)
            self._span(now, self.site.site_id, self.ledger.makespan(), self.site.m)
            self.site.set_timer(now + (3 + MARGIN) * self.latency, "settle")
        elif tag == "settle":
            if self.balance:
                compact(self.ledger)
            self._commit()
            if self.balance:  # a ``moved`` may still be on its way
                self.site.set_timer(now + (1 + MARGIN) * self.latency, "send")
            else:
                self._send_jobs(now)
        elif tag == "send":
            self._send_jobs(now)
        else:
            self.site.dispatch(now)

    def _report(self, now: float) -> None:
        site = self.site
        jobs = self.own_jobs()
        self.jobs = {j.id: j for j in jobs}
        self.local = list_schedule(jobs, site.m, machine=site.site_id)
        for pl in self.local:
            job = self.jobs[pl.job]
            self.ledger.add(job.id, pl.start, job.p, job.q)
            self.owner[job.id] = self.where[job.id] = site.site_id
        report = (makespan(self.local, jobs), sum(j.p * j.q for j in jobs), max((j.p for j in jobs), default=0.0))
        self.reported = True
        self.site.set_timer(self.t1, "span" if self.balance else "settle")
        self.broadcast(now, "load", c_loc=report[0], work=report[1], p_max=report[2], m=site.m)
        self._load(now, site.site_id, (*report, site.m))

    # step 2: MOLBA ---------------------------------------------------------------------
    def _load(self, now: float, src: int, report: tuple[float, float, float, int]) -> None:
        self.loads[src] = report
        if len(self.loads) < self.grid.n_sites:
            return
        present = bringing(self.loads, self.machines)
        me = self.site.site_id
        if me not in present:
            return
        w_bar, p_max = grid_bounds(present)
        if present[me][0] <= self.alpha * w_bar + p_max:
            return
        self.estimate = {k: r[0] for k, r in present.items() if k != me}
        late = [pl for pl in self.local if pl.start > self.alpha * w_bar]  # MOLBA line 15
        for pl in sorted(late, key=lambda pl: (-self.jobs[pl.job].q, pl.job)):  # line 17: Highest First
            self.asked[pl.job] = []
            self._ask(now, pl.job)

    def _ask(self, now: float, job_id: int) -> None:
        """Ask the host with the earliest estimated room for ``job_id``, or keep it home."""
        job, asked = self.jobs[job_id], self.asked[job_id]
        options = [(e, k) for k, e in self.estimate.items() if k not in asked and job.q <= self.loads[k][3]]
        if not options or len(asked) > self.retries:
            return  # it keeps its local slot, booked since step 1
        _, host = min(options)
        asked.append(host)
        self.estimate[host] += job.p * job.q / self.loads[host][3]
        start = self.ledger.rows[job_id][0]
        self.site.send(
            now, host, "ask", job_id=job_id, owner=self.site.site_id, q=job.q, p=job.p, deadline=start + job.p
        )

    def on_ask(self, now: float, msg) -> None:
        p, q, job_id = msg.p, int(msg.q), int(msg.job_id)
        if q > self.site.m:
            self.site.send(now, int(msg.src), "refused", job_id=job_id, reason=TOO_WIDE, earliest=-1.0)
            return
        start = self.ledger.earliest(0.0, p, q)
        if start + p < msg.deadline:
            self.ledger.add(job_id, start, p, q)
            self.owner[job_id] = int(msg.owner)
            self.site.send(now, int(msg.src), "granted", job_id=job_id, start=start)
        else:
            self.site.send(now, int(msg.src), "refused", job_id=job_id, reason=TOO_LATE, earliest=start + p)

    def on_granted(self, now: float, msg) -> None:
        job_id, host = int(msg.job_id), int(msg.src)
        self.ledger.remove(job_id)
        owner = self.owner.pop(job_id)
        if owner == self.site.site_id:
            self.where[job_id] = host
        else:  # a job it hosted, passed on in ILBA: the owner sends it there
            self.site.send(now, owner, "moved", job_id=job_id, host=host)

    def on_refused(self, now: float, msg) -> None:
        job_id, host = int(msg.job_id), int(msg.src)
        if job_id not in self.asked or now >= self.t1:
            return  # ILBA: the job stays where it is
        if msg.earliest >= 0:
            job = self.jobs[job_id]
            self.estimate[host] = max(self.estimate[host], msg.earliest - job.p)
        self._ask(now, job_id)

    def on_moved(self, now: float, msg) -> None:
        self.where[int(msg.job_id)] = int(msg.host)

    # step 3: ILBA ----------------------------------------------------------------------
    def on_span(self, now: float, msg) -> None:
        self._span(now, int(msg.src), msg.span, int(msg.m))

    def _span(self, now: float, src: int, span: float, m: int) -> None:
        self.spans[src] = (span, m)
        if len(self.spans) < self.grid.n_sites:
            return
        present = bringing(self.loads, self.machines)
        order = sorted(present, key=lambda k: (self.spans[k][0], k))
        me = self.site.site_id
        if me not in present or order.index(me) == 0:
            return
        before = order[: order.index(me)]
        rank = {k: i for i, k in enumerate(before)}
        estimate = {k: self.spans[k][0] for k in before}
        rows = self.ledger.rows
        kept = Ledger(self.site.m)  # this machine as it would be without the jobs it asks away
        for job_id in sorted(rows, key=lambda j: (rows[j][0], j)):
            start, p, q = rows[job_id]
            home = kept.earliest(0.0, p, q)  # at most ``start``: see compact()
            options = [(e, rank[k], k) for k, e in estimate.items() if q <= self.spans[k][1]]
            e, _, host = min(options) if options else (home, 0, -1)
            if e >= home:
                kept.add(job_id, home, p, q)
                continue
            estimate[host] = e + p * q / self.spans[host][1]
            self.site.send(now, host, "ask", job_id=job_id, owner=self.owner[job_id], q=q, p=p, deadline=start + p)

    # step 4 --------------------------------------------------------------------------
    def _commit(self) -> None:
        """Every job of the book to the planned scheduler, at T0 + its start."""
        site = self.site
        for job_id, (start, _, _) in sorted(self.ledger.rows.items()):
            due = self.t0 + start
            site.plan(job_id, due)
            if due not in self.timers:
                self.timers.add(due)
                site.set_timer(due, "due")

    def _send_jobs(self, now: float) -> None:
        me = self.site.site_id
        for job_id, host in sorted(self.where.items()):
            if host != me:
                self.site.transfer(now, self.slot_of[job_id], host)

    def send_bound(self) -> float:
        # It sends from its timers (report, span, send) and in answer to messages.
        return 0.0 if not self.reported else self.site.next_agent_event_time()
