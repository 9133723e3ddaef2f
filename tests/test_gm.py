"""Online Greedy Migration and the busy schedulers it beats (brokers/gm/algorithm.py, fairness.py).

Hand-made instances with schedules worked out on paper (comments give the arithmetic),
the counterexamples of Propositions 1-3 for each of our busy schedulers and for GM, and
Theorem 1 (GM has EF, WPM and ILV) as hypothesis properties. Machine 0 has speed 1 (n1)
and machine 1 speed 2 (n2) wherever speeds are [1, 2].
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridemu.brokers.gm.algorithm import POLICIES, GmJob, Segment, gm_assign, gm_rank_key, machine_order, simulate
from gridemu.brokers.gm.fairness import ef_counts, ef_violations, ilv_violations, wpm_violations
from gridemu.scenarios import propositions

BUSY = ("fcfs_fastest", "fcfs_any", "preempt")


def J(id, r, t, v0=1.0):
    return GmJob(id, float(r), float(t), float(v0))


# The paper's instances are plain (id, r, t, v0) rows in scenarios/propositions.py.
def proposition_1(X, group):
    rows, speeds = propositions.proposition_1(X, group)
    return [GmJob(*row) for row in rows], speeds


def proposition_2(X, group):
    rows, speeds = propositions.proposition_2(X, group)
    return [GmJob(*row) for row in rows], speeds


def proposition_3(n):
    J_, alone, speeds = propositions.proposition_3(n)
    return [GmJob(*row) for row in J_], [GmJob(*row) for row in alone], speeds


# ------------------------------------------------------------------ ranking and assignment


def test_rank_key_priority_then_release_then_id():
    jobs = [J(1, 0, 5, 0), J(2, 3, 1, 2), J(3, 1, 1, 2), J(4, 1, 9, 2)]
    assert [j.id for j in sorted(jobs, key=gm_rank_key)] == [3, 4, 2, 1]


def test_machine_order_speed_descending_ties_by_index():
    assert machine_order([1.0, 3.0, 2.0, 3.0]) == [1, 3, 2, 0]


def test_gm_assign_kth_job_to_kth_machine_rest_wait():
    jobs = [J(1, 0, 5, 0), J(2, 3, 1, 2), J(3, 1, 1, 2), J(4, 2, 1, 1)]
    # ranks: 3 (v0 2, r 1), 2 (v0 2, r 3), 4 (v0 1), 1 (v0 0); machines: 1 (3.0), 2 (2.0), 0 (1.0)
    assert gm_assign(jobs, [1.0, 3.0, 2.0]) == {3: 1, 2: 2, 4: 0}
    assert gm_assign([], [1.0]) == {}


# ----------------------------------------------------------------------- GM by hand


def test_gm_moves_a_running_job_and_keeps_its_work():
    jobs = [J(1, 0, 4, 0), J(2, 1, 4, 1), J(3, 2, 2, 0)]
    out = simulate(jobs, [1.0, 2.0], "gm")
    # t=0: j1 alone -> n2 (speed 2). t=1: j1 has done 2 of 4; j2 (v0 1) takes n2, j1 moves
    # to n1. t=2: j1 has 1 left; j3 arrives and waits (ranks j2, j1, j3). t=3: j2 ends
    # (4 units at speed 2 from 1) and j1 ends (1 unit at speed 1 from 2); j3 -> n2, ends 4.
    assert out.completion == {1: 3.0, 2: 3.0, 3: 4.0}
    assert out.migrations == {1: 1, 2: 0, 3: 0}
    assert out.preemptions == {1: 1, 2: 0, 3: 0}
    assert out.segments == [
        Segment(1, 1, 0.0, 1.0, 0.0),
        Segment(1, 0, 1.0, 3.0, 0.0),
        Segment(2, 1, 1.0, 3.0, 0.0),
        Segment(3, 1, 3.0, 4.0, 0.0),
    ]


def test_gm_job_waits_and_resumes_elsewhere():
    jobs = [J(1, 0, 6, 0), J(2, 1, 4, 2), J(3, 2, 1, 1)]
    out = simulate(jobs, [1.0, 2.0], "gm")
    # t=0: a=j1 -> n2. t=1: a has done 2, 4 left; b=j2 (v0 2) -> n2, a moves to n1
    # (migration 1). t=2: a has 3 left; c=j3 (v0 1) -> n1, a waits (preemption 2).
    # t=3: b ends (4/2 from 1), c ends (1/1 from 2); a resumes on n2 (last on n1:
    # migration 2), 3/2 = 1.5 -> ends 4.5.
    assert out.completion == {1: 4.5, 2: 3.0, 3: 3.0}
    assert out.migrations[1] == 2 and out.preemptions[1] == 2
    assert [(s.machine, s.start, s.end) for s in out.segments if s.job == 1] == [
        (1, 0.0, 1.0),
        (0, 1.0, 2.0),
        (1, 3.0, 4.5),
    ]


def test_gm_back_to_the_same_machine_is_not_a_migration():
    # one machine: j1 preempted by j2 (v0 2) at 1, resumes at 3 on the same machine.
    out = simulate([J(1, 0, 3, 0), J(2, 1, 2, 2)], [1.0], "gm", migration_cost=5.0)
    assert out.completion == {1: 5.0, 2: 3.0}
    assert out.migrations == {1: 0, 2: 0} and out.preemptions == {1: 1, 2: 0}


@pytest.mark.parametrize(
    "cost,remote,sites,extra",
    [(0.0, 0.0, None, 0.0), (0.5, 0.0, None, 0.5), (0.5, 2.0, None, 0.5), (0.5, 2.0, [0, 1], 2.5)],
)
def test_migration_cost_is_setup_on_the_new_machine(cost, remote, sites, extra):
    jobs = [J(1, 0, 2, 1), J(2, 0, 4, 0)]
    out = simulate(jobs, [1.0, 2.0], "gm", migration_cost=cost, remote_cost=remote, sites=sites)
    # j1 (v0 1) on n2 ends at 2/2 = 1; j2 on n1 has done 1 by then, 3 left, moves to n2:
    # setup `extra` (migration_cost, + remote_cost across sites), then 3/2 -> 2.5 + extra.
    assert out.completion == {1: 1.0, 2: 2.5 + extra}
    assert out.migrations == {1: 0, 2: 1}
    assert Segment(2, 1, 1.0, 2.5 + extra, extra) in out.segments


def test_migration_cost_breaks_ef_and_setup_restarts_on_a_new_move():
    jobs = [J(1, 0, 4, 0), J(2, 1, 2, 1), J(3, 2, 4, 0)]
    out = simulate(jobs, [1.0, 2.0], "gm", migration_cost=5.0)
    # t=0: j1 -> n2, has 2 done at t=1. t=1: j2 -> n2 (ends 2), j1 -> n1, setup 5 until 6.
    # t=2: j3 arrives; j1 (ranked above j3) -> n2, the setup starts again: 2..7, then 2/2
    # -> 8. j3 -> n1 fresh, 4/1 -> 6. j1 ≻ j3 (earlier, same v0, same size) but ends later.
    assert out.completion == {1: 8.0, 2: 2.0, 3: 6.0}
    assert out.migrations[1] == 2
    assert Segment(1, 0, 1.0, 2.0, 1.0) in out.segments and Segment(1, 1, 2.0, 8.0, 5.0) in out.segments
    assert ef_violations(jobs, out.completion) == [(1, 3)]
    # with zero cost: j1 done 2 + 1/2 = 2.5; j3 on n1 from 2, 0.5 done at 2.5, 3.5/2 -> 4.25
    free = simulate(jobs, [1.0, 2.0], "gm")
    assert free.completion == {1: 2.5, 2: 2.0, 3: 4.25}
    assert ef_violations(jobs, free.completion) == []


# ------------------------------------------------------------------ the busy schedulers


def test_fcfs_variants_by_hand():
    jobs = [J(1, 0, 4), J(2, 0, 4), J(3, 1, 2)]
    # fastest: j1 -> n2 (ends 2), j2 -> n1 (ends 4), j3 waits until 2, n2: ends 3.
    assert simulate(jobs, [1.0, 2.0], "fcfs_fastest").completion == {1: 2.0, 2: 4.0, 3: 3.0}
    # any (lowest index): j1 -> n1 (ends 4), j2 -> n2 (ends 2), j3 at 2 -> n2, ends 3.
    assert simulate(jobs, [1.0, 2.0], "fcfs_any").completion == {1: 4.0, 2: 2.0, 3: 3.0}


def test_preempt_resumes_only_where_it_started():
    jobs = [J(1, 0, 4, 0), J(2, 1, 2, 1)]
    out = simulate(jobs, [1.0, 2.0], "preempt")
    # j1 starts on n2; at 1 (2 done) j2 (v0 1) takes n2, j1 may not go to the idle n1 and
    # waits; j2 ends at 2, j1 resumes on n2 with 2 left -> 3.
    assert out.completion == {1: 3.0, 2: 2.0}
    assert out.migrations == {1: 0, 2: 0} and out.preemptions == {1: 1, 2: 0}
    # an unstarted job takes the idle machine instead (busy, condition 1)
    out = simulate(jobs + [J(3, 1, 1, 0)], [1.0, 2.0], "preempt")
    assert out.completion[3] == 2.0 and Segment(3, 0, 1.0, 2.0, 0.0) in out.segments


@pytest.mark.parametrize("policy,machine", [("fcfs_any", 0), ("fcfs_fastest", 1), ("preempt", 1), ("gm", 1)])
def test_which_group_each_scheduler_is_in(policy, machine):
    out = simulate([J(1, 0, 10)], [1.0, 2.0], policy)
    assert out.segments[0].machine == machine


# ------------------------------------------------------------ Propositions 1-3, GM's lemmas


@pytest.mark.parametrize("X", [10, 20])
@pytest.mark.parametrize(
    "group,policies,d5",
    [(1, ("fcfs_any",), lambda X: 1.5 * X + 2), (2, ("fcfs_fastest", "preempt"), lambda X: 1.5 * X + 1.5)],
)
def test_proposition_1_ef_violated_by_busy_not_by_gm(X, group, policies, d5):
    jobs, speeds = proposition_1(X, group)
    for policy in policies:
        out = simulate(jobs, speeds, policy)
        assert (out.completion[4], out.completion[5]) == (2 * X, d5(X))
        assert (4, 5) in ef_violations(jobs, out.completion)
        assert sum(out.migrations.values()) == 0
    gm = simulate(jobs, speeds, "gm")
    assert ef_violations(jobs, gm.completion) == []
    assert gm.completion[4] <= gm.completion[5]
    assert sum(gm.migrations.values()) > 0


@pytest.mark.parametrize("X", [10, 20])
def test_proposition_1_group_1_instance_does_not_catch_group_2_schedulers(X):
    jobs, speeds = proposition_1(X, 1)
    for policy in ("fcfs_fastest", "preempt"):
        out = simulate(jobs, speeds, policy)
        # j1 on n2 ends X/2, j2 on n1 ends X + 1, j3 on n2 ends X + 1, j4 waits, gets n2
        assert out.completion[4] == 1.5 * X + 1 and out.completion[5] == 2 * X + 3
        assert ef_violations(jobs, out.completion) == []


@pytest.mark.parametrize("X", [10, 20])
@pytest.mark.parametrize("group,policies", [(1, ("fcfs_any",)), (2, ("fcfs_fastest", "preempt"))])
def test_proposition_2_wpm_violated_by_busy_not_by_gm(X, group, policies):
    jobs, speeds = proposition_2(X, group)
    later = [replace(j, r=X + 2.0) if j.id == 4 else j for j in jobs]
    for policy in policies:
        # true type: j4 on n1 from X, ends 2X; released at X + 2: j5 took n1 at X + 1, j4
        # gets n2 when j3 ends at X + 2 and ends at X + 2 + X/2.
        assert simulate(jobs, speeds, policy).completion[4] == 2 * X
        assert simulate(later, speeds, policy).completion[4] == 1.5 * X + 2
        assert (4, "release") in wpm_violations(jobs, speeds, policy, step=2.0)
    assert simulate(later, speeds, "gm").completion[4] >= simulate(jobs, speeds, "gm").completion[4]
    assert wpm_violations(jobs, speeds, "gm", step=2.0) == []
    assert wpm_violations(jobs, speeds, "gm", step=1.0) == []


@pytest.mark.parametrize("n", [2, 3, 5])
def test_proposition_3_ilv_violated_without_preemption_not_by_gm(n):
    jobs, alone, speeds = proposition_3(n)
    top = n + 1
    for policy in ("fcfs_fastest", "fcfs_any"):
        # every machine is busy until 2n; j_{n+1} waits: 2n + 3n, instead of n + 1 + 3n alone
        assert simulate(jobs, speeds, policy).completion[top] == 5 * n
        assert simulate(alone, speeds, policy).completion[top] == 4 * n + 1
        assert top in ilv_violations(jobs, speeds, policy)
    for policy in ("gm", "preempt"):
        assert simulate(jobs, speeds, policy).completion[top] == 4 * n + 1
        assert ilv_violations(jobs, speeds, policy) == []


@pytest.mark.parametrize("n", [2, 4])
def test_proposition_3_observation_preempt_is_wasteful(n):
    jobs, _, speeds = proposition_3(n)
    out = simulate(jobs, speeds, "preempt")
    # j_{n+1} preempts j_1 on machine 0 at n + 1 (j_1 has n of 2n - 1 done) and ends 4n + 1;
    # j_1 waits for machine 0 while the other n - 1 machines idle from 2n on, ends 5n.
    assert out.completion[1] == 5 * n and out.preemptions[1] == 1
    busy_after = [s for s in out.segments if s.machine != 0 and s.end > 2 * n]
    assert busy_after == []
    gm = simulate(jobs, speeds, "gm")
    assert gm.completion[1] < 5 * n and gm.migrations[1] == 1


# --------------------------------------------------------------- Theorem 1 as properties


@st.composite
def instances(draw, speeds=st.just(1.0), max_m=3):
    m = draw(st.integers(1, max_m))
    sp = [draw(speeds) for _ in range(m)]
    n = draw(st.integers(1, 6))
    releases = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n, unique=True))
    jobs = [J(i + 1, r, draw(st.integers(1, 6)), draw(st.integers(0, 2))) for i, r in enumerate(releases)]
    return jobs, sp


@settings(max_examples=50, deadline=None)
@given(instances())
def test_gm_has_ef_ilv_wpm_on_integral_instances(inst):
    jobs, speeds = inst
    out = simulate(jobs, speeds, "gm", integral=True)
    assert ef_violations(jobs, out.completion) == []
    assert ilv_violations(jobs, speeds, "gm", integral=True) == []
    assert wpm_violations(jobs, speeds, "gm", step=1.0, integral=True) == []


@settings(max_examples=30, deadline=None)
@given(instances(speeds=st.sampled_from([1.0, 2.0, 3.0])))
def test_gm_has_ef_ilv_wpm_on_related_machines(inst):
    jobs, speeds = inst
    out = simulate(jobs, speeds, "gm")
    assert ef_violations(jobs, out.completion) == []
    assert ilv_violations(jobs, speeds, "gm") == []
    assert wpm_violations(jobs, speeds, "gm", step=1.0) == []


@settings(max_examples=40, deadline=None)
@given(
    instances(speeds=st.sampled_from([1.0, 2.0, 3.0])),
    st.sampled_from(POLICIES),
    st.sampled_from([0.0, 0.5]),
    st.lists(st.integers(0, 1), min_size=3, max_size=3),
)
def test_schedules_are_valid(inst, policy, cost, site_list):
    jobs, speeds = inst
    sites = site_list[: len(speeds)]
    out = simulate(jobs, speeds, policy, migration_cost=cost, remote_cost=cost, sites=sites)
    by_id = {j.id: j for j in jobs}
    for j in jobs:
        mine = sorted((s for s in out.segments if s.job == j.id), key=lambda s: s.start)
        assert mine[0].start >= j.r
        assert out.completion[j.id] == pytest.approx(mine[-1].end)
        work = sum((s.end - s.start - s.setup) * speeds[s.machine] for s in mine)
        assert work == pytest.approx(by_id[j.id].t)
        assert all(a.end <= b.start + 1e-9 for a, b in zip(mine, mine[1:]))  # one machine at a time
        moves = sum(a.machine != b.machine for a, b in zip(mine, mine[1:]))
        assert out.migrations[j.id] == moves
        if policy != "gm":
            assert moves == 0
        if policy.startswith("fcfs"):
            assert len(mine) == 1
    for mc in range(len(speeds)):
        on = sorted((s for s in out.segments if s.machine == mc), key=lambda s: s.start)
        assert all(a.end <= b.start + 1e-9 for a, b in zip(on, on[1:]))  # one job at a time


# -------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "speeds,msg",
    [([1.0, 0.0], r"speeds\[1\]: must be > 0"), ([-2.0], r"speeds\[0\]: must be > 0"), ([], "speeds: at least one")],
)
def test_bad_speeds(speeds, msg):
    with pytest.raises(ValueError, match=msg):
        simulate([J(1, 0, 1)], speeds)


@pytest.mark.parametrize(
    "job,msg",
    [
        (J(3, 0, 1, -1), r"job 3: priority v0 must be >= 0"),
        (J(4, 0, 0), r"job 4: size t must be"),
        (J(5, -1, 1), r"job 5: release r must be"),
    ],
)
def test_bad_jobs(job, msg):
    with pytest.raises(ValueError, match=msg):
        simulate([J(1, 0, 1), job], [1.0])


def test_other_bad_input():
    with pytest.raises(ValueError, match="job 1: id used twice"):
        simulate([J(1, 0, 1), J(1, 2, 1)], [1.0])
    with pytest.raises(ValueError, match="policy: expected one of"):
        simulate([J(1, 0, 1)], [1.0], "sjf")
    with pytest.raises(ValueError, match="migration_cost: must be"):
        simulate([J(1, 0, 1)], [1.0], migration_cost=-1.0)
    with pytest.raises(ValueError, match="remote_cost: must be"):
        simulate([J(1, 0, 1)], [1.0], remote_cost=-0.5)
    with pytest.raises(ValueError, match="sites: 1 entries for 2 machines"):
        simulate([J(1, 0, 1)], [1.0, 1.0], sites=[0])
    with pytest.raises(ValueError, match="jobs 1 and 2: both released at 0"):
        ilv_violations([J(1, 0, 1), J(2, 0, 2)], [1.0])
    with pytest.raises(ValueError, match="job 2: no completion time"):
        ef_violations([J(1, 0, 1), J(2, 0, 2)], {1: 1.0})
    with pytest.raises(ValueError, match="X: must be an even integer"):
        propositions.proposition_1(11, 1)
    with pytest.raises(ValueError, match="X: must be >= 6"):
        propositions.proposition_2(4, 1)
    with pytest.raises(ValueError, match="group: must be 1"):
        propositions.proposition_1(10, 3)
    with pytest.raises(ValueError, match="n: must be an integer >= 2"):
        propositions.proposition_3(1)


def test_integral_mode():
    with pytest.raises(ValueError, match=r"job 2: release r=0\.5 is not an integral time"):
        simulate([J(1, 0, 1), J(2, 0.5, 1)], [1.0], integral=True)
    # size 3 at speed 2 ends at 1.5
    with pytest.raises(ValueError, match="job 7: completes at non-integral time 1.5"):
        simulate([J(7, 0, 3)], [2.0], integral=True)
    assert simulate([J(7, 0, 3)], [2.0]).completion == {7: 1.5}
    # GM on Proposition 1's own heterogeneous instance breaks the assumption (j2 ends 15.5)
    jobs, speeds = proposition_1(20, 1)
    with pytest.raises(ValueError, match="job 2: completes at non-integral time 15.5"):
        simulate(jobs, speeds, "gm", integral=True)


def test_ef_vectorized_matches_definition_1():
    jobs = [J(1, 0, 2, 1), J(2, 1, 2, 1), J(3, 0, 2, 1), J(4, 0, 1, 2), J(5, 0, 3, 1)]
    d = {1: 5.0, 2: 4.0, 3: 6.0, 4: 9.0, 5: 1.0}
    # 1 ≻ 2 (earlier); 4 ≻ 1, 3, 5 (higher v0, t smaller) and 4 ≻ 2; 1 vs 3 and 3 vs 5:
    # same r and v0, not comparable (strictness is not asked of t); 1 vs 5 likewise.
    assert ef_violations(jobs, d) == [(1, 2), (3, 2), (4, 1), (4, 2), (4, 3), (4, 5)]


def _ef_pairs_by_definition(jobs, d):
    """Definitions 1 and 2 pair by pair, as written (the oracle of the blocked checker)."""
    pairs, bad = [], []
    for j in jobs:
        for k in jobs:
            if j.r <= k.r and j.v0 >= k.v0 and j.t <= k.t and (j.r < k.r or j.v0 > k.v0):
                pairs.append((j.id, k.id))
                if d[j.id] > d[k.id] + 1e-9:
                    bad.append((j.id, k.id))
    return pairs, sorted(bad)


_COARSE = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])  # ties in r, t, v0 and d on purpose


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_COARSE, _COARSE, st.sampled_from([0.0, 1.0, 2.0]), _COARSE), min_size=1, max_size=60),
    st.sampled_from([1, 4, 1024]),
)
def test_ef_counts_and_violations_match_the_definitions_pair_by_pair(rows, block):
    # The checker sorts by release and skips the k released before a block's first j; a
    # small block makes many blocks, so ties across block edges are exercised.
    import gridemu.brokers.gm.fairness as fairness

    jobs = [J(i, r, t + 0.5, v) for i, (r, t, v, _) in enumerate(rows)]
    d = {i: r + t + e for i, (r, t, _, e) in enumerate(rows)}
    pairs, bad = _ef_pairs_by_definition(jobs, d)
    blocks = fairness._dominance_blocks
    try:
        fairness._dominance_blocks = lambda js, c: blocks(js, c, block=block)
        assert ef_counts(jobs, d) == (len(bad), len(pairs))
        assert ef_violations(jobs, d) == bad
    finally:
        fairness._dominance_blocks = blocks


@pytest.mark.parametrize("X", [10, 20])
def test_preempt_lower_priority_finishes_earlier_on_proposition_2(X):
    jobs, speeds = proposition_2(X, 1)
    low = [replace(j, v0=0.0) if j.id == 4 else j for j in jobs]
    # v0 1: at X + 1 n1 frees and j4 (r X) outranks j5 (r X + 1): 2X + 1. v0 0: j5 (v0 1)
    # takes n1, j4 waits for n2, free at X + 2 (j3 ends): X + 2 + X/2.
    assert simulate(jobs, speeds, "preempt").completion[4] == 2 * X + 1
    assert simulate(low, speeds, "preempt").completion[4] == 1.5 * X + 2
    assert (4, "priority") in wpm_violations(jobs, speeds, "preempt", step=1.0)
    assert (4, "priority") not in wpm_violations(jobs, speeds, "fcfs_fastest", step=1.0)


@settings(max_examples=150, deadline=None)
@given(
    speeds=st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=1, max_size=7),
    steps=st.lists(
        st.tuples(st.booleans(), st.integers(0, 6), st.integers(0, 3), st.integers(0, 10**6)), min_size=1, max_size=80
    ),
)
def test_the_incremental_ranking_is_gm_assign_after_every_event(speeds, steps):
    # GmRanking (an arrival or a completion bisected into the ranked active set) must give
    # gm_assign's assignment after every event, and report exactly what changed.
    from gridemu.brokers.gm.algorithm import GmRanking

    ranking, active, next_id = GmRanking(speeds), {}, 0
    for arrive, release, v0, pick in steps:
        before = dict(ranking.assignment)
        if arrive or not active:
            job = GmJob(next_id, float(release), 1.0, float(v0))
            next_id += 1
            active[job.id] = job
            changes = ranking.add(job)
        else:
            job_id = sorted(active)[pick % len(active)]
            del active[job_id]
            changes = ranking.remove(job_id)
        want = gm_assign(active.values(), speeds)
        assert ranking.assignment == want
        moved = {j: want.get(j) for j in set(before) | set(want) if before.get(j) != want.get(j)}
        assert dict(changes) == moved
