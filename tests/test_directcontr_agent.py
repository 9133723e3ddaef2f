"""Decentralized DIRECTCONTR (the ``directcontr`` protocol) and the Shapley papers' workload preparation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gridemu.emulator as emulator
from gridemu.brokers.directcontr.policies import simulate
from gridemu.brokers.directcontr.protocol import instance
from gridemu.brokers.directcontr.sampled import SpKey
from gridemu.brokers.directcontr.shapley_value import psi_sp
from gridemu.emulator.cli import main as cli_main
from gridemu.emulator.scenario import load_scenario
from gridemu.model.errors import ScenarioError
from gridemu.scenarios.workload import generate_jobs

TRACE = Path(__file__).resolve().parent.parent / "scenarios" / "data" / "shapley-small.swf"


def hand(latency=1e-6, sites=4, procs=2, horizon=400.0, **protocol) -> dict:
    return {
        "run": {"seed": 2, "horizon": horizon},
        "network": {"latency": latency},
        "sites": {"count": sites, "procs": procs},
        "scheduler": {"name": "planned"},
        "workload": {
            "kind": "jobs",
            "list": [{"site": i % sites, "release": (i * 7) % 50, "size": 5 + (i * 13) % 40} for i in range(60)],
        },
        "protocol": {"name": "directcontr", **protocol},
    }


def trace(latency=1e-6, seed=3, **protocol) -> dict:
    return {
        "run": {"seed": seed, "horizon": 20000.0},
        "network": {"latency": latency},
        "sites": {"count": 4, "procs": {"dist": "zipf", "total": 6}},
        "scheduler": {"name": "planned"},
        "workload": {
            "kind": "swf",
            "path": str(TRACE),
            "split_parallel": True,
            "t_start": "random",
            "duration": 20000.0,
        },
        "protocol": {"name": "directcontr", **protocol},
    }


def central(data: dict, lines_15_16: str = "prose"):
    sc = load_scenario(data)
    jobs = instance(generate_jobs(sc)[0])
    procs = [s.procs for s in sc.sites]
    return simulate(jobs, procs, "directcontr", int(sc.horizon), gamma="index", lines_15_16=lines_15_16), procs


@pytest.mark.parametrize("make", [hand, trace])
@pytest.mark.parametrize("reading", [None, "literal"])
def test_decentralized_schedule_is_centralized_directcontr_at_negligible_latency(make, reading):
    # None: the key left out, the prose reading (the default)
    data = make(compare=["ref", "directcontr"], **({} if reading is None else {"lines_15_16": reading}))
    result = emulator.run(data)
    want, procs = central(data, reading or "prose")
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


def two_orgs(**protocol) -> dict:
    """[S] Algorithm 1 lines 15-16's two readings by hand (as in tests/test_shapley.py): org 0
    owns processor 0 (site 0), org 1 processor 1. Org 1's job 0 takes processor 0 during
    [0, 3). At t = 2 (d = 2, ½d(d+1) = 3) jobs 1 (org 0) and 2 (org 1) are released and
    processor 1 is free. Prose: ψ[1] += 3, φ[0] += 3, org 0 first; literal (as printed):
    φ[1] += 3, ψ[0] += 3, org 1 first."""
    data = hand(sites=2, procs=1, horizon=12.0, compare=["ref", "directcontr"], **protocol)
    data["workload"]["list"] = [
        {"site": 1, "release": 0, "size": 3},
        {"site": 0, "release": 2, "size": 4},
        {"site": 1, "release": 2, "size": 1},
    ]
    return data


def test_lines_15_16_key_chooses_the_reading_by_hand():
    runs = {r: emulator.run(two_orgs(**({} if r is None else {"lines_15_16": r}))) for r in (None, "prose", "literal")}
    placed = {
        r: {int(j): (round(s), int(e)) for j, s, e in zip(x.jobs["job_id"], x.jobs["start"], x.jobs["exec_site"])}
        for r, x in runs.items()
    }
    # (start on the schedule's clock, site that ran it); the real clock lags by about 4L·T
    assert placed[None] == placed["prose"] == {0: (0, 0), 1: (2, 1), 2: (3, 0)}
    assert placed["literal"] == {0: (0, 0), 2: (2, 1), 1: (3, 0)}
    assert runs["literal"].summary["protocol"]["jobs_started_only_by_central"] == 0


def test_a_bad_lines_15_16_exits_non_zero_naming_the_key(capsys):
    assert cli_main(["validate", "shapley", "--set", "protocol.lines_15_16=printed"]) == 2
    err = capsys.readouterr().err
    assert "protocol.lines_15_16: unknown value 'printed' (allowed: prose, literal)" in err


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


@pytest.mark.parametrize("reading", ["prose", "literal"])
def test_same_job_table_for_any_backend_and_shard_count(ray_session, reading):
    data = hand(latency=0.01, compare=["directcontr"], lines_15_16=reading)
    cols = ["job_id", "exec_site", "start", "end", "state"]
    base = emulator.run(data, shards=1)
    for backend, shards in (("inprocess", 3), ("ray", 2)):
        other = emulator.run(data, backend=backend, shards=shards)
        pd.testing.assert_frame_equal(base.jobs[cols], other.jobs[cols])
    if reading == "literal":  # the key reached the agents: another schedule than the prose reading's
        prose = emulator.run(hand(latency=0.01, compare=["directcontr"]), shards=1)
        assert (prose.jobs["start"] != base.jobs["start"]).sum() > 10


def test_trace_preparation_splits_processors_and_picks_a_random_window():
    sc = load_scenario(trace())
    # one each, then the other 2 by Zipf weights 1, 1/2, 1/3, 1/4 (1.96, 1.48, 1.32, 1.24 by largest remainder)
    assert [s.procs for s in sc.sites] == [2, 2, 1, 1]
    assert [
        s.procs
        for s in load_scenario(trace() | {"sites": {"count": 4, "procs": {"dist": "uniform", "total": 10}}}).sites
    ] == [3, 3, 2, 2]
    a, b, c = (generate_jobs(load_scenario(trace(seed=s)))[0] for s in (3, 3, 4))
    assert (a["release"] == b["release"]).all() and (a["release"] >= 0).all() and a["release"].max() < 20000
    assert len(a) != len(c) or (a["release"] != c["release"]).any()  # another seed, another window
    assert (a["procs"] == 1).all()  # parallel jobs became sequential copies
    # a window of `duration` from a given start ([L]'s first 5·10^6 s): the same as t_start, t_end
    fixed = trace() | {"workload": trace()["workload"] | {"t_start": 3000.0, "duration": 9000.0}}
    by_end = trace() | {
        "workload": {k: v for k, v in fixed["workload"].items() if k != "duration"} | {"t_end": 12000.0}
    }
    d, e = (generate_jobs(load_scenario(x))[0] for x in (fixed, by_end))
    assert len(d) > 0 and (d["release"] == e["release"]).all() and d["release"].max() < 9000


@pytest.mark.parametrize(
    "change,message",
    [
        (
            {"sites": {"count": 11, "procs": 1}, "protocol": {"name": "directcontr", "compare": ["ref", "rand"]}},
            "protocol.compare: REF is exponential and takes at most "
            "10 organizations, here 11: compare rand or directcontr",
        ),
        ({"protocol": {"name": "directcontr", "samples": 0}}, "protocol.samples: must be > 0"),
        ({"protocol": {"name": "directcontr", "compare": ["best"]}}, "protocol.compare: a list of algorithms"),
        ({"protocol": {"name": "directcontr", "mode": "gossip"}}, "protocol.mode: "),
        (
            {"protocol": {"name": "directcontr", "lines_15_16": "printed"}},
            r"protocol.lines_15_16: unknown value 'printed' \(allowed: prose, literal\)",
        ),
        (
            {"protocol": {"name": "directcontr", "lines_15_16": "literal", "mode": "sampled"}},
            'protocol.lines_15_16: the literal reading .* needs mode = "replicated"',
        ),
        ({"protocol": {"name": "directcontr", "mode": "sampled", "choices": -1}}, "protocol.choices: must be >= 0"),
        ({"run": {"seed": 2}}, "run.horizon: give t_end"),
        ({"scheduler": {"name": "fcfs"}}, 'scheduler.name: the directcontr protocol starts jobs itself'),
        (
            {"sites": {"count": 4, "procs": {"dist": "zipf", "total": 3}}},
            "sites.procs.total: 3 processors cannot give each of the 4 sites one",
        ),
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
    data["workload"] |= {"t_start": 0.0, "t_end": 5000.0, "duration": 100.0}
    with pytest.raises(ScenarioError, match="workload.duration: give it with t_start .*not with t_end"):
        emulator.run(data)


def test_past_ten_organizations_rand_is_the_reference():
    # REF's exact Shapley values are not computed past 10 organizations by default; RAND(N)
    # (sampled permutations) is then what Δψ/p_tot is measured against, and the summary says so.
    data = hand(sites=12, procs=1, horizon=300.0)
    proto = emulator.run(data).summary["protocol"]
    assert proto["reference"] == "rand" and "fairness_ref" not in proto
    assert proto["fairness_rand"] == 0.0 and proto["fairness"] >= 0.0 and proto["p_tot"] > 0
    assert emulator.run(hand()).summary["protocol"]["reference"] == "ref"


# ------------------------------------------------------------------ mode = "sampled"


@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(1, 30), st.booleans(), st.booleans()), max_size=12),
    st.integers(0, 120),
)
def test_sampled_key_is_twice_phi_minus_psi_of_the_schedule(rows, t):
    # Jobs (start s, size p) that ran on our processors (φ) or are ours (ψ), finished by t or
    # running at t; SpKey, updated as the agent does, against ψ_sp computed pair by pair.
    key = SpKey()
    phi, psi = [], []
    for s, p, on_ours, mine in rows:
        if s > t or on_ours == mine:  # not started yet, or ours on ours (adds to both)
            continue
        sign = 1 if on_ours else -1
        key.run(s, sign)
        if s + p <= t:
            key.finish(s, s + p, sign)
        (phi if on_ours else psi).append((s, p if s + p <= t else None))
    assert key.at(t) == pytest.approx(2 * (psi_sp(phi, t) - psi_sp(psi, t)), abs=1e-6)


def test_sampled_directcontr_by_hand():
    # Sites a and b, one processor each, latency 0.1, d = 1 (each asks the other).
    # t=0: jobs 0 (size 10) and 1 (size 12) at a. Job 0 starts a probing round (a's processor
    # is free); job 1 finds more jobs than free processors and sends b a need. b, idle, asks
    # for one at 0.1; a's round ends at 0.2 (b waits for nothing): job 0 starts on a; the ask,
    # there at 0.2, gets job 1, which runs on b from 0.3 to 12.3.
    # t=5: job 2 (size 4) at b, whose processor is busy: a need to a, busy too (ignored).
    # t=10.2: job 0 ends; a probes b, whose key is then 2φ = 10·11 (job 1's units on b's
    # processor) with job 2 waiting: a asks at 10.4, job 2 leaves b at 10.5, runs on a from
    # 10.6 to 14.6.
    data = {
        "run": {"horizon": 100.0},
        "network": {"latency": 0.1},
        "sites": [{"name": "a", "procs": 1}, {"name": "b", "procs": 1}],
        "scheduler": {"name": "planned"},
        "workload": {
            "kind": "jobs",
            "list": [
                {"site": "a", "release": 0, "size": 10},
                {"site": "a", "release": 0, "size": 12},
                {"site": "b", "release": 5, "size": 4},
            ],
        },
        "protocol": {"name": "directcontr", "mode": "sampled", "choices": 1, "compare": ["directcontr"]},
    }
    r = emulator.run(data)
    t = r.jobs.set_index("job_id")
    got = [(int(t.loc[j, "exec_site"]), round(t.loc[j, "start"], 9), round(t.loc[j, "end"], 9)) for j in range(3)]
    assert got == [(0, 0.2, 10.2), (1, 0.3, 12.3), (0, 10.6, 14.6)]
    assert r.summary["global"]["messages"] == {"job": 2, "probe": 4, "report": 4, "need": 2, "ask": 2, "finished": 2}
    # Without choices every organization keeps its jobs: 0 then 1 on a, 2 on b.
    data["protocol"]["choices"] = 0
    r = emulator.run(data)
    t = r.jobs.set_index("job_id")
    assert [(int(t.loc[j, "exec_site"]), t.loc[j, "start"]) for j in range(3)] == [(0, 0.0), (0, 10.0), (1, 5.0)]
    assert r.summary["global"]["messages_total"] == 0


def test_sampled_directcontr_gives_one_job_table_for_any_backend_and_shard_count(ray_session):
    data = hand(latency=0.01, sites=6, procs=1, mode="sampled", compare=["directcontr"])
    cols = ["job_id", "exec_site", "start", "end", "state"]
    base = emulator.run(data, shards=1)
    assert (base.jobs["exec_site"] != base.jobs["submit_site"]).sum() > 5  # organizations lend processors
    for backend, shards in (("inprocess", 3), ("ray", 2)):
        other = emulator.run(data, backend=backend, shards=shards)
        pd.testing.assert_frame_equal(base.jobs[cols], other.jobs[cols])


def test_sampled_directcontr_messages_per_job_do_not_grow_with_organizations():
    # The same load per organization at 4 and 24 organizations: replicated DIRECTCONTR sends
    # 2(N − 1) broadcasts a job; the sampled mode at most 3d + 3 whatever N.
    per_job = {}
    for n in (4, 24):
        data = hand(latency=0.01, sites=n, procs=1, horizon=2000.0, mode="sampled", compare=["rand"])
        data["workload"]["list"] = [
            {"site": i % n, "release": (i * 7) % 500, "size": 5 + (i * 13) % 40} for i in range(15 * n)
        ]
        r = emulator.run(data)
        g = r.summary["global"]
        assert (r.jobs["state"] == "done").all()
        per_job[n] = g["messages_total"] / g["jobs"]
        assert per_job[n] <= 3 * 2 + 3
        assert r.summary["protocol"]["fairness"] >= 0.0 and r.summary["protocol"]["reference"] == "rand"
    assert per_job[24] < 2 * per_job[4]


def test_sampled_mode_runs_over_a_topology_and_replicated_refuses_one():
    data = hand(latency=0.01, sites=6, procs=1, mode="sampled", compare=["directcontr"])
    data["network"]["topology"] = "ring"
    r = emulator.run(data)
    assert (r.jobs["state"] != "queued").any()
    sent = r.jobs[r.jobs["exec_site"] != r.jobs["submit_site"]]
    assert len(sent) and ((sent["exec_site"] - sent["submit_site"]) % 6).isin([1, 5]).all()  # neighbors only
    data["protocol"]["mode"] = "replicated"
    with pytest.raises(ScenarioError, match='mode = "sampled" runs over any topology'):
        load_scenario(data)


@pytest.mark.parametrize("seed", [1, 2])
def test_warm_start_run_is_the_warm_window_of_the_experiment_script(seed, tmp_path):
    """`workload.warm_start = "fcfs"` in a run gives the warm window that
    `gridemu.experiments.shapley_warm` builds on its own (its Trace, its FCFS backlog of SJobs,
    the pure functions): the same backlog, jobs and p_tot, and every central algorithm's
    Δψ/p_tot (RAND draws from another stream there)."""
    import gridemu.experiments.shapley_warm as warm

    csv = tmp_path / "warm.csv"
    warm.run(str(TRACE), 6, 50000, "zipf", 0, csv, 50000, range(seed, seed + 1))
    row = pd.read_csv(csv).iloc[0]
    assert row["fcfs_backlog"] > 50  # the window does start warm
    result = emulator.run("shapley", seed=seed, backend="inprocess", overrides={"workload.warm_start": "fcfs"})
    glob, proto = result.summary["global"], result.summary["protocol"]
    assert glob["warm_start_jobs"] == row["fcfs_backlog"]
    assert glob["jobs"] == row["fcfs_jobs"] and proto["p_tot"] == row["fcfs_p_tot"]
    for name in ("directcontr", "fairshare", "utfairshare", "currfairshare", "roundrobin"):
        assert proto[f"fairness_{name}"] == pytest.approx(row[f"fcfs_{name}"], rel=1e-9, abs=1e-9), name
    assert proto["fairness_directcontr"] != pytest.approx(row["cold_directcontr"])  # not the cold window


def test_warm_start_is_reported(tmp_path, capsys):
    assert cli_main(["run", "shapley", "--set", 'workload.warm_start="fcfs"', "--out", str(tmp_path / "w")]) == 0
    out = capsys.readouterr().out
    assert "warm start (FCFS backlog at t_start)" in out and "89 of the jobs" in out
    assert cli_main(["report", str(tmp_path / "w"), "--no-plot"]) == 0
    assert "89 of the jobs" in capsys.readouterr().out


def test_warm_start_job_table_is_the_same_on_any_shard_count():
    over = {"workload.warm_start": "fcfs"}
    one = emulator.run("shapley", seed=3, backend="inprocess", shards=1, overrides=over)
    two = emulator.run("shapley", seed=3, backend="inprocess", shards=2, overrides=over)
    assert one.summary["global"]["warm_start_jobs"] > 0
    pd.testing.assert_frame_equal(one.jobs, two.jobs)


@pytest.mark.parametrize("make", [hand, trace])
def test_sampled_directcontr_without_choices_is_each_organization_first_come_first_served(make):
    # choices = 0: no message; each organization's site starts its own jobs in submission order
    # on its own identical processors, a job as soon as one is free (written here, apart from
    # the agent: a heap of processor free times per site).
    import heapq

    data = make(mode="sampled", choices=0)
    r = emulator.run(data)
    sc = load_scenario(data)
    jobs = generate_jobs(sc)[0]
    horizon = sc.horizon
    want = {}
    for k, site in enumerate(sc.sites):
        free = [0.0] * site.procs
        mine = jobs[jobs["submit_site"] == k]
        for j in mine[pd.Series(mine["release"]).argsort(kind="stable").to_numpy()]:
            start = max(float(j["release"]), heapq.heappop(free))
            heapq.heappush(free, start + float(j["size"]))
            want[int(j["job_id"])] = (k, start)
    got = r.jobs.set_index("job_id")
    started = got[got["start"] < horizon]
    assert len(started) > 40 and r.summary["global"]["messages_total"] == 0
    for j, row in started.iterrows():
        assert (int(row["exec_site"]), row["start"]) == pytest.approx(want[j]), j
    assert all(want[j][1] >= horizon for j in got.index.difference(started.index))
