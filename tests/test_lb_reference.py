"""The reference simulator of divisible-load balancing (brokers/bilb/reference.py).

Hand-computed instances pin down the exact semantics (event order, cutting from the end
of the queue, acceptance by deadline and participation level); a property test checks
the invariants every run must keep.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridemu.brokers.averaging.algorithm import averaging_plan
from gridemu.brokers.bilb.algorithm import bilb_plan, next_round_time
from gridemu.brokers.bilb.reference import job_ends, reference_run, thesis_bilb
from gridemu.model.jobs import empty_jobs
from gridemu.model.rng import PURPOSE_COALITION, site_rng


def make_jobs(rows: list[tuple[float, float, int]]) -> np.ndarray:
    """Jobs 0..n-1 from (release, size, submit_site) rows."""
    jobs = empty_jobs(len(rows))
    for i, (release, size, site) in enumerate(rows):
        jobs[i]["job_id"] = i
        jobs[i]["release"] = release
        jobs[i]["size"] = size
        jobs[i]["submit_site"] = site
    return jobs


def as_rows(pieces: dict[str, np.ndarray]) -> list[tuple]:
    """(job_id, exec_site, size, start, end, deadline) per piece, in the returned order."""
    cols = ("job_id", "exec_site", "size", "start", "end", "deadline")
    return [
        tuple(float(pieces[c][i]) if c not in ("job_id", "exec_site") else int(pieces[c][i]) for c in cols)
        for i in range(len(pieces["job_id"]))
    ]


def fcfs_ends(jobs: np.ndarray, n_sites: int) -> dict[int, float]:
    """end_i = max(r_i, end_{i-1}) + p_i per site, jobs in (release, job_id) order."""
    ends: dict[int, float] = {}
    for k in range(n_sites):
        mine = jobs[jobs["submit_site"] == k]
        mine = mine[np.lexsort((mine["job_id"], mine["release"]))]
        end = -math.inf
        for job in mine:
            end = max(float(job["release"]), end) + float(job["size"])
            ends[int(job["job_id"])] = end
    return ends


def random_jobs(rng: np.random.Generator, n_jobs: int, n_sites: int) -> np.ndarray:
    return make_jobs(
        [(float(rng.integers(0, 60)), float(rng.integers(1, 12)), int(rng.integers(0, n_sites))) for _ in range(n_jobs)]
    )


# --- no cooperation: plain FCFS at every site ----------------------------------------------


@pytest.mark.parametrize(
    "protocol,kwargs",
    [
        ("bilb", {"limits": [0.0] * 4}),
        ("averaging_game", {"p": [0.0] * 4}),
    ],
)
def test_without_cooperation_every_site_is_fcfs(protocol, kwargs):
    jobs = random_jobs(np.random.default_rng(3), 80, 4)
    plans = []
    pieces = reference_run(jobs, 4, protocol=protocol, on_round=lambda t, L, plan, after: plans.append(plan), **kwargs)
    assert all(plan == [] for plan in plans) and len(plans) > 10
    assert len(pieces["job_id"]) == len(jobs)  # nothing was cut
    by_id = {int(j["job_id"]): j for j in jobs}
    assert all(pieces["exec_site"][i] == by_id[int(j)]["submit_site"] for i, j in enumerate(pieces["job_id"]))
    expected = fcfs_ends(jobs, 4)
    got = job_ends(pieces)
    assert got == pytest.approx(expected, abs=1e-12)
    # with no transfer the announced deadline is exactly the FCFS end
    assert np.allclose(pieces["deadline"], pieces["end"], atol=1e-12)


# --- hand-computed instances ----------------------------------------------------------------


def test_the_unprocessed_part_of_a_running_piece_is_cut():
    # Site 0 gets a job of size 8 at t=0, site 1 is idle. The round at t=0 runs before the
    # arrival (loads 0, 0); at t=1 the job is running, L = [7, 0], the plan sends 3.5, and
    # with nothing queued it comes off the running piece, which now ends at 4.5 while the
    # cut part runs [1, 4.5] on site 1. Rounds stop once nothing is held any more.
    rounds = []
    pieces = reference_run(
        make_jobs([(0, 8, 0)]),
        2,
        protocol="bilb",
        limits=[100, 100],
        on_round=lambda t, L, plan, after: rounds.append((t, L, plan, after)),
    )
    assert as_rows(pieces) == [(0, 0, 4.5, 0.0, 4.5, 8.0), (0, 1, 3.5, 1.0, 4.5, 8.0)]
    assert rounds[0] == (0.0, [0.0, 0.0], [], [0.0, 0.0])
    assert rounds[1] == (1.0, [7.0, 0.0], [(0, 1, 3.5)], [3.5, 3.5])
    assert [r[0] for r in rounds] == [0.0, 1.0, 4.5]


def test_work_that_cannot_move_is_not_planned():
    # The same job with running work kept whole: at t=1, L = [7, 0] but nothing of site 0's
    # queue can move (m = [0, 0]), so BILB plans nothing and times the next round by the
    # queues as they are, min(7, 0): every min_gap, until a round (at 9) finds nothing held.
    rounds = []
    pieces = reference_run(
        make_jobs([(0, 8, 0)]),
        2,
        protocol="bilb",
        limits=[100, 100],
        cut_running=False,
        min_gap=3.0,
        on_round=lambda t, L, plan, after: rounds.append((t, L, plan, after)),
    )
    assert as_rows(pieces) == [(0, 0, 8.0, 0.0, 8.0, 8.0)]
    assert [(t, plan) for t, _, plan, _ in rounds] == [(0.0, []), (3.0, []), (6.0, []), (9.0, [])]


def test_a_surplus_is_capped_at_what_its_sender_can_move():
    # Site 0 runs job 0 (size 6) and queues job 1 (size 2); sites 1 and 2 are idle. At t=1,
    # L = [7, 0, 0] and, with running work whole, m_0 = 2: site 0 sends its queued 2, split
    # 1 and 1 (uncapped it would plan 7 - 7/3 = 4.67 and could cut only 2).
    rounds = []
    pieces = reference_run(
        make_jobs([(0, 6, 0), (0, 2, 0)]),
        3,
        protocol="bilb",
        limits=[100, 100, 100],
        start=1.0,
        cut_running=False,
        on_round=lambda t, L, plan, after: rounds.append((t, L, plan, after)),
    )
    assert rounds[0] == (1.0, [7.0, 0.0, 0.0], [(0, 1, 1.0), (0, 2, 1.0)], [5.0, 1.0, 1.0])
    assert job_ends(pieces) == {0: 6.0, 1: 2.0}


loads_limits_movable = st.integers(1, 12).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 40).map(lambda x: x / 4), min_size=n, max_size=n),
        st.lists(st.one_of(st.just(math.inf), st.integers(0, 40).map(lambda x: x / 4)), min_size=n, max_size=n),
        st.lists(st.floats(0, 1), min_size=n, max_size=n),
    )
)


@settings(max_examples=300, deadline=None)
@given(loads_limits_movable)
def test_the_oracles_plan_is_the_agents_plan(case):
    """The reference's Algorithm 4.3 (``thesis_bilb``, written from the text) and the agents'
    ``bilb_plan`` are two implementations: on random offers (quarter units, so loads and
    spaces tie often) they give the same transfers and the same next round."""
    loads, limits, share = case
    movable = [load * f for load, f in zip(loads, share)]
    theirs, after = thesis_bilb(loads, limits, movable)
    ours = bilb_plan(loads, limits, movable)
    assert [(k, l) for k, l, _ in theirs] == [(k, l) for k, l, _ in ours]
    assert np.allclose([a for *_, a in theirs], [a for *_, a in ours], rtol=1e-12, atol=1e-12)
    assert math.isclose(after, next_round_time(0.0, loads, ours), rel_tol=1e-12, abs_tol=1e-12)


def test_loads_and_amounts_within_tie_are_equal():
    """Two balanced sites whose loads differ by latency noise (1e-8) come by id, as exact ties
    do, in both plans; a noise-sized surplus sends nothing (it would be a sliver)."""
    exact = bilb_plan([0.0, 5.0, 5.0], [100.0] * 3)
    noisy = [0.0, 5.0 + 1e-8, 5.0 - 1e-8]
    assert [(k, l) for k, l, _ in bilb_plan(noisy, [100.0] * 3)] == [(k, l) for k, l, _ in exact]
    assert [(k, l) for k, l, _ in thesis_bilb(noisy, [100.0] * 3, noisy)[0]] == [(k, l) for k, l, _ in exact]
    assert exact[0][:2] == (1, 0)  # by id: site 1 balances with site 0 first
    assert bilb_plan([5.0, 5.0 + 1e-8], [100.0] * 2) == []
    assert thesis_bilb([5.0, 5.0 + 1e-8], [100.0] * 2, [5.0, 5.0])[0] == []


def test_a_release_just_before_a_round_comes_after_it():
    """Job 0 (size 4) is released at 1 - 1e-12 on site 0, the first round is at 1: the same
    instant, so the round comes first and sees nothing; the job arrives after it (announced
    1 + 4) and the round at 2 sends half of L = 3: it ends at 3.5 (a round seeing it would
    send 2: 3.0)."""
    rounds = []
    pieces = reference_run(
        make_jobs([(1.0 - 1e-12, 4.0, 0)]),
        2,
        protocol="bilb",
        limits=[100, 100],
        start=1.0,
        on_round=lambda t, L, plan, after: rounds.append((t, plan)),
    )
    assert rounds[0] == (1.0, [])
    assert rounds[1][0] == 2.0 and rounds[1][1] == [(0, 1, pytest.approx(1.5))]
    assert job_ends(pieces) == {0: pytest.approx(3.5)}
    assert pieces["deadline"][0] == pytest.approx(5.0)


@pytest.mark.parametrize("protocol,limits", [("bilb", [100, 100]), ("averaging_game", [0, 0])])
def test_split_of_a_queued_job(protocol, limits):
    # Site 0 gets job 0 (size 2) and job 1 (size 8) at t=0; site 1 is idle; min_gap 1.
    # Round at 0: sees nothing (arrivals come after rounds). Job 0 runs [0, 2]; job 1 is
    # queued with deadline 2 + 8 = 10. Round at 1: L = [2 - 1 + 8, 0] = [9, 0]; both
    # plans send 4.5 from 0 to 1. Phase 1 splits job 1: 3.5 stays queued at site 0, a 4.5
    # piece is cut. Phase 2: site 1 has Q = 1, 1 + 4.5 = 5.5 <= 10: accepted, runs [1, 5.5].
    # Site 0 runs job 0 [0, 2] then the 3.5 left [2, 5.5]. Next round: BILB at
    # 1 + min(4.5, 4.5) = 5.5, averaging at 1 + max(1, mean 4.5) = 5.5; there, everything
    # is done, nothing is queued, so rounds stop. (The averaging game ignores limits: its
    # receivers are unbounded, so limits of 0 change nothing.)
    rounds = []
    pieces = reference_run(
        make_jobs([(0, 2, 0), (0, 8, 0)]),
        2,
        protocol=protocol,
        limits=limits,
        on_round=lambda t, L, plan, after: rounds.append((t, L, plan, after)),
    )
    assert as_rows(pieces) == [
        (0, 0, 2.0, 0.0, 2.0, 2.0),
        (1, 0, 3.5, 2.0, 5.5, 10.0),
        (1, 1, 4.5, 1.0, 5.5, 10.0),
    ]
    assert job_ends(pieces) == {0: 2.0, 1: 5.5}
    assert rounds == [
        (0.0, [0.0, 0.0], [], [0.0, 0.0]),
        (1.0, [9.0, 0.0], [(0, 1, 4.5)], [4.5, 4.5]),
        (5.5, [0.0, 0.0], [], [0.0, 0.0]),
    ]


THREE_SITES = make_jobs([(0, 2, 0), (0, 2, 1), (0, 13, 0), (0, 3, 1)])


@pytest.mark.parametrize("limits", [[100, 100, 100], [100, 6, 100]])
def test_receivers_judge_in_the_plans_iteration_order(limits):
    # start = 1. At t=0: site 0 runs job 0 [0, 2] and queues job 2 (13, deadline 15);
    # site 1 runs job 1 [0, 2] and queues job 3 (3, deadline 5); site 2 is idle.
    # Round at 1: L = [14, 4, 0]. BILB: site 1 balances with site 2 at mean 2 -> (1, 2, 2);
    # site 0 with both at mean 6: spaces 4 and 4 -> (0, 1, 4), (0, 2, 4). With l_1 = 6 the
    # plan is the same (site 1's space is min(6, 6) - 2 = 4).
    # Phase 1: job 3 -> 1 | P3=2 (deadline 5); job 2 -> 9 | P1=4, then 5 | P2=4.
    # Phase 2, receivers 2, 1, 0, each in plan order: site 2 takes P3 first (1 + 2 = 3 <= 5,
    # runs [1, 3]) then P2 (3 + 4 = 7 <= 15, runs [3, 7]); site 1 takes P1 (Q = 2 + 1 = 3,
    # 3 + 4 = 7 <= 15, queue 6 <= l_1). Every site ends at 7: L = 6, 6, 6, nothing refused.
    # Judged by sender id instead, site 2 would take P2 first and refuse P3 (7 > 5).
    rounds = []
    pieces = reference_run(
        THREE_SITES,
        3,
        protocol="bilb",
        limits=limits,
        start=1.0,
        on_round=lambda t, L, plan, after: rounds.append((t, L, plan, after)),
    )
    assert bilb_plan([14.0, 4.0, 0.0], limits) == [(1, 2, 2.0), (0, 1, 4.0), (0, 2, 4.0)]
    assert rounds[0] == (1.0, [14.0, 4.0, 0.0], [(1, 2, 2.0), (0, 1, 4.0), (0, 2, 4.0)], [6.0, 6.0, 6.0])
    assert as_rows(pieces) == [
        (0, 0, 2.0, 0.0, 2.0, 2.0),
        (1, 1, 2.0, 0.0, 2.0, 2.0),
        (2, 0, 5.0, 2.0, 7.0, 15.0),
        (2, 1, 4.0, 3.0, 7.0, 15.0),  # P1
        (2, 2, 4.0, 3.0, 7.0, 15.0),  # P2, behind P3
        (3, 1, 1.0, 2.0, 3.0, 5.0),
        (3, 2, 2.0, 1.0, 3.0, 5.0),  # P3
    ]
    # Next round at 1 + min(6, 6, 6) = 7, when everything is done: rounds stop.
    assert [r[0] for r in rounds] == [1.0, 7.0]
    assert job_ends(pieces) == {0: 2.0, 1: 2.0, 2: 7.0, 3: 3.0}


def test_a_receiver_judges_after_its_own_pieces_left():
    # The same loads relabelled: site 0 medium (job 1 runs [0, 2], job 3 = 3 queued, deadline
    # 5), site 1 idle, site 2 heavy (job 0 runs [0, 2], job 2 = 13 queued, deadline 15);
    # l_0 = 6. Round at 1: L = [4, 0, 14], order 1, 0, 2. Plan: (0, 1, 2) at mean 2; site 2
    # at mean 6 sees spaces 4 (site 0: min(6, 6) - (4 - 2)) and 4 (site 1) -> (2, 0, 4),
    # (2, 1, 4). Cuts: site 0: 1 | P3=2; site 2: 13 -> 9 | P1=4 (to 0) -> 5 | P2 | P1.
    # Phase 2: site 1 first: P3 (sender 0): 1 + 2 = 3 <= 5 accept, runs [1, 3]; P2: 3 + 4 = 7
    # <= 15 accept. Then site 0, whose P3 has left: Q = 2 + 1 = 3, P1: 3 + 4 - 1 = 6 <= l_0,
    # accept. Had site 0 judged before site 1 (by id), its placeholder P3 would still count
    # (Q = 5, 5 + 4 - 1 = 8 > 6) and P1 would be refused. Everything ends balanced at 7.
    rounds = []
    jobs = make_jobs([(0, 2, 2), (0, 2, 0), (0, 13, 2), (0, 3, 0)])
    pieces = reference_run(
        jobs,
        3,
        protocol="bilb",
        limits=[6, 100, 100],
        start=1.0,
        on_round=lambda t, L, plan, after: rounds.append((t, L, plan, after)),
    )
    assert rounds[0] == (1.0, [4.0, 0.0, 14.0], [(0, 1, 2.0), (2, 0, 4.0), (2, 1, 4.0)], [6.0, 6.0, 6.0])
    assert as_rows(pieces) == [
        (0, 2, 2.0, 0.0, 2.0, 2.0),
        (1, 0, 2.0, 0.0, 2.0, 2.0),
        (2, 0, 4.0, 3.0, 7.0, 15.0),  # P1
        (2, 1, 4.0, 3.0, 7.0, 15.0),  # P2
        (2, 2, 5.0, 2.0, 7.0, 15.0),
        (3, 0, 1.0, 2.0, 3.0, 5.0),
        (3, 1, 2.0, 1.0, 3.0, 5.0),  # P3
    ]
    assert [r[0] for r in rounds] == [1.0, 7.0]


def test_horizon_leaves_pieces_unfinished_or_unstarted():
    # site 0: job 0 runs [0, 8]; job 1 queued. Horizon 5 with no cooperation.
    pieces = reference_run(make_jobs([(0, 8, 0), (0, 3, 0), (9, 1, 1)]), 2, protocol="bilb", limits=[0, 0], horizon=5.0)
    assert pieces["job_id"].tolist() == [0, 1]  # job 2 never arrived
    assert pieces["start"][0] == 0.0 and math.isnan(pieces["end"][0])
    assert math.isnan(pieces["start"][1]) and math.isnan(pieces["end"][1])
    assert pieces["deadline"].tolist() == [8.0, 11.0]
    assert math.isnan(job_ends(pieces)[0])


# --- the averaging game's coalition ------------------------------------------------------------


def test_coalition_draws_depend_only_on_the_period():
    # Periods of 0.7 with rounds at least 1 apart: some periods have no round, yet a site's
    # membership in period q must be its q-th draw from site_rng(seed, k, PURPOSE_COALITION).
    n, seed, start, period = 4, 11, 0.5, 0.7
    jobs = random_jobs(np.random.default_rng(5), 60, n)
    jobs["submit_site"][: len(jobs) // 2] = 0  # an overloaded site, so plans are not empty
    rounds = []
    reference_run(
        jobs,
        n,
        protocol="averaging_game",
        p=[0.5] * n,
        start=start,
        period=period,
        seed=seed,
        on_round=lambda t, L, plan, after: rounds.append((t, L, plan)),
    )
    assert PURPOSE_COALITION == 5
    last_q = math.floor((rounds[-1][0] - start) / period)
    rngs = [site_rng(seed, k, 5) for k in range(n)]
    draws = [[rng.random() < 0.5 for rng in rngs] for _ in range(last_q + 1)]
    moved = 0
    for t, loads, plan in rounds:
        members = [k for k in range(n) if draws[math.floor((t - start) / period)][k]]
        expected = []
        if len(members) >= 2:
            expected = [(members[i], members[j], a) for i, j, a in averaging_plan([loads[k] for k in members])]
        assert plan == expected
        moved += bool(plan)
    assert moved > 0
    skipped = {math.floor((t - start) / period) for t, _, _ in rounds}
    assert len(skipped) < last_q + 1  # the instance does skip periods


def test_runs_are_deterministic():
    jobs = random_jobs(np.random.default_rng(8), 50, 3)
    a = reference_run(jobs, 3, protocol="averaging_game", p=[0.3, 0.6, 0.9], seed=4, period=5.0)
    b = reference_run(jobs, 3, protocol="averaging_game", p=[0.3, 0.6, 0.9], seed=4, period=5.0)
    assert all(np.array_equal(a[c], b[c], equal_nan=True) for c in a)


# --- round order and the end a sender cuts (docs/results/bilb.md, "Round order and the sent end") ---

WHOLE = {"protocol": "bilb", "discrete": True, "cut_running": False, "starting": "running", "round_timing": "unbounded"}


@pytest.mark.parametrize("send,ends", [("tail", {0: 2.0, 1: 3.0, 2: 2.0}), ("head", {0: 2.0, 1: 2.0, 2: 3.0})])
def test_send_tail_or_head_of_the_queue(send, ends):
    """Site 0 holds three jobs of 2 released at 0, site 1 none. At the round at 0 job 0 runs
    (kept whole); L = 6, 0, L̄ = 3, so 3 of the queued 4 move: from the tail, job 2 and the
    last 1 of job 1; from the head, job 1 and 1 of job 2. The job left split ends at 3."""
    jobs = make_jobs([(0.0, 2.0, 0), (0.0, 2.0, 0), (0.0, 2.0, 0)])
    pieces = reference_run(jobs, 2, **WHOLE, send=send)
    assert job_ends(pieces) == ends
    moved = {int(j): float(x) for j, x, site in zip(pieces["job_id"], pieces["size"], pieces["exec_site"]) if site == 1}
    assert moved == ({2: 2.0, 1: 1.0} if send == "tail" else {1: 2.0, 2: 1.0})


@pytest.mark.parametrize(
    "order,ends", [("after_releases", {0: 10.0, 1: 4.0, 2: 8.0}), ("before_releases", {0: 10.0, 1: 5.0, 2: 9.0})]
)
def test_round_before_or_after_the_unit_s_releases(order, ends):
    """Site 0 gets jobs of 10 and 4 at 0, site 1 one of 4 at 1. After the releases, the round
    at 0 sends the queued job 1 (the running job 0 stays whole) to the idle site 1, where it
    ends at 4 and job 2 at 8. Before them, the round at 0 sees empty queues; the next, at 1,
    sends job 1, which then starts at 1, and job 2, released at 1 after that round, waits."""
    jobs = make_jobs([(0.0, 10.0, 0), (0.0, 4.0, 0), (1.0, 4.0, 1)])
    pieces = reference_run(jobs, 2, **WHOLE, round_order=order)
    assert job_ends(pieces) == ends
    assert sorted(pieces["exec_site"][pieces["job_id"] == 1].tolist()) == [1]


# --- argument errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"protocol": "gossip"}, "unknown protocol"),
        ({"protocol": "bilb", "limits": [1.0]}, "participation levels"),
        ({"protocol": "bilb", "limits": [1.0, -1.0]}, "limits must be >= 0"),
        ({"protocol": "averaging_game", "p": [0.5, 1.5]}, r"p must lie in \[0, 1\]"),
        ({"protocol": "averaging_game", "p": [0.5]}, "probabilities"),
        ({"protocol": "bilb", "min_gap": 0.0}, "min_gap"),
        ({"protocol": "averaging_game", "period": -1.0}, "period"),
        ({"protocol": "bilb", "send": "middle"}, "send must be 'tail' or 'head'"),
        ({"protocol": "bilb", "round_order": "before_releases"}, "before_releases' needs discrete"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        reference_run(make_jobs([(0, 1, 0)]), 2, **kwargs)


def test_bad_jobs():
    with pytest.raises(ValueError, match="submit_site"):
        reference_run(make_jobs([(0, 1, 2)]), 2, protocol="bilb")
    with pytest.raises(ValueError, match="size"):
        reference_run(make_jobs([(0, 0, 0)]), 2, protocol="bilb")


# --- invariants on random instances ------------------------------------------------------------

half_steps = st.integers(0, 40).map(lambda x: x / 2)


@st.composite
def instances(draw):
    n = draw(st.integers(2, 5))
    rows = draw(
        st.lists(st.tuples(half_steps, st.integers(1, 20).map(lambda x: x / 2), st.integers(0, n - 1)), max_size=30)
    )
    protocol = draw(st.sampled_from(["bilb", "averaging_game"]))
    limits = draw(st.lists(st.one_of(st.just(math.inf), st.floats(0, 20)), min_size=n, max_size=n))
    p = draw(st.lists(st.sampled_from([0.0, 0.5, 0.8, 1.0]), min_size=n, max_size=n))
    kwargs = {
        "start": draw(st.sampled_from([0.0, 0.5, 3.0])),
        "min_gap": draw(st.sampled_from([0.5, 1.0, 2.5])),
        "period": draw(st.sampled_from([0.7, 4.0, 1000.0])),
        "seed": draw(st.integers(0, 5)),
    }
    return make_jobs(rows), n, protocol, limits, p, kwargs


@settings(max_examples=150, deadline=None)
@given(instances())
def test_invariants(instance):
    jobs, n, protocol, limits, p, kwargs = instance
    rounds = []
    pieces = reference_run(
        jobs,
        n,
        protocol=protocol,
        limits=limits,
        p=p,
        on_round=lambda t, L, plan, after: rounds.append((t, L, plan, after)),
        **kwargs,
    )
    by_id = {int(j["job_id"]): j for j in jobs}
    assert set(pieces["job_id"].tolist()) == set(by_id)
    assert np.all(np.isfinite(pieces["end"]))  # no horizon: everything finishes
    assert np.all(pieces["size"] >= 1e-12)
    assert np.allclose(pieces["end"] - pieces["start"], pieces["size"], atol=1e-9)
    for job_id, job in by_id.items():
        mine = pieces["job_id"] == job_id
        # conservation
        assert abs(pieces["size"][mine].sum() - job["size"]) <= 1e-9
        # one announced deadline per job, met, and never before release + size
        deadline = pieces["deadline"][mine]
        assert np.all(deadline == deadline[0]) and deadline[0] >= job["release"] + job["size"] - 1e-9
        assert pieces["end"][mine].max() <= deadline[0] + 1e-9
        # nothing runs before its job is released
        assert np.all(pieces["start"][mine] >= job["release"])
    for k in range(n):
        here = pieces["exec_site"] == k
        order = np.argsort(pieces["start"][here], kind="stable")
        starts, ends = pieces["start"][here][order], pieces["end"][here][order]
        assert np.all(starts[1:] >= ends[:-1] - 1e-9)  # one piece at a time
    for t, loads, plan, after in rounds:
        # a round is instantaneous: work moves, none appears or vanishes
        assert sum(after) == pytest.approx(sum(loads), abs=1e-9)
        assert all(a > -1e-9 for a in after)
        # a site receives at most what was planned for it and sends at most its plan
        received, sent = [0.0] * n, [0.0] * n
        for k, l, a in plan:
            sent[k] += a
            received[l] += a
        assert all(loads[k] - sent[k] - 1e-9 <= after[k] <= loads[k] + received[k] + 1e-9 for k in range(n))
        if protocol == "bilb":
            # A site whose queue grew accepted something, and acceptance keeps it within l_k;
            # a site that accepted nothing only lost work (it may have started above l_k).
            assert all(after[k] <= max(limits[k], loads[k]) + 1e-9 for k in range(n))
    if rounds:
        assert [t for t, *_ in rounds] == sorted({t for t, *_ in rounds})  # strictly increasing
