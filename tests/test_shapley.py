"""Shapley-fair scheduling (brokers/directcontr/): ψ_sp, the Shapley value, REF, RAND(N), DIRECTCONTR, baselines.

Hand-made instances with schedules worked out on paper (the comments give the arithmetic);
REF against a brute-force Shapley value of separately simulated subcoalitions and against a
literal time-stepped Algorithm 1 ([L]: time outside, coalitions inside); RAND against a
time-stepped Algorithm 3 and against REF as N grows; and properties every policy must have
(greedy, submission order, one job per processor).
Processor 0 belongs to organization 0 and processor 1 to organization 1 wherever procs = [1, 1].
"""

from __future__ import annotations

import itertools
import math
import pickle
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridemu.brokers.directcontr.coalitions import REF_LIMIT, RefTask, ref_coalition
from gridemu.brokers.directcontr.policies import POLICIES, directcontr_trace, simulate
from gridemu.brokers.directcontr.shapley_value import fairness, psi_sp, shapley
from gridemu.brokers.directcontr.simulation import Result, SJob, p_tot

# ------------------------------------------------------------------------------ helpers


def sub_instance(jobs, procs, coalition):
    """The jobs and processors of ``coalition`` alone, organizations renumbered 0.. in order."""
    members = sorted(coalition)
    pos = {u: i for i, u in enumerate(members)}
    return [SJob(j.id, pos[j.org], j.release, j.size) for j in jobs if j.org in pos], [procs[u] for u in members]


def brute_value(jobs, procs, t_end):
    """v(C) at t_end: simulate REF on C's jobs and processors alone and sum ψ_sp."""

    def value(coalition):
        if not coalition:
            return 0.0
        sj, sp = sub_instance(jobs, procs, coalition)
        return sum(simulate(sj, sp, "ref", t_end).psi)

    return value


def org_psi(jobs, start, u, t):
    return psi_sp([(start[j.id], j.size) for j in jobs if j.org == u and j.id in start and start[j.id] < t], t)


def check_schedule(jobs, procs, res: Result, t_end):
    """Greedy, submission order per organization, release respected, one job per processor at a time."""
    M = sum(procs)
    by_org = {}
    for j in sorted(jobs, key=lambda j: (j.release, j.id)):
        by_org.setdefault(j.org, []).append(j)
    for j in jobs:
        if j.id in res.start:
            assert j.release <= res.start[j.id] < t_end
            assert 0 <= res.machine[j.id] < M
    for lst in by_org.values():  # submission order: started jobs form a prefix, starts nondecreasing
        started = [j for j in lst if j.id in res.start]
        assert started == lst[: len(started)]
        assert [res.start[j.id] for j in started] == sorted(res.start[j.id] for j in started)
    spans = {}
    for j in jobs:
        if j.id in res.start:
            spans.setdefault(res.machine[j.id], []).append((res.start[j.id], res.start[j.id] + j.size))
    for sp in spans.values():
        sp.sort()
        assert all(a[1] <= b[0] for a, b in zip(sp, sp[1:]))
    size = {j.id: j.size for j in jobs}
    for tau in range(t_end):  # greedy: a released job waits only while every processor is busy
        busy = sum(1 for jid, s in res.start.items() if s <= tau < s + size[jid])
        heads = [next((j for j in lst if res.start.get(j.id, t_end) > tau), None) for lst in by_org.values()]
        if any(h is not None and h.release <= tau for h in heads):
            assert busy == M, (tau, busy)


def exact_shapley(v, players):
    """Shapley value by averaging over all orderings, in fractions (v: frozenset -> Fraction)."""
    out = {u: Fraction(0) for u in players}
    perms = list(itertools.permutations(players))
    for perm in perms:
        before = frozenset()
        for u in perm:
            out[u] += v(before | {u}) - v(before)
            before = before | {u}
    return {u: x / len(perms) for u, x in out.items()}


def stepped(jobs, procs, members, t_end, rank):
    """A literal time-stepped greedy scheduler of ``members``: at every integer t < t_end the free
    processors (ascending) take the first released waiting job of the organization that
    ``rank(t, sched, waiting)`` puts first (the ranking is fixed for the time moment)."""
    first = [sum(procs[:u]) for u in range(len(procs))]
    my_procs = [g for u in sorted(members) for g in range(first[u], first[u] + procs[u])]
    queues = {u: sorted((j for j in jobs if j.org == u), key=lambda j: (j.release, j.id)) for u in members}
    size = {j.id: j.size for j in jobs}
    sched = {}  # job id -> (start, processor)
    for t in range(t_end):
        busy = {m for jid, (s, m) in sched.items() if s <= t < s + size[jid]}
        free = [m for m in my_procs if m not in busy]
        for m in free:
            nxt = {u: next((j for j in queues[u] if j.id not in sched), None) for u in sorted(members)}
            waiting = [u for u in sorted(members) if nxt[u] is not None and nxt[u].release <= t]
            if not waiting:
                break
            sched[nxt[rank(t, sched, waiting)].id] = (t, m)
    return sched


def psi_of(jobs, sched, u, t):
    """ψ_sp at t of u's jobs in ``sched`` (job id -> (start, processor)), as a fraction."""
    pairs = [(sched[j.id][0], j.size) for j in jobs if j.org == u and j.id in sched and sched[j.id][0] < t]
    return Fraction(psi_sp(pairs, t))


def naive_ref(jobs, procs, t_end):
    """[L] Algorithm 1 with Algorithm 2 as printed: time outside, coalitions by size inside;
    φ from the values at t of the (partial) schedules of all subcoalitions, in fractions."""
    k = len(procs)
    coalitions = [frozenset(c) for r in range(1, k + 1) for c in itertools.combinations(range(k), r)]
    scheds = {c: {} for c in coalitions}
    first = [sum(procs[:u]) for u in range(k)]
    size = {j.id: j.size for j in jobs}
    queues = {u: sorted((j for j in jobs if j.org == u), key=lambda j: (j.release, j.id)) for u in range(k)}
    for t in range(t_end):
        for c in coalitions:
            sched = scheds[c]

            def v(sub):
                return sum((psi_of(jobs, scheds[sub], u, t) for u in sub), Fraction(0)) if sub else Fraction(0)

            phi = exact_shapley(v, sorted(c))
            psi = {u: psi_of(jobs, sched, u, t) for u in c}
            order = sorted(c, key=lambda u: (-(phi[u] - psi[u]), u))
            busy = {m for jid, (s, m) in sched.items() if s <= t < s + size[jid]}
            free = [g for u in sorted(c) for g in range(first[u], first[u] + procs[u]) if g not in busy]
            for m in free:
                nxt = {u: next((j for j in queues[u] if j.id not in sched), None) for u in order}
                ready = [u for u in order if nxt[u] is not None and nxt[u].release <= t]
                if not ready:
                    break
                sched[nxt[ready[0]].id] = (t, m)
    return scheds[frozenset(range(k))]


def naive_rand(jobs, procs, t_end, n, seed):
    """RAND(N) time-stepped: the same N orderings, FCFS schedules of the sampled coalitions."""
    k = len(procs)
    rng = np.random.default_rng(seed)
    samples = {u: [] for u in range(k)}
    for _ in range(n):
        before = []
        for u in [int(x) for x in rng.permutation(k)]:
            samples[u].append(frozenset(before))
            before.append(u)
    fcfs = {}

    def fcfs_rank(t, sched, waiting):  # the waiting organization whose next job is first by (release, id)
        return min(waiting, key=lambda u: min((j.release, j.id) for j in jobs if j.org == u and j.id not in sched))

    def value(c, t):
        if not c:
            return Fraction(0)
        if c not in fcfs:
            fcfs[c] = stepped(jobs, procs, c, t_end, fcfs_rank)
        return sum((psi_of(jobs, fcfs[c], u, t) for u in c), Fraction(0))

    def phi(u, t):
        return sum((value(p | {u}, t) - value(p, t) for p in samples[u]), Fraction(0)) / n

    cache = {}

    def rank(t, sched, waiting):
        if t not in cache:
            cache[t] = {u: phi(u, t) - psi_of(jobs, sched, u, t) for u in range(k)}
        return min(waiting, key=lambda u: (-cache[t][u], u))

    return stepped(jobs, procs, frozenset(range(k)), t_end, rank), [float(phi(u, t_end)) for u in range(k)]


instances = st.integers(1, 3).flatmap(
    lambda k: st.tuples(
        st.lists(st.integers(1, 2), min_size=k, max_size=k),
        st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, 6), st.integers(1, 4)), max_size=10),
        st.integers(0, 16),
    )
)


def make_jobs(rows):
    return [SJob(i, org, r, p) for i, (org, r, p) in enumerate(rows)]


# -------------------------------------------------------------------------------- ψ_sp


def test_psi_sp_one_completed_job_by_hand():
    # (s=0, p=2) at t=2: 2·(2 − (0 + 1)/2) = 3; at t=5: 2·(5 − 1/2) = 9 (unit parts 5 + 4)
    assert psi_sp([(0, 2)], 2) == 3
    assert psi_sp([(0, 2)], 5) == 9


def test_psi_sp_running_job_counts_its_completed_parts():
    # (s=1, p=10) at t=3 is running: p' = t − s = 2, 2·(3 − (1 + 2)/2) = 3, as a completed (1, 2)
    assert psi_sp([(1, 10)], 3) == 3 == psi_sp([(1, 2)], 3) == psi_sp([(1, None)], 3)
    # p unknown (None) is also read p = t − s
    assert psi_sp([(0, None)], 4) == psi_sp([(0, 4)], 4) == 4 * (4 - 1.5)


def test_psi_sp_excludes_later_starts_and_zero_at_start():
    assert psi_sp([(0, 2), (3, 1)], 2) == 3
    assert psi_sp([(2, 4)], 2) == 0  # starts at t: contributes 0
    assert psi_sp([], 7) == 0


def test_psi_sp_split_job_is_strategy_resilient():
    # Section 3.2: one job (0, 2) vs two jobs (0, 1), (1, 1) back to back. Flow time 2 vs 1 + 2 = 3,
    # ψ_sp equal: 1·(2 − 0) + 1·(2 − 1) = 3 at t=2.
    for t in (1, 2, 3, 10):
        assert psi_sp([(0, 2)], t) == psi_sp([(0, 1), (1, 1)], t)
    assert psi_sp([(0, 1), (1, 1)], 2) == 3
    # merging three parts of a longer job, with a gap before it
    for t in range(0, 12):
        assert psi_sp([(4, 5)], t) == psi_sp([(4, 2), (6, 1), (7, 2)], t)


def test_psi_sp_bad_pair_named():
    with pytest.raises(ValueError, match=r"pairs\[1\]"):
        psi_sp([(0, 1), (0, -2)], 3)
    with pytest.raises(ValueError, match=r"^t:"):
        psi_sp([(0, 1)], float("nan"))


# ------------------------------------------------------------------------------ Shapley


def shapley_by_permutations(v, players):
    out = {u: 0.0 for u in players}
    perms = list(itertools.permutations(players))
    for perm in perms:
        before = frozenset()
        for u in perm:
            out[u] += v[before | {u}] - v[before]
            before = before | {u}
    return {u: x / len(perms) for u, x in out.items()}


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 5).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.integers(-50, 50), min_size=2**n, max_size=2**n))
    )
)
def test_shapley_equals_permutation_average(game):
    n, values = game
    players = list(range(10, 10 + n))  # labels need not be 0..n-1
    subsets = [frozenset(c) for r in range(n + 1) for c in itertools.combinations(players, r)]
    v = {s: float(x) for s, x in zip(subsets, values)}
    v[frozenset()] = 0.0
    got = shapley(lambda s: v[s], players)
    want = shapley_by_permutations(v, players)
    assert got.keys() == want.keys()
    for u in players:
        assert got[u] == pytest.approx(want[u], abs=1e-9)
    assert sum(got.values()) == pytest.approx(v[frozenset(players)], abs=1e-9)  # efficiency


def test_shapley_needs_empty_value_zero():
    with pytest.raises(ValueError, match="value"):
        shapley(lambda s: 1.0, [0, 1])


# ----------------------------------------------------------------------------------- REF

REF_JOBS = [SJob(0, 0, 0, 3), SJob(1, 0, 0, 3), SJob(2, 0, 1, 1), SJob(3, 1, 1, 1), SJob(4, 1, 1, 1)]


def test_ref_by_hand():
    # procs [1, 1]; org 0: a1 = job 0 (r0, p3), a2 = job 1 (r0, p3), a3 = job 2 (r1, p1);
    # org 1: b1 = job 3 (r1, p1), b2 = job 4 (r1, p1). t_end = 6.
    # σ[{0}] (processor 0 only): a1 0..3, a2 3..6 (a3 not started before 6).
    # σ[{1}] (processor 1 only): b1 1..2, b2 2..3.
    # σ[{0,1}]: t=0: every v is 0, φ − ψ = 0 for both; org 0 (lowest index) fills both
    #   processors (a job started at t adds 0 to ψ_sp at t, so the ranking holds through the
    #   event): a1 on 0, a2 on 1. t=1: a3, b1, b2 released, nothing free.
    #   t=3: a1, a2 complete. v({0},3) = ψ(a1) = 3·(3 − 1) = 6; v({1},3) = 1·(3−1) + 1·(3−2) = 3;
    #   v({0,1},3) = ψ0 = 6 + 6 = 12, ψ1 = 0.
    #   φ0 = ½·6 + ½·(12 − 3) = 7.5, φ1 = ½·3 + ½·(12 − 6) = 4.5;
    #   φ − ψ = (7.5 − 12, 4.5 − 0) = (−4.5, 4.5): org 1 first, it fills both: b1 on 0, b2 on 1.
    #   t=4: b1, b2 complete: a3 on 0.
    # At 6: ψ0 = a1 3·(6−1) + a2 3·(6−1) + a3 1·(6−4) = 32, ψ1 = b1 3 + b2 3 = 6, v({0,1}) = 38;
    #   v({0}) = 15 + 3·(6 − 4) = 21, v({1}) = 5 + 4 = 9;
    #   φ0 = ½·21 + ½·(38 − 9) = 25, φ1 = ½·9 + ½·(38 − 21) = 13.
    res = simulate(REF_JOBS, [1, 1], "ref", 6)
    assert res.start == {0: 0, 1: 0, 3: 3, 4: 3, 2: 4}
    assert res.machine == {0: 0, 1: 1, 3: 0, 4: 1, 2: 0}
    assert res.psi == [32.0, 6.0]
    assert res.phi == [25.0, 13.0]
    # the subcoalitions' schedules of the comment, simulated alone
    assert simulate(*sub_instance(REF_JOBS, [1, 1], {0}), "ref", 6).start == {0: 0, 1: 3}
    assert simulate(*sub_instance(REF_JOBS, [1, 1], {1}), "ref", 6).start == {3: 1, 4: 2}
    # at t=3 the contributions were (7.5, 4.5): stop there and read φ
    assert simulate(REF_JOBS, [1, 1], "ref", 3).phi == [7.5, 4.5]


def test_ref_shapley_tie_is_not_an_equal_split():
    # procs [1, 1]; org 0: J2 (r0, p3), J3 (r2, p4); org 1: J1 (r0, p1), J0 (r2, p1). t_end = 13.
    # t=0: all φ − ψ are 0; org 0 first: J2 → processor 0; org 1: J1 → processor 1.
    # t=2: J3 and J0 released, processor 1 free. σ[{0}]: J2 0..3 → v({0}, 2) = 2·(2 − ½) = 3;
    #   σ[{1}]: J1 0..1 → v({1}, 2) = 1·(2 − 0) = 2; grand: ψ = (3, 2), v = 5.
    #   φ0 = ½·3 + ½·(5 − 2) = 3, φ1 = ½·2 + ½·(5 − 3) = 2: φ − ψ = (0, 0), a tie → org 0: J3 at 2.
    #   (Splitting v equally, v/2 − ψ = (−½, ½), would start J0 instead.) J0 starts at 3 when J2 ends.
    jobs = make_jobs([(1, 2, 1), (1, 0, 1), (0, 0, 3), (0, 2, 4)])
    res = simulate(jobs, [1, 1], "ref", 13)
    assert res.start == {2: 0, 1: 0, 3: 2, 0: 3}
    # At 3: σ[{0}]: J2 3·(3 − 1) = 6; σ[{1}]: J1 1·3 + J0 1·(3 − 2) = 4; grand: ψ0 = J2 6 + J3 (running,
    # p' = 1) 1·(3 − 2) = 7, ψ1 = J1 3, v = 10; φ0 = ½·6 + ½·(10 − 4) = 6, φ1 = ½·4 + ½·(10 − 6) = 4.
    r3 = simulate(jobs, [1, 1], "ref", 3)
    assert (r3.psi, r3.phi) == ([7.0, 3.0], [6.0, 4.0])


@settings(max_examples=40, deadline=None)
@given(instances)
def test_ref_phi_is_shapley_of_separately_simulated_subcoalitions(inst):
    procs, rows, t_end = inst
    jobs = make_jobs(rows)
    res = simulate(jobs, procs, "ref", t_end)
    want = shapley(brute_value(jobs, procs, t_end), range(len(procs)))
    assert res.phi == pytest.approx([want[u] for u in range(len(procs))], abs=1e-9)
    assert res.psi == [org_psi(jobs, res.start, u, t_end) for u in range(len(procs))]
    check_schedule(jobs, procs, res, t_end)


@settings(max_examples=80, deadline=None)
@given(instances)
def test_ref_equals_time_stepped_algorithm_1(inst):
    # The paper's loop order (time outside, coalition sizes inside, partial schedules) gives
    # the same schedule as ours (each coalition over the whole horizon, level by level).
    procs, rows, t_end = inst
    jobs = make_jobs(rows)
    res = simulate(jobs, procs, "ref", t_end)
    want = naive_ref(jobs, procs, t_end)
    assert res.start == {jid: s for jid, (s, _m) in want.items()}
    assert res.machine == {jid: m for jid, (_s, m) in want.items()}


@settings(max_examples=80, deadline=None)
@given(instances, st.integers(1, 6), st.integers(0, 20))
def test_rand_equals_time_stepped_algorithm_3(inst, n, seed):
    procs, rows, t_end = inst
    jobs = make_jobs(rows)
    res = simulate(jobs, procs, "rand", t_end, samples=n, seed=seed)
    sched, phi = naive_rand(jobs, procs, t_end, n, seed)
    assert res.start == {jid: s for jid, (s, _m) in sched.items()}
    assert res.phi == pytest.approx(phi, abs=1e-9)


@pytest.mark.parametrize(
    "procs, rows, t_end",
    [  # three organizations where the weights of the pair coalitions decide a start (found by search)
        (
            [1, 1, 1],
            [(2, 3, 5), (2, 5, 5), (0, 5, 3), (0, 0, 5), (0, 6, 4), (1, 3, 4), (0, 1, 1), (1, 4, 5), (1, 0, 2)],
            20,
        ),
        (
            [1, 1, 1],
            [
                (0, 6, 5),
                (1, 2, 4),
                (0, 1, 1),
                (2, 6, 5),
                (2, 3, 3),
                (0, 6, 1),
                (1, 1, 4),
                (0, 0, 4),
                (2, 6, 5),
                (0, 1, 5),
            ],
            10,
        ),
    ],
)
def test_ref_equals_time_stepped_algorithm_1_three_orgs(procs, rows, t_end):
    jobs = make_jobs(rows)
    res = simulate(jobs, procs, "ref", t_end)
    want = naive_ref(jobs, procs, t_end)
    assert res.start == {jid: s for jid, (s, _m) in want.items()}
    assert res.phi == pytest.approx(
        [
            float(x)
            for x in exact_shapley(
                lambda c: (
                    Fraction(sum(simulate(*sub_instance(jobs, procs, c), "ref", t_end).psi)) if c else Fraction(0)
                ),
                range(3),
            ).values()
        ]
    )


def test_ref_level_map_gets_every_coalition_size_and_pickles():
    rng = random.Random(4)
    procs = [1, 2, 1]
    jobs = [SJob(i, rng.randrange(3), rng.randint(0, 8), rng.randint(1, 4)) for i in range(14)]
    calls = []

    def counting_pickling_map(fn, items):
        items = list(items)
        calls.append(sorted(len(task.members) for task in items))
        fn2 = pickle.loads(pickle.dumps(fn))  # as a Ray-backed map would ship them
        return [pickle.loads(pickle.dumps(fn2(pickle.loads(pickle.dumps(it))))) for it in items]

    res = simulate(jobs, procs, "ref", 20, level_map=counting_pickling_map)
    assert calls == [[1, 1, 1], [2, 2, 2], [3]]
    assert res == simulate(jobs, procs, "ref", 20)
    # a task carries every non-empty proper subset of its coalition
    task_seen = []
    simulate(jobs, procs, "ref", 20, level_map=lambda fn, items: [task_seen.append(t) or fn(t) for t in items])
    grand = [t for t in task_seen if isinstance(t, RefTask) and t.members == (0, 1, 2)][0]
    assert sorted(s for s, _ in grand.subs) == [(0,), (0, 1), (0, 2), (1,), (1, 2), (2,)]
    assert ref_coalition(grand).members == (0, 1, 2)


def test_ref_is_its_own_reference_and_single_org_is_fcfs():
    res = simulate(REF_JOBS, [1, 1], "ref", 6)
    assert fairness(res.psi, res.psi, p_tot(res, REF_JOBS, 6)) == 0.0
    one = [SJob(0, 0, 0, 2), SJob(1, 0, 0, 1), SJob(2, 0, 1, 2)]
    r1 = simulate(one, [1], "ref", 9)
    assert r1.start == {0: 0, 1: 2, 2: 3} and r1.phi == r1.psi


def test_ref_shift_invariant_with_huge_times():
    # ψ_sp depends on t − s only, so shifting every release and t_end by T shifts REF's and
    # RAND's schedules by T. With T = 1e9 the exact arithmetic leaves int64 (t² > 1e18).
    rng = random.Random(2)
    procs = [1, 2, 1, 2]
    jobs = [SJob(i, rng.randrange(4), rng.randint(0, 30), rng.randint(1, 8)) for i in range(40)]
    T = 10**9
    shifted = [SJob(j.id, j.org, j.release + T, j.size) for j in jobs]
    for policy in ("ref", "rand"):
        a = simulate(jobs, procs, policy, 60, samples=7)
        b = simulate(shifted, procs, policy, 60 + T, samples=7)
        assert b.start == {i: s + T for i, s in a.start.items()}
        assert (a.psi, a.phi) == (b.psi, b.phi)


# ---------------------------------------------------------------------------------- RAND


def test_rand_converges_to_ref_on_unit_jobs():
    # Unit jobs: every greedy schedule of a coalition has the same value ([L] Prop. 5.4), so
    # RAND's estimate at t_end is an unbiased estimate of REF's φ. Mean |φ_RAND − φ_REF| over
    # 6 instances × 3 seeds shrinks about as 1/√N.
    rng = random.Random(5)
    cases = []
    for _ in range(6):
        procs = [rng.randint(1, 2) for _ in range(4)]
        jobs = [SJob(j, rng.randrange(4), rng.randint(0, 15), 1) for j in range(40)]
        cases.append((jobs, procs, simulate(jobs, procs, "ref", 20)))

    def mean_error(n):
        errs = []
        for jobs, procs, ref in cases:
            for seed in range(3):
                r = simulate(jobs, procs, "rand", 20, samples=n, seed=seed)
                errs.append(np.mean(np.abs(np.array(r.phi) - ref.phi)))
        return float(np.mean(errs))

    e1, e5, e50 = mean_error(1), mean_error(5), mean_error(50)
    scale = float(np.mean([np.mean(np.abs(ref.phi)) for _, _, ref in cases]))
    assert e1 > e5 > e50
    assert e50 < 0.3 * e1
    assert e50 < 0.01 * scale
    # and the estimate sums to the value of the grand coalition for every N (each ordering does)
    jobs, procs, ref = cases[0]
    r = simulate(jobs, procs, "rand", 20, samples=3, seed=9)
    assert sum(r.phi) == pytest.approx(sum(ref.psi))


def test_rand_is_reproducible_and_seed_matters():
    rng = random.Random(8)
    procs = [1, 1, 2]
    jobs = [SJob(i, rng.randrange(3), rng.randint(0, 10), rng.randint(1, 5)) for i in range(30)]
    a = simulate(jobs, procs, "rand", 30, samples=4, seed=1)
    assert a == simulate(jobs, procs, "rand", 30, samples=4, seed=1)
    assert any(simulate(jobs, procs, "rand", 30, samples=4, seed=s).phi != a.phi for s in range(2, 6))


# ---------------------------------------------------------------------------- DIRECTCONTR

DC_JOBS = [SJob(0, 0, 0, 3), SJob(1, 0, 1, 2), SJob(2, 1, 1, 2), SJob(3, 1, 2, 1)]


def test_directcontr_by_hand_random_order_matters():
    # procs [1, 1]: processor 0 is org 0's, processor 1 org 1's. Jobs: J0 (org 0, r0, p3),
    # J1 (org 0, r1, p2), J2 (org 1, r1, p2), J3 (org 1, r2, p1). t_end = 6.
    # seed 3: γ at t=0 is (1, 0) (default_rng(3).permutation(2)); at t=0 only J0 waits, and the
    # first free processor in γ, processor 1, gets it: org 1's processor works for org 0.
    # t=0 (d=0): nothing to account; J0 → processor 1.
    # t=1 (d=1): lines 7-8 add d·finCon = d·finUt = 0; processor 1 ran J0 in (0,1]: finUt0 = 1,
    #   finCon1 = 1, ψ0 += ½·1·2 = 1, φ1 += 1 → φ = (0, 1), ψ = (1, 0). Processor 0 free;
    #   J1 and J2 wait; φ − ψ = (−1, 1): org 1, J2 → processor 0.
    # t=2 (d=1): φ += finCon (0,1) → (0,2); ψ += finUt (1,0) → (2,0); J0 on 1: finUt0 = 2,
    #   finCon1 = 2, ψ0 = 3, φ1 = 3; J2 on 0: finUt1 = 1, finCon0 = 1, ψ1 = 1, φ0 = 1.
    # t=3 (d=1): φ += (1,2) → (2,5); ψ += (2,1) → (5,2); J0 (completes at 3) on 1: finUt0 = 3,
    #   finCon1 = 3, ψ0 = 6, φ1 = 6; J2 (completes at 3) on 0: finUt1 = 2, finCon0 = 2, ψ1 = 3,
    #   φ0 = 3. ψ_sp check: J0 (0,3) 3·(3−1) = 6, J2 (1,2) 2·(3−1.5) = 3. Both free; γ = (0, 1);
    #   φ − ψ = (3 − 6, 6 − 3): org 1 first: J3 → processor 0, then J1 → processor 1.
    # t=4 (d=1): φ += (2,3) → (5,9); ψ += (3,2) → (9,5); J3 on 0: finUt1 = 3, finCon0 = 3,
    #   ψ1 = 6, φ0 = 6; J1 on 1: finUt0 = 4, finCon1 = 4, ψ0 = 10, φ1 = 10.
    # t=5 (d=1): φ += (3,4) → (9,14); ψ += (4,3) → (14,9); J1 on 1: finUt0 = 5, finCon1 = 5,
    #   ψ0 = 15, φ1 = 15.
    # t_end=6 (d=1): φ += (3,5) → (12,20); ψ += (5,3) → (20,12). ψ_sp at 6: org 0: 3·(6−1) +
    #   2·(6−3.5) = 20; org 1: 2·(6−1.5) + 1·(6−3) = 12.
    trace = directcontr_trace(DC_JOBS, [1, 1], 6, seed=3)
    rows = [(s.t, s.gamma, s.fin_ut, s.fin_con, s.phi, s.psi, s.started) for s in trace]
    assert rows == [
        (0, (1, 0), (0, 0), (0, 0), (0, 0), (0, 0), ((0, 1),)),
        (1, (0, 1), (1, 0), (0, 1), (0, 1), (1, 0), ((2, 0),)),
        (2, (0, 1), (2, 1), (1, 2), (1, 3), (3, 1), ()),
        (3, (0, 1), (3, 2), (2, 3), (3, 6), (6, 3), ((3, 0), (1, 1))),
        (4, (1, 0), (4, 3), (3, 4), (6, 10), (10, 6), ()),
        (5, (0, 1), (5, 3), (3, 5), (9, 15), (15, 9), ()),
        (6, (), (5, 3), (3, 5), (12, 20), (20, 12), ()),
    ]
    res = simulate(DC_JOBS, [1, 1], "directcontr", 6, seed=3)
    assert res.start == {0: 0, 2: 1, 3: 3, 1: 3}
    assert res.machine == {0: 1, 2: 0, 3: 0, 1: 1}
    assert res.psi == [20.0, 12.0] and res.phi == [12.0, 20.0]
    # seed 0: γ at t=0 is (0, 1), J0 runs on org 0's own processor: at t=1 φ = ψ = (1, 0),
    # φ − ψ ties at 0 and the lowest index wins: J1 starts at 1 and J2 waits until 3.
    assert directcontr_trace(DC_JOBS, [1, 1], 6, seed=0)[0].gamma == (0, 1)
    res0 = simulate(DC_JOBS, [1, 1], "directcontr", 6, seed=0)
    assert res0.start == {0: 0, 1: 1, 2: 3, 3: 3}
    assert res0.psi == [24.0, 8.0]


@settings(max_examples=40, deadline=None)
@given(instances, st.integers(0, 50))
def test_directcontr_counters_are_psi_sp(inst, seed):
    # After every event: ψ[u] = ψ_sp of u's jobs, finUt[u] = unit parts of u's jobs done,
    # finCon[o] = those done on o's processors, φ[o] = ψ_sp of the parts done on o's processors.
    procs, rows, t_end = inst
    jobs = make_jobs(rows)
    res = simulate(jobs, procs, "directcontr", t_end, seed=seed)
    check_schedule(jobs, procs, res, t_end)
    owner = [u for u, m in enumerate(procs) for _ in range(m)]
    for state in directcontr_trace(jobs, procs, t_end, seed=seed):
        t = state.t
        k = len(procs)
        assert list(state.psi) == [org_psi(jobs, res.start, u, t) for u in range(k)]
        done = [(j, min(j.size, t - res.start[j.id])) for j in jobs if j.id in res.start and res.start[j.id] < t]
        assert list(state.fin_ut) == [sum(d for j, d in done if j.org == u) for u in range(k)]
        assert list(state.fin_con) == [sum(d for j, d in done if owner[res.machine[j.id]] == u) for u in range(k)]
        on = [[(res.start[j.id], j.size) for j, _ in done if owner[res.machine[j.id]] == u] for u in range(k)]
        assert list(state.phi) == [psi_sp(on[u], t) for u in range(k)]
    assert res.phi == [float(x) for x in directcontr_trace(jobs, procs, t_end, seed=seed)[-1].phi]


# -------------------------------------------------------------------- FAIRSHARE variants

FS_JOBS = [SJob(0, 0, 1, 2), SJob(1, 1, 1, 1), SJob(2, 0, 1, 1), SJob(3, 1, 0, 1), SJob(4, 0, 1, 1)]


def test_fairshare_variants_by_hand():
    # procs [1, 1], shares ½, ½. Org 0: J0 (r1, p2), J2 (r1, p1), J4 (r1, p1); org 1: J3 (r0, p1), J1 (r1, p1).
    # t=0: only J3 waits → processor 0. t=1: J3 done; J0, J2, J4, J1 wait; both processors free.
    # FAIRSHARE: assigned time (0, 1) → org 0 (0/½ < 1/½) keeps the lead through the event
    #   (a start adds no elapsed time at t): J0 → 0, J2 → 1. t=2: J2 done; assigned org 0 =
    #   J0's elapsed 1 + J2's 1 = 2, org 1 = 1 → J1. t=3: J0, J1 done → J4.
    fs = simulate(FS_JOBS, [1, 1], "fairshare", 8)
    assert fs.start == {3: 0, 0: 1, 2: 1, 1: 2, 4: 3}
    assert fs.machine == {3: 0, 0: 0, 2: 1, 1: 1, 4: 0}
    # UTFAIRSHARE: t=1: ψ = (0, ψ(J3 (0,1), 1) = 1) → org 0: J0, J2. t=2: ψ0 = 1·(2−1) + 1·(2−1)
    #   = 2, ψ1 = 1·(2−0) = 2: a tie, lowest index → J4. t=3: J0, J4 done → J1.
    ut = simulate(FS_JOBS, [1, 1], "utfairshare", 8)
    assert ut.start == {3: 0, 0: 1, 2: 1, 4: 2, 1: 3}
    # CURRFAIRSHARE: t=1: running (0, 0), tie → org 0: J0 → 0; now running (1, 0) → org 1:
    #   J1 → 1. t=2: J1 done; only org 0 waits → J2. t=3: J0, J2 done → J4.
    cu = simulate(FS_JOBS, [1, 1], "currfairshare", 8)
    assert cu.start == {3: 0, 0: 1, 1: 1, 2: 2, 4: 3}
    assert cu.machine == {3: 0, 0: 0, 1: 1, 2: 1, 4: 0}
    # ROUNDROBIN (pointer from 0): t=0 org 0 has nothing, org 1: J3, pointer → 0. t=1: org 0:
    #   J0 (pointer → 1), org 1: J1 (pointer → 0). t=2: J2. t=3: J4.
    assert simulate(FS_JOBS, [1, 1], "roundrobin", 8).start == {3: 0, 0: 1, 1: 1, 2: 2, 4: 3}
    # Explicit shares (1, ¼): FAIRSHARE at t=2: org 0 2/1 = 2 < org 1 1/¼ = 4 → J4, then J1 at 3.
    assert simulate(FS_JOBS, [1, 1], "fairshare", 8, shares=[1, 0.25]).start == {3: 0, 0: 1, 2: 1, 4: 2, 1: 3}


def test_default_shares_are_processor_fractions():
    rng = random.Random(11)
    procs = [1, 3]
    jobs = [SJob(i, rng.randrange(2), rng.randint(0, 6), rng.randint(1, 5)) for i in range(20)]
    for policy in ("fairshare", "utfairshare", "currfairshare"):
        assert simulate(jobs, procs, policy, 25) == simulate(jobs, procs, policy, 25, shares=[0.25, 0.75])
        assert simulate(jobs, procs, policy, 25) == simulate(jobs, procs, policy, 25, shares=[2, 6])


@settings(max_examples=25, deadline=None)
@given(instances, st.sampled_from(POLICIES))
def test_every_policy_schedules_validly(inst, policy):
    procs, rows, t_end = inst
    jobs = make_jobs(rows)
    res = simulate(jobs, procs, policy, t_end, seed=1, samples=3)
    check_schedule(jobs, procs, res, t_end)
    assert res.psi == [org_psi(jobs, res.start, u, t_end) for u in range(len(procs))]
    assert (res.phi is None) == (policy not in ("ref", "rand", "directcontr"))


# ------------------------------------------------------------------------------- fairness


def test_fairness_is_l1_over_p_tot():
    # Σ(ψ − ψ*) = 0 here; the L1 reading gives |3 − 1| + |1 − 3| = 4.
    assert fairness([3.0, 1.0], [1.0, 3.0], 8) == 0.5
    assert fairness([0.0], [0.0], 0) == 0.0
    with pytest.raises(ValueError, match="ptot"):
        fairness([1.0], [0.0], 0)
    with pytest.raises(ValueError, match="psi"):
        fairness([1.0, 2.0], [0.0], 3)


def test_p_tot_by_hand():
    # REF_JOBS at t_end=4: a1 (0,3) → 3, a2 (0,3) → 3, b1 (3,1) → 1, b2 (3,1) → 1; a3 starts at 4 → 0.
    res = simulate(REF_JOBS, [1, 1], "ref", 5)
    assert p_tot(res, REF_JOBS, 4) == 8
    # at t_end=6: 3 + 3 + 1 + 1 + 1 (a3 (4,1))
    res6 = simulate(REF_JOBS, [1, 1], "ref", 6)
    assert p_tot(res6, REF_JOBS, 6) == 9


def test_roundrobin_less_fair_than_directcontr_on_average():
    # 10 random instances (4 organizations, 1-3 processors each, 60 jobs, t_end 80):
    # mean Δψ/p_tot against REF. Observed: DIRECTCONTR ≈ 0.36, ROUNDROBIN ≈ 0.98.
    rng = random.Random(0)
    dc, rr = [], []
    for i in range(10):
        procs = [rng.randint(1, 3) for _ in range(4)]
        jobs = [SJob(j, rng.randrange(4), rng.randint(0, 40), rng.randint(1, 10)) for j in range(60)]
        ref = simulate(jobs, procs, "ref", 80)
        pt = p_tot(ref, jobs, 80)
        dc.append(fairness(simulate(jobs, procs, "directcontr", 80, seed=i).psi, ref.psi, pt))
        rr.append(fairness(simulate(jobs, procs, "roundrobin", 80).psi, ref.psi, pt))
    assert np.mean(dc) < np.mean(rr)


# --------------------------------------------------------------------------------- errors


def test_ref_refuses_more_than_ten_organizations():
    procs = [1] * (REF_LIMIT + 1)
    with pytest.raises(ValueError) as err:
        simulate([], procs, "ref", 5)
    assert str(err.value) == "policy ref: 11 organizations; REF is exponential (limit 10): use rand or directcontr"
    simulate([SJob(0, 10, 0, 1)], procs, "rand", 5, samples=2)  # the suggested policies work
    simulate([SJob(0, 10, 0, 1)], procs, "directcontr", 5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(shares=[1.0, 0.0]), r"shares\[1\]"),
        (dict(shares=[-1.0, 1.0]), r"shares\[0\]"),
        (dict(shares=[1.0]), r"shares: 1 values for 2"),
        (dict(samples=0), r"samples"),
    ],
)
def test_bad_options_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate([SJob(0, 0, 0, 1)], [1, 1], "fairshare", 5, **kwargs)


@pytest.mark.parametrize(
    "jobs, procs, policy, t_end, match",
    [
        ([SJob(7, 0, 0, 1.5)], [1], "ref", 5, r"job 7: size"),
        ([SJob(7, 0, 0.5, 1)], [1], "ref", 5, r"job 7: release"),
        ([SJob(7, 0, 0, 0)], [1], "ref", 5, r"job 7: size must be >= 1"),
        ([SJob(7, 2, 0, 1)], [1, 1], "ref", 5, r"job 7: org 2 out of range"),
        ([SJob(7, True, 0, 1)], [1, 1], "ref", 5, r"job 7: org True out of range"),
        ([SJob(7, 0, True, 1)], [1], "ref", 5, r"job 7: release"),
        ([SJob(7, 0, 0, 1), SJob(7, 0, 1, 1)], [1], "ref", 5, r"job 7: id used twice"),
        ([], [0, 1], "ref", 5, r"procs\[0\]: must be an integer >= 1"),
        ([], [1, 1.5], "ref", 5, r"procs\[1\]"),
        ([], [], "ref", 5, r"procs: at least one"),
        ([], [1], "lottery", 5, r"policy 'lottery': unknown"),
        ([], [1], "ref", -1, r"t_end"),
    ],
)
def test_bad_input_named(jobs, procs, policy, t_end, match):
    with pytest.raises(ValueError, match=match):
        simulate(jobs, procs, policy, t_end)


def test_numpy_ints_accepted_as_ints():
    plain = simulate([SJob(0, 1, 1, 2), SJob(1, 0, 0, 3)], [1, 1], "fairshare", 5)
    wrapped = simulate([SJob(0, np.int64(1), np.int64(1), np.int32(2)), SJob(1, 0, 0, 3)], [1, 1], "fairshare", 5)
    assert wrapped.start == plain.start and wrapped.machine == plain.machine and wrapped.psi == plain.psi


def test_integral_floats_accepted():
    a = simulate([SJob(0, 0, 1.0, 2.0)], [1], "fairshare", 5)
    assert a.start == {0: 1} and a.psi == [psi_sp([(1, 2)], 5)]
    assert math.isclose(a.psi[0], 2 * (5 - 1.5))


# ------------------------------------------------------------ [S] Algorithm 1 lines 15-16, two readings


def test_lines_15_16_literal_and_prose_readings_differ_where_a_job_runs_on_another_orgs_processor():
    # Org 0 owns processor 0, org 1 processor 1. Org 1's job 1 runs on processor 0 during [0, 2).
    # At t = 2 (d = 2, ½d(d+1) = 3) jobs 0 (org 0) and 2 (org 1) are released, one processor free.
    # Prose: ψ[1] += 3 (its job ran), φ[0] += 3 (its processor ran it): φ − ψ = (3, −3), org 0 first.
    # Literal (as printed): φ[1] += 3, ψ[0] += 3: φ − ψ = (−3, 3), org 1 first.
    jobs = [SJob(0, 0, 2, 4), SJob(1, 1, 0, 3), SJob(2, 1, 2, 1)]
    prose = simulate(jobs, [1, 1], "directcontr", 12, gamma="index")
    literal = simulate(jobs, [1, 1], "directcontr", 12, gamma="index", lines_15_16="literal")
    assert prose.start == {1: 0, 0: 2, 2: 3}
    assert literal.start == {1: 0, 2: 2, 0: 3}
    assert simulate(jobs, [1, 1], "directcontr", 12, gamma="index", lines_15_16="prose").start == prose.start
    with pytest.raises(ValueError, match="lines_15_16"):
        simulate(jobs, [1, 1], "directcontr", 12, lines_15_16="printed")


def test_lines_15_16_readings_agree_when_every_job_runs_on_its_own_orgs_processors():
    # One organization: owner of the job and of the processor are the same, the swap is void.
    jobs = [SJob(i, 0, i % 3, 1 + i % 4) for i in range(8)]
    a = simulate(jobs, [2], "directcontr", 20, seed=3)
    b = simulate(jobs, [2], "directcontr", 20, seed=3, lines_15_16="literal")
    assert a.start == b.start and a.psi == b.psi


# ------------------------------------------------------------------------------ warm-start windows


def test_fcfs_starts_by_hand():
    from gridemu.sites.fcfs_replay import fcfs_starts

    # two processors: 0 and 1 start at once; 2 waits for the first to free (job 1 at 2); 3 for job 0 at 5
    starts = fcfs_starts(np.array([0, 0, 1, 1]), np.array([5, 2, 4, 1]), 2)
    assert starts.tolist() == [0, 0, 2, 5]
    with pytest.raises(ValueError, match="not sorted"):
        fcfs_starts(np.array([3, 1]), np.array([1, 1]), 1)
    with pytest.raises(ValueError, match="machines"):
        fcfs_starts(np.array([0]), np.array([1]), 0)


def test_backlog_keeps_running_remainders_and_queued_jobs_at_t_start():
    from gridemu.brokers.directcontr.warm import backlog, warm_instance

    jobs = [SJob(0, 0, 0, 5), SJob(1, 1, 0, 2), SJob(2, 1, 1, 4), SJob(3, 0, 1, 1), SJob(4, 0, 6, 3)]
    start = {0: 0, 1: 0, 2: 2, 3: 5}  # FCFS on 2 processors (test above); job 4 is the window's
    warm = backlog(jobs, start, 4)
    # job 0 ran 4 of 5, job 2 ran 2 of 4, job 3 starts at 5 (queued), job 1 done, job 4 not yet released
    assert warm == [SJob(0, 0, 4, 1), SJob(2, 1, 4, 2), SJob(3, 0, 4, 1)]
    inst = warm_instance(warm, [SJob(4, 0, 6, 3)], 4)
    assert inst == [SJob(0, 0, 0, 1), SJob(2, 1, 0, 2), SJob(3, 0, 0, 1), SJob(4, 0, 2, 3)]
    with pytest.raises(ValueError, match="job 0: both"):
        warm_instance(warm, [SJob(0, 0, 5, 1)], 4)
    with pytest.raises(ValueError, match="job 9: a window job released before"):
        warm_instance(warm, [SJob(9, 0, 3, 1)], 4)


def test_warm_start_gives_a_different_deterministic_window():
    from gridemu.brokers.directcontr.warm import backlog, fcfs_starts, someone_waits, warm_instance

    rng = np.random.default_rng(5)
    release = np.sort(rng.integers(0, 400, 120))
    size = rng.integers(1, 40, 120)
    trace = [SJob(i, int(i % 3), int(r), int(p)) for i, (r, p) in enumerate(zip(release, size))]
    t_start, t_end = 200, 300
    window = [j for j in trace if t_start <= j.release < t_end]
    cold = warm_instance([], window, t_start)

    def warm_fcfs():
        s = fcfs_starts(release, size, 4)
        return warm_instance(backlog(trace, {j.id: int(s[j.id]) for j in trace}, t_start), window, t_start)

    def warm_same():
        before = [j for j in trace if j.release < t_start]
        return warm_instance(
            backlog(before, simulate(before, [1, 1, 2], "directcontr", t_start).start, t_start), window, t_start
        )

    for build in (warm_fcfs, warm_same):
        a, b = build(), build()
        assert a == b and len(a) > len(cold)  # deterministic, and the backlog is there
        assert all(j.release == 0 for j in a[: len(a) - len(cold)])
        ra, rc = simulate(a, [1, 1, 2], "ref", t_end - t_start), simulate(cold, [1, 1, 2], "ref", t_end - t_start)
        assert ra.psi != rc.psi
        assert someone_waits(ra, a, t_end - t_start)  # 120 jobs of mean 20 on 4 processors: saturated


def test_someone_waits_by_hand():
    from gridemu.brokers.directcontr.warm import someone_waits

    jobs = [SJob(0, 0, 0, 3), SJob(1, 0, 1, 1)]
    assert not someone_waits(simulate(jobs, [2], "ref", 10), jobs, 10)  # two processors: nobody waits
    assert someone_waits(simulate(jobs, [1], "ref", 10), jobs, 10)  # one: job 1 waits until 3
    assert not someone_waits(simulate(jobs, [1], "ref", 1), jobs, 1)  # up to t = 1, job 1 is not released yet
    assert someone_waits(simulate(jobs, [1], "ref", 2), jobs, 2)  # released at 1, not started by 2
