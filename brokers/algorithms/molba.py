"""Rigid parallel jobs across organizations (thesis ch. 5): the reference algorithms.

Pure functions over explicit schedules, no simulation kernel: list scheduling (Algorithm
5.1) with the Highest-First order (section 5.2.2), backfill list scheduling across several
machines (BLS, Algorithm 5.2), MOLBA(α) (Algorithm 5.3), the meta-algorithm of section
5.6.1 and ILBA (Algorithm 5.4), the pipeline of section 5.6.1 (:func:`molba_plan`) and the
chapter's guarantees (:func:`guarantee_violations`). The ``molba`` protocol
(``brokers/molba_agent.py``) runs them over messages.

Model (section 5.1, thesis lines 2321-2330): off-line, clairvoyant, no release dates, no
preemption. A job J_k^i of organization O_k needs ``q`` processors of exactly one machine
for ``p`` time units. Organization k owns machine k, with ``machines[k]`` processors. A
schedule is a list of :class:`Placement`; each names the job's processors explicitly, so
"no processor runs two jobs at once" can be checked (:func:`check_schedule`). Organization
k's makespan is the last completion of *its own* jobs, wherever they ran.

Readings where the text is ambiguous (thesis line numbers in brackets):
  * W̄ = W / (N m) [2457]. The thesis gives every machine the same m [2325]; with unequal
    machines we use W / Σ_k m_k (the same number when they are equal). The guarantees are
    proved only for equal machines (the proofs count N·m/2 busy processors [2684, 2698]).
  * BLS line 2 starts the clock at the first *completion* and line 4 visits only machines on
    which a job completes at t [2600, 2602], so a machine with free processors at time 0 (or
    with no job at all) would never be used. We add time 0 as an event on every machine.
  * BLS line 9 intersects the free processors only at completion times t' < C_max(M_l),
    and line 10 prints procFree(t, ...) where t' is meant [2607-2608]. We keep the text's
    intent [2658]: a job starts at t on M_l only if q processors are free *during the
    whole* [t, t+p), checked against every job on M_l (so also against jobs that start in
    the window at a time that is not a completion). Once t' passes the machine's current
    makespan nothing can start there any more, so the loop bound is only a shortcut; with
    that reading no local makespans are needed as input. (Reading C_max(M_l) as the
    *original local* makespan would let ILBA, which backfills job by job, double-book.)
  * BLS visits, at one event time, the machines in the order given (index order in MOLBA,
    makespan order in ILBA) and for each machine scans the whole list [2602-2612], as
    printed: the list is not restarted after a placement (line 14 only refreshes procs).
    Of the processors free through the window it takes the q lowest-numbered ones.
  * MOLBA line 6 selects O_k when C_loc(O_k) > αW̄ + p_max (strict, as printed [2633]);
    the prose says ≥ [2656] and also "(α+1) times the lower bound" [2652]; we follow the
    pseudo-code.
  * MOLBA line 15 moves the jobs that start *strictly* after αW̄ [2642]; line 17 gives J''
    to BLS unsorted, we keep the Highest-First order of line 11 (the proof of Lemma 5.2
    says migrated jobs are added "also in HF order" [2676]); line 17 is at [2644].
  * Highest First: non-increasing q, ties by job id (the thesis gives no tie rule).
  * ILBA [2712, 2725-2732]: machines sorted by non-decreasing makespan of the machine (all
    the jobs it runs), ties by index; each machine's jobs are taken by start time, ties by
    job id, and each is given to BLS alone (line 8), so it may land before jobs placed
    earlier. BLS visits M' in that sorted order, so ties in time go to the less loaded.
  * The meta-algorithm [2793]: run MOLBA(2); if some organization's makespan exceeds
    its local makespan, or the makespan exceeds 3·max(p_max, W̄), run MOLBA(3) and return
    that, unchecked (the thesis says no more).
  * A job is *low* when q ≤ m/2 [2338], m being the processors of the machine it runs on.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

Order = Literal["highest_first", "given"]


@dataclass(frozen=True)
class Job:
    """J_k^i: ``org`` = k (owner of machine k), ``p`` its length, ``q`` its processors."""

    id: int
    org: int
    p: float
    q: int


@dataclass(frozen=True)
class Placement:
    """Job ``job`` runs on machine ``machine`` from ``start`` on the listed processors."""

    job: int
    machine: int
    start: float
    processors: tuple[int, ...]


# ---------------------------------------------------------------- validation and helpers


def _check_machines(machines: Sequence[int]) -> None:
    if len(machines) == 0:
        raise ValueError("machines: at least one machine is needed")
    for k, m in enumerate(machines):
        if isinstance(m, bool) or not isinstance(m, int) or m <= 0:
            raise ValueError(f"machines[{k}]: processor count must be a positive integer, got {m!r}")


def _check_job(job: Job) -> None:
    if isinstance(job.q, bool) or not isinstance(job.q, int) or job.q <= 0:
        raise ValueError(f"job {job.id}: q must be a positive integer, got {job.q!r}")
    if not (job.p > 0) or math.isinf(job.p):
        raise ValueError(f"job {job.id}: p must be positive and finite, got {job.p!r}")


def _index(jobs: Iterable[Job]) -> dict[int, Job]:
    by_id: dict[int, Job] = {}
    for job in jobs:
        if job.id in by_id:
            raise ValueError(f"job {job.id}: id used twice")
        by_id[job.id] = job
    return by_id


def _check_jobs_on_own_machines(jobs: Sequence[Job], machines: Sequence[int]) -> dict[int, Job]:
    """The model's input: each job fits the machine of its own organization [2326]."""
    _check_machines(machines)
    by_id = _index(jobs)
    for job in jobs:
        _check_job(job)
        if isinstance(job.org, bool) or not isinstance(job.org, int) or not 0 <= job.org < len(machines):
            raise ValueError(f"job {job.id}: org {job.org!r} names no machine (there are {len(machines)})")
        if job.q > machines[job.org]:
            raise ValueError(
                f"job {job.id}: q={job.q} exceeds m={machines[job.org]} of its own machine {job.org}"
            )
    return by_id


def highest_first(jobs: Iterable[Job]) -> list[Job]:
    """Section 5.2.2 [2407]: non-increasing q; ties by job id."""
    return sorted(jobs, key=lambda j: (-j.q, j.id))


def is_low(job: Job, m: int) -> bool:
    """Section 5.1 [2338]: a job is low if it needs at most half of the m processors."""
    return 2 * job.q <= m


def makespan(schedule: Sequence[Placement], jobs: Sequence[Job]) -> float:
    """C_max: the last completion (0 for an empty schedule)."""
    by_id = _index(jobs)
    return max((p.start + by_id[p.job].p for p in schedule), default=0.0)


def org_makespans(schedule: Sequence[Placement], jobs: Sequence[Job], machines: Sequence[int]) -> list[float]:
    """C_max(O_k) for every organization k: the last completion of O_k's own jobs [2330]."""
    by_id = _index(jobs)
    out = [0.0] * len(machines)
    for pl in schedule:
        job = by_id[pl.job]
        out[job.org] = max(out[job.org], pl.start + job.p)
    return out


def machine_makespans(schedule: Sequence[Placement], jobs: Sequence[Job], machines: Sequence[int]) -> list[float]:
    """C_max(M_k) for every machine k: the last completion of any job it runs."""
    by_id = _index(jobs)
    out = [0.0] * len(machines)
    for pl in schedule:
        out[pl.machine] = max(out[pl.machine], pl.start + by_id[pl.job].p)
    return out


def mean_work(jobs: Sequence[Job], machines: Sequence[int]) -> float:
    """W̄ = W / (N m) with W = Σ p q [2457]; W / Σ m_k when machines differ."""
    _check_machines(machines)
    return sum(j.p * j.q for j in jobs) / sum(machines)


def lower_bound(jobs: Sequence[Job], machines: Sequence[int]) -> float:
    """max(W̄, p_max), the lower bound on the optimal makespan of section 5.3.3 [2457]."""
    return max(mean_work(jobs, machines), max((j.p for j in jobs), default=0.0))


def check_schedule(schedule: Sequence[Placement], jobs: Sequence[Job], machines: Sequence[int]) -> None:
    """Raise ValueError naming the job if ``schedule`` is not a valid schedule of ``jobs``.

    Valid: every job placed exactly once, on an existing machine, at a finite start ≥ 0, on
    exactly q distinct processors of that machine, and no processor runs two jobs at once
    (intervals are half-open, so one job may start when another ends).
    """
    _check_machines(machines)
    by_id = _index(jobs)
    seen: set[int] = set()
    busy: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    for pl in schedule:
        if pl.job not in by_id:
            raise ValueError(f"job {pl.job}: placed but not among the jobs")
        if pl.job in seen:
            raise ValueError(f"job {pl.job}: scheduled twice")
        seen.add(pl.job)
        job = by_id[pl.job]
        if not 0 <= pl.machine < len(machines):
            raise ValueError(f"job {pl.job}: machine {pl.machine} does not exist")
        if not (pl.start >= 0) or math.isinf(pl.start):
            raise ValueError(f"job {pl.job}: start {pl.start!r} is not a finite time ≥ 0")
        if len(pl.processors) != job.q:
            raise ValueError(f"job {pl.job}: uses {len(pl.processors)} processors, needs q={job.q}")
        if len(set(pl.processors)) != len(pl.processors):
            raise ValueError(f"job {pl.job}: a processor is listed twice in {pl.processors}")
        for proc in pl.processors:
            if not 0 <= proc < machines[pl.machine]:
                raise ValueError(
                    f"job {pl.job}: processor {proc} out of range on machine {pl.machine} "
                    f"(m={machines[pl.machine]})"
                )
            busy.setdefault((pl.machine, proc), []).append((pl.start, pl.start + job.p, pl.job))
    missing = sorted(set(by_id) - seen)
    if missing:
        raise ValueError(f"job {missing[0]}: missing from the schedule")
    for (machine, proc), spans in busy.items():
        spans.sort()
        for (s1, e1, a), (s2, _e2, b) in zip(spans, spans[1:]):
            if s2 < e1:
                raise ValueError(
                    f"job {b}: runs on processor {proc} of machine {machine} at {s2} while job {a} "
                    f"runs there until {e1}"
                )


# ------------------------------------------------------------------------- the BLS engine


class _Board:
    """Jobs placed per machine, as (start, end, processors, job id) sorted by start."""

    def __init__(self, machines: Sequence[int]):
        self.machines = list(machines)
        self.rows: list[list[tuple[float, float, tuple[int, ...], int]]] = [[] for _ in machines]
        # free_at per machine and time, until the machine's rows change: ILBA places one job
        # per BLS call and asks the same times of the machines it did not touch again.
        self._free: list[dict[float, frozenset[int]]] = [{} for _ in machines]

    def add(self, machine: int, start: float, finish: float, procs: tuple[int, ...], job: int) -> None:
        row = self.rows[machine]
        row.append((start, finish, procs, job))
        row.sort()
        self._free[machine].clear()

    def free_at(self, machine: int, t: float) -> set[int]:
        """procFree(t, M_l): processors running no job at time t."""
        cached = self._free[machine].get(t)
        if cached is None:
            free = set(range(self.machines[machine]))
            for s, e, procs, _ in self.rows[machine]:
                if s > t:
                    break
                if e > t:
                    free.difference_update(procs)
            cached = self._free[machine][t] = frozenset(free)
        return set(cached)

    def free_during(self, machine: int, t: float, length: float, free_at_t: set[int]) -> set[int]:
        """Of the processors free at t, those also free until t + length (Alg. 5.2 lines 8-10)."""
        window = set(free_at_t)
        for s, _e, procs, _ in self.rows[machine]:
            if s >= t + length:
                break
            if s > t:
                window.difference_update(procs)
        return window


def _bls(order: Sequence[Job], hosts: Sequence[int], board: _Board) -> list[Placement]:
    """Algorithm 5.2 on ``board``: place ``order`` (a list) on ``hosts`` (visiting order).

    Events are time 0 on every host and every completion on a host (placed jobs add theirs).
    At each event time, in increasing order, each host with an event there gets the free
    processors, and the unscheduled jobs, in list order, start there if q processors stay
    free for their whole length. Time only moves forward, so a job placed here never
    overlaps another job placed here; the window check protects the jobs already on
    ``board`` (no job already scheduled is delayed).
    """
    for job in order:
        if all(job.q > board.machines[l] for l in hosts):
            raise ValueError(f"job {job.id}: q={job.q} exceeds the processors of every machine it may use")
    position = {l: i for i, l in enumerate(hosts)}
    at: dict[float, set[int]] = {}
    heap: list[float] = []

    def event(t: float, l: int) -> None:
        if t not in at:
            at[t] = set()
            heapq.heappush(heap, t)
        at[t].add(l)

    for l in hosts:
        event(0, l)
        for _s, e, _procs, _ in board.rows[l]:
            event(e, l)
    unscheduled = list(order)
    placed: list[Placement] = []
    while unscheduled:
        if not heap:  # unreachable: every job fits some host, which ends up empty
            raise ValueError(f"job {unscheduled[0].id}: could not be placed")
        t = heapq.heappop(heap)
        for l in sorted(at.pop(t), key=position.__getitem__):
            free = board.free_at(l, t)
            left = []
            for job in unscheduled:
                if job.q <= len(free):
                    window = board.free_during(l, t, job.p, free)
                    if job.q <= len(window):
                        procs = tuple(sorted(window)[: job.q])
                        board.add(l, t, t + job.p, procs, job.id)
                        placed.append(Placement(job.id, l, t, procs))
                        free.difference_update(procs)
                        event(t + job.p, l)
                        continue
                left.append(job)
            unscheduled = left
            if not unscheduled:
                break
    return placed


def _board_of(schedule: Iterable[Placement], by_id: dict[int, Job], machines: Sequence[int]) -> _Board:
    board = _Board(machines)
    for pl in schedule:
        if pl.job not in by_id:
            raise ValueError(f"job {pl.job}: placed in the existing schedule but its length is unknown")
        if not 0 <= pl.machine < len(machines):
            raise ValueError(f"job {pl.job}: machine {pl.machine} does not exist")
        board.add(pl.machine, pl.start, pl.start + by_id[pl.job].p, tuple(pl.processors), pl.job)
    return board


def _canonical(schedule: Iterable[Placement]) -> list[Placement]:
    return sorted(schedule, key=lambda pl: (pl.start, pl.machine, pl.job))


# --------------------------------------------------------------------- public algorithms


def list_schedule(jobs: Sequence[Job], m: int, order: Order = "highest_first", *, machine: int = 0) -> list[Placement]:
    """Algorithm 5.1 (LS) [2354-2375] on one machine of ``m`` processors, placed on ``machine``.

    ``order="highest_first"`` sorts the list by non-increasing q (ties by id) as in section
    5.2.2; ``order="given"`` keeps the list as passed. At t = 0 and then at each completion,
    the list is scanned and every job needing no more than the free processors starts.
    """
    if isinstance(m, bool) or not isinstance(m, int) or m <= 0:
        raise ValueError(f"m: processor count must be a positive integer, got {m!r}")
    _index(jobs)
    for job in jobs:
        _check_job(job)
        if job.q > m:
            raise ValueError(f"job {job.id}: q={job.q} exceeds m={m}")
    if order == "highest_first":
        ordered = highest_first(jobs)
    elif order == "given":
        ordered = list(jobs)
    else:
        raise ValueError(f"order: expected 'highest_first' or 'given', got {order!r}")
    board = _Board([m])
    placed = _bls(ordered, [0], board)
    return _canonical(Placement(pl.job, machine, pl.start, pl.processors) for pl in placed)


def backfill_list_schedule(
    jobs: Sequence[Job],
    machines: Sequence[int],
    existing: Sequence[Placement] = (),
    existing_jobs: Sequence[Job] = (),
    *,
    hosts: Sequence[int] | None = None,
) -> list[Placement]:
    """Algorithm 5.2 (BLS) [2588-2614]: place ``jobs``, in the order given, around ``existing``.

    ``existing`` is a schedule already on the machines (its jobs, whose lengths are needed,
    in ``existing_jobs``); it is never changed: a job starts at t on a machine only if q of
    its processors are free during all of [t, t+p). ``hosts`` are the machines BLS may use,
    in the order it visits them at one event time (default: all, by index). Returns the
    placements of ``jobs`` only.
    """
    _check_machines(machines)
    for job in jobs:
        _check_job(job)
    new = _index(jobs)
    by_id = _index(existing_jobs)
    clash = set(new) & set(by_id)
    if clash:
        raise ValueError(f"job {min(clash)}: both to place and already placed")
    hosts = list(range(len(machines))) if hosts is None else list(hosts)
    for l in hosts:
        if not 0 <= l < len(machines):
            raise ValueError(f"hosts: machine {l} does not exist")
    if len(set(hosts)) != len(hosts):
        raise ValueError("hosts: a machine is listed twice")
    if not hosts and jobs:
        raise ValueError(f"job {jobs[0].id}: no machine to place it on")
    board = _board_of(existing, by_id, machines)
    return _canonical(_bls(list(jobs), hosts, board))


def local_schedule(jobs: Sequence[Job], machines: Sequence[int]) -> list[Placement]:
    """MOLBA lines 1-3: each organization's jobs, Highest First, list-scheduled on its own machine."""
    _check_jobs_on_own_machines(jobs, machines)
    out: list[Placement] = []
    for k, m in enumerate(machines):
        out.extend(list_schedule([j for j in jobs if j.org == k], m, machine=k))
    return _canonical(out)


@dataclass(frozen=True)
class MolbaRun:
    """What MOLBA(α) did: the local schedule, O' (overloaded orgs), J'' (moved jobs), the result."""

    alpha: float
    local: list[Placement]
    local_makespans: list[float]
    overloaded: list[int]
    moved: list[int]
    schedule: list[Placement]


def molba_run(jobs: Sequence[Job], machines: Sequence[int], alpha: float) -> MolbaRun:
    """Algorithm 5.3, MOLBA(α), with its intermediate sets (see :func:`molba`)."""
    if not (alpha >= 1) or math.isinf(alpha):
        raise ValueError(f"alpha: must be a finite number ≥ 1, got {alpha!r}")
    by_id = _check_jobs_on_own_machines(jobs, machines)
    local = local_schedule(jobs, machines)  # lines 1-3
    c_loc = org_makespans(local, jobs, machines)
    w_bar = mean_work(jobs, machines)
    p_max = max((j.p for j in jobs), default=0.0)
    threshold = alpha * w_bar + p_max
    overloaded = [k for k in range(len(machines)) if c_loc[k] > threshold]  # lines 4-9
    if not overloaded:
        return MolbaRun(alpha, local, c_loc, [], [], local)
    chosen = set(overloaded)
    kept = [pl for pl in local if by_id[pl.job].org not in chosen]  # line 10 unschedules J'
    mixed = highest_first(j for j in jobs if j.org in chosen)  # line 11
    board = _board_of(kept, by_id, machines)
    first = _bls(mixed, overloaded, board)  # line 12: on M' (empty), so plain LS there
    moved_ids = {pl.job for pl in first if pl.start > alpha * w_bar}  # lines 13-15
    stay = [pl for pl in first if pl.job not in moved_ids]
    board = _board_of(kept + stay, by_id, machines)  # line 16
    moved = [j for j in mixed if j.id in moved_ids]  # still Highest First
    second = _bls(moved, list(range(len(machines))), board)  # line 17: on all machines
    return MolbaRun(alpha, local, c_loc, overloaded, [j.id for j in moved], _canonical(kept + stay + second))


def molba(jobs: Sequence[Job], machines: Sequence[int], alpha: float) -> list[Placement]:
    """Algorithm 5.3, MOLBA(α) [2620-2646], α ≥ 1.

    Lines 1-3: local Highest-First list schedules give C_loc(O_k). Lines 4-9: O' = the
    organizations with C_loc(O_k) > αW̄ + p_max. Lines 10-12: their jobs are mixed and
    list-scheduled (HF) on their machines. Lines 13-17: those that then start after αW̄ are
    taken out and backfilled (BLS, HF) on all machines without delaying any job there.
    """
    return molba_run(jobs, machines, alpha).schedule


def _meta_run(jobs: Sequence[Job], machines: Sequence[int]) -> MolbaRun:
    run = molba_run(jobs, machines, 2.0)
    after = org_makespans(run.schedule, jobs, machines)
    grew = any(a > c for a, c in zip(after, run.local_makespans))
    if grew or makespan(run.schedule, jobs) > 3 * lower_bound(jobs, machines):
        return molba_run(jobs, machines, 3.0)
    return run


def molba_meta(jobs: Sequence[Job], machines: Sequence[int]) -> tuple[list[Placement], float]:
    """Section 5.6.1's meta-algorithm [2793]: MOLBA(2), or MOLBA(3) if MOLBA(2) fails its checks.

    MOLBA(2)'s schedule is discarded when some organization's makespan exceeds its local
    makespan or the makespan exceeds 3·max(p_max, W̄). Returns (schedule, α used).
    """
    run = _meta_run(jobs, machines)
    return run.schedule, run.alpha


def ilba(schedule: Sequence[Placement], jobs: Sequence[Job], machines: Sequence[int]) -> list[Placement]:
    """Algorithm 5.4 (ILBA) [2716-2733]: rebalance ``schedule``, delaying no job (Prop. 5.14 [2749]).

    Machines are taken by non-decreasing makespan (ties by index); the least loaded keeps
    its jobs. Each next machine M_k is emptied and its jobs, by original start time, are
    given one at a time to BLS over M_1..M_k (in that order): each goes to the earliest
    strip of q processors free for p time units, never disturbing what is already placed.
    """
    check_schedule(schedule, jobs, machines)
    by_id = _index(jobs)
    spans = machine_makespans(schedule, jobs, machines)
    order = sorted(range(len(machines)), key=lambda k: (spans[k], k))
    board = _board_of([pl for pl in schedule if pl.machine == order[0]], by_id, machines)
    out = [pl for pl in schedule if pl.machine == order[0]]
    for pos in range(1, len(order)):
        k = order[pos]
        queue = sorted((pl for pl in schedule if pl.machine == k), key=lambda pl: (pl.start, pl.job))
        hosts = order[: pos + 1]
        for pl in queue:
            out.extend(_bls([by_id[pl.job]], hosts, board))
    return _canonical(out)


# ------------------------------------------------------------- the pipeline and its guarantees


@dataclass(frozen=True)
class MolbaPlan:
    """Section 5.6.1's three schedules of one instance: local, MOLBA and MOLBA+ILBA.

    ``alpha`` is the α MOLBA ran with (2 or 3 under the meta-algorithm); ``meta`` says
    whether the meta-algorithm chose it; ``final`` is ``molba`` rebalanced by ILBA, or
    ``molba`` itself when ILBA is off.
    """

    run: MolbaRun
    meta: bool
    balanced: bool
    final: list[Placement]

    @property
    def alpha(self) -> float:
        return self.run.alpha

    @property
    def local(self) -> list[Placement]:
        return self.run.local

    @property
    def molba(self) -> list[Placement]:
        return self.run.schedule


def molba_plan(jobs: Sequence[Job], machines: Sequence[int], alpha: float | None = None, balance: bool = True) -> MolbaPlan:
    """Local, MOLBA and MOLBA+ILBA schedules of one instance (section 5.6.1's comparison).

    ``alpha=None`` runs the meta-algorithm (MOLBA(2), else MOLBA(3)); a number runs
    MOLBA(α). ``balance`` runs ILBA on MOLBA's schedule.
    """
    run = _meta_run(jobs, machines) if alpha is None else molba_run(jobs, machines, alpha)
    final = ilba(run.schedule, jobs, machines) if balance else run.schedule
    return MolbaPlan(run, alpha is None, balance, final)


def guarantee_violations(
    plan: MolbaPlan, jobs: Sequence[Job], machines: Sequence[int], schedule: Sequence[Placement] | None = None, tol: float = 1e-9
) -> list[str]:
    """Which of the chapter's guarantees ``schedule`` (default: ``plan.final``) breaks.

    Checked, each as far as the thesis proves it (``tol`` is relative, for times that went
    through a clock offset):
      * no organization's makespan exceeds its local makespan, and the makespan is at most
        (α+1)·max(W̄, p_max): Propositions 5.13 (α = 3) and 5.12 (α = 2 when the last job is
        low); under the meta-algorithm α = 2 is kept only if it passed both checks;
      * ILBA delays no job relative to MOLBA's schedule (Proposition 5.14), when it ran.
    Schedule validity (one job per processor at a time) is :func:`check_schedule`'s.
    Returns one message per broken guarantee, naming the organization or job.
    """
    schedule = plan.final if schedule is None else schedule
    out: list[str] = []
    by_id = _index(jobs)
    a = plan.alpha
    proved = plan.meta or a == 3 or (a == 2 and _last_jobs_low(plan.molba, by_id, machines))
    if proved:
        slack = tol * max(1.0, max(plan.run.local_makespans, default=0.0))
        for k, (now, before) in enumerate(zip(org_makespans(schedule, jobs, machines), plan.run.local_makespans)):
            if now > before + slack:
                out.append(f"organization {k}: makespan {now} exceeds its local makespan {before}")
        bound = (a + 1) * lower_bound(jobs, machines)
        c = makespan(schedule, jobs)
        if c > bound * (1 + tol):
            out.append(f"makespan {c} exceeds {a + 1:g} x the lower bound ({bound})")
    if plan.balanced:
        start = {pl.job: pl.start for pl in plan.molba}
        for pl in schedule:
            if pl.start > start[pl.job] + tol * max(1.0, start[pl.job]):
                out.append(f"job {pl.job}: starts at {pl.start}, after its start {start[pl.job]} in MOLBA's schedule")
    return out


def _last_jobs_low(schedule: Sequence[Placement], by_id: dict[int, Job], machines: Sequence[int]) -> bool:
    c = max((pl.start + by_id[pl.job].p for pl in schedule), default=0.0)
    return all(is_low(by_id[pl.job], machines[pl.machine]) for pl in schedule if pl.start + by_id[pl.job].p == c)
