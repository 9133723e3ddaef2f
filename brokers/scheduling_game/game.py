"""The grid scheduling game (thesis ch. 3, sections 3.4-3.6) as pure functions: the grid
scheduler's proposal σ*, the organizations' moves and strategies for the repeated game, and
a machine's order of its jobs under each move.

Definition 3.1: a player O_k's strategy is the order of the jobs on its own machine M_k; its
payoff is u_k = C_k(MJF) - C_k. Proposition 3.8: MJF is the only Nash equilibrium of the
one-shot game, which is thus a multi-player Prisoner's Dilemma; following σ* is cooperation.

A *move* is what a machine plays in one round: ``follow`` (σ*), ``mjf`` or ``spt``. A
*strategy* picks a move every round from what the organization saw in earlier rounds:
``follow``, ``mjf`` and ``spt`` always play that move; ``tit-for-tat`` follows, but plays MJF
in a round after one in which some machine ran its jobs later than σ* promised; ``grim``
follows until the first such round and plays MJF ever after. The text names no strategy for
the repeated game beyond "a single betrayal can be punished during the next rounds"; these
two are the classic ones of the repeated Prisoner's Dilemma. A player can only punish with
its own machine, so its punishment falls on every organization with jobs there, the
defector's and the others' alike (the text's "refusing to cooperate with the free-rider").

``reference.py``, the test oracle, has its own reading of the moves, the promise check and
the proposal (by exhaustive search); the tests compare these functions and runs against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np

from gridemu.brokers.scheduling_game.dedicated import (
    DedicatedInstance,
    Grid,
    completion_sums,
    constrained_equitable,
    machine_sums,
    min_max,
    min_sum,
    mjf_grid,
    spt_grid,
)
from gridemu.brokers.scheduling_game.search import adjusted_equitable_walk, dynamic_programming, equitable_walk

MOVES = ("follow", "mjf", "spt")
STRATEGIES = MOVES + ("tit-for-tat", "grim")
#: How the grid scheduler proposes σ*: ``aew`` (section 3.6: AEW's acceptable solutions,
#: u_k >= 0 for all), ``dyn`` (DYN's exact equitable set in u among the acceptable
#: solutions: Table 3.9's constrained optimization), ``ew`` (EW on [C_k], unconstrained),
#: ``spt`` (**SPT**, the social optimum, Corollary 3.4).
PROPOSALS = ("aew", "dyn", "ew", "spt")
#: Which solution of the set: ``min-max`` (the fair one: least max C_k, or largest min u_k
#: under the constraint) or ``min-sum`` (least ΣC_k, or largest Σu_k), section 3.7.1.
PICKS = ("min-max", "min-sum")


class Listing(NamedTuple):
    """One job a machine holds, as it reports it to the grid scheduler."""

    job_id: int
    owner: int
    size: float


def next_move(strategy: str, broken: Sequence[int]) -> str:
    """The move of a machine whose organization plays ``strategy``, given ``broken``: for each
    earlier round in which it had jobs, how many machines ran them later than promised."""
    if strategy in MOVES:
        return strategy
    if strategy == "tit-for-tat":
        return "mjf" if broken and broken[-1] > 0 else "follow"
    if strategy == "grim":
        return "mjf" if any(b > 0 for b in broken) else "follow"
    raise ValueError(f"unknown strategy {strategy!r} (one of {', '.join(STRATEGIES)})")


def broke_promise(total: float, promised: float, tolerance: float = 1e-9) -> bool:
    """Whether an organization's jobs on a machine ended later than the proposal said: their
    sum of completion times ``total`` against the ``promised`` one (float sums of integers,
    hence the relative ``tolerance``)."""
    return total > promised * (1 + tolerance) + tolerance


def machine_order(jobs: Sequence[Listing], me: int, move: str, proposed: dict[int, int]) -> list[int]:
    """The job ids machine ``me`` runs, in order, under ``move``: σ*'s positions
    (``proposed``: job id -> place), MJF (its own jobs first, then the foreign ones; each part
    by size, equal sizes by owner, then job id) or SPT (by size, then owner, then job id).
    The tie rules are :func:`~.dedicated.spt_grid`'s and :func:`~.dedicated.mjf_grid`'s."""
    if move == "follow":
        return sorted((j.job_id for j in jobs), key=lambda i: proposed[i])
    if move == "mjf":
        return [j.job_id for j in sorted(jobs, key=lambda j: (j.owner != me, j.size, j.owner, j.job_id))]
    if move == "spt":
        return [j.job_id for j in sorted(jobs, key=lambda j: (j.size, j.owner, j.job_id))]
    raise ValueError(f"unknown move {move!r} (one of {', '.join(MOVES)})")


def instance_of(listings: Sequence[Sequence[Listing]]) -> tuple[DedicatedInstance, list[dict[tuple[int, int], int]]]:
    """The instance of one round from each machine's jobs (``listings[l]``), and per machine
    the job id of J_{k,l}^i under key (k, i): O_k's jobs on M_l ranked by size, then job id."""
    n = len(listings)
    sizes = [[[] for _ in range(n)] for _ in range(n)]
    ids: list[dict[tuple[int, int], int]] = []
    for l, jobs in enumerate(listings):
        ranked: dict[tuple[int, int], int] = {}
        for j in sorted(jobs, key=lambda j: (j.owner, j.size, j.job_id)):
            ranked[(j.owner, len(sizes[j.owner][l]))] = j.job_id
            sizes[j.owner][l].append(_number(j.size))
        ids.append(ranked)
    return DedicatedInstance.of(sizes), ids


def _number(size: float) -> int | float:
    return int(size) if float(size).is_integer() else float(size)


def propose(instance: DedicatedInstance, proposal: str, pick: str, max_steps: int | None = None) -> Grid:
    """σ*: the grid schedule the grid scheduler proposes (:data:`PROPOSALS`, :data:`PICKS`).
    Where no solution of the set is acceptable (u_k >= 0 for all; AEW may find none, section
    3.6) it proposes MJF, the one every organization accepts (u = 0). ``max_steps`` stops EW
    and AEW early: the walk as printed may go on for millions of steps on large instances,
    and the text allows stopping it "at any moment" (section 3.3.3)."""
    if proposal == "spt":
        return spt_grid(instance)
    choose = min_max if pick == "min-max" else min_sum
    mjf = completion_sums(instance, mjf_grid(instance))
    if proposal == "ew":
        found = equitable_walk(instance, max_steps=max_steps)
        return found.schedules[choose(found.costs)]
    if proposal == "aew":
        found = adjusted_equitable_walk(instance, max_steps=max_steps)
    else:  # the constrained set from the whole Pareto set (DYN's equitable subset is in C, not in u)
        found = constrained_equitable(dynamic_programming(instance).extra["pareto"], mjf)
    best = choose(found.costs, mjf)
    return mjf_grid(instance) if best is None else found.schedules[best]


@dataclass(frozen=True)
class RoundPlan:
    """What the grid scheduler sends in one round: per machine, each job's place in σ*; per
    organization, per machine where it has jobs, (C_{k,l} under σ*, C_{k,l} under MJF)."""

    orders: list[dict[int, int]]
    promises: list[dict[int, tuple[float, float]]]


def round_plan(
    listings: Sequence[Sequence[Listing]], proposal: str, pick: str, max_steps: int | None = None
) -> RoundPlan:
    """The grid scheduler's step of a round (``brokers/scheduling_game/agent.py``, step 3)."""
    instance, ids = instance_of(listings)
    grid, mjf = propose(instance, proposal, pick, max_steps), mjf_grid(instance)
    n = instance.n_orgs
    orders = [positions(grid[l], ids[l]) for l in range(n)]
    promises: list[dict[int, tuple[float, float]]] = [{} for _ in range(n)]
    for l in range(n):
        mine, base = machine_sums(instance, l, grid[l]), machine_sums(instance, l, mjf[l])
        for k, count in enumerate(instance.counts(l)):
            if count:
                promises[k][l] = (float(mine[k]), float(base[k]))
    return RoundPlan(orders, promises)


def positions(schedule: Sequence[int], ids: dict[tuple[int, int], int]) -> dict[int, int]:
    """Job id -> place on the machine, for an owner sequence (the i-th occurrence of owner k
    is J_{k,l}^i)."""
    seen: dict[int, int] = {}
    out = {}
    for place, k in enumerate(schedule):
        out[ids[(k, seen.get(k, 0))]] = place
        seen[k] = seen.get(k, 0) + 1
    return out


def owner_sequence(owners: Sequence[int], starts: Sequence[float]) -> tuple[int, ...]:
    """A machine's executed schedule as an owner sequence (its jobs by start time)."""
    order = np.argsort(np.asarray(starts, dtype=float), kind="stable")
    return tuple(int(owners[i]) for i in order)
