"""MOLBA and ILBA over messages (thesis ch. 5): the ``molba`` protocol.

Every site runs the same steps; none reads another's state. L is the slowest link's
latency (``GridInfo.max_latency``), so a message sent at t is in by t + L.

  1. At t = 0 each site list-schedules its own jobs (Highest First, Algorithm 5.1) and
     broadcasts a ``load`` report: its local makespan C_loc(O_k), its work Σ p·q, its
     longest job p_max and its processor count m.
  2. With all N reports (by L) every site knows W̄, p_max and O' (the organizations
     above αW̄ + p_max), the same everywhere. Each site then broadcasts its local
     schedule as ``offer`` rows, one per job (its id, p, q, and its local start): for a
     host outside O' these are its free-processor profile, for a site of O' the jobs MOLBA
     will mix. (When ILBA is off and O' is empty the local schedule is final and nothing
     more is sent.)
  3. With every offer (by 2L) each site computes the plan, local → MOLBA (the meta-
     algorithm, or MOLBA(α)) → ILBA, with the reference functions of
     ``brokers.molba.algorithm`` (on the machines ``protocol.machines`` gives the instance:
     with ``owners``, only the sites that reported work; W̄ and O' of step 2 likewise),
     each site on its own (nothing is shared between sites):
     the same inputs give the same plan at every site (and the plan's local schedule must
     be the profiles the hosts published, or the run stops naming the job). For each of
     its jobs the plan runs elsewhere, the owner sends a ``request`` to that host (the
     job's fields and its planned start).
  4. A host judges requests in delivery order against its own book (the jobs the plan
     keeps at home and the requests it granted): it grants if, by count, q processors are
     free during the whole [s, s + p), else it refuses. So no host ever double-books,
     whatever the requesters believed. Requests that come before the host's own plan is
     ready wait for it.
  5. On ``grant`` the owner sends the job (``job`` message). On ``refuse`` the request is
     retried elsewhere: at the host with the earliest room in the owner's view of the plan
     (hosts that refused it excluded), up to ``retries`` times (default 1); then the job
     runs at home at the earliest time the owner's own book allows (the one book it reads
     itself, so that cannot be refused). With every site computing the same plan from the
     same offers a refusal does not happen; the hosts' check is what keeps their books
     sound if views ever differ, and a retried job may then break a guarantee, which the
     run reports (see below).

The schedule runs from T0 = (5 + 2·retries)·L, the time by which every migrated job has
arrived, retried or not (:func:`plan_time`): the
``planned`` scheduler starts each job at T0 + its planned start. Reading a job's start
minus T0 gives the plan back. ``summary.json`` gets a ``protocol`` section (see
``brokers.molba.protocol.molba_summary``) with the scores of local, MOLBA and MOLBA+ILBA
computed by the reference on the whole instance, beside the executed schedule's; and the
run fails if the executed schedule breaks a guarantee of the chapter
(``brokers.molba.algorithm.guarantee_violations``).

Readings: a job's length is its size over its site's processor speed (the protocol needs
identical processors everywhere); "counted by processors" suffices for the hosts' books
because a rigid job may use any q free processors (no contiguity), so count-feasible start
times always admit an explicit assignment (the reference's plan names one).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.molba.algorithm import MolbaPlan, molba_plan_for
from gridemu.brokers.molba.list_scheduling import Job, list_schedule, makespan
from gridemu.model.errors import InvariantError
from gridemu.model.messages import message

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.molba.protocol import MolbaParams

#: Step 1: a site's local makespan C_loc, work, longest job p_max and processor count m.
LOAD = message("load", c_loc=float, work=float, p_max=float, m=int)
#: Step 2: one job of a site's local schedule (its id, length p, q, local start); ``last`` = 1
#: on the closing row (a site with no job sends one row, job_id -1 and start NaN).
OFFER = message("offer", start=float, last=bool, job_id=int, p=float, q=int)
#: Step 3: an owner asks a host for a planned slot (``start``, schedule-relative), with the
#: job's record; ``slot`` is the job's slot at the owner, for the answer.
REQUEST = message("request", job=True, start=float, slot=int)
#: Step 4: the host's answer, naming the owner's slot and the start.
GRANT = message("grant", slot=int, start=float)
REFUSE = message("refuse", slot=int, start=float)
MESSAGES = (LOAD, OFFER, REQUEST, GRANT, REFUSE)

#: Message delays the plan takes: loads, offers, requests, answers, jobs.
PLAN_DELAYS = 5


def plan_time(max_latency: float, retries: int) -> float:
    """T0: five message delays, and two more (a request and its answer) per allowed retry."""
    return (PLAN_DELAYS + 2 * retries) * max_latency


def bringing(
    loads: dict[int, tuple[float, float, float, int]], reading: str
) -> dict[int, tuple[float, float, float, int]]:
    """The load reports (C_loc, work, p_max, m) of the organizations that bring their machine
    under ``protocol.machines``: every one (``all``), or (``owners``) those with work > 0. A
    job has p > 0 and q ≥ 1, so work > 0 is "owns a job", and the report needs no new field."""
    return loads if reading == "all" else {k: r for k, r in loads.items() if r[1] > 0}


def grid_bounds(loads: dict[int, tuple[float, float, float, int]]) -> tuple[float, float]:
    """W̄ (the work over the processors) and p_max of the grid, from every site's load report
    (C_loc, work, p_max, m)."""
    return sum(r[1] for r in loads.values()) / sum(r[3] for r in loads.values()), max(r[2] for r in loads.values())


class Book:
    """A host's commitments counted by processors: (start, end, q), schedule-relative times."""

    def __init__(self, m: int):
        self.m = m
        self.rows: list[tuple[float, float, int]] = []

    def used_at(self, t: float) -> int:
        return sum(q for s, e, q in self.rows if s <= t < e)

    def fits(self, start: float, p: float, q: int) -> bool:
        """Whether q processors are free during the whole [start, start + p)."""
        if q > self.m:
            return False
        end = start + p
        return all(self.used_at(t) + q <= self.m for t in [start] + [s for s, _, _ in self.rows if start < s < end])

    def earliest(self, start: float, p: float, q: int) -> float:
        """The first time ≥ start at which the job fits (at ``start`` or when a commitment ends)."""
        for t in sorted({start} | {e for _, e, _ in self.rows if e > start}):
            if self.fits(t, p, q):
                return t
        raise InvariantError(f"a job of {q} processors never fits a machine of {self.m}")  # q > m: validated before

    def add(self, start: float, p: float, q: int) -> None:
        self.rows.append((start, start + p, q))


class MolbaAgent(Agent):
    """One site's part of the protocol (module doc)."""

    name = "molba"

    def __init__(self, site, grid: GridInfo, params: MolbaParams):
        super().__init__(site, grid, params)
        alpha = params.alpha
        self.alpha: float | None = None if alpha == "meta" else float(alpha)
        self.balance = params.ilba
        self.retries = params.retries
        self.machines = params.machines  # which organizations bring their machine
        self.t0 = plan_time(grid.max_latency, self.retries)
        self.speed = site.speed
        self.loads: dict[int, tuple[float, float, float, int]] = {}
        self.offers: dict[int, list[tuple[int, float, int, float]]] = {}
        self.plan: MolbaPlan | None = None
        self.book = Book(site.m)
        self.waiting: list[Any] = []  # requests that came before the plan
        self.refused: dict[int, list[int]] = {}  # job id -> hosts that refused it
        self.views: dict[int, Book] | None = None  # the plan's books of every host, as this site saw them
        self.plan_jobs: dict[int, Job] = {}
        self.timers: set[float] = set()
        self.slot_of = {int(j): s for s, j in enumerate(site.local_jobs["job_id"])}

    # step 1 --------------------------------------------------------------------------
    def own_jobs(self) -> list[Job]:
        jobs = self.site.local_jobs
        return [
            Job(int(i), int(self.site.site_id), float(size) / self.speed, int(q))
            for i, size, q in zip(jobs["job_id"], jobs["size"], jobs["procs"])
        ]

    def on_start(self, now: float) -> None:
        self.site.set_timer(0.0, "report")  # agents send from timers and messages (the kernel's send bounds)

    def _report(self, now: float) -> None:
        site = self.site
        jobs = self.own_jobs()
        self.local = list_schedule(jobs, site.m, machine=site.site_id)
        c_loc = makespan(self.local, jobs)
        work = sum(j.p * j.q for j in jobs)
        p_max = max((j.p for j in jobs), default=0.0)
        self.broadcast(now, "load", c_loc=c_loc, work=work, p_max=p_max, m=site.m)
        self._load(now, site.site_id, (c_loc, work, p_max, site.m))

    # messages ------------------------------------------------------------------------
    def on_load(self, now: float, msg) -> None:
        self._load(now, int(msg.src), (msg.c_loc, msg.work, msg.p_max, int(msg.m)))

    def on_offer(self, now: float, msg) -> None:
        self.offers.setdefault(int(msg.src), []).append((int(msg.job_id), msg.p, int(msg.q), msg.start))
        if msg.last == 1.0:  # the sender's last row
            self._offers_in(now)

    def on_request(self, now: float, msg) -> None:
        if self.plan is None:
            self.waiting.append(msg)
        else:
            self._judge(now, msg)

    def on_grant(self, now: float, msg) -> None:
        self.site.transfer(now, int(msg.slot), int(msg.src))

    def on_refuse(self, now: float, msg) -> None:
        self._retry(now, int(msg.slot), int(msg.src))

    def _load(self, now: float, src: int, report: tuple[float, float, float, int]) -> None:
        self.loads[src] = report
        if len(self.loads) < self.grid.n_sites:
            return
        present = bringing(self.loads, self.machines)
        w_bar, p_max = grid_bounds(present)
        # α for the selection: MOLBA(2) first under the meta-algorithm; MOLBA(3) selects fewer.
        alpha = 2.0 if self.alpha is None else self.alpha
        overloaded = [k for k, r in sorted(present.items()) if r[0] > alpha * w_bar + p_max]
        if not overloaded and not self.balance:
            self._commit_local()
            return
        site = self.site
        rows = sorted((pl.start, pl.job) for pl in self.local)
        jobs = {j.id: j for j in self.own_jobs()}
        for dst in range(self.grid.n_sites):
            if dst == site.site_id:
                continue
            for i, (start, job_id) in enumerate(rows):
                job = jobs[job_id]
                last = 1.0 if i == len(rows) - 1 else 0.0
                site.send(now, dst, "offer", start=start, last=last, job_id=job.id, p=job.p, q=job.q)
            if not rows:
                site.send(now, dst, "offer", start=math.nan, last=1.0, job_id=-1)
        self.offers[site.site_id] = [(pl.job, jobs[pl.job].p, jobs[pl.job].q, pl.start) for pl in self.local]
        self._offers_in(now)

    def _commit_local(self) -> None:
        for pl in self.local:
            job = self._own(pl.job)
            self.promise(job.id, pl.start, job.p, job.q)

    # step 3 --------------------------------------------------------------------------
    def _offers_in(self, now: float) -> None:
        if len(self.offers) < self.grid.n_sites or len(self.loads) < self.grid.n_sites:
            return
        jobs = tuple(
            sorted(
                (Job(i, k, p, q) for k, rows in self.offers.items() for i, p, q, _ in rows if i >= 0),
                key=lambda j: j.id,
            )
        )
        machines = tuple(self.loads[k][3] for k in range(self.grid.n_sites))
        # Every site computes the plan itself, from the same offers (its cost is this site's).
        self.plan = plan = molba_plan_for(self.machines, jobs, machines, self.alpha, self.balance)
        # The plan starts from each host's local schedule as the host published it.
        local = {pl.job: pl.start for pl in plan.local}
        for k, rows in self.offers.items():
            for i, _, _, start in rows:
                if i >= 0 and local[i] != start:
                    raise InvariantError(
                        f"site {self.site.name}: job {i} starts at {start} in site "
                        f"{k}'s published profile but at {local[i]} in the plan"
                    )
        me = self.site.site_id
        self.plan_jobs = by_id = {j.id: j for j in jobs}
        for pl in plan.final:
            job = by_id[pl.job]
            if pl.machine == me and job.org == me:
                self.promise(job.id, pl.start, job.p, job.q)
        for pl in plan.final:
            job = by_id[pl.job]
            if job.org == me and pl.machine != me:
                slot = self.slot_of[job.id]
                self.site.send(
                    now, pl.machine, "request", job=self.site.job_record(slot), start=pl.start, slot=float(slot)
                )
        waiting, self.waiting = self.waiting, []
        for msg in waiting:
            self._judge(now, msg)

    # steps 4 and 5 -------------------------------------------------------------------
    def _judge(self, now: float, msg) -> None:
        start, p, q = msg.start, msg.size / self.speed, int(msg.procs)
        if self.book.fits(start, p, q):
            self.promise(int(msg.job_id), start, p, q)
            self.site.send(now, int(msg.src), "grant", slot=msg.slot, start=start)
        else:
            self.site.send(now, int(msg.src), "refuse", slot=msg.slot, start=start)

    def _retry(self, now: float, slot: int, host: int) -> None:
        """A refused job goes to the host with the earliest room in this site's view of the
        plan (none that refused it yet), or, after ``retries`` refusals, runs at home."""
        job = self._own(int(self.site.job_id(slot)))
        refusers = self.refused.setdefault(job.id, [])
        refusers.append(host)
        me = self.site.site_id
        if len(refusers) > self.retries:
            self.promise(job.id, self.book.earliest(0.0, job.p, job.q), job.p, job.q)
            return
        if self.views is None:
            hosts = bringing(self.loads, self.machines)  # a site that brought no machine hosts nothing
            self.views = {k: Book(self.loads[k][3]) for k in sorted(hosts) if k != me}
            for pl in self.plan.final:
                if pl.machine != me:
                    planned = self.plan_jobs[pl.job]
                    self.views[pl.machine].add(pl.start, planned.p, planned.q)
        options = [
            (view.earliest(0.0, job.p, job.q), k)
            for k, view in self.views.items()
            if k not in refusers and job.q <= view.m
        ]
        if not options:
            self.promise(job.id, self.book.earliest(0.0, job.p, job.q), job.p, job.q)
            return
        start, target = min(options)
        self.views[target].add(start, job.p, job.q)
        self.site.send(now, target, "request", job=self.site.job_record(slot), start=start, slot=float(slot))

    def _own(self, job_id: int) -> Job:
        site, slot = self.site, self.slot_of[job_id]
        return Job(job_id, site.site_id, float(site.size(slot)) / self.speed, int(site.procs(slot)))

    def promise(self, job_id: int, start: float, p: float, q: int) -> None:
        """Book the job here and have the planned scheduler start it at T0 + start (subclasses book
        through this too)."""
        self.book.add(start, p, q)
        due = self.t0 + start
        self.site.plan(job_id, due)
        if due not in self.timers:
            self.timers.add(due)
            self.site.set_timer(due, "due")

    def on_timer(self, now: float, tag: Any) -> None:
        if tag == "report":
            self._report(now)
        else:
            self.site.dispatch(now)

    def send_bound(self) -> float:
        # It sends from the report timer at 0, then only in answer to messages.
        return 0.0 if not self.loads else self.site.next_message_time()
