"""Migration and fairness (Amar, Mu'alem, Stößer, AAMAS 2008): GM and the busy schedulers it beats.

Pure functions, no simulation kernel: an event-driven simulator (:func:`simulate`) of
Online Greedy Migration (Algorithm 1, policy ``"gm"``) and of three busy schedulers without
migration (Definition 5). The three fairness properties are checked in
:mod:`brokers.gm.fairness` (EF, WPM, ILV: Definitions 2-4, with their readings);
the counterexample instances of Propositions 1-3 are plain data in
``scenarios/propositions.py`` (``[GmJob(*row) for row in rows]`` makes them jobs here).

Model (section 2): uniformly related machines, machine i of speed ``speeds[i]`` > 0; a job
of size t takes t/s_i there. Machine i belongs to site ``sites[i]`` (default: all site 0;
sites only matter for the cost of a migration). A job's type is θ_j = (r_j, t_j, v0_j):
release, size at speed 1, priority of its department ("Departments with higher v_i^0 are
ranked higher"). Jobs are sequential (one machine at a time). The schedulers are
non-clairvoyant: no decision looks at t_j ("the user does not have to report t_j").
Every policy decides only at arrivals and completions; all completions and arrivals of
one instant are processed first, then the policy decides once.

Policies (:data:`POLICIES`):
  * ``"gm"``: Algorithm 1 at every arrival and completion: released unfinished jobs ranked
    by :func:`gm_rank_key`, machines by :func:`machine_order`, k-th job on k-th machine
    (:func:`gm_assign`); the other jobs wait. A running job whose machine changes is
    preempted and moved, keeping the work done.
  * ``"fcfs_fastest"``: FCFS without preemption or migration: whenever a machine is free
    and an unstarted job waits, the head of the queue (release, id) takes the fastest free
    machine (ties by index).
  * ``"fcfs_any"``: the same, but the head takes the free machine of lowest index.
  * ``"preempt"``: preemption without migration. At each event the machines, in
    :func:`machine_order`, each take the highest-ranked (:func:`gm_rank_key`) job among
    the unstarted jobs not yet taken at this event and the jobs that started on this very
    machine; a job that started on a machine only ever runs there ("home").

Readings where the text is ambiguous or silent (the paper's wording in quotes):
  * Ties. Step 1 "break ties according to earlier release time (and job id)": the rank
    key is (-v0, r, id), lower id first. Step 2 "Sort the machines in descending order
    according to their speed" gives no tie rule: ties by index (only matters when two
    machines share a speed). Step 3 "Repeatedly assign the highest ranked job to the
    highest ranked machine": the first min(#jobs, #machines) ranked jobs get the first
    machines; the rest wait.
  * Migration. "the moving of jobs across machines is called migration". A migration is
    counted each time a job gets a machine other than the one it last occupied, whether it
    was moved while running (that also counts one preemption: it was stopped there) or
    resumes after waiting; a first start is not a migration; a job that waits and comes
    back to its last machine is preempted but not migrated. We count it regardless of the
    speeds (footnote 1: "in [8] migration between machines with the same speed is called
    preemption"). "The action of suspending a job on a machine is generally called
    preemption": ``preemptions`` counts every time a started job stops before completing.
  * Migration cost. Section 5 assumes "the time it takes to migrate a job between two
    machines is 0 ('zero migration cost')"; the conclusion leaves a cost to future work.
    Our model: a migration costs ``migration_cost`` (+ ``remote_cost`` when the two
    machines are on different sites) of setup time on the new machine, which the job
    occupies without progress. A job moved again during its setup pays the full setup
    again on the next machine (and the move counts as a migration: it occupied the
    machine); a job stopped during its setup that comes back to the same machine finishes
    the setup left. GM's decisions do not look at costs (the paper's algorithm does not).
  * Preemption without migration (``"preempt"``). The paper uses it twice: "even if
    migration is not allowed but preemption is allowed, this will not change the schedule
    of the instances" (Props. 1-2) and "any busy scheduler which uses preemption but not
    migration" (Observation). Ours is busy in the sense of Definition 5 condition 1: "If
    there is an idle machine then there is no waiting job (that has not started yet)" — a
    machine whose candidates are all gone is idle only when no unstarted job is left. It
    is not Non-Wasteful: a preempted job may wait while other machines idle.
  * "Any busy scheduler" made deterministic: ``fcfs_any`` takes the free machine of
    lowest index, ``fcfs_fastest`` the fastest one. Both are FCFS by (release, id).
  * Integral times. Section 5 assumes "every termination and submission event occurs in
    an integral time". ``integral=True`` enforces it: a non-integral release, or a
    completion at a non-integral time (tolerance 1e-9), raises ValueError naming the job.
    Nothing else changes (GM is the same algorithm with or without it).
  * Proposition 1's first group has j2 end at X/2 + 1 exactly when j3 arrives, so "j3 will
    also be assigned to n2" holds for a scheduler that processes the completion before it
    decides (all ours do).
  * Proposition 3 says "any busy scheduler which does not use migration (including
    preemption)", but its proof says "(as preemption is not allowed)" and the Observation
    concedes that with preemption the example "can satisfy the ILV property". Our
    ``"preempt"`` does satisfy it there (j_{n+1} preempts j_1 and ends at 4n + 1 in J and
    J'), and then n − 1 machines idle from 2n while j_1 waits (not Non-Wasteful).
  * Which group each busy scheduler of ours is in (Props. 1-2 split busy schedulers by
    where j1, alone at time 0, goes): ``fcfs_any`` puts j1 on machine 0 = n1 (group 1);
    ``fcfs_fastest`` and ``"preempt"`` put it on machine 1 = n2 (group 2). On its own
    group's instance each violates EF (Prop. 1: j4 ≻ j5, d4 = 2X, d5 = 3X/2 + 2 in group 1,
    3X/2 + 3/2 in group 2) and WPM (Prop. 2: d4 = 2X; released at X + 2, j4 ends at
    3X/2 + 2), with the proofs' numbers. Off its group: Prop. 1's group 1 instance gives
    ``fcfs_fastest`` and ``"preempt"`` no EF violation (j4 gets n2, d4 = 3X/2 + 1 <
    d5 = 2X + 3), while ``fcfs_any`` fails on the group 2 instance too; Prop. 2's two
    instances catch all three (on group 1's, ``fcfs_fastest`` and ``"preempt"`` have
    d4 = 2X + 1, and 3X/2 + 2 when j4 is released at X + 2). ``"preempt"`` schedules
    every one of these instances exactly as ``fcfs_fastest`` does, as the paper says ("this
    will not change the schedule of the instances"); it also breaks WPM's priority
    coordinate on Prop. 2's group 1 instance: with v0 = 0 instead of 1, j5 outranks j4 for
    n1 at X + 1, and j4 ends at 3X/2 + 2 instead of 2X + 1.
  * The integral-time assumption does not survive heterogeneous speeds: GM on Prop. 1's
    group 1 instance with X = 20 ends j2 at 15.5, so ``integral=True`` raises there. The
    assumption only serves the step-by-step proof of Lemma 2; our checkers do not need it.
  * Zero cost matters: with ``migration_cost`` > 0, GM (which ignores costs) can break EF
    (a job that migrates twice ends after a comparable later job that never migrates) and
    WPM; ILV still holds (the higher-ranked jobs never see the lower ones).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

POLICIES = ("gm", "fcfs_fastest", "fcfs_any", "preempt")

_TOL = 1e-9


@dataclass(frozen=True)
class GmJob:
    """θ_j = (r_j, t_j, v0_j): release time, size at speed 1, department priority (higher first)."""

    id: int
    r: float
    t: float
    v0: float


@dataclass(frozen=True)
class Segment:
    """Job ``job`` held machine ``machine`` during [start, end); ``setup`` of it paid a migration."""

    job: int
    machine: int
    start: float
    end: float
    setup: float


@dataclass
class Outcome:
    """What one run did: completion times d_j, migrations and preemptions per job, the segments."""

    completion: dict[int, float]
    migrations: dict[int, int]
    preemptions: dict[int, int]
    segments: list[Segment] = field(default_factory=list)


# ---------------------------------------------------------------- validation and helpers


def _check_speeds(speeds: Sequence[float]) -> None:
    if len(speeds) == 0:
        raise ValueError("speeds: at least one machine is needed")
    for i, s in enumerate(speeds):
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not (s > 0):
            raise ValueError(f"speeds[{i}]: must be > 0, got {s!r}")
        if math.isinf(s):
            raise ValueError(f"speeds[{i}]: must be finite, got {s!r}")


def _check_job(job: GmJob) -> None:
    if not (job.r >= 0) or math.isinf(job.r):
        raise ValueError(f"job {job.id}: release r must be finite and >= 0, got {job.r!r}")
    if not (job.t > 0) or math.isinf(job.t):
        raise ValueError(f"job {job.id}: size t must be finite and > 0, got {job.t!r}")
    if not (job.v0 >= 0) or math.isinf(job.v0):
        raise ValueError(f"job {job.id}: priority v0 must be >= 0 and finite, got {job.v0!r}")


def _index(jobs: Iterable[GmJob]) -> dict[int, GmJob]:
    by_id: dict[int, GmJob] = {}
    for job in jobs:
        if job.id in by_id:
            raise ValueError(f"job {job.id}: id used twice")
        by_id[job.id] = job
    return by_id


def _is_integral(x: float) -> bool:
    return abs(x - round(x)) <= _TOL


def gm_rank_key(job: GmJob) -> tuple:
    """Algorithm 1 step 1: descending v0, ties by earlier release, then lower id."""
    return (-job.v0, job.r, job.id)


def machine_order(speeds: Sequence[float]) -> list[int]:
    """Algorithm 1 step 2: machine indices by descending speed, ties by index."""
    _check_speeds(speeds)
    return sorted(range(len(speeds)), key=lambda i: (-speeds[i], i))


def gm_assign(active: Iterable[GmJob], speeds: Sequence[float]) -> dict[int, int]:
    """Algorithm 1 step 3: the k-th ranked job gets the k-th ranked machine (job id -> machine).

    Only the first min(#jobs, #machines) jobs are assigned; the others wait.
    """
    order = machine_order(speeds)
    ranked = sorted(_index(active).values(), key=gm_rank_key)
    return {job.id: m for job, m in zip(ranked, order)}


class GmRanking:
    """Algorithm 1's assignment kept up to date event by event: the same answer as
    :func:`gm_assign` over the active jobs, without sorting them again at every event.

    The active jobs are kept sorted by :func:`gm_rank_key`; an arrival or a completion
    finds its place by bisection (O(log A) comparisons) and reassigns only the jobs whose
    rank among the first M (the machines) moved: :meth:`add` and :meth:`remove` return
    those changes as (job id, machine or None when it loses its machine), and
    :attr:`assignment` is always ``gm_assign(active, speeds)``.
    """

    def __init__(self, speeds: Sequence[float]):
        self.order = machine_order(speeds)
        self.keys: list[tuple] = []  # rank keys of the active jobs, sorted
        self.key_of: dict[int, tuple] = {}  # job id -> its rank key
        self.assignment: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, job_id: int) -> bool:
        return job_id in self.key_of

    def add(self, job: GmJob) -> list[tuple[int, int | None]]:
        key = gm_rank_key(job)
        if job.id in self.key_of:
            raise ValueError(f"job {job.id}: id used twice")
        self.key_of[job.id] = key
        pos = bisect.bisect_left(self.keys, key)
        self.keys.insert(pos, key)
        return self._reassign(pos, dropped_at=len(self.order))

    def remove(self, job_id: int) -> list[tuple[int, int | None]]:
        key = self.key_of.pop(job_id)
        pos = bisect.bisect_left(self.keys, key)
        del self.keys[pos]
        changes: list[tuple[int, int | None]] = []
        if job_id in self.assignment:
            del self.assignment[job_id]
            changes.append((job_id, None))
        return changes + self._reassign(pos, dropped_at=None)

    def _reassign(self, pos: int, dropped_at: int | None) -> list[tuple[int, int | None]]:
        """Jobs from rank ``pos`` to the last machine get the machine of their rank; after an
        arrival the job pushed to rank M (``dropped_at``) loses its machine."""
        m, keys, assignment = len(self.order), self.keys, self.assignment
        changes: list[tuple[int, int | None]] = []
        for rank in range(pos, min(len(keys), m)):
            jid = keys[rank][2]
            machine = self.order[rank]
            if assignment.get(jid) != machine:
                assignment[jid] = machine
                changes.append((jid, machine))
        if dropped_at is not None and len(keys) > dropped_at:
            jid = keys[dropped_at][2]
            if assignment.pop(jid, None) is not None:
                changes.append((jid, None))
        return changes


# --------------------------------------------------------------------------- simulation


def simulate(  # noqa: C901
    jobs: Sequence[GmJob],
    speeds: Sequence[float],
    policy: str = "gm",
    *,
    sites: Sequence[int] | None = None,
    migration_cost: float = 0.0,
    remote_cost: float = 0.0,
    integral: bool = False,
) -> Outcome:
    """Run ``policy`` (one of :data:`POLICIES`) on ``jobs`` until every job completes.

    Decisions are taken only at arrivals and completions, once per instant after all of
    that instant's completions and arrivals. See the module docstring for the policies,
    what counts as a migration or a preemption, and the migration-cost model.
    """
    _check_speeds(speeds)
    _index(jobs)  # rejects an id used twice
    for job in jobs:
        _check_job(job)
    if policy not in POLICIES:
        raise ValueError(f"policy: expected one of {POLICIES}, got {policy!r}")
    for name, cost in (("migration_cost", migration_cost), ("remote_cost", remote_cost)):
        if not (cost >= 0) or math.isinf(cost):
            raise ValueError(f"{name}: must be finite and >= 0, got {cost!r}")
    m = len(speeds)
    if sites is None:
        sites = [0] * m
    elif len(sites) != m:
        raise ValueError(f"sites: {len(sites)} entries for {m} machines")
    if integral:
        for job in jobs:
            if not _is_integral(job.r):
                raise ValueError(f"job {job.id}: release r={job.r!r} is not an integral time (integral=True)")

    # Algorithm 1's steps 1 and 2 written here again, apart from gm_rank_key and machine_order:
    # the agents rank through those (GmRanking), and this simulator is the tests' reference
    # for them, so a fault in either shows as a difference.
    def rank(job: GmJob) -> tuple:
        return (-job.v0, job.r, job.id)  # "descending v0, ties by earlier release time (and job id)"

    order = sorted(range(m), key=lambda i: (-speeds[i], i))  # "machines in descending order of speed"
    arrivals = sorted(jobs, key=lambda j: (j.r, j.id))
    rem = {j.id: float(j.t) for j in jobs}  # work left, at speed 1
    setup_left = {j.id: 0.0 for j in jobs}
    last: dict[int, int] = {}  # machine a job last occupied
    on: dict[int, int] = {}  # running job -> machine
    seg_start: dict[int, float] = {}
    seg_setup: dict[int, float] = {}
    completion: dict[int, float] = {}
    migrations = {j.id: 0 for j in jobs}
    preemptions = {j.id: 0 for j in jobs}
    segments: list[Segment] = []
    active: dict[int, GmJob] = {}  # released, unfinished
    fifo: list[GmJob] = []  # fcfs: released, not started, in (r, id) order

    def close(jid: int, t: float) -> None:
        segments.append(Segment(jid, on[jid], seg_start[jid], t, seg_setup[jid]))
        del on[jid]

    now = 0.0
    ai = 0
    n = len(jobs)
    while len(completion) < n:
        # ---- the next instant: the earliest arrival or completion
        finish = {jid: now + setup_left[jid] + rem[jid] / speeds[mc] for jid, mc in on.items()}
        cand = list(finish.values())
        if ai < n:
            cand.append(arrivals[ai].r)
        nxt = min(cand)
        tol = _TOL * max(1.0, abs(nxt))
        t_event = nxt
        if ai < n and arrivals[ai].r <= nxt + tol:
            t_event = max(arrivals[ai].r, now)  # releases are exact; snap completions to them
        ending = sorted(jid for jid, c in finish.items() if c <= nxt + tol)
        # ---- advance every running job to t_event
        dt = t_event - now
        for jid, mc in on.items():
            if jid in ending:
                continue
            paid = min(setup_left[jid], dt)
            setup_left[jid] -= paid
            seg_setup[jid] += paid
            rem[jid] = max(rem[jid] - (dt - paid) * speeds[mc], 0.0)
        now = t_event
        for jid in ending:
            paid = min(setup_left[jid], dt)
            seg_setup[jid] += paid
            setup_left[jid] = 0.0
            rem[jid] = 0.0
            if integral and not _is_integral(now):
                raise ValueError(f"job {jid}: completes at non-integral time {now!r} (integral=True)")
            completion[jid] = now
            close(jid, now)
            del active[jid]
        while ai < n and arrivals[ai].r <= now + tol:
            job = arrivals[ai]
            active[job.id] = job
            fifo.append(job)
            ai += 1
        if not active:
            continue
        # ---- decide once
        if policy == "gm":
            ranked = sorted(active.values(), key=rank)
            want = {job.id: mc for job, mc in zip(ranked, order)}
        elif policy in ("fcfs_fastest", "fcfs_any"):
            want = dict(on)
            busy = set(on.values())
            free = [mc for mc in (order if policy == "fcfs_fastest" else range(m)) if mc not in busy]
            while free and fifo:
                want[fifo.pop(0).id] = free.pop(0)
        else:  # preempt
            unstarted = sorted((j for j in active.values() if j.id not in last), key=rank)
            homed: dict[int, list[GmJob]] = {}
            for j in active.values():
                if j.id in last:
                    homed.setdefault(last[j.id], []).append(j)
            want = {}
            u = 0
            for mc in order:
                best_home = min(homed.get(mc, ()), key=rank, default=None)
                pick = best_home
                if u < len(unstarted) and (pick is None or rank(unstarted[u]) < rank(pick)):
                    pick = unstarted[u]
                    u += 1
                if pick is not None:
                    want[pick.id] = mc
        # ---- apply: stop the jobs that lose or change machine, then start the new ones
        for jid in sorted(on):
            if want.get(jid) != on[jid]:
                preemptions[jid] += 1
                close(jid, now)
        for jid in sorted(want):
            mc = want[jid]
            if jid in on:
                continue
            prev = last.get(jid)
            if prev is not None and prev != mc:
                migrations[jid] += 1
                setup_left[jid] = migration_cost + (remote_cost if sites[prev] != sites[mc] else 0.0)
            last[jid] = mc
            on[jid] = mc
            seg_start[jid] = now
            seg_setup[jid] = 0.0
    segments.sort(key=lambda s: (s.start, s.machine, s.job))
    return Outcome(completion, migrations, preemptions, segments)
