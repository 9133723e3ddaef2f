"""Decentralized MOLBA: the ``molba`` protocol with ``mode = "aggregates"``.

Replicated MOLBA (``brokers/molba/agent.py``) has every site broadcast every job of its
local schedule and compute the same global plan: (N - 1)·n offer rows, and one central
plan replayed N times. Here sites publish aggregates and decide for themselves:

  1. At t = 0 each site list-schedules its own jobs (Highest First, Algorithm 5.1) and sends
     its ``load`` (C_loc, its work Σ p·q, its longest job p_max, its m), four numbers and not
     its jobs, to an aggregator (site 0; its part is sums and a sort, as a usage service's).
  2. The aggregator (by L) sends every site W̄ and p_max (``grid``), and every site of O'
     (C_loc > αW̄ + p_max, α = 2 under the meta-algorithm, as MOLBA selects) its share of the
     sites outside O' (``host`` rows: their C_loc and m). Each host goes to one site of O'
     (:func:`share_hosts`: the roomiest first, to the site with the most work left to place),
     so the requests of different overloaded sites do not crowd the same hosts.
  3. A site outside O' keeps its local schedule (its book holds every own job at its local
     start). A site of O' keeps the jobs that start by αW̄ in its local schedule and offers
     each later one (MOLBA line 15, in order of local start) to the listed host with the
     earliest estimated room (its C_loc, raised by p·q/m for each job sent there; ties by
     id): a ``request`` with the job and its local start.
  4. A host judges each request, in delivery order, against its own book only: it offers
     the earliest time q processors are free for p (``Book.earliest``, which finds the gaps
     of its own schedule too) and grants it if the job then ends before it would at home;
     otherwise it refuses. A refused job asks the next host (up to ``retries`` times), then
     stays home at its local start (kept free for it). On ``grant`` the owner sends the job;
     it runs on the host at T0 + the granted start (T0 as the replicated mode's).

No organization ends later than alone, by construction: a host books requests only where
its own jobs are not, and an owner moves a job only where it ends earlier. MOLBA's global
bound ((α + 1)·max(W̄, p_max)) is not promised: the summary reports the executed score
beside the centralized MOLBA's, computed on its own from the whole instance. ILBA is not run
(``ilba`` is ignored in this mode). With ``machines = "owners"`` the aggregator computes
W̄ and p_max and shares hosts over the sites that reported work only: a site that owns no
job brings no machine, so it is never a host. Messages: 2(N - 1) to aggregate, at most N
host rows, and three per offered job (request, answer, transfer) plus two per retry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gridemu.brokers.agent import GridInfo
from gridemu.brokers.molba.agent import MolbaAgent, bringing, grid_bounds
from gridemu.brokers.molba.list_scheduling import list_schedule, makespan
from gridemu.model.messages import message

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.molba.protocol import MolbaParams

#: The aggregator's answer to every site: W̄ and p_max of the grid.
GRID = message("grid", w_bar=float, p_max=float)
#: One host an overloaded site may ask: its local makespan and processors; ``last`` = 1 on
#: the closing row (a site of O' with no host outside O' gets one row, host -1).
HOST = message("host", c_loc=float, last=bool, host=int, m=int)
MESSAGES = (GRID, HOST)
AGGREGATOR = 0


def share_hosts(
    loads: dict[int, tuple[float, float, float, int]], keep_until: float, threshold: float
) -> dict[int, list[int]]:
    """The aggregator's split of the hosts among the overloaded organizations (O': C_loc >
    ``threshold``), from the loads (C_loc, work, p_max, m) alone: each host goes to one site
    of O', the roomiest host (m·(threshold - C_loc), processor-time before the threshold)
    first, to the site with the most work left to place (its work beyond m·``keep_until``,
    what MOLBA keeps at home), which then has that room less to place; ties by id."""
    over = {k: max(0.0, r[1] - r[3] * keep_until) for k, r in loads.items() if r[0] > threshold}
    shares: dict[int, list[int]] = {k: [] for k in sorted(over)}
    if not over:
        return shares
    hosts = sorted((-(r[3] * (threshold - r[0])), k) for k, r in loads.items() if k not in over)
    for room, h in hosts:
        k = max(shares, key=over.__getitem__)  # most left to place (lowest id among equals: shares is by id)
        shares[k].append(h)
        over[k] += room  # room is negative: less left to place
    return shares


class MolbaAggregatesAgent(MolbaAgent):
    """One site's decentralized MOLBA (module doc). From the replicated agent it keeps the
    site's own jobs, its book, T0, the promise to the planned scheduler and the transfer on
    a grant; the loads, the plan and the requests are its own."""

    name = "molba_aggregates"

    def __init__(self, site, grid: GridInfo, params: MolbaParams):
        super().__init__(site, grid, params)
        self.alpha = 2.0 if self.alpha is None else self.alpha  # the meta-algorithm selects with α = 2
        self.hosts: dict[int, tuple[float, int]] = {}  # host -> (C_loc, m), for a site of O'
        self.grid_bound: tuple[float, float] | None = None  # (W̄, p_max) once the aggregator said
        self.hosts_in = False  # every host row came
        self.reported = False
        self.ready = False  # own book filled: requests may be judged
        self.offered: dict[int, tuple[float, float, int]] = {}  # job id -> (local start, p, q)
        self.room: dict[int, float] = {}  # host -> its estimated earliest room

    def on_timer(self, now: float, tag: Any) -> None:
        if tag == "report":
            jobs = self.own_jobs()
            self.jobs = {j.id: j for j in jobs}
            self.local = list_schedule(jobs, self.site.m, machine=self.site.site_id)
            report = (
                makespan(self.local, jobs),
                sum(j.p * j.q for j in jobs),
                max((j.p for j in jobs), default=0.0),
                self.site.m,
            )
            self.c_loc = report[0]
            self.reported = True
            if self.site.site_id == AGGREGATOR:
                self._load(now, AGGREGATOR, report)
            else:
                self.site.send(now, AGGREGATOR, "load", c_loc=report[0], work=report[1], p_max=report[2], m=report[3])
        else:
            self.site.dispatch(now)

    def _load(self, now: float, src: int, report: tuple[float, float, float, int]) -> None:
        """The aggregator: once every load is in, W̄ and p_max to all, hosts to the sites of O'."""
        self.loads[src] = report
        if len(self.loads) < self.grid.n_sites:
            return
        present = bringing(self.loads, self.machines)  # protocol.machines: who brings a machine
        w_bar, p_max = grid_bounds(present)
        threshold = self.alpha * w_bar + p_max
        site = self.site
        for k in range(self.grid.n_sites):
            if k != AGGREGATOR:
                site.send(now, k, "grid", w_bar=w_bar, p_max=p_max)
        for k, hosts in share_hosts(present, self.alpha * w_bar, threshold).items():
            rows = hosts or [-1]
            for i, h in enumerate(rows):
                c, m = (self.loads[h][0], self.loads[h][3]) if h >= 0 else (0.0, 0)
                last = 1.0 if i == len(rows) - 1 else 0.0
                if k == AGGREGATOR:
                    self._host(now, h, c, m, last)
                else:
                    site.send(now, k, "host", c_loc=c, last=last, host=h, m=m)
        self._grid(now, w_bar, p_max)

    def on_grid(self, now: float, msg) -> None:
        self._grid(now, msg.w_bar, msg.p_max)

    def on_host(self, now: float, msg) -> None:
        self._host(now, int(msg.host), msg.c_loc, int(msg.m), msg.last)

    def _grid(self, now: float, w_bar: float, p_max: float) -> None:
        self.grid_bound = (w_bar, p_max)
        if self.c_loc > self.alpha * w_bar + p_max:
            self._plan(now)  # once its hosts are in, if they came first
        else:
            for pl in self.local:
                job = self.jobs[pl.job]
                self.promise(job.id, pl.start, job.p, job.q)
            self._ready(now)

    def _host(self, now: float, host: int, c_loc: float, m: int, last: float) -> None:
        if host >= 0:
            self.hosts[host] = (c_loc, m)
        if last == 1.0:
            self.hosts_in = True
            self._plan(now)

    def _plan(self, now: float) -> None:
        """A site of O': keep the jobs starting by αW̄, offer the later ones to its hosts."""
        if self.grid_bound is None or not self.hosts_in:
            return
        w_bar = self.grid_bound[0]
        self.room = {k: c for k, (c, _) in self.hosts.items()}
        for pl in sorted(self.local, key=lambda pl: (pl.start, pl.job)):
            job = self.jobs[pl.job]
            if self.room and pl.start > self.alpha * w_bar:  # MOLBA line 15: the jobs it moves
                self.offered[job.id] = (pl.start, job.p, job.q)
                self._ask(now, job.id, [])
            else:
                self.promise(job.id, pl.start, job.p, job.q)
        self._ready(now)

    def _ready(self, now: float) -> None:
        self.ready = True
        waiting, self.waiting = self.waiting, []
        for msg in waiting:
            self._judge(now, msg)

    def _ask(self, now: float, job_id: int, refusers: list[int]) -> None:
        """Offer a job to the host with the earliest estimated room, or keep it at home."""
        start, p, q = self.offered[job_id]
        options = [(room, k) for k, room in self.room.items() if k not in refusers and q <= self.hosts[k][1]]
        if not options or len(refusers) > self.retries:
            self.promise(job_id, start, p, q)  # its local slot was kept free
            return
        _, host = min(options)
        self.room[host] += p * q / self.hosts[host][1]
        slot = self.slot_of[job_id]
        self.site.send(now, host, "request", job=self.site.job_record(slot), start=start, slot=float(slot))

    def on_request(self, now: float, msg) -> None:
        if self.ready:
            self._judge(now, msg)
        else:
            self.waiting.append(msg)

    def _judge(self, now: float, msg) -> None:
        p, q = msg.size / self.speed, int(msg.procs)
        start = self.book.earliest(0.0, p, q) if q <= self.book.m else float("inf")
        if start < msg.start:  # it ends before it would at home
            self.promise(int(msg.job_id), start, p, q)
            self.site.send(now, int(msg.src), "grant", slot=msg.slot, start=start)
        else:
            self.site.send(now, int(msg.src), "refuse", slot=msg.slot, start=msg.start)

    def on_refuse(self, now: float, msg) -> None:
        job_id = int(self.site.job_id(int(msg.slot)))
        refusers = self.refused.setdefault(job_id, [])
        refusers.append(int(msg.src))
        self._ask(now, job_id, refusers)

    def send_bound(self) -> float:
        # It sends from the report timer at 0, then only in answer to messages.
        return 0.0 if not self.reported else self.site.next_message_time()
