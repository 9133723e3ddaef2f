"""DIRECTCONTR across sites (Skowron and Rządca's heuristic, decentralized): the ``directcontr`` protocol.

[S] = Skowron and Rządca, "Fair share is not enough: measuring fairness in scheduling with
cooperative game theory" (PPAM 2013), which proposes DIRECTCONTR (its Algorithm 1).

Each organization is a site: its processors stay there and its jobs wait there in submission
order. With the repairs documented in :mod:`brokers.directcontr.policies`,
DIRECTCONTR's figures are functions of the schedule: ψ[u] is ψ_sp of u's jobs and φ[u] is
ψ_sp of the unit parts processed on u's processors. So every site computes them from what
the sites report:

  * ``released``: a job was submitted here (its record: the others read its id, owner and
    release time);
  * ``completion``: a job completed (its id and its completion instant on the schedule's clock).

Every site runs the same scheduling step for every instant T of the schedule at which
something happened (a release or a completion): it applies that instant's events, ranks the
organizations with waiting jobs by φ − ψ at T (ties to the lowest index) and fills the free
processors in processor order, the top organization's jobs first ([S] Algorithm 1 with the
processors taken by number, ``brokers.directcontr.policies.simulate(..., gamma="index")``).
With ``lines_15_16 = "literal"`` ([S] Algorithm 1 lines 15-16 as printed) the step ranks by
that reading's φ − ψ, which also depends on the gaps between the instants with events
(``_literal``), so every site keeps it step by step.
A site then acts on its own processors only: it pulls each job the step gave them from the
owner's site (``request``, answered by the ``job`` transfer, tagged with the processor), and
runs it. A site knows every site's processor count (``procs``, shape not state).

The clock. Messages take up to L (the slowest link), so a site cannot take the step for T
before it may have heard of every event of T. The step for T runs at real time
τ(T) = T + 2L + 4L·T: the release reports of T are in after T + L; a job the step for T
starts runs after the pull (2L), ends p later and is reported L after that, in time for
τ(T + p) since 4L·p ≥ 3L. So all sites take every step with the same information, and the
schedule (who runs where, from which instant) is exactly the centralized one; on the real
clock every job starts a little later, by about 4L·T. That stretch is what replaying the central
algorithm costs; ``docs/results/shapley.md`` measures Δψ/p_tot on the real clock as L grows.
It cannot be a constant lag D: a job the step for T starts runs on the real clock from
T + D + 2L (the pull) to T + D + 2L + p, and its completion is heard at T + D + 3L + p, after
the real time T + p + D of the step that needs it; DIRECTCONTR is non-clairvoyant, so no site
may take that completion from the job's size. Only a lag growing with T covers it. The
``sampled`` mode (``brokers/directcontr/sampled.py``) decides on the real clock instead.
Times must be integers (the papers' model), so instants and sizes are exact.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.model.messages import message

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.directcontr.protocol import DirectContrParams

#: A job released at its owner (its whole record: the others read job_id, owner, release).
#: Not "arrival": ``on_arrival`` is the hook of a local arrival.
RELEASED = message("released", job=True)
#: A job completed at ``instant`` (on the schedule's integral clock).
COMPLETION = message("completion", instant=float, job_id=int)
#: A processor elsewhere (global index ``processor``) pulls one of the owner's jobs; the job
#: travels back as a transfer tagged with that processor.
REQUEST = message("request", processor=int, job_id=int)
MESSAGES = (RELEASED, COMPLETION, REQUEST)


class DirectContrAgent(Agent):
    """One organization's site (module doc). ``grid.info["procs"]``: every site's processor count."""

    name = "directcontr"
    intercepts_arrivals = True

    def __init__(self, site, grid: GridInfo, params: DirectContrParams):
        super().__init__(site, grid, params)
        self.k = grid.n_sites
        self.me = site.site_id
        self.lat = grid.max_latency
        procs = grid.info["procs"]
        self.owner_of = [u for u in range(self.k) for _ in range(procs[u])]  # global processor -> organization
        self.first = sum(procs[: self.me])
        self.arrived: dict[int, list[tuple[int, int]]] = {u: [] for u in range(self.k)}  # org -> (release, job) heap
        self.waiting: dict[int, list[tuple[int, int]]] = {u: [] for u in range(self.k)}  # released, not started: heaps
        self.started: dict[int, list] = {}  # running job -> [owner, global processor, start, size or None]
        # φ − ψ (doubled) as a polynomial in t per organization (see _keys): finished jobs add
        # to its t and constant terms, running ones to all three; kept as jobs start and end,
        # so a step costs the organizations, not the processors or the running jobs.
        self.poly = [[0, 0, 0] for _ in range(self.k)]  # [t², t, 1] coefficients
        self.free = list(range(len(self.owner_of)))  # free global processors: a heap, lowest first
        self.completions: dict[int, list[int]] = {}  # instant -> jobs completing then
        self.steps: set[int] = set()  # instants whose step is due
        self.slot_of: dict[int, int] = {}  # own jobs: id -> slot
        self.literal = params.lines_15_16 == "literal"
        # The literal reading's part of 2(φ − ψ), summed over the steps so far (``_literal``);
        # cross[u]: u's jobs running on other organizations' processors minus theirs on u's.
        self.literal_part = [0] * self.k
        self.cross = [0] * self.k
        self.last_step: int | None = None

    def tau(self, t: int) -> float:
        return t + 2 * self.lat + 4 * self.lat * t

    def _due(self, t: int) -> None:
        if t not in self.steps:
            self.steps.add(t)
            self.site.set_timer(self.tau(t), ("step", t))

    # reports ------------------------------------------------------------------------------
    def on_arrival(self, now: float, slot: int) -> bool:
        site = self.site
        job_id, rel = int(site.job_id(slot)), int(round(site.release(slot)))
        self.slot_of[job_id] = slot
        heapq.heappush(self.arrived[self.me], (rel, job_id))
        self.broadcast(now, "released", site.job_record(slot))
        self._due(rel)
        return False  # queued here; the planned scheduler never starts it by itself

    def on_released(self, now: float, msg) -> None:
        """A job released at its owner, elsewhere."""
        rel = int(round(msg.release))
        heapq.heappush(self.arrived[int(msg.owner)], (rel, int(msg.job_id)))
        self._due(rel)

    def on_completion(self, now: float, msg) -> None:
        """A job completed elsewhere, at ``msg.instant``."""
        self._completed(int(msg.job_id), int(round(msg.instant)))

    def on_request(self, now: float, msg) -> None:
        """A processor elsewhere pulls one of our jobs: send it, tagged with the processor."""
        self.site.transfer(now, self.slot_of.pop(int(msg.job_id)), int(msg.src), tag=msg.processor)

    def on_job(self, now: float, msg) -> None:
        """A job we pulled: queue it and run it on the processor its tag names."""
        slot = self.site.receive_job(now, msg)
        self._run(now, slot, int(msg.tag))

    def _completed(self, job_id: int, t: int) -> None:
        self.completions.setdefault(t, []).append(job_id)
        self.started[job_id][3] = t - self.started[job_id][2]
        self._due(t)

    # the step every site takes for instant t ----------------------------------------------
    def on_timer(self, now: float, tag: Any) -> None:
        t = tag[1]
        self.steps.discard(t)
        if self.literal:
            self._literal(t)
        for job_id in self.completions.pop(t, []):
            owner, m, s, p = self.started.pop(job_id)
            heapq.heappush(self.free, m)
            self._cross(owner, m, -1)
            # From now on its part is p·(2t − 2s − p + 1) = 2p·t + p·(1 − 2s − p), for good.
            self._account(owner, m, (-1, -(1 - 2 * s), -(s * s - s)))
            self._account(owner, m, (0, 2 * p, p * (1 - 2 * s - p)))
        waiting, free = self.waiting, self.free
        for u in range(self.k):
            heap = self.arrived[u]
            while heap and heap[0][0] <= t:
                heapq.heappush(waiting[u], heapq.heappop(heap))
        orgs = [u for u in range(self.k) if waiting[u]]
        if not free or not orgs:
            return
        keys = self._keys(t)
        for u in sorted(orgs, key=lambda u: (-keys[u], u)):
            while free and waiting[u]:
                _rel, job_id = heapq.heappop(waiting[u])
                m = heapq.heappop(free)
                self.started[job_id] = [u, m, t, None]
                # Running from s: q = t − s units so far, q·(q + 1) = t² + (1 − 2s)·t + s² − s.
                self._account(u, m, (1, 1 - 2 * t, t * t - t))
                self._cross(u, m, 1)
                if self.owner_of[m] == self.me:
                    self._pull(now, job_id, u, m)

    def _account(self, owner: int, m: int, coef: tuple[int, int, int]) -> None:
        """Adds a job's part (coefficients of t², t, 1) to the key of the processor's owner and
        takes it from the job owner's."""
        for u, sign in ((self.owner_of[m], 1), (owner, -1)):
            poly = self.poly[u]
            for i in range(3):
                poly[i] += sign * coef[i]

    def _cross(self, owner: int, m: int, sign: int) -> None:
        v = self.owner_of[m]
        if self.literal and v != owner:
            self.cross[owner] += sign
            self.cross[v] -= sign

    def _literal(self, t: int) -> None:
        """[S] Algorithm 1 lines 15-16 as printed, over (t_prev, t] (t_prev: the previous
        instant with events, this step's before its completions): a job J that ran on
        processor m adds ½d(d+1) (d = t − t_prev) to φ[own(J)] and ψ[own(m)] instead of
        ψ[own(J)] and φ[own(m)]. Where own(J) = own(m) the two are the same; otherwise own(J)'s
        φ − ψ gains d(d+1) and own(m)'s loses it, against the prose reading that ``poly``
        keeps. ``brokers.directcontr.policies._DirectContr`` with ``literal``, per
        organization."""
        d = 0 if self.last_step is None else t - self.last_step
        self.last_step = t
        for u in range(self.k):
            self.literal_part[u] += 2 * d * (d + 1) * self.cross[u]

    def _keys(self, t: int) -> list[int]:
        """φ[u] − ψ[u] at t, doubled (exact integers): ψ_sp of the unit parts run on u's
        processors, minus that of u's jobs. A job that ran q = min(p, t − s) units from s
        counts q·(2t − 2s − q + 1): while it runs (q = t − s) that is quadratic in t, once it
        has finished linear; both are kept summed per organization (``poly``)."""
        return [a * t * t + b * t + c + x for (a, b, c), x in zip(self.poly, self.literal_part)]

    def _pull(self, now: float, job_id: int, owner: int, m: int) -> None:
        if owner == self.me:
            self._run(now, self.slot_of.pop(job_id), m)
        else:
            self.site.send(now, owner, "request", processor=float(m), job_id=job_id)

    def _run(self, now: float, slot: int, m: int) -> None:
        site = self.site
        site.dequeue(slot)
        site.start(slot, now, procs=[m - self.first])

    def on_complete(self, now: float, slot: int) -> None:
        site = self.site
        job_id = int(site.job_id(slot))
        t = self.started[job_id][2] + int(round(site.size(slot)))  # completion on the schedule's clock
        self.broadcast(now, "completion", instant=float(t), job_id=job_id)
        self._completed(job_id, t)
