"""Decentralized DIRECTCONTR (the ``directcontr`` protocol) and the Shapley papers' workload preparation."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.algorithms.shapley_policies import simulate
from gridemu.brokers.protocols.directcontr import instance
from gridemu.model.errors import ScenarioError
from gridemu.emulator.scenario import load_scenario
from gridemu.scenarios.workload import generate_jobs

TRACE = Path(__file__).resolve().parent.parent / "scenarios" / "data" / "shapley-small.swf"


def hand(latency=1e-6, sites=4, procs=2, horizon=400.0, **protocol) -> dict:
    return {
        "run": {"seed": 2, "horizon": horizon},
        "network": {"latency": latency},
        "sites": {"count": sites, "procs": procs},
        "scheduler": {"name": "planned"},
        "workload": {"kind": "jobs", "list": [
            {"site": i % sites, "release": (i * 7) % 50, "size": 5 + (i * 13) % 40} for i in range(60)
        ]},
        "protocol": {"name": "directcontr", **protocol},
    }


def trace(latency=1e-6, seed=3, **protocol) -> dict:
    return {
        "run": {"seed": seed, "horizon": 20000.0},
        "network": {"latency": latency},
        "sites": {"count": 4, "procs": {"dist": "zipf", "total": 6}},
        "scheduler": {"name": "planned"},
        "workload": {"kind": "swf", "path": str(TRACE), "split_parallel": True, "t_start": "random", "duration": 20000.0},
        "protocol": {"name": "directcontr", **protocol},
    }


def central(data: dict):
    sc = load_scenario(data)
    jobs = instance(generate_jobs(sc)[0])
    procs = [s.procs for s in sc.sites]
    return simulate(jobs, procs, "directcontr", int(sc.horizon), gamma="index"), procs


@pytest.mark.parametrize("make", [hand, trace])
def test_decentralized_schedule_is_centralized_directcontr_at_negligible_latency(make):
    data = make(compare=["ref", "directcontr"])
    result = emulator.run(data)
    want, procs = central(data)
    owner = [u for u, n in enumerate(procs) for _ in range(n)]
    t = result.jobs.set_index("job_id")
    assert len(want.start) > 20
    for job, start in want.start.items():
        assert t.loc[job, "exec_site"] == owner[want.machine[job]], job
        # the same instant, lagging on the real clock by the protocol's stretch 2L + 4L·T (+ the pull)
        assert start <= t.loc[job, "start"] <= start + 1e-5 + 6e-6 * start, job
    proto = result.summary["protocol"]
    assert proto["jobs_started_only_by_central"] == 0
    assert proto["max_start_diff_vs_central_index_order"] < 1e-5 + 6e-6 * data["run"]["horizon"]
    assert proto["fairness_ref"] == 0.0
    assert proto["fairness"] == pytest.approx(proto["fairness_directcontr_index"], rel=1e-2, abs=1e-2)


def test_latency_stretches_the_schedule_and_costs_fairness():
    base = emulator.run(trace(latency=1e-6, compare=["ref"])).summary["protocol"]["fairness"]
    slow = emulator.run(trace(latency=0.05, compare=["ref"])).summary["protocol"]
    assert slow["max_start_diff_vs_central_index_order"] > 10  # every start lags by about 4·L·T
    assert slow["fairness"] > base


def test_summary_compares_every_algorithm_against_ref():
    proto = emulator.run(trace()).summary["protocol"]
    for name in ("ref", "rand", "directcontr", "roundrobin", "fairshare", "utfairshare", "currfairshare"):
        assert proto[f"fairness_{name}"] >= 0
    assert proto["fairness_ref"] == 0.0 and proto["p_tot"] > 0
    assert proto["fairness_roundrobin"] > proto["fairness_ref"]


def test_same_job_table_for_any_backend_and_shard_count(ray_session):
    data = hand(latency=0.01, compare=["directcontr"])
    cols = ["job_id", "exec_site", "start", "end", "state"]
    base = emulator.run(data, shards=1)
    for backend, shards in (("inprocess", 3), ("ray", 2)):
        other = emulator.run(data, backend=backend, shards=shards)
        pd.testing.assert_frame_equal(base.jobs[cols], other.jobs[cols])


def test_trace_preparation_splits_processors_and_picks_a_random_window():
    sc = load_scenario(trace())
    # one each, then the other 2 by Zipf weights 1, 1/2, 1/3, 1/4 (1.96, 1.48, 1.32, 1.24 by largest remainder)
    assert [s.procs for s in sc.sites] == [2, 2, 1, 1]
    assert [s.procs for s in load_scenario(trace() | {"sites": {"count": 4, "procs": {"dist": "uniform", "total": 10}}}).sites] == [3, 3, 2, 2]
    a, b, c = (generate_jobs(load_scenario(trace(seed=s)))[0] for s in (3, 3, 4))
    assert (a["release"] == b["release"]).all() and (a["release"] >= 0).all() and a["release"].max() < 20000
    assert len(a) != len(c) or (a["release"] != c["release"]).any()  # another seed, another window
    assert (a["procs"] == 1).all()  # parallel jobs became sequential copies


@pytest.mark.parametrize(
    "change,message",
    [
        ({"sites": {"count": 11, "procs": 1}, "protocol": {"name": "directcontr", "compare": ["ref", "rand"]}}, "protocol.compare: REF is exponential and takes at most 10 organizations, here 11: compare rand or directcontr"),
        ({"protocol": {"name": "directcontr", "samples": 0}}, "protocol.samples: must be > 0"),
        ({"protocol": {"name": "directcontr", "compare": ["best"]}}, "protocol.compare: a list of algorithms"),
        ({"run": {"seed": 2}}, "run.horizon: give t_end"),
        ({"scheduler": {"name": "fcfs"}}, 'scheduler.name: the directcontr protocol starts jobs itself'),
        ({"sites": {"count": 4, "procs": {"dist": "zipf", "total": 3}}}, "sites.procs.total: 3 processors cannot give each of the 4 sites one"),
        ({"sites": {"count": 4, "procs": {"dist": "zipf", "total": -2}}}, "sites.procs.total: must be > 0"),
    ],
)
def test_bad_settings_name_the_key(change, message):
    data = hand()
    data.update(change)
    with pytest.raises(ScenarioError, match=message):
        emulator.run(data)


def test_non_integral_jobs_and_bad_windows_are_errors():
    data = hand()
    data["workload"]["list"][3]["size"] = 2.5
    with pytest.raises(ScenarioError, match=r"workload: job \d+: size 2.5 is not an integer"):
        emulator.run(data)
    data = trace()
    data["workload"]["duration"] = 1e9
    with pytest.raises(ScenarioError, match="workload.duration: 1000000000.0 is longer than the trace"):
        emulator.run(data)


def test_past_ten_organizations_rand_is_the_reference():
    # REF's exact Shapley values are not computed past 10 organizations by default; RAND(N)
    # (sampled permutations) is then what Δψ/p_tot is measured against, and the summary says so.
    data = hand(sites=12, procs=1, horizon=300.0)
    proto = emulator.run(data).summary["protocol"]
    assert proto["reference"] == "rand" and "fairness_ref" not in proto
    assert proto["fairness_rand"] == 0.0 and proto["fairness"] >= 0.0 and proto["p_tot"] > 0
    assert emulator.run(hand()).summary["protocol"]["reference"] == "ref"
