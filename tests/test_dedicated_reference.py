"""The scheduling game's decision functions (``brokers/scheduling_game/game.py``) against the
oracle written from the thesis's text apart from them (``brokers/scheduling_game/reference.py``):
a machine's move (section 3.5), the on-line check of a promise, a machine's order under each
move, and the proposal σ* (sections 3.6 and 3.7.1) against exhaustive search."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gridemu.brokers.scheduling_game import reference as ref
from gridemu.brokers.scheduling_game.dedicated import FIGURE_3_5, DedicatedInstance
from gridemu.brokers.scheduling_game.game import Listing, broke_promise, machine_order, next_move, propose
from gridemu.brokers.scheduling_game.search import adjusted_equitable_walk

Sizes = list[list[list[int]]]


def random_sizes(seed: int, n: int, per_machine: int, max_size: int = 10) -> Sizes:
    """sizes[k][l]: every machine gets ``per_machine`` jobs, each of a uniformly drawn owner
    and size (this test's own draw, not the workload's)."""
    rng = np.random.default_rng([seed, n, per_machine])
    sizes: Sizes = [[[] for _ in range(n)] for _ in range(n)]
    for l in range(n):
        for _ in range(per_machine):
            sizes[int(rng.integers(n))][l].append(int(rng.integers(1, max_size + 1)))
    return sizes


def machines_of(sizes: Sizes) -> list[list[ref.Job]]:
    n = len(sizes)
    return [[(k, float(p)) for k in range(n) for p in sizes[k][l]] for l in range(n)]


def as_orders(sizes: Sizes, grid) -> ref.Grid:
    """An owner-sequence grid (the i-th occurrence of owner k on M_l is k's i-th shortest job
    there, the representation of ``dedicated.py``) as the oracle's (owner, size) orders."""
    out = []
    for l, schedule in enumerate(grid):
        seen = [0] * len(sizes)
        order = []
        for k in schedule:
            order.append((int(k), float(sorted(sizes[k][l])[seen[k]])))
            seen[k] += 1
        out.append(tuple(order))
    return tuple(out)


INSTANCES = [(seed, 3, 4) for seed in range(8)] + [(seed, 2, 6) for seed in range(8)]


# ------------------------------------------------------------------ section 3.5: moves
@pytest.mark.parametrize("strategy", ["follow", "mjf", "spt", "tit-for-tat", "grim"])
def test_next_move_is_the_strategy_of_section_3_5_on_every_short_history(strategy):
    for length in range(6):
        for history in itertools.product((0, 1, 2), repeat=length):
            assert next_move(strategy, list(history)) == ref.thesis_next_move(strategy, history), history


def test_tit_for_tat_forgives_and_grim_does_not():
    # The oracle's reading spelled out on one history: a broken promise in the first round only.
    assert [ref.thesis_next_move("tit-for-tat", [1] + [0] * i) for i in range(3)] == ["mjf", "follow", "follow"]
    assert [ref.thesis_next_move("grim", [1] + [0] * i) for i in range(3)] == ["mjf", "mjf", "mjf"]
    with pytest.raises(ValueError):
        next_move("nice", [])


def test_a_promise_is_broken_only_by_a_later_sum_of_completion_times():
    rng = np.random.default_rng(3)
    for promised in rng.integers(1, 500, size=50).astype(float):
        for delta in (-7.0, -1.0, -0.5, -1e-11, 0.0, 1e-11, 0.5, 1.0, 7.0):
            total = promised + delta
            assert broke_promise(total, promised) == ref.thesis_broke_promise(total, promised), (total, promised)


@pytest.mark.parametrize("move", ["mjf", "spt"])
def test_a_machines_order_under_mjf_and_spt_is_the_texts(move):
    rng = np.random.default_rng(11)
    for _ in range(40):
        n, me = 3, int(rng.integers(3))
        jobs = [
            Listing(int(i), int(rng.integers(n)), float(rng.integers(1, 5)))
            for i in rng.permutation(40)[: rng.integers(1, 9)]
        ]
        by_id = {j.job_id: (j.owner, j.size) for j in jobs}
        got = tuple(by_id[i] for i in machine_order(jobs, me, move, {}))
        pairs = [(j.owner, j.size) for j in jobs]
        assert got == (ref.thesis_mjf(pairs, me) if move == "mjf" else ref.thesis_spt(pairs))


# ------------------------------------------------------------ sections 3.6 and 3.7.1: σ*
@pytest.mark.parametrize("pick", ["min-max", "min-sum"])
def test_the_exact_proposal_is_the_best_acceptable_schedule_of_exhaustive_search(pick):
    """DYN's constrained set (``proposal = "dyn"``) holds every acceptable equitably-optimal
    schedule, so its pick is an optimum of the brute force over all SPT-consistent grids."""
    differ = 0
    for seed, n, per_machine in INSTANCES:
        sizes = random_sizes(seed, n, per_machine)
        machines = machines_of(sizes)
        got = as_orders(sizes, propose(DedicatedInstance.of(sizes), "dyn", pick))
        best = ref.brute_force_proposal(machines, pick)
        assert got in best, (sizes, got, best)
        other = ref.brute_force_proposal(machines, "min-sum" if pick == "min-max" else "min-max")
        differ += got not in other
    assert differ >= 2  # the instances tell the two picks apart


@pytest.mark.parametrize("pick", ["min-max", "min-sum"])
def test_a_walk_that_finds_nothing_acceptable_proposes_mjf(pick):
    """With no step the walk has only SPT: the proposal is SPT where every u_k >= 0, MJF
    where not. Figure 3.5 is the text's instance where SPT is not acceptable: (16, 13) against
    MJF's (41, 8)."""
    fig = [[list(FIGURE_3_5.sizes[k][l]) for l in range(2)] for k in range(2)]
    assert as_orders(fig, propose(FIGURE_3_5, "aew", pick, max_steps=0)) == ref.mjf_grid(machines_of(fig))
    for seed, n, per_machine in INSTANCES:
        sizes = random_sizes(seed, n, per_machine)
        machines = machines_of(sizes)
        spt = tuple(ref.thesis_spt(jobs) for jobs in machines)
        got = as_orders(sizes, propose(DedicatedInstance.of(sizes), "aew", pick, max_steps=0))
        assert [got] == ref.proposal_among(machines, [spt], pick), sizes


@pytest.mark.parametrize("pick", ["min-max", "min-sum"])
def test_the_walks_proposal_is_the_best_acceptable_schedule_of_the_oracles_walk(pick):
    """AEW (section 3.6, Algorithm 3.6 on -u): the agent's walk visits what the oracle's does,
    returns part of it, and the grid scheduler proposes the best acceptable schedule among
    them (section 3.7.1), MJF where there is none."""
    fallbacks = 0
    for seed, n, per_machine in INSTANCES + [(seed, 3, 6) for seed in range(4)]:
        sizes = random_sizes(seed, n, per_machine)
        machines = machines_of(sizes)
        instance = DedicatedInstance.of(sizes)
        visited = ref.thesis_aew(machines)
        walk = adjusted_equitable_walk(instance)
        assert walk.extra["visited"] == len(visited)
        assert {as_orders(sizes, g) for g in walk.schedules} <= set(visited), sizes
        got = as_orders(sizes, propose(instance, "aew", pick))
        assert got in ref.proposal_among(machines, visited, pick), sizes
        fallbacks += ref.proposal_among(machines, visited, pick) == [ref.mjf_grid(machines)]
    assert fallbacks  # some walk finds nothing acceptable


def test_the_oracles_brute_force_counts_proposition_3_2():
    # Its search space: Π_l n_{.,l}! / Π_k n_{k,l}! SPT-consistent grids (Proposition 3.2).
    sizes = [[[1, 1], [2]], [[3], [1, 4, 4]]]
    counts = [len(ref.spt_consistent_orders(jobs)) for jobs in machines_of(sizes)]
    assert counts == [3, 4]
