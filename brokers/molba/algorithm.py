"""Rigid parallel jobs across organizations (thesis ch. 5): MOLBA, ILBA and their guarantees.

Pure functions over explicit schedules, no simulation kernel, built on the list scheduling
of ``brokers/molba/list_scheduling.py`` (LS with Highest First, Algorithm 5.1; BLS,
Algorithm 5.2; the model, :class:`Job` and :class:`Placement`): the local schedules,
MOLBA(α) (Algorithm 5.3), the meta-algorithm of section 5.6.1 and ILBA (Algorithm 5.4),
the pipeline of section 5.6.1 (:func:`molba_plan`) and the chapter's guarantees
(:func:`guarantee_violations`). The ``molba`` protocol (``brokers/molba/agent.py``) runs
them over messages. Organization k owns machine k; its makespan is the last completion of
*its own* jobs, wherever they ran.

Readings where the text is ambiguous (thesis line numbers in brackets; those of LS and BLS
are in ``list_scheduling.py``):
  * W̄ = W / (N m) [2457]. The thesis gives every machine the same m [2325]; with unequal
    machines we use W / Σ_k m_k (the same number when they are equal). The guarantees are
    proved only for equal machines (the proofs count N·m/2 busy processors [2684, 2698]).
  * MOLBA line 6 selects O_k when C_loc(O_k) > αW̄ + p_max (strict, as printed [2633]);
    the prose says ≥ [2656] and also "(α+1) times the lower bound" [2652]; we follow the
    pseudo-code.
  * MOLBA line 15 moves the jobs that start *strictly* after αW̄ [2642]; line 17 gives J''
    to BLS unsorted, we keep the Highest-First order of line 11 (the proof of Lemma 5.2
    says migrated jobs are added "also in HF order" [2676]); line 17 is at [2644].
  * ILBA [2712, 2725-2732]: machines sorted by non-decreasing makespan of the machine (all
    the jobs it runs), ties by index; each machine's jobs are taken by start time, ties by
    job id, and each is given to BLS alone (line 8), so it may land before jobs placed
    earlier. BLS visits M' in that sorted order, so ties in time go to the less loaded.
  * The meta-algorithm [2793]: run MOLBA(2); if some organization's makespan exceeds
    its local makespan, or the makespan exceeds 3·max(p_max, W̄), run MOLBA(3) and return
    that, unchecked (the thesis says no more).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from gridemu.brokers.molba.list_scheduling import (
    Job,
    Placement,
    bls,
    board_of,
    canonical,
    check_job,
    check_machines,
    check_schedule,
    highest_first,
    index_jobs,
    is_low,
    list_schedule,
    makespan,
)


def _check_jobs_on_own_machines(jobs: Sequence[Job], machines: Sequence[int]) -> dict[int, Job]:
    """The model's input: each job fits the machine of its own organization [2326]."""
    check_machines(machines)
    by_id = index_jobs(jobs)
    for job in jobs:
        check_job(job)
        if isinstance(job.org, bool) or not isinstance(job.org, int) or not 0 <= job.org < len(machines):
            raise ValueError(f"job {job.id}: org {job.org!r} names no machine (there are {len(machines)})")
        if job.q > machines[job.org]:
            raise ValueError(f"job {job.id}: q={job.q} exceeds m={machines[job.org]} of its own machine {job.org}")
    return by_id


def org_makespans(schedule: Sequence[Placement], jobs: Sequence[Job], machines: Sequence[int]) -> list[float]:
    """C_max(O_k) for every organization k: the last completion of O_k's own jobs [2330]."""
    by_id = index_jobs(jobs)
    out = [0.0] * len(machines)
    for pl in schedule:
        job = by_id[pl.job]
        out[job.org] = max(out[job.org], pl.start + job.p)
    return out


def machine_makespans(schedule: Sequence[Placement], jobs: Sequence[Job], machines: Sequence[int]) -> list[float]:
    """C_max(M_k) for every machine k: the last completion of any job it runs."""
    by_id = index_jobs(jobs)
    out = [0.0] * len(machines)
    for pl in schedule:
        out[pl.machine] = max(out[pl.machine], pl.start + by_id[pl.job].p)
    return out


def mean_work(jobs: Sequence[Job], machines: Sequence[int]) -> float:
    """W̄ = W / (N m) with W = Σ p q [2457]; W / Σ m_k when machines differ."""
    check_machines(machines)
    return sum(j.p * j.q for j in jobs) / sum(machines)


def lower_bound(jobs: Sequence[Job], machines: Sequence[int]) -> float:
    """max(W̄, p_max), the lower bound on the optimal makespan of section 5.3.3 [2457]."""
    return max(mean_work(jobs, machines), max((j.p for j in jobs), default=0.0))


def local_schedule(jobs: Sequence[Job], machines: Sequence[int]) -> list[Placement]:
    """MOLBA lines 1-3: each organization's jobs, Highest First, list-scheduled on its own machine."""
    _check_jobs_on_own_machines(jobs, machines)
    out: list[Placement] = []
    for k, m in enumerate(machines):
        out.extend(list_schedule([j for j in jobs if j.org == k], m, machine=k))
    return canonical(out)


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
    board = board_of(kept, by_id, machines)
    first = bls(mixed, overloaded, board)  # line 12: on M' (empty), so plain LS there
    moved_ids = {pl.job for pl in first if pl.start > alpha * w_bar}  # lines 13-15
    stay = [pl for pl in first if pl.job not in moved_ids]
    board = board_of(kept + stay, by_id, machines)  # line 16
    moved = [j for j in mixed if j.id in moved_ids]  # still Highest First
    second = bls(moved, list(range(len(machines))), board)  # line 17: on all machines
    return MolbaRun(alpha, local, c_loc, overloaded, [j.id for j in moved], canonical(kept + stay + second))


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
    by_id = index_jobs(jobs)
    spans = machine_makespans(schedule, jobs, machines)
    order = sorted(range(len(machines)), key=lambda k: (spans[k], k))
    board = board_of([pl for pl in schedule if pl.machine == order[0]], by_id, machines)
    out = [pl for pl in schedule if pl.machine == order[0]]
    for pos in range(1, len(order)):
        k = order[pos]
        queue = sorted((pl for pl in schedule if pl.machine == k), key=lambda pl: (pl.start, pl.job))
        hosts = order[: pos + 1]
        for pl in queue:
            out.extend(bls([by_id[pl.job]], hosts, board))
    return canonical(out)


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


def molba_plan(
    jobs: Sequence[Job], machines: Sequence[int], alpha: float | None = None, balance: bool = True
) -> MolbaPlan:
    """Local, MOLBA and MOLBA+ILBA schedules of one instance (section 5.6.1's comparison).

    ``alpha=None`` runs the meta-algorithm (MOLBA(2), else MOLBA(3)); a number runs
    MOLBA(α). ``balance`` runs ILBA on MOLBA's schedule.
    """
    run = _meta_run(jobs, machines) if alpha is None else molba_run(jobs, machines, alpha)
    final = ilba(run.schedule, jobs, machines) if balance else run.schedule
    return MolbaPlan(run, alpha is None, balance, final)


# ------------------------------------------------------------- which organizations bring a machine

#: ``protocol.machines``: "all", every organization O_k brings its machine M_k (section 5.1's
#: model [2325]); "owners", only those that own a job do (the reading Tables 5.1 and 5.2 agree
#: with: see :func:`owners_only`).
MACHINES = ("all", "owners")


def owners_only(jobs: Sequence[Job], machines: Sequence[int]) -> tuple[list[Job], list[int], list[int]]:
    """The instance with machines only for the organizations that own a job.

    Section 5.6.1 draws the owner O_k of each job by Zipf over the N organizations [2806]: with
    few jobs and many organizations some own none. Section 5.1 gives every O_k its machine M_k
    [2325]; in this reading an organization that draws no job brings no machine, so W̄ = W /
    (N' m) counts only the N' machines of the owners, and no job may run on a missing one.
    Returns (the jobs with their O_k renumbered 0..N'-1 in the order of k, the N' machines,
    ``orgs``: new index -> original k). Pure: nothing is changed in place.
    """
    _check_jobs_on_own_machines(jobs, machines)  # before renumbering hides a job's bad O_k
    orgs = sorted({j.org for j in jobs})
    index = {k: i for i, k in enumerate(orgs)}
    return [Job(j.id, index[j.org], j.p, j.q) for j in jobs], [machines[k] for k in orgs], orgs


def instance_for(reading: str, jobs: Sequence[Job], machines: Sequence[int]) -> tuple[list[Job], list[int], list[int]]:
    """The instance a ``protocol.machines`` reading schedules: (jobs, machines, ``orgs``: the
    instance's index -> original organization); "all" keeps the instance as it is."""
    if reading == "owners":
        return owners_only(jobs, machines)
    if reading != "all":
        raise ValueError(f"machines: expected one of {MACHINES}, got {reading!r}")
    return list(jobs), list(machines), list(range(len(machines)))


def relabel(plan: MolbaPlan, orgs: Sequence[int], n_orgs: int) -> MolbaPlan:
    """``plan`` of the instance of :func:`instance_for` back in the original organizations'
    indices (machine i is M_{orgs[i]}), over ``n_orgs`` organizations: an organization that
    brought no machine runs nothing and its local makespan C_loc is 0 (it owns no job)."""

    def back(schedule: Sequence[Placement]) -> list[Placement]:
        return canonical(Placement(pl.job, orgs[pl.machine], pl.start, pl.processors) for pl in schedule)

    run = plan.run
    c_loc = [0.0] * n_orgs
    for i, c in enumerate(run.local_makespans):
        c_loc[orgs[i]] = c
    run_back = MolbaRun(
        run.alpha, back(run.local), c_loc, [orgs[k] for k in run.overloaded], list(run.moved), back(run.schedule)
    )
    return MolbaPlan(run_back, plan.meta, plan.balanced, back(plan.final))


def molba_plan_for(
    reading: str, jobs: Sequence[Job], machines: Sequence[int], alpha: float | None = None, balance: bool = True
) -> MolbaPlan:
    """:func:`molba_plan` of the instance a ``protocol.machines`` reading schedules (see
    :func:`instance_for`), in the original organizations' indices (:func:`relabel`)."""
    sub_jobs, sub_machines, orgs = instance_for(reading, jobs, machines)
    return relabel(molba_plan(sub_jobs, sub_machines, alpha, balance), orgs, len(machines))


def later_than_alone(
    plan: MolbaPlan, jobs: Sequence[Job], machines: Sequence[int], schedule: Sequence[Placement], tol: float = 1e-9
) -> list[str]:
    """The organizations whose makespan in ``schedule`` exceeds their local makespan (the
    chapter's first guarantee; ``tol`` relative), one message each."""
    slack = tol * max(1.0, max(plan.run.local_makespans, default=0.0))
    return [
        f"organization {k}: makespan {now} exceeds its local makespan {before}"
        for k, (now, before) in enumerate(zip(org_makespans(schedule, jobs, machines), plan.run.local_makespans))
        if now > before + slack
    ]


def guarantee_violations(
    plan: MolbaPlan,
    jobs: Sequence[Job],
    machines: Sequence[int],
    schedule: Sequence[Placement] | None = None,
    tol: float = 1e-9,
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
    by_id = index_jobs(jobs)
    a = plan.alpha
    proved = plan.meta or a == 3 or (a == 2 and _last_jobs_low(plan.molba, by_id, machines))
    if proved:
        out += later_than_alone(plan, jobs, machines, schedule, tol)
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
