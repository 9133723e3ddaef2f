"""Chapter 5's algorithms written again from the thesis's text: the ``molba`` protocol's test oracle.

List scheduling in Highest-First order (Algorithm 5.1, section 5.2.2), backfill list
scheduling (BLS, Algorithm 5.2), MOLBA(α) (Algorithm 5.3), the meta-algorithm of section
5.6.1 and ILBA (Algorithm 5.4), from the pseudo-code and prose of the thesis
(``multi-organization-grid-thesis.txt``, line numbers in brackets), apart from the code the
agents run (``list_scheduling.py``, ``algorithm.py``): nothing of those is imported, so that
a fault there shows as a difference between a run and this oracle. A job is anything with
``id``, ``org`` (O_k, owner of machine k), ``p`` and ``q``; a schedule is a dict job id ->
(machine, start, processors).

Where the thesis leaves a choice open this follows the choice documented in the docstrings
of ``list_scheduling.py`` and ``algorithm.py`` (the contract both follow, not their code):
  * BLS's events on a host are time 0 and every completion of a job on it [2600, 2615]; a
    job starts at t on M_l if q processors are free during the whole [t, t + p) [2658]; at
    one time the hosts are visited in the order given, each scanning the list once
    [2602-2612]; a job takes the lowest-numbered of the processors free through its window.
  * Highest First: non-increasing q, ties by job id [2407].
  * W̄ = W / Σ_k m_k [2457]; O' is C_loc(O_k) > αW̄ + p_max (strict, line 6 [2633]); J'' is
    the jobs of O' starting strictly after αW̄ (line 15), given to BLS in HF order (line 17,
    as the proof of Lemma 5.2 says [2676]); M' and M in index order.
  * Meta-algorithm [2793]: MOLBA(3) if MOLBA(2) ends an organization later than alone or
    passes 3·max(W̄, p_max).
  * ILBA [2712-2733]: machines by non-decreasing makespan (its jobs' last completion, 0 if
    none), ties by index; a machine's jobs by start, ties by id, each given to BLS alone
    over the machines before it and itself, in that order.
  * ``owners`` reading (``protocol.machines``): only organizations that own a job bring a
    machine; W̄ counts only theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

Schedule = dict[int, tuple[int, float, tuple[int, ...]]]


@dataclass(frozen=True)
class ThesisPlan:
    """The three schedules of section 5.6.1 (local, MOLBA, MOLBA+ILBA), α used, O' and J''."""

    alpha: float
    local: Schedule
    overloaded: list[int]
    moved: list[int]
    molba: Schedule
    final: Schedule


@dataclass(frozen=True)
class _Job:
    """A job of the instance an ``owners`` reading renumbers."""

    id: int
    org: int
    p: float
    q: int


def highest_first(jobs: Sequence[Any]) -> list[Any]:
    """Section 5.2.2 [2407]: by non-increasing q; ties by job id (the documented choice)."""
    return sorted(jobs, key=lambda j: (-j.q, j.id))


def thesis_bls(
    order: Sequence[Any], hosts: Sequence[int], m: Sequence[int], sched: Schedule, p: dict[int, float]
) -> None:
    """Algorithm 5.2: add ``order`` to ``sched`` on ``hosts``, moving no job already there.

    ``p``: job id -> length for every job of ``sched`` and ``order``. Line 15 advances t to
    the next completion on the hosts; line 4 visits the hosts with a completion (or t = 0)."""
    unscheduled, t = list(order), 0.0
    rows: dict[int, list[tuple[float, float, tuple[int, ...]]]] = {l: [] for l in hosts}
    for j, (l, s, procs) in sched.items():
        if l in rows:
            rows[l].append((s, s + p[j], procs))
    while unscheduled:
        for l in hosts:
            if t != 0.0 and all(end != t for _, end, _ in rows[l]):
                continue
            for job in list(unscheduled):
                # the processors of M_l no job occupies during [t, t + p) (lines 7-11)
                busy = {pi for s, end, procs in rows[l] if s < t + job.p and end > t for pi in procs}
                free = [pi for pi in range(m[l]) if pi not in busy]
                if job.q <= len(free):  # the q lowest-numbered of them (line 12 names none)
                    sched[job.id] = (l, t, tuple(free[: job.q]))
                    rows[l].append((t, t + job.p, tuple(free[: job.q])))
                    unscheduled.remove(job)
        later = [end for l in hosts for _, end, _ in rows[l] if end > t]
        if unscheduled and not later:
            raise ValueError(f"job {unscheduled[0].id}: fits none of the machines {list(hosts)}")
        t = min(later, default=t)


def org_ends(sched: Schedule, jobs: Sequence[Any], n: int) -> list[float]:
    """C_max(O_k): the last completion of O_k's own jobs, wherever they run [2330]."""
    out = [0.0] * n
    for j in jobs:
        out[j.org] = max(out[j.org], sched[j.id][1] + j.p)
    return out


def thesis_molba(
    jobs: Sequence[Any], m: Sequence[int], alpha: float
) -> tuple[Schedule, list[int], list[int], Schedule]:
    """Algorithm 5.3, MOLBA(α) [2620-2646]: (local schedule, O', J'' in HF order, schedule)."""
    p = {j.id: j.p for j in jobs}
    local: Schedule = {}
    for k in range(len(m)):  # lines 1-3: LS in HF order on the own machine (BLS on an empty one)
        thesis_bls(highest_first([j for j in jobs if j.org == k]), [k], m, local, p)
    w_bar = sum(j.p * j.q for j in jobs) / sum(m)
    p_max = max(j.p for j in jobs)
    c_loc = org_ends(local, jobs, len(m))
    chosen = [k for k in range(len(m)) if c_loc[k] > alpha * w_bar + p_max]  # lines 4-9
    mixed = highest_first([j for j in jobs if j.org in chosen])  # lines 10-11
    sched = {i: v for i, v in local.items() if i not in {j.id for j in mixed}}
    thesis_bls(mixed, chosen, m, sched, p)  # line 12, on M' alone
    late = [j for j in mixed if sched[j.id][1] > alpha * w_bar]  # lines 13-15
    for j in late:  # line 16
        del sched[j.id]
    thesis_bls(late, list(range(len(m))), m, sched, p)  # line 17, on every machine
    return local, chosen, [j.id for j in late], sched


def thesis_ilba(sched: Schedule, jobs: Sequence[Any], m: Sequence[int]) -> Schedule:
    """Algorithm 5.4, ILBA [2716-2733]: rebalance ``sched`` machine by machine."""
    p = {j.id: j.p for j in jobs}
    span = [max((s + p[i] for i, (l, s, _) in sched.items() if l == k), default=0.0) for k in range(len(m))]
    order = sorted(range(len(m)), key=lambda k: (span[k], k))
    out = {i: v for i, v in sched.items() if v[0] == order[0]}  # line 1: M_1 keeps its jobs
    by_id = {j.id: j for j in jobs}
    for pos in range(1, len(order)):  # lines 2-8
        mine = sorted((v[1], i) for i, v in sched.items() if v[0] == order[pos])
        for _, i in mine:
            thesis_bls([by_id[i]], order[: pos + 1], m, out, p)
    return out


def thesis_plan(jobs: Sequence[Any], m: Sequence[int], alpha: float | None = None, balance: bool = True) -> ThesisPlan:
    """Section 5.6.1's pipeline: local, MOLBA(α) (``alpha=None``: the meta-algorithm) and ILBA."""
    a = 2.0 if alpha is None else float(alpha)
    local, chosen, late, sched = thesis_molba(jobs, m, a)
    if alpha is None:
        lb = max(sum(j.p * j.q for j in jobs) / sum(m), max(j.p for j in jobs))
        worse = any(x > y for x, y in zip(org_ends(sched, jobs, len(m)), org_ends(local, jobs, len(m))))
        if worse or max(sched[j.id][1] + j.p for j in jobs) > 3 * lb:
            a = 3.0
            local, chosen, late, sched = thesis_molba(jobs, m, a)
    return ThesisPlan(a, local, chosen, late, sched, thesis_ilba(sched, jobs, m) if balance else dict(sched))


def thesis_plan_for(
    reading: str, jobs: Sequence[Any], m: Sequence[int], alpha: float | None = None, balance: bool = True
) -> ThesisPlan:
    """:func:`thesis_plan` under a ``protocol.machines`` reading, in the original machines'
    indices: ``"all"`` every machine, ``"owners"`` only those of organizations owning a job."""
    if reading not in ("all", "owners"):
        raise ValueError(f"machines: expected 'all' or 'owners', got {reading!r}")
    orgs = sorted({j.org for j in jobs}) if reading == "owners" else list(range(len(m)))
    new = {k: i for i, k in enumerate(orgs)}
    renamed = [_Job(j.id, new[j.org], j.p, j.q) for j in jobs]
    plan = thesis_plan(renamed, [m[k] for k in orgs], alpha, balance)

    def back(s: Schedule) -> Schedule:
        return {i: (orgs[l], t, procs) for i, (l, t, procs) in s.items()}

    chosen = [orgs[k] for k in plan.overloaded]
    return ThesisPlan(plan.alpha, back(plan.local), chosen, plan.moved, back(plan.molba), back(plan.final))
