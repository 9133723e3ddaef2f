"""Test oracle of the scheduling game on dedicated machines (thesis ch. 3), written from the
text apart from the agent's code path (``game.py``, ``dedicated.py``, ``search.py``), so that
a fault in the agent's decisions shows as a difference between a run and this module.

Source: ``shared/papers/multi-organization-grid-thesis.txt``: section 3.1 (the model, **SPT**
and **MJF**), Proposition 3.1 (only schedules running each owner's jobs in SPT order matter),
Definition 3.1 (u_k = C_k(MJF) - C_k), section 3.5 (the repeated game: "a single betrayal
can be punished during the next rounds"; on-line verification of one's own jobs), section 3.6
(the grid scheduler proposes a schedule with u_k >= 0 for every organization) and section
3.7.1 (the *min-max* and *min-sum* solutions under constrained optimization).

Representation: a machine's jobs are ``(owner, size)`` pairs; an order is a tuple of them,
first run first; a grid is one order per machine. Completion times count from the instant
the machine starts (0 in the thesis's model). Job ids do not appear: two jobs of one owner
with one size are interchangeable for every outcome the thesis defines.

What this shares with the agent, as declared contracts rather than decisions:

* the tie rule of **SPT** and **MJF**: jobs of equal size run by owner id (the thesis leaves
  ties open; ``dedicated.py``'s docstring declares the rule);
* the meaning of a strategy's history (``game.next_move``'s docstring): one entry per earlier
  round *in which the organization had jobs*, the number of other machines that ran them
  later than promised; a round without jobs of its own shows an organization nothing.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

Job = tuple[int, float]
Order = tuple[Job, ...]
Grid = tuple[Order, ...]

#: Sizes are integers in every test instance, so sums of completion times are exact in
#: floats; this only absorbs the float noise of times measured from a start instant S > 0.
TOLERANCE = 1e-6


def thesis_spt(jobs: Sequence[Job]) -> Order:
    """**SPT** on one machine (section 3.1): by non-decreasing size, equal sizes by owner."""
    return tuple(sorted(jobs, key=lambda j: (j[1], j[0])))


def thesis_mjf(jobs: Sequence[Job], me: int) -> Order:
    """My Jobs First on machine ``me`` (section 3.4): "schedules all the local jobs before
    any foreign job"; each part shortest first (Proposition 3.1 for the local part, **SPT**
    for the foreign one, as the agent's docstring says)."""
    local = [j for j in jobs if j[0] == me]
    foreign = [j for j in jobs if j[0] != me]
    return thesis_spt(local) + thesis_spt(foreign)


def owner_sums(order: Order, n: int) -> list[float]:
    """C_{k,l} for every owner k of one machine's ``order`` (section 3.1): the sum of the
    completion times of k's jobs there."""
    out = [0.0] * n
    clock = 0.0
    for owner, size in order:
        clock += size
        out[owner] += clock
    return out


def spt_consistent_orders(jobs: Sequence[Job]) -> list[Order]:
    """Every order of one machine's jobs in which each owner's jobs run shortest first
    (Proposition 3.1: any other order is Pareto-dominated). Built as every distinct sequence
    of owners, the i-th occurrence of owner k being k's i-th shortest job."""
    by_owner: dict[int, list[float]] = {}
    for owner, size in jobs:
        by_owner.setdefault(owner, []).append(size)
    for sizes in by_owner.values():
        sizes.sort()
    out = []
    for owners in sorted(set(itertools.permutations([owner for owner, _ in jobs]))):
        taken = dict.fromkeys(by_owner, 0)
        order = []
        for owner in owners:
            order.append((owner, by_owner[owner][taken[owner]]))
            taken[owner] += 1
        out.append(tuple(order))
    return out


def _key(u: np.ndarray, pick: str) -> tuple[np.ndarray, np.ndarray]:
    """Section 3.7.1 under constrained optimization: *min-max* maximizes the least gain min u_k
    (then the total), *min-sum* the total Σu_k (then the least gain): (primary, secondary)."""
    least, total = u.min(axis=1), u.sum(axis=1)
    if pick == "min-max":
        return least, total
    if pick == "min-sum":
        return total, least
    raise ValueError(f"unknown pick {pick!r}")


def best_acceptable(costs: np.ndarray, costs_mjf: Sequence[float], pick: str) -> list[int]:
    """Indices of the rows of ``costs`` ([C_k] per candidate) that the grid scheduler may
    propose: acceptable (u_k = C_k(MJF) - C_k >= 0 for every k, section 3.6) and best for
    ``pick`` (section 3.7.1). Every tied row is returned: the text does not order them."""
    c = np.asarray(costs, dtype=float).reshape(len(costs), -1)
    u = np.asarray(costs_mjf, dtype=float)[None, :] - c
    ok = np.flatnonzero((u >= -TOLERANCE).all(axis=1))
    if not len(ok):
        return []
    first, second = _key(u[ok], pick)
    top = first >= first.max() - TOLERANCE
    top &= second >= second[top].max() - TOLERANCE
    return [int(i) for i in ok[top]]


def mjf_grid(machines: Sequence[Sequence[Job]]) -> Grid:
    """**MJF**: every machine l plays MJF (organization l owns machine l)."""
    return tuple(thesis_mjf(jobs, l) for l, jobs in enumerate(machines))


def grid_costs(grid: Grid, n: int) -> np.ndarray:
    """C_{k,l} of a grid as an (N x machines) array."""
    return np.array([owner_sums(order, n) for order in grid]).T


def brute_force_proposal(machines: Sequence[Sequence[Job]], pick: str) -> list[Grid]:
    """σ* by exhaustive search: every grid of SPT-consistent machine orders, the acceptable
    ones, the best for ``pick``; all tied grids. **MJF** is one of the grids and is always
    acceptable (u = 0), so the list is never empty. ``machines[l]``: machine l's jobs."""
    n = len(machines)
    orders = [spt_consistent_orders(jobs) for jobs in machines]
    per_machine = [np.array([owner_sums(o, n) for o in options]) for options in orders]
    index = np.indices([len(o) for o in orders]).reshape(n, -1)
    costs = sum(per_machine[l][index[l]] for l in range(n))
    mjf = grid_costs(mjf_grid(machines), n).sum(axis=1)
    return [tuple(orders[l][index[l, i]] for l in range(n)) for i in best_acceptable(costs, mjf, pick)]


def proposal_among(machines: Sequence[Sequence[Job]], candidates: Sequence[Grid], pick: str) -> list[Grid]:
    """σ* when the grid scheduler's set is ``candidates`` (e.g. what a walk visited): the best
    acceptable ones for ``pick``, or **MJF** where none is acceptable (the proposal every
    organization accepts, u = 0, as the agent's docstring has it; section 3.6 only says AEW
    "may be unable to produce a feasible result")."""
    n = len(machines)
    mjf = grid_costs(mjf_grid(machines), n).sum(axis=1)
    costs = np.array([grid_costs(g, n).sum(axis=1) for g in candidates]).reshape(len(candidates), n)
    best = best_acceptable(costs, mjf, pick)
    return [candidates[i] for i in best] if best else [mjf_grid(machines)]


def _equitably_better(a: Sequence[float], b: Sequence[float] | None) -> bool:
    """a ≺_e b (Definition 1.8 through Theorem 1.1): the cumulative ordered map of a, outcomes
    sorted largest first and summed up, Pareto-dominates b's. Anything beats C* = [∞]."""
    if b is None:
        return True
    ta = list(itertools.accumulate(sorted(a, reverse=True)))
    tb = list(itertools.accumulate(sorted(b, reverse=True)))
    return ta != tb and all(x <= y for x, y in zip(ta, tb))


def thesis_aew(machines: Sequence[Sequence[Job]], max_steps: int | None = None) -> list[Grid]:
    """Every grid schedule Adjusted Equitable Walk visits (section 3.6: Algorithm 3.6, EW,
    "adjusted to maximize u_k instead of minimizing C_k", so its costs are -u_k). From
    **SPT** (line 1), each step takes the organization k of the least u_k (line 6; ties: the
    lowest k), tries every job of k that runs right after a job of another owner (lines 7-12)
    moved one place ahead (line 13), skips the schedules already visited (line 14; the start
    counts as visited, as the example after the algorithm has it), and makes the move whose
    costs equitably dominate those of every move tried before it (line 19: a later move is
    taken only if it is strictly better), until no move is left (line 26) or after
    ``max_steps`` moves (EW "can be stopped at any moment"). Line 27's equitably-optimal
    subset is left to the caller: the best acceptable schedule is in it (a schedule that
    equitably dominates an acceptable one is acceptable)."""
    n = len(machines)
    mjf = grid_costs(mjf_grid(machines), n).sum(axis=1)
    grid = [list(thesis_spt(jobs)) for jobs in machines]
    cost = [float(c) for c in grid_costs(tuple(tuple(o) for o in grid), n).sum(axis=1) - mjf]  # -u
    visited = [tuple(tuple(o) for o in grid)]
    taboo = set(visited)
    steps = 0
    while max_steps is None or steps < max_steps:
        k = min(range(n), key=lambda org: (-cost[org], org))
        best, best_cost = None, None
        for l, order in enumerate(grid):
            for i in range(1, len(order)):
                job, before = order[i], order[i - 1]
                if job[0] != k or before[0] == k:
                    continue
                trial = tuple(
                    tuple(o) if m != l else tuple(o[: i - 1]) + (job, before) + tuple(o[i + 1 :])
                    for m, o in enumerate(grid)
                )
                if trial in taboo:
                    continue
                new = list(cost)
                new[before[0]] += job[1]  # the job it passes ends later by the mover's size
                new[k] -= before[1]  # the mover ends earlier by the passed job's size
                if _equitably_better(new, best_cost):
                    best, best_cost = trial, new
        if best is None:
            break
        grid, cost = [list(o) for o in best], best_cost
        taboo.add(best)
        visited.append(best)
        steps += 1
    return visited


def thesis_next_move(strategy: str, history: Sequence[int]) -> str:
    """The move a machine plays this round (section 3.5, repeated game): ``follow``, ``mjf``
    and ``spt`` always play themselves; *tit-for-tat* answers the round it saw last: it
    cooperates (follows σ*) unless, then, some machine ran its jobs later than promised, and
    punishes with MJF for that one round; *grim trigger* cooperates until the first broken
    promise and plays MJF in every round after it. ``history``: one count per earlier round
    in which the organization had jobs (module doc)."""
    if strategy in ("follow", "mjf", "spt"):
        return strategy
    if strategy == "tit-for-tat":
        if not history:
            return "follow"  # the first round: nothing seen, cooperate
        return "mjf" if history[len(history) - 1] != 0 else "follow"
    if strategy == "grim":
        for count in history:
            if count != 0:
                return "mjf"
        return "follow"
    raise ValueError(f"unknown strategy {strategy!r}")


def thesis_broke_promise(total: float, promised: float) -> bool:
    """Section 3.5's on-line verification: an organization's jobs on a machine ended later
    than promised, their sum of completion times ``total`` above the proposal's ``promised``
    (up to :data:`TOLERANCE`; ending earlier breaks nothing)."""
    return total - promised > TOLERANCE
