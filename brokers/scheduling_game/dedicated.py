"""The grid of dedicated resources (thesis ch. 3, "Resource Sharing"): the model, SPT and MJF,
the SPT schedules of a machine, Exhaustive Search (Algorithm 3.3), payoffs, scores and the
instances of Figures 3.5 and 3.6 (the random and exponential workloads of section 3.7.1 are
``scenarios/dedicated.py``, drawn as ``sizes[k][l]``: ``DedicatedInstance.of(sizes)``). DYN, EW
and AEW are in :mod:`.dedicated_search`.

Source: ``shared/papers/multi-organization-grid-thesis.txt``, sections 3.1-3.7.

The model (section 3.1): N organizations O_1..O_N, each owning one single-processor machine
M_l (so there are N machines; organization and machine numbers start at 0 here, O_1 = 0).
Organization k has jobs J_{k,l} for machine l with sizes p_{k,l}^i; all jobs are present at
time 0 and run without preemption. C_k is the sum of the completion times of O_k's jobs on
all machines.

Representation:

* An instance is ``sizes[k][l]``: the tuple of O_k's job sizes on M_l, sorted
  non-decreasing (the thesis numbers the jobs so, "without loss of generality":
  p_{k,l}^i ≤ p_{k,l}^{i+1}); :class:`DedicatedInstance`.
* Proposition 3.1: a schedule that runs some organization's jobs out of SPT order is
  Pareto-dominated, so only SPT-within-owner schedules matter. A machine schedule is
  therefore a tuple of owner ids of length n_{.,l}: the i-th occurrence of owner k is
  J_{k,l}^i, k's i-th shortest job on M_l. A grid schedule is a tuple of N such tuples.
* **SPT** (:func:`spt_grid`) runs every machine's jobs by non-decreasing size regardless of
  the owner; jobs of equal size are ordered by owner id (the thesis leaves ties open; any
  order of equal-size jobs of different owners is also an SPT schedule).
* **MJF** (:func:`mjf_grid`): machine l runs owner l's jobs first, then the foreign jobs in
  SPT order (ties by owner id).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from gridemu.brokers.scheduling_game.equitable import equitably_optimal_subset, pareto_optimal_subset

Schedule = tuple[int, ...]
Grid = tuple[Schedule, ...]
Number = int | float


@dataclass(frozen=True)
class DedicatedInstance:
    """``sizes[k][l]``: O_k's job sizes on M_l, non-decreasing (the constructor sorts them)."""

    sizes: tuple[tuple[tuple[Number, ...], ...], ...]

    def __post_init__(self) -> None:
        rows = tuple(tuple(tuple(sorted(job)) for job in row) for row in self.sizes)
        if not rows or any(len(r) != len(rows) for r in rows):
            raise ValueError("an instance is N x N: sizes[k][l] for N organizations and N machines")
        if any(p <= 0 for r in rows for jobs in r for p in jobs):
            raise ValueError("job sizes must be positive")
        object.__setattr__(self, "sizes", rows)
        ints = all(isinstance(p, (int, np.integer)) for r in rows for jobs in r for p in jobs)
        # not a field: int64 for integer sizes, else float64 (Figure 3.6 uses a small ε)
        object.__setattr__(self, "_dtype", np.int64 if ints else np.float64)

    @classmethod
    def of(cls, sizes: Sequence[Sequence[Iterable[Number]]]) -> "DedicatedInstance":
        return cls(tuple(tuple(tuple(j) for j in row) for row in sizes))

    @property
    def n_orgs(self) -> int:
        return len(self.sizes)

    @property
    def n_machines(self) -> int:
        return len(self.sizes)

    def counts(self, l: int) -> tuple[int, ...]:
        """n_{k,l} for every k."""
        return tuple(len(self.sizes[k][l]) for k in range(self.n_orgs))

    def jobs_on(self, l: int) -> int:
        """n_{.,l}: the number of jobs on M_l."""
        return sum(self.counts(l))

    def size(self, k: int, l: int, i: int) -> Number:
        """p_{k,l}^{i+1} (``i`` counts from 0)."""
        return self.sizes[k][l][i]

    @property
    def dtype(self) -> type:
        """int64 for integer sizes, else float64 (Figure 3.6 uses a small ε)."""
        return self._dtype  # type: ignore[attr-defined]


@dataclass(frozen=True, eq=False)
class Solutions:
    """Grid schedules with their costs: ``costs[i]`` is [C_1..C_N] of ``schedules[i]``;
    ``extra``: what the algorithm reports besides (counts, DYN's Pareto set, a walk's length)."""

    schedules: tuple[Grid, ...]
    costs: np.ndarray
    extra: dict = field(default_factory=dict, compare=False)

    def __len__(self) -> int:
        return len(self.schedules)


# ------------------------------------------------------------------ evaluation (section 3.1)
def machine_sums(instance: DedicatedInstance, l: int, schedule: Schedule) -> np.ndarray:
    """[C_{1,l}, .., C_{N,l}]: each owner's sum of completion times on M_l under ``schedule``."""
    n = instance.n_orgs
    out = np.zeros(n, dtype=instance.dtype)
    seen = [0] * n
    t = 0
    for k in schedule:
        t += instance.sizes[k][l][seen[k]]
        seen[k] += 1
        out[k] += t
    if tuple(seen) != instance.counts(l):
        raise ValueError(f"schedule of M_{l} does not hold every job once: {schedule}")
    return out


def completion_sums(instance: DedicatedInstance, grid: Grid) -> np.ndarray:
    """[C_1, .., C_N] of a grid schedule: C_k = Σ_l C_{k,l}."""
    if len(grid) != instance.n_machines:
        raise ValueError(f"a grid schedule has one schedule per machine ({instance.n_machines})")
    return sum(
        (machine_sums(instance, l, s) for l, s in enumerate(grid)), np.zeros(instance.n_orgs, dtype=instance.dtype)
    )


def constraint_check(jobs: Sequence[Sequence[Number]], schedule: Sequence[int], q: Sequence[Number]) -> bool:
    """Algorithm 3.1, for N organizations on one machine: True iff C_k ≤ Q_k for every k.

    ``jobs[k]`` lists O_k's jobs in the order O_k's jobs run (any order, so any permutation
    π of the machine's jobs can be checked), ``schedule`` the owner of each position."""
    c = [0] * len(jobs)
    seen = [0] * len(jobs)
    t = 0
    for k in schedule:
        t += jobs[k][seen[k]]
        seen[k] += 1
        c[k] += t
    if seen != [len(j) for j in jobs]:
        raise ValueError("the schedule must hold every job once")
    return all(ck <= qk for ck, qk in zip(c, q))


def _spt_order(instance: DedicatedInstance, l: int, first: int | None = None) -> Schedule:
    jobs = [(p, k) for k in range(instance.n_orgs) for p in instance.sizes[k][l]]
    # sort by size, then owner id (the tie rule); MJF puts the owner's jobs in front
    return tuple(k for _, k in sorted(jobs, key=lambda j: (j[1] != first, j[0], j[1])))


def spt_grid(instance: DedicatedInstance) -> Grid:
    """**SPT** (section 3.1): every machine by non-decreasing size, ties by owner id."""
    return tuple(_spt_order(instance, l) for l in range(instance.n_machines))


def mjf_grid(instance: DedicatedInstance) -> Grid:
    """**MJF** (My Jobs First, section 3.1): owner l's jobs first on M_l, then the rest in SPT order."""
    return tuple(_spt_order(instance, l, first=l) for l in range(instance.n_machines))


def payoffs(instance: DedicatedInstance, grid: Grid) -> np.ndarray:
    """u_k = C_k(MJF) - C_k(grid) (Definition 3.1; to be maximized)."""
    return completion_sums(instance, mjf_grid(instance)) - completion_sums(instance, grid)


# --------------------------------------------------------- SPT schedules (Procedure sptRecursive)
def spt_recursive(pi: list[int], j: int, n: int, jobs_left: dict[int, int], out: list[Schedule]) -> None:
    """Procedure sptRecursive: extend the partial schedule ``pi`` (``j`` jobs placed, ``n`` in
    all) by each owner with jobs left. ``jobs_left[k]`` counts O_k's unscheduled jobs (the
    jobs themselves are implied: the next of O_k is its shortest unscheduled one)."""
    if j == n:
        out.append(tuple(pi))
        return
    for k in jobs_left:
        if jobs_left[k] > 0:
            jobs_left[k] -= 1
            pi[j] = k
            spt_recursive(pi, j + 1, n, jobs_left, out)
            jobs_left[k] += 1


def spt_schedules(instance: DedicatedInstance, l: int) -> list[Schedule]:
    """Π_l^SPT: every SPT schedule of M_l (every interleaving of the owners' SPT sequences)."""
    n = instance.jobs_on(l)
    out: list[Schedule] = []
    spt_recursive([0] * n, 0, n, dict(enumerate(instance.counts(l))), out)
    return out


def schedule_count(instance: DedicatedInstance) -> int:
    """|Π^SPT| = Π_l n_{.,l}! / Π_k n_{k,l}! (Proposition 3.2): the "all solutions" count."""
    total = 1
    for l in range(instance.n_machines):
        c = instance.counts(l)
        total *= math.factorial(sum(c)) // math.prod(math.factorial(x) for x in c)
    return total


def _machine_table(instance: DedicatedInstance, l: int) -> tuple[list[Schedule], np.ndarray]:
    """Π_l^SPT and each schedule's contribution [C_{k,l}]_k, as an (|Π_l| × N) array."""
    scheds = spt_schedules(instance, l)
    n = instance.n_orgs
    if not scheds[0]:
        return scheds, np.zeros((1, n), dtype=instance.dtype)
    own = np.array(scheds, dtype=np.int64)  # (m, n_.l) owner ids
    rank = np.zeros_like(own)  # i: the i-th job of its owner
    for k in range(n):
        mine = own == k
        rank[mine] = (np.cumsum(mine, axis=1) - 1)[mine]
    table = np.zeros((n, max(1, max(instance.counts(l)))), dtype=instance.dtype)
    for k in range(n):
        table[k, : len(instance.sizes[k][l])] = instance.sizes[k][l]
    finish = np.cumsum(table[own, rank], axis=1)
    out = np.zeros((len(scheds), n), dtype=instance.dtype)
    for k in range(n):
        out[:, k] = np.where(own == k, finish, 0).sum(axis=1)
    return scheds, out


def exhaustive_search(instance: DedicatedInstance, pareto: bool = False) -> Solutions:
    """Algorithm 3.3 (ES): all grid schedules Π^SPT = Π_1^SPT × .. × Π_N^SPT, and their
    equitably-optimal subset. The costs of all grid schedules are one broadcast sum of the
    machines' contribution arrays. ``extra``: "all" (|Π^SPT|) and, with ``pareto``, the
    Pareto-optimal grid schedules as a :class:`Solutions` under "pareto"."""
    tables = [_machine_table(instance, l) for l in range(instance.n_machines)]
    n = instance.n_orgs
    costs = np.zeros((1, n), dtype=instance.dtype)
    for _, contrib in tables:
        costs = (costs[:, None, :] + contrib[None, :, :]).reshape(-1, n)
    shape = tuple(len(c) for _, c in tables)

    def pick(idx: np.ndarray) -> Solutions:
        combos = np.stack(np.unravel_index(idx, shape), axis=1) if len(idx) else np.zeros((0, n), int)
        grids = tuple(tuple(tables[l][0][c[l]] for l in range(n)) for c in combos)
        return Solutions(grids, costs[idx])

    result = pick(equitably_optimal_subset(costs))
    result.extra["all"] = len(costs)
    if pareto:
        result.extra["pareto"] = pick(pareto_optimal_subset(costs))
    return result


# ------------------------------------------------------------- quality indicators (section 3.7.1)
def scores(costs: Sequence[Number] | np.ndarray, costs_mjf: Sequence[Number] | np.ndarray) -> tuple[float, float]:
    """(sum score, max score) of a solution against **MJF**: 1 - ΣC/ΣC(MJF), 1 - max C / max C(MJF)."""
    c, m = np.asarray(costs, dtype=float), np.asarray(costs_mjf, dtype=float)
    return 1.0 - c.sum() / m.sum(), 1.0 - c.max() / m.max()


def _choose(costs: np.ndarray, costs_mjf: np.ndarray | None, by_sum: bool) -> int | None:
    c = np.asarray(costs, dtype=float)
    if len(c) == 0:
        return None
    if costs_mjf is None:
        keys = (c.max(axis=1), c.sum(axis=1)) if by_sum else (c.sum(axis=1), c.max(axis=1))
        return int(np.lexsort(keys)[0])  # lexsort: the last key is primary
    u = np.asarray(costs_mjf, dtype=float)[None, :] - c
    ok = np.flatnonzero(np.all(u >= 0, axis=1))
    if len(ok) == 0:
        return None
    u = u[ok]
    keys = (-u.min(axis=1), -u.sum(axis=1)) if by_sum else (-u.sum(axis=1), -u.min(axis=1))
    return int(ok[np.lexsort(keys)[0]])


def min_sum(costs: np.ndarray, costs_mjf: np.ndarray | None = None) -> int | None:
    """The *min-sum* solution (section 3.7.1): the row of least ΣC (ties: least max C); with
    ``costs_mjf`` (constrained optimization) the feasible row (u ≥ 0) of largest Σu (ties:
    largest min u), None when no row is feasible."""
    return _choose(costs, costs_mjf, by_sum=True)


def min_max(costs: np.ndarray, costs_mjf: np.ndarray | None = None) -> int | None:
    """The *min-max* solution: least max C (ties: least ΣC); with ``costs_mjf`` the feasible
    row of largest min u (ties: largest Σu), None when no row is feasible."""
    return _choose(costs, costs_mjf, by_sum=False)


def constrained_equitable(solutions: Solutions, costs_mjf: np.ndarray) -> Solutions:
    """Constrained optimization (section 3.6): the feasible solutions (u ≥ 0), then their
    equitably-optimal subset in u (minimizing -u). Given the Pareto-optimal set this is the
    exact constrained set: a feasible point is only Pareto-dominated by feasible points."""
    u = np.asarray(costs_mjf)[None, :] - solutions.costs
    ok = np.flatnonzero(np.all(u >= 0, axis=1))
    keep = ok[equitably_optimal_subset(-u[ok])] if len(ok) else ok
    return Solutions(tuple(solutions.schedules[i] for i in keep), solutions.costs[keep])


# ------------------------------------------------------------------- the text's instances
def price_of_anarchy_instance(n: int, p: Number, eps: Number) -> DedicatedInstance:
    """Figure 3.6 (Proposition 3.9): each machine has one local job of size p and n foreign
    jobs of size ε; ΣC(MJF) / ΣC(SPT) → n + 1 as ε → 0."""
    small = tuple([eps] * n)
    return DedicatedInstance.of([[(p,), small], [small, (p,)]])


#: Figure 3.5, reconstructed from the numbers in the text (the drawing itself is not in it):
#: **SPT** gives (C_1, C_2) = (16, 13), ΣC = 29, and **MJF** (41, 8). A brute-force search
#: (``figure_3_5_search`` in tests/test_dedicated_algorithms.py) finds exactly one
#: instance with these numbers, and its search is complete: O_1's sizes add up to at most
#: C_1(SPT) = 16 and O_2's to at most C_2(MJF) = 8. O_1 has one job of size 1 on M_1 and
#: five of size 1 on M_2; O_2 has one job of size 2 on M_1 and one of size 5 on M_2.
FIGURE_3_5 = DedicatedInstance.of([[(1,), (1, 1, 1, 1, 1)], [(2,), (5,)]])
