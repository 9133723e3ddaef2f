"""The fairshare protocol against its centralized reference (brokers/fairshare/reference.py).

The reference is written from the paper alone (sections 3.2, 4 and 5.1): one event heap for
the whole grid, each site choosing the highest base-200 priority from its own fresh usage
and every other site's usage as of the last refresh instant. The protocol with
``exchange = "all"`` sends each site's report to every other site at each refresh; the
reports arrive one link latency later. The reference's ``delay`` is that latency, and both
follow gridemu's declared order of events at one instant (docs/kernel.md, "Determinism"),
so the two schedules must be identical, start for start: no tolerance is needed.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.fairshare.reference import reference_run
from gridemu.emulator.scenario import load_scenario
from gridemu.experiments.fairshare_grid import LEAVES, TREE, grid
from gridemu.scenarios.workload import generate_jobs

#: Figure 4 of the paper: P-B1 divided among three users (depth 3).
FIGURE_4 = copy.deepcopy(TREE)
FIGURE_4["children"][1]["children"][0]["children"] = [
    {"name": "U-B11", "type": "user", "share": 55},
    {"name": "U-B12", "type": "user", "share": 30},
    {"name": "U-B13", "type": "user", "share": 15},
]


#: One VO (100 %, global usage) divided A 50 / B 50.
SPLIT_V = {
    "name": "R",
    "type": "resource",
    "scope": "local",
    "children": [
        {
            "name": "V",
            "type": "VO",
            "share": 100,
            "scope": "global",
            "children": [{"name": "A", "type": "p", "share": 50}, {"name": "B", "type": "p", "share": 50}],
        }
    ],
}


def jobs_data(rows: list[dict], sites: int, exchange: str = "all") -> dict:
    """A scenario of the jobs ``rows`` on ``sites`` one-processor sites under SPLIT_V."""
    return {
        "network": {"latency": 0.05},
        "sites": {"count": sites, "procs": 1},
        "scheduler": {"name": "fairshare"},
        "protocol": {"name": "fairshare", "exchange": exchange, "refresh": 60.0},
        "policy": {"tree": SPLIT_V, "approach": "predictive"},
        "workload": {"kind": "jobs", "list": rows},
    }


def figure_4_grid(approach: str, exchange: str = "all") -> dict:
    """Four sites of three processors under Figure 4's policy, two hours. P-A2 submits to
    site 0 only (the imbalance the global view compensates for); one stream stops at the
    inner entry VO-B/P-B1 (its jobs count there, not as a sibling of P-B1's users)."""
    groups = [
        "VO-A/P-A1",
        "VO-A/P-A2",
        "VO-A/P-A3",
        "VO-B/P-B1/U-B11",
        "VO-B/P-B1/U-B12",
        "VO-B/P-B1/U-B13",
        "VO-B/P-B1",
        "VO-B/P-B2",
    ]
    streams = [
        {
            "group": g,
            "interval": 40.0,
            "size": 600.0,
            "spread": 0.4,
            "overestimate": [0.2, 0.4],
            **({"sites": [0]} if g == "VO-A/P-A2" else {}),
        }
        for g in groups
    ]
    data = grid(hours=2, sites=4, procs=3, approach=approach, exchange=exchange, streams=streams)
    data["policy"]["tree"] = FIGURE_4
    return data


def both(data: dict, refresh: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(emulated start, end, reference start, end), indexed by job id; the reference sees the
    reports ``network.latency`` after each refresh instant (``refresh`` None: no reports)."""
    sc = load_scenario(data)
    jobs, groups = generate_jobs(sc)
    run = emulator.run(data).jobs.set_index("job_id").sort_index()
    start, end = reference_run(
        data["policy"]["tree"],
        jobs,
        groups,
        n_sites=data["sites"]["count"],
        procs=data["sites"]["procs"],
        approach=data["policy"]["approach"],
        refresh=refresh,
        delay=data["network"]["latency"],
        horizon=data.get("run", {}).get("horizon", math.inf),
    )
    return run["start"].to_numpy(), run["end"].to_numpy(), start, end


def assert_same(a: np.ndarray, b: np.ndarray) -> None:
    differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    assert not differ.any(), f"{differ.sum()} jobs differ, first: job {np.flatnonzero(differ)[0]}"


@pytest.mark.parametrize("approach", ["historical", "active", "predictive"])
@pytest.mark.parametrize("instance", ["two VOs, 3 sites", "figure 4, imbalanced, 4 sites"])
def test_exchange_all_is_the_centralized_reference(instance, approach):
    if instance == "two VOs, 3 sites":
        data = grid(hours=2, sites=3, procs=4, approach=approach)
    else:
        data = figure_4_grid(approach)
    start, end, want_start, want_end = both(data, refresh=data["protocol"]["refresh"])
    assert np.count_nonzero(~np.isnan(want_start)) > 100  # contention: most jobs wait, every start is a choice
    assert_same(start, want_start)
    assert_same(end, want_end)


@pytest.mark.parametrize("approach", ["historical", "predictive"])
def test_exchange_none_is_the_reference_without_a_global_view(approach):
    data = figure_4_grid(approach, exchange="none")
    start, end, want_start, want_end = both(data, refresh=None)
    assert_same(start, want_start)
    assert_same(end, want_end)


def test_the_global_view_changes_the_schedule():
    """Without the others' usage the reference schedules otherwise: the comparisons above
    test the view, not only the local part of the choice."""
    data = figure_4_grid("predictive")
    sc = load_scenario(data)
    jobs, groups = generate_jobs(sc)
    runs = [
        reference_run(FIGURE_4, jobs, groups, 4, 3, refresh=r, delay=0.05, horizon=data["run"]["horizon"])[0]
        for r in (60.0, None)
    ]
    assert np.count_nonzero(runs[0] != runs[1]) > 50


def test_reference_by_hand():
    """Two sites of one processor; V (100 %, global) divided A 50 / B 50; predictive usage.
    Site 0 runs an A job on [0, 300), requested 300 s. Site 1 runs a B job on [0, 70) and
    gets an A and a B job of 10 s at 1 and 2. At 70 site 1 chooses: its own usage is
    B = 70, A = 0; site 0's report of 60 (arrived at 60.05) says A = 300 (the requested
    walltime of its running job). Grid-wide A has 300/370 = 81 % of V against a 50 %
    target, so B (deviation +31) starts at 70 and A at 80. Alone (no reports), site 1 sees
    A = 0: A (deviation +50) starts at 70 and B at 80."""
    tree = SPLIT_V
    rows = [
        {"site": 0, "release": 0, "size": 300, "walltime": 300, "group": "V/A"},
        {"site": 1, "release": 0, "size": 70, "walltime": 70, "group": "V/B"},
        {"site": 1, "release": 1, "size": 10, "walltime": 10, "group": "V/A"},
        {"site": 1, "release": 2, "size": 10, "walltime": 10, "group": "V/B"},
    ]
    data = jobs_data(rows, 2)
    jobs, groups = generate_jobs(load_scenario(data))
    with_view, _ = reference_run(tree, jobs, groups, 2, 1, refresh=60.0, delay=0.05)
    alone, _ = reference_run(tree, jobs, groups, 2, 1, refresh=None)
    assert list(with_view) == [0.0, 0.0, 80.0, 70.0]
    assert list(alone) == [0.0, 0.0, 70.0, 80.0]
    start, _, _, _ = both(data, refresh=60.0)
    assert list(start) == list(with_view)
    data["protocol"]["exchange"] = "none"
    start, _, _, _ = both(data, refresh=None)
    assert list(start) == list(alone)


def test_equal_priorities_go_to_the_job_waiting_longest():
    """One site, one processor, busy on [0, 100) with a job of V itself (it stops at the VO).
    B's job comes at 1, A's at 2; at 100 neither has used anything: both deviate by +50 and
    their priorities are equal, so the one waiting longest, B's, starts first (the paper
    names no tie rule; the reference's is first come, first served)."""
    rows = [
        {"site": 0, "release": 0, "size": 100, "walltime": 100, "group": "V"},
        {"site": 0, "release": 1, "size": 10, "walltime": 10, "group": "V/B"},
        {"site": 0, "release": 2, "size": 10, "walltime": 10, "group": "V/A"},
    ]
    data = jobs_data(rows, 1, exchange="none")
    start, _, want, _ = both(data, refresh=None)
    assert list(want) == [0.0, 100.0, 110.0]
    assert list(start) == list(want)


def test_reference_refuses_what_it_does_not_model():
    data = grid(hours=0.1, sites=1)
    jobs, groups = generate_jobs(load_scenario(data))
    with pytest.raises(ValueError, match="approaches"):
        reference_run(TREE, jobs, groups, 1, 10, approach="recent")
    wide = jobs.copy()
    wide["procs"] = 2
    with pytest.raises(ValueError, match="single-processor"):
        reference_run(TREE, wide, groups, 1, 10)
    with pytest.raises(ValueError, match="maps to no policy entry"):
        reference_run(TREE, jobs, ["VO-C/P-C1"] * len(LEAVES), 1, 10)


@pytest.mark.parametrize("exchange", ["tree", "service"])
@pytest.mark.parametrize("approach", ["historical", "active", "predictive"])
@pytest.mark.parametrize("instance", ["two VOs, 3 sites", "figure 4, imbalanced, 4 sites"])
def test_aggregated_exchanges_are_the_reference_at_a_negligible_latency(instance, approach, exchange):
    # The tree sums every site's report of the round and pushes the total down, the usage
    # services sum the round's reports and send them to every site: each site's view of the
    # others is then all-to-all's, a few hops later. At 1e-6 s a hop no scheduling pass falls
    # between the two, so the schedule is the reference's start for start. (The services
    # published the sum at the report instant, before the round's reports came in: the others'
    # usage a refresh stale and the site's own subtracted from the wrong round; 116-146 of
    # 1,440-1,800 starts differed.)
    data = grid(hours=2, sites=3, procs=4, approach=approach, exchange=exchange)
    if instance != "two VOs, 3 sites":
        data = figure_4_grid(approach, exchange=exchange)
    data["network"]["latency"] = 1e-6
    start, end, want_start, want_end = both(data, refresh=data["protocol"]["refresh"])
    assert np.count_nonzero(~np.isnan(want_start)) > 100
    assert_same(start, want_start)
    assert_same(end, want_end)
