"""Rigid parallel jobs on machines of processors (thesis ch. 5): list scheduling.

Pure functions over explicit schedules, no simulation kernel: the chapter's jobs and
placements, list scheduling (LS, Algorithm 5.1) with the Highest-First order (section
5.2.2), backfill list scheduling across several machines (BLS, Algorithm 5.2) and the
schedule checks. MOLBA, ILBA, the meta-algorithm and the guarantees, built on them, are in
``brokers/molba/algorithm.py``; the ``molba`` protocol (``brokers/molba/agent.py``) runs
them over messages.

Model (section 5.1, thesis lines 2321-2330): off-line, clairvoyant, no release dates, no
preemption. A job J_k^i of organization O_k needs ``q`` processors of exactly one machine
for ``p`` time units. Organization k owns machine k, with ``machines[k]`` processors. A
schedule is a list of :class:`Placement`; each names the job's processors explicitly, so
"no processor runs two jobs at once" can be checked (:func:`check_schedule`).

Readings where the text is ambiguous (thesis line numbers in brackets):
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
  * Highest First: non-increasing q, ties by job id (the thesis gives no tie rule).
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


def check_machines(machines: Sequence[int]) -> None:
    """Raise ValueError unless ``machines`` lists at least one positive processor count."""
    if len(machines) == 0:
        raise ValueError("machines: at least one machine is needed")
    for k, m in enumerate(machines):
        if isinstance(m, bool) or not isinstance(m, int) or m <= 0:
            raise ValueError(f"machines[{k}]: processor count must be a positive integer, got {m!r}")


def check_job(job: Job) -> None:
    """Raise ValueError naming the job unless q is a positive integer and p positive and finite."""
    if isinstance(job.q, bool) or not isinstance(job.q, int) or job.q <= 0:
        raise ValueError(f"job {job.id}: q must be a positive integer, got {job.q!r}")
    if not (job.p > 0) or math.isinf(job.p):
        raise ValueError(f"job {job.id}: p must be positive and finite, got {job.p!r}")


def index_jobs(jobs: Iterable[Job]) -> dict[int, Job]:
    """The jobs by id; raises ValueError if an id is used twice."""
    by_id: dict[int, Job] = {}
    for job in jobs:
        if job.id in by_id:
            raise ValueError(f"job {job.id}: id used twice")
        by_id[job.id] = job
    return by_id


def highest_first(jobs: Iterable[Job]) -> list[Job]:
    """Section 5.2.2 [2407]: non-increasing q; ties by job id."""
    return sorted(jobs, key=lambda j: (-j.q, j.id))


def is_low(job: Job, m: int) -> bool:
    """Section 5.1 [2338]: a job is low if it needs at most half of the m processors."""
    return 2 * job.q <= m


def makespan(schedule: Sequence[Placement], jobs: Sequence[Job]) -> float:
    """C_max: the last completion (0 for an empty schedule)."""
    by_id = index_jobs(jobs)
    return max((p.start + by_id[p.job].p for p in schedule), default=0.0)


def check_schedule(schedule: Sequence[Placement], jobs: Sequence[Job], machines: Sequence[int]) -> None:
    """Raise ValueError naming the job if ``schedule`` is not a valid schedule of ``jobs``.

    Valid: every job placed exactly once, on an existing machine, at a finite start ≥ 0, on
    exactly q distinct processors of that machine, and no processor runs two jobs at once
    (intervals are half-open, so one job may start when another ends).
    """
    check_machines(machines)
    by_id = index_jobs(jobs)
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
                    f"job {pl.job}: processor {proc} out of range on machine {pl.machine} (m={machines[pl.machine]})"
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


class Board:
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


def bls(order: Sequence[Job], hosts: Sequence[int], board: Board) -> list[Placement]:
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


def board_of(schedule: Iterable[Placement], by_id: dict[int, Job], machines: Sequence[int]) -> Board:
    """A board holding ``schedule`` (the lengths from ``by_id``), for BLS to place around it."""
    board = Board(machines)
    for pl in schedule:
        if pl.job not in by_id:
            raise ValueError(f"job {pl.job}: placed in the existing schedule but its length is unknown")
        if not 0 <= pl.machine < len(machines):
            raise ValueError(f"job {pl.job}: machine {pl.machine} does not exist")
        board.add(pl.machine, pl.start, pl.start + by_id[pl.job].p, tuple(pl.processors), pl.job)
    return board


def canonical(schedule: Iterable[Placement]) -> list[Placement]:
    """A schedule in its canonical order: by start, then machine, then job id."""
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
    index_jobs(jobs)
    for job in jobs:
        check_job(job)
        if job.q > m:
            raise ValueError(f"job {job.id}: q={job.q} exceeds m={m}")
    if order == "highest_first":
        ordered = highest_first(jobs)
    elif order == "given":
        ordered = list(jobs)
    else:
        raise ValueError(f"order: expected 'highest_first' or 'given', got {order!r}")
    board = Board([m])
    placed = bls(ordered, [0], board)
    return canonical(Placement(pl.job, machine, pl.start, pl.processors) for pl in placed)


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
    check_machines(machines)
    for job in jobs:
        check_job(job)
    new = index_jobs(jobs)
    by_id = index_jobs(existing_jobs)
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
    board = board_of(existing, by_id, machines)
    return canonical(bls(list(jobs), hosts, board))
