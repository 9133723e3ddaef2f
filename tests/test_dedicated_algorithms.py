"""Thesis ch. 3 (resource sharing on dedicated machines): equitable dominance, ES, DYN, EW, AEW.

The oracle of every property test is written here, independently of the modules: an instance
is turned into explicit job lists (owner, size) per machine, schedules are explicit
permutations of those lists, and sets of optimal points are found by an O(m²) comparison.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridemu.brokers.scheduling_game import equitable as eq_mod
from gridemu.brokers.scheduling_game.dedicated import (
    FIGURE_3_5,
    DedicatedInstance,
    completion_sums,
    constrained_equitable,
    constraint_check,
    exhaustive_search,
    machine_sums,
    min_max,
    min_sum,
    mjf_grid,
    payoffs,
    price_of_anarchy_instance,
    schedule_count,
    scores,
    spt_grid,
    spt_schedules,
)
from gridemu.brokers.scheduling_game.equitable import (
    cumulative_ordered,
    equitably_dominates,
    equitably_optimal_subset,
    pareto_dominates,
    pareto_optimal_subset,
)
from gridemu.brokers.scheduling_game.search import adjusted_equitable_walk, dynamic_programming, equitable_walk
from gridemu.scenarios import dedicated as workloads

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ the oracle
def dominated(a, b) -> bool:
    """b ≺_P a, written out (Definition 1.3)."""
    return all(x <= y for x, y in zip(b, a)) and any(x < y for x, y in zip(b, a))


def theta(y) -> tuple:
    return tuple(itertools.accumulate(sorted(y, reverse=True)))


def brute_pareto(points) -> set[int]:
    pts = [tuple(p) for p in points]
    return {i for i, p in enumerate(pts) if not any(dominated(p, q) for q in pts)}


def brute_equitable(points) -> set[int]:
    return brute_pareto([theta(p) for p in points])


def job_lists(instance: DedicatedInstance) -> list[list[tuple[int, int]]]:
    """Every machine's jobs as (owner, size), in no particular order."""
    n = instance.n_orgs
    return [[(k, p) for k in range(n) for p in instance.sizes[k][l]] for l in range(n)]


def evaluate(n: int, perms) -> tuple:
    """C_k of explicit per-machine permutations of (owner, size) jobs."""
    c = [0] * n
    for perm in perms:
        t = 0
        for k, p in perm:
            t += p
            c[k] += t
    return tuple(c)


def explicit(instance: DedicatedInstance, grid) -> list[list[tuple[int, int]]]:
    """An owner-sequence grid as explicit jobs: the i-th occurrence of k is k's i-th shortest."""
    out = []
    for l, sched in enumerate(grid):
        left = {k: sorted(instance.sizes[k][l]) for k in range(instance.n_orgs)}
        out.append([(k, left[k].pop(0)) for k in sched])
    return out


def all_grids(instance: DedicatedInstance):
    """Every grid of explicit permutations (not only SPT ones) with its costs."""
    per_machine = [sorted(set(itertools.permutations(jobs))) for jobs in job_lists(instance)]
    for combo in itertools.product(*per_machine):
        yield combo, evaluate(instance.n_orgs, combo)


@st.composite
def tiny_instances(draw, orgs=(2, 3)):
    n = draw(st.sampled_from(orgs))
    per_machine = 4 if n == 2 else 3
    sizes = [[[] for _ in range(n)] for _ in range(n)]
    for l in range(n):
        count = draw(st.integers(0, per_machine))
        for _ in range(count):
            sizes[draw(st.integers(0, n - 1))][l].append(draw(st.integers(1, 4)))
    return DedicatedInstance.of(sizes)


# ------------------------------------------------------------- Definition 1.8 and Theorem 1.1
def test_the_texts_examples_of_equitable_dominance():
    assert not equitably_dominates([2, 1], [1, 2]) and not equitably_dominates([1, 2], [2, 1])  # anonymity
    assert equitably_dominates([2, 1], [2, 2])  # monotony
    assert equitably_dominates([2, 1], [3, 0.5])  # transfers
    assert cumulative_ordered([1, 3, 2]).tolist() == [3, 5, 6]
    assert cumulative_ordered(np.array([[1, 3], [4, 0]])).tolist() == [[3, 4], [4, 4]]


vectors = st.lists(st.integers(-20, 20), min_size=1, max_size=6)


@FAST
@given(vectors, st.randoms(use_true_random=False))
def test_anonymity_and_irreflexivity(y, rnd):
    perm = list(y)
    rnd.shuffle(perm)
    assert not equitably_dominates(perm, y) and not equitably_dominates(y, perm)


@FAST
@given(vectors, st.lists(st.integers(0, 5), min_size=6, max_size=6), st.integers(0, 5))
def test_monotony(y, drops, at):
    better = [v - d for v, d in zip(y, drops)]
    better[at % len(y)] -= 1
    assert pareto_dominates(better, y) and equitably_dominates(better, y)
    assert not equitably_dominates(y, better)  # asymmetry


@FAST
@given(st.lists(st.integers(-20, 20), min_size=2, max_size=6), st.integers(0, 5), st.integers(0, 5), st.data())
def test_principle_of_transfers(y, i, j, data):
    i, j = i % len(y), j % len(y)
    if y[i] - y[j] < 2:
        return
    eps = data.draw(st.integers(1, y[i] - y[j] - 1))
    moved = list(y)
    moved[i] -= eps
    moved[j] += eps
    assert equitably_dominates(moved, y) and not equitably_dominates(y, moved)


@FAST
@given(st.integers(1, 5), st.integers(0, 60), st.integers(1, 6), st.integers(0, 2**31))
def test_optimal_subsets_match_the_oracle(n, m, spread, seed):
    pts = np.random.default_rng(seed).integers(0, spread + 1, size=(m, n))
    assert set(pareto_optimal_subset(pts).tolist()) == brute_pareto(pts)
    assert set(equitably_optimal_subset(pts).tolist()) == brute_equitable(pts)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_optimal_subsets_over_many_blocks(monkeypatch, n):
    # a small chunk forces many blocks and many front chunks in the N >= 3 filter
    monkeypatch.setattr(eq_mod, "_CHUNK", 700)
    pts = np.random.default_rng(n).integers(0, 30, size=(1500, n))
    a = pts[:, None, :]
    b = pts[None, :, :]
    dom = np.all(b <= a, axis=2) & np.any(b < a, axis=2)  # dom[i, q]: q dominates i
    assert set(pareto_optimal_subset(pts).tolist()) == set(np.flatnonzero(~dom.any(axis=1)).tolist())


def test_two_criteria_sweep_on_many_points():
    pts = np.random.default_rng(5).integers(0, 2000, size=(300_000, 2))
    got = pareto_optimal_subset(pts)
    # the front of a 2-d set is a staircase: sorted by x, y strictly decreases (ties kept)
    front = pts[got]
    best = {}
    for x, y in pts.tolist():
        best[x] = min(best.get(x, y), y)
    stair, low = set(), math.inf
    for x in sorted(best):
        if best[x] < low:
            stair.add((x, best[x]))
            low = best[x]
    assert {tuple(p) for p in front.tolist()} == stair
    assert len(got) == sum(1 for p in pts.tolist() if tuple(p) in stair)


# ------------------------------------------------------------------------- the text's examples
def test_proposition_3_3_example_before_it():
    inst = DedicatedInstance.of([[(1, 3, 5), ()], [(2, 4), ()]])
    worse, better = (1, 0, 0, 0, 1), (0, 0, 1, 1, 0)  # (J21 J11 J11' J11'' J21'), ...
    assert machine_sums(inst, 0, worse).tolist() == [20, 17]
    assert machine_sums(inst, 0, better).tolist() == [20, 16]
    assert pareto_dominates([20, 16], [20, 17])
    assert evaluate(2, explicit(inst, (worse, ()))) == (20, 17)


def test_figure_3_4_and_proposition_3_7():
    inst = DedicatedInstance.of([[(1, 1), (1,)], [(1,), (10,)]])
    p1, p2, m2 = (0, 0, 1), (0, 1, 0), (0, 1)
    assert machine_sums(inst, 0, p1).tolist() == [3, 3] and machine_sums(inst, 0, p2).tolist() == [4, 2]
    assert equitably_dominates([3, 3], [4, 2])
    assert completion_sums(inst, (p1, m2)).tolist() == [4, 14] and completion_sums(inst, (p2, m2)).tolist() == [5, 13]
    assert equitably_dominates([5, 13], [4, 14])
    # hence DYN filters partial schedules by Pareto dominance only: it keeps both
    pareto = dynamic_programming(inst).extra["pareto"]
    assert {(p1, m2), (p2, m2)} <= set(pareto.schedules)


def test_the_equitable_walk_example_after_algorithm_3_6():
    inst = DedicatedInstance.of([[(1, 2), ()], [(1, 2), ()]])
    es = exhaustive_search(inst)
    assert sorted(map(tuple, es.costs.tolist())) == [(6, 7), (7, 6)]
    assert set(es.schedules) == {((0, 1, 1, 0), ()), ((1, 0, 0, 1), ())}
    start = ((1, 0, 1, 0), ())  # (J21, J11, J21', J11'): [8, 5]
    assert completion_sums(inst, start).tolist() == [8, 5]
    # The text: EW advances J11' to [6, 7], then the only move of O_2 returns to the start,
    # "already visited": EW stops with [6, 7] alone. Two candidates tie at θ̄ = [7, 13]; the
    # text takes the later (J11'), which later_ties=True does.
    text = equitable_walk(inst, later_ties=True, start=start)
    assert text.schedules == (((1, 0, 0, 1), ()),) and text.costs.tolist() == [[6, 7]]
    assert text.extra["visited"] == 2 and text.extra["finished"]
    # Line 19 as printed keeps the first of the tie (J11, [7, 6]); the walk then goes on
    # through [5, 8] to [6, 7] and finds both equitable schedules.
    printed = equitable_walk(inst, start=start)
    assert set(printed.schedules) == set(es.schedules) and printed.extra["visited"] == 4
    # from our SPT (ties by owner id: O_1 first) the walk is the mirror image
    assert spt_grid(inst) == ((0, 1, 0, 1), ())
    assert set(equitable_walk(inst).schedules) == set(es.schedules)


def oracle_pareto_vectors(inst: DedicatedInstance) -> set[tuple]:
    vecs = {c for _, c in all_grids(inst)}
    vl = list(vecs)
    return {vl[i] for i in brute_pareto(vl)}


TABLE_3_3_ALL = {3: 20, 4: 70, 5: 252, 6: 924, 7: 3432, 8: 12870}
TABLE_3_3_PARETO = {3: 16, 4: 44, 5: 116, 6: 278, 7: 620, 8: 1324}
#: Ours: the Pareto-optimal grid schedules; every one has its own outcome vector, so the count
#: of schedules and of distinct vectors agree. Only n = 3 matches the printed column.
PARETO_COUNTS = {3: 16, 4: 38, 5: 84, 6: 178, 7: 368, 8: 750}


@pytest.mark.parametrize("n", range(3, 9))
def test_table_3_3_exponential_instances(n):
    inst = DedicatedInstance.of(workloads.exponential_instance(n))
    es = exhaustive_search(inst, pareto=True)
    dyn = dynamic_programming(inst)
    assert es.extra["all"] == schedule_count(inst) == TABLE_3_3_ALL[n] == math.comb(2 * n, n)
    pareto = dyn.extra["pareto"]
    assert len(pareto) == len(es.extra["pareto"]) == PARETO_COUNTS[n]
    assert len({tuple(c) for c in pareto.costs.tolist()}) == len(pareto)
    assert (len(pareto) == TABLE_3_3_PARETO[n]) == (n == 3)
    # Proposition 3.3: the 2^n SPT-regardless-of-owner schedules give [LB + x, LB + 2^n - 1 - x]
    lb = completion_sums(inst, spt_grid(inst))[0]  # SPT, O_1 first in every pair
    stair = {(lb + x, lb + 2**n - 1 - x) for x in range(2**n)}
    assert stair <= {tuple(c) for c in pareto.costs.tolist()}
    if n <= 4:  # against all 8! permutations
        assert {tuple(c) for c in pareto.costs.tolist()} == oracle_pareto_vectors(inst)


def figure_3_5_search(spt=(16, 13), mjf=(41, 8)) -> list:
    """Every 2-organization instance with C(SPT) = ``spt`` and C(MJF) = ``mjf``. Complete:
    O_1's sizes add up to at most C_1(SPT), O_2's to at most C_2(MJF) (each job's completion
    time is at least its size). SPT ties go by owner id, as in spt_grid."""

    def multisets(total):
        out = [()]

        def rec(prefix, left, lo):
            for p in range(lo, left + 1):
                out.append(prefix + (p,))
                rec(prefix + (p,), left - p, p)

        rec((), total, 1)
        return out

    def sums(a, b, first):
        jobs = [(p, 0) for p in a] + [(p, 1) for p in b]
        res = []
        for f in (None, first):
            t, c = 0, [0, 0]
            for p, k in sorted(jobs, key=lambda j: (j[1] != f, j[0], j[1])):
                t += p
                c[k] += t
            res.append(tuple(c))
        return tuple(res)

    cfgs = [(a, b) for a in multisets(spt[0]) for b in multisets(mjf[1])]
    by_m2: dict = {}
    for a, b in cfgs:
        by_m2.setdefault(sums(a, b, 1), []).append((a, b))
    found = []
    for a, b in cfgs:
        (s1, m1) = sums(a, b, 0)
        need = ((spt[0] - s1[0], spt[1] - s1[1]), (mjf[0] - m1[0], mjf[1] - m1[1]))
        for c, d in by_m2.get(need, []):
            if sum(a) + sum(c) <= spt[0] and sum(b) + sum(d) <= mjf[1]:
                found.append(DedicatedInstance.of([[a, c], [b, d]]))
    return found


def test_figure_3_5_reconstructed():
    assert completion_sums(FIGURE_3_5, spt_grid(FIGURE_3_5)).tolist() == [16, 13]
    assert completion_sums(FIGURE_3_5, mjf_grid(FIGURE_3_5)).tolist() == [41, 8]
    assert payoffs(FIGURE_3_5, spt_grid(FIGURE_3_5)).tolist() == [25, -5]  # SPT is not feasible
    assert figure_3_5_search() == [FIGURE_3_5]


@pytest.mark.parametrize("n", [1, 2, 5, 10])
def test_figure_3_6_price_of_anarchy(n):
    def poa(p, eps):
        inst = price_of_anarchy_instance(n, p, eps)
        return completion_sums(inst, mjf_grid(inst)).sum() / completion_sums(inst, spt_grid(inst)).sum()

    assert poa(1.0, 1e-9) == pytest.approx(n + 1, rel=1e-6)
    tri = n * (n + 1) / 2
    assert poa(10, 1) == pytest.approx(((n + 1) * 10 + tri) / (tri + n + 10))  # the proof's formulas
    assert poa(1.0, 1e-3) < poa(1.0, 1e-6) < n + 1


# ---------------------------------------------------------------------- properties, tiny instances
@FAST
@given(tiny_instances())
def test_es_and_dyn_agree_and_match_all_permutations(inst):
    es = exhaustive_search(inst, pareto=True)
    dyn = dynamic_programming(inst)
    assert set(es.schedules) == set(dyn.schedules)
    assert set(es.extra["pareto"].schedules) == set(dyn.extra["pareto"].schedules)
    for sol in (es, dyn, dyn.extra["pareto"]):
        for grid, c in zip(sol.schedules, sol.costs.tolist()):
            assert evaluate(inst.n_orgs, explicit(inst, grid)) == tuple(c)
    # Proposition 3.1: optimizing over every permutation gives the same optimal vectors
    every = [c for _, c in all_grids(inst)]
    assert {every[i] for i in brute_equitable(every)} == {tuple(c) for c in es.costs.tolist()}
    assert {every[i] for i in brute_pareto(every)} == {tuple(c) for c in dyn.extra["pareto"].costs.tolist()}
    assert es.extra["all"] == schedule_count(inst) == math.prod(len(spt_schedules(inst, l)) for l in range(inst.n_orgs))


@FAST
@given(tiny_instances(), st.booleans())
def test_walks_return_valid_mutually_equitable_spt_schedules(inst, later):
    spt_sets = [set(spt_schedules(inst, l)) for l in range(inst.n_orgs)]
    mjf = np.array(evaluate(inst.n_orgs, explicit(inst, mjf_grid(inst))))
    for walk, sign in ((equitable_walk, 1), (adjusted_equitable_walk, -1)):
        got = walk(inst, later_ties=later)
        assert got.extra["finished"] and len(got) >= 1
        for grid, c in zip(got.schedules, got.costs.tolist()):
            assert all(s in spt_sets[l] for l, s in enumerate(grid))
            assert evaluate(inst.n_orgs, explicit(inst, grid)) == tuple(c)
        vecs = [tuple(v) for v in (got.costs if sign == 1 else got.costs - mjf).tolist()]
        assert brute_equitable(vecs) == set(range(len(vecs)))  # none dominates another
    # EW starts at SPT, so its min-sum solution has SPT's ΣC (section 3.7.3)
    ew = equitable_walk(inst)
    assert ew.costs[min_sum(ew.costs)].sum() == completion_sums(inst, spt_grid(inst)).sum()


@FAST
@given(tiny_instances())
def test_spt_minimizes_the_sum_corollary_3_4(inst):
    best = min(sum(c) for _, c in all_grids(inst))
    assert completion_sums(inst, spt_grid(inst)).sum() == best
    assert evaluate(inst.n_orgs, explicit(inst, spt_grid(inst))) == tuple(
        completion_sums(inst, spt_grid(inst)).tolist()
    )


def local_first(jobs: list[tuple[int, int]], me: int) -> bool:
    seen_foreign = False
    for k, _ in jobs:
        if k != me:
            seen_foreign = True
        elif seen_foreign:
            return False
    return True


def owner_spt(perm) -> bool:
    """Each owner's jobs in non-decreasing size (Definition 3.1's strategies, Proposition 3.1)."""
    last: dict = {}
    for k, p in perm:
        if p < last.get(k, 0):
            return False
        last[k] = p
    return True


@FAST
@given(tiny_instances())
def test_mjf_is_the_nash_equilibrium_proposition_3_8(inst):
    n = inst.n_orgs
    mjf = explicit(inst, mjf_grid(inst))
    mjf_c = evaluate(n, mjf)
    for combo, c in itertools.islice(all_grids(inst), 60):
        for k in range(n):
            # a player deviating to MJF on its own machine never lowers its payoff
            assert evaluate(n, combo[:k] + (tuple(mjf[k]),) + combo[k + 1 :])[k] <= c[k]
    # pure equilibria over Definition 3.1's strategies (SPT orders of each machine's jobs):
    # no player gains by reordering its own machine. They are the grids that run every owner's
    # jobs first: for N = 2 that is MJF alone; for N > 2 the order of the foreign jobs is free
    # (the owner is indifferent to it), so "the only" holds up to that order.
    perms = [[p for p in sorted(set(itertools.permutations(jobs))) if owner_spt(p)] for jobs in job_lists(inst)]
    for combo in itertools.product(*perms):
        c = evaluate(n, combo)
        best = [min(evaluate(n, combo[:k] + (p,) + combo[k + 1 :])[k] for p in perms[k]) for k in range(n)]
        nash = all(c[k] == best[k] for k in range(n))
        assert nash == all(local_first(list(combo[k]), k) for k in range(n))
        if nash and n == 2:
            assert c == mjf_c
    assert payoffs(inst, mjf_grid(inst)).tolist() == [0] * n


def partition_reduction(a: list[int]) -> tuple[bool, bool]:
    """(a feasible RGS schedule exists under Algorithm 3.1, the Partition instance is a yes)."""
    a = sorted(a)
    n, s = len(a), sum(a)
    q = 1.5 * s + 2 * sum((n - i) * a[i - 1] for i in range(1, n + 1))
    inst = DedicatedInstance.of([[a, ()], [a, ()]])
    feasible = any(constraint_check([a, a], sched, [q, q]) for sched in spt_schedules(inst, 0))
    return feasible, any(2 * sum(c) == s for r in range(n + 1) for c in itertools.combinations(a, r))


def test_the_reduction_needs_distinct_elements():
    # Lemma 3.3 pairs J_{1,1}^i with J_{2,1}^i; with equal elements an SPT schedule may run both
    # of O_1's unit jobs before O_2's, which no pair order gives: {1, 1, 4} has no partition,
    # yet (J_{1,1}^1, J_{1,1}^2, J_{2,1}^1, J_{2,1}^2, J_{2,1}^3, J_{1,1}^3) reaches C_1 = C_2 = T/2 = 15,
    # so the proof of Theorem 3.1 holds for Partition instances of distinct elements.
    assert partition_reduction([1, 1, 4]) == (True, False)
    inst = DedicatedInstance.of([[(1, 1, 4), ()], [(1, 1, 4), ()]])
    assert machine_sums(inst, 0, (0, 0, 1, 1, 1, 0)).tolist() == [15, 15]


@FAST
@given(st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True))
def test_algorithm_3_1_decides_the_partition_reduction_theorem_3_1(a):
    feasible, partition = partition_reduction(a)
    assert feasible == partition
    # any permutation: jobs of O_k given in the order they run
    assert constraint_check([[3, 1], [2]], (0, 1, 0), [9, 5]) and not constraint_check([[3, 1], [2]], (0, 1, 0), [8, 5])


# ------------------------------------------------------------------- scores and workloads
def test_scores_and_choosers():
    assert scores([8, 12], [10, 20]) == pytest.approx((1 - 20 / 30, 1 - 12 / 20))
    costs = np.array([[12, 7], [13, 6], [11, 11], [9, 11]])
    assert min_sum(costs) == 0 and min_max(costs) == 3  # ΣC ties broken by max C, and back
    mjf = np.array([12, 12])  # u = [0, 5], [-1, 6], [1, 1], [3, 1]
    assert min_sum(costs, mjf) == 0 and min_max(costs, mjf) == 3  # min u ties (rows 2, 3) broken by Σu
    assert min_sum(np.array([[13, 1]]), mjf) is None and min_max(costs[:0]) is None
    inst = FIGURE_3_5
    pareto = dynamic_programming(inst).extra["pareto"]
    cons = constrained_equitable(pareto, completion_sums(inst, mjf_grid(inst)))
    assert len(cons) and np.all(completion_sums(inst, mjf_grid(inst)) - cons.costs >= 0)


def test_random_instances():
    rng = np.random.default_rng(0)
    first = Counter()
    for _ in range(3000):
        inst = DedicatedInstance.of(workloads.random_instance(rng, 2, 5, 10))
        for l in range(2):
            assert inst.jobs_on(l) == 5
            first[inst.counts(l)[0]] += 1
        assert all(1 <= p <= 10 for row in inst.sizes for jobs in row for p in jobs)
    assert set(first) == set(range(6)) and all(abs(v - 1000) < 150 for v in first.values())
    three = Counter(DedicatedInstance.of(workloads.random_instance(rng, 3, 2, 5)).counts(0) for _ in range(3000))
    assert len(three) == 6 and all(abs(v - 500) < 100 for v in three.values())  # C(4, 2) compositions
    small = workloads.SMALL
    assert small.instance(2, 8, 5, 3) == small.instance(2, 8, 5, 3) != small.instance(2, 8, 5, 4)
    assert len(small.cells()) == 20 and len(workloads.SMALL_3.cells()) == 3 and len(workloads.LARGE.cells()) == 28
    assert workloads.exponential_instance(3) == (((1, 2, 4), ()), ((1, 2, 4), ()))
