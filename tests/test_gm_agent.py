"""Greedy migration over messages (the ``gm`` protocol) and the busy schedulers in the emulator."""

from __future__ import annotations

import pandas as pd
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.gm.algorithm import simulate
from gridemu.brokers.gm.metrics import instance
from gridemu.emulator.scenario import load_scenario
from gridemu.model.errors import InvariantError, ScenarioError
from gridemu.scenarios.workload import generate_jobs

MIXED = [{"name": "a", "speeds": [1.0, 2.0]}, {"name": "b", "speeds": [3.0]}, {"name": "c", "speeds": [1.0, 1.0, 0.5]}]


def grid(sites=MIXED, jobs=150, latency=1e-6, seed=3, **protocol) -> dict:
    n = len(sites)
    return {
        "run": {"seed": seed},
        "network": {"latency": latency},
        "sites": [dict(s) for s in sites],
        "scheduler": {"name": "planned"},
        "workload": {
            "kind": "poisson",
            "rate": [0.35] * n,
            "jobs": jobs,
            "alpha": 2.0,
            "beta": 2.0,
            "priority": list(range(n)),
        },
        "protocol": {"name": "gm", **protocol},
    }


def reference(data: dict, **costs) -> dict[int, float]:
    sc = load_scenario(data)
    jobs = instance(generate_jobs(sc)[0])
    speeds = [v for s in sc.sites for v in s.speeds]
    sites = [k for k, s in enumerate(sc.sites) for _ in s.speeds]
    return simulate(jobs, speeds, "gm", sites=sites, **costs).completion


def ends(result) -> dict[int, float]:
    return dict(zip(result.jobs["job_id"].tolist(), result.jobs["end"].tolist()))


@pytest.mark.parametrize(
    "sites",
    [
        MIXED,
        [{"name": "one", "speeds": [1.0, 2.0, 4.0]}],
        [{"name": f"s{k}", "speeds": [1.0 + k]} for k in range(5)],
        [{"name": "x", "speeds": [2.0, 2.0]}, {"name": "y", "speeds": [2.0, 1.0]}],
    ],
)
def test_decentralized_gm_equals_the_reference_at_negligible_latency(sites):
    data = grid(sites)
    result = emulator.run(data)
    got, want = ends(result), reference(data)
    assert set(got) == set(want)
    assert max(abs(got[j] - want[j]) for j in want) < 1e-3
    proto = result.summary["protocol"]
    assert proto["reference_max_diff"] < 1e-3 and proto["penalty_max"] < 1e-3
    assert proto["preemptions"] > 0 if len(sites) > 1 else True
    assert result.summary["fairness"]["ef_violations"] == 0


def test_migration_cost_delays_jobs_as_the_reference_says():
    data = grid(MIXED, jobs=120, migration_cost=0.5, remote_cost=1.0)
    result = emulator.run(data)
    got, want = ends(result), reference(data, migration_cost=0.5, remote_cost=1.0)
    assert max(abs(got[j] - want[j]) for j in want) < 1e-3
    proto = result.summary["protocol"]
    assert proto["penalty_mean"] > 0.1  # the cost shows in completion times
    free = emulator.run(grid(MIXED, jobs=120)).summary["protocol"]
    assert free["penalty_mean"] < 1e-4


def test_latency_delays_decisions_but_every_job_finishes_once():
    result = emulator.run(grid(MIXED, latency=0.2))
    t = result.jobs
    assert (t["state"] == "done").all() and t["job_id"].is_unique
    assert result.summary["protocol"]["reference_max_diff"] > 1e-3  # decisions lag by a latency


def test_same_job_table_for_any_backend_and_shard_count(ray_session):
    data = grid(MIXED, jobs=80, latency=0.05)
    cols = ["job_id", "exec_site", "start", "end", "migrations", "fragments", "state"]
    base = emulator.run(data, shards=1)
    for backend, shards in (("inprocess", 3), ("ray", 2)):
        other = emulator.run(data, backend=backend, shards=shards)
        pd.testing.assert_frame_equal(base.jobs[cols], other.jobs[cols])
        pd.testing.assert_frame_equal(base.pieces.reset_index(drop=True), other.pieces.reset_index(drop=True))


# ------------------------------------------------------------- the paper's counterexamples


def proposition(number: int, scheduler: str, X: int = 10, group: int = 1, variant: str = "base", procs: int = 3):
    speeds = [1.0, 2.0] if number < 3 else [1.0] * procs
    data = {
        "network": {"latency": 1e-6},
        "sites": [{"name": "grid", "speeds": speeds, "scheduler": "planned" if scheduler == "gm" else scheduler}],
        "workload": {
            "kind": "proposition",
            "number": number,
            "X": X if number < 3 else procs,
            "group": group,
            "variant": variant,
        },
    }
    if scheduler == "gm":
        data["protocol"] = {"name": "gm"}
    result = emulator.run(data)
    return result, dict(zip(result.jobs["group"].astype(str), result.jobs["end"]))


# Which group of Propositions 1-2 each busy scheduler falls in: where it puts j1 (alone at 0).
GROUP = {"fcfs": 2, "fcfs_any": 1, "preempt": 2}


@pytest.mark.parametrize("scheduler", ["fcfs", "fcfs_any", "preempt"])
@pytest.mark.parametrize("X", [10, 20])
def test_proposition_1_busy_schedulers_break_ef_and_gm_does_not(scheduler, X):
    result, d = proposition(1, scheduler, X, GROUP[scheduler])
    assert d["j4"] == 2 * X and d["j5"] < d["j4"]  # j4 ≻ j5 yet finishes later
    assert result.summary["fairness"]["ef_violations"] >= 1
    result, d = proposition(1, "gm", X, GROUP[scheduler])
    assert result.summary["fairness"]["ef_violations"] == 0 and d["j4"] <= d["j5"]


@pytest.mark.parametrize("scheduler", ["fcfs", "fcfs_any", "preempt"])
def test_proposition_2_busy_schedulers_reward_a_later_release_and_gm_does_not(scheduler):
    X = 10
    _, base = proposition(2, scheduler, X, GROUP[scheduler])
    _, late = proposition(2, scheduler, X, GROUP[scheduler], variant="late")
    assert base["j4"] == 2 * X and late["j4"] == 1.5 * X + 2  # released 2 later, done 3 earlier
    _, base = proposition(2, "gm", X, GROUP[scheduler])
    _, late = proposition(2, "gm", X, GROUP[scheduler], variant="late")
    assert late["j4"] >= base["j4"]


@pytest.mark.parametrize("n", [2, 3, 5])
def test_proposition_3_non_preemptive_schedulers_let_low_jobs_delay_a_high_one(n):
    top = f"j{n + 1}"
    for scheduler, independent in (("fcfs", False), ("fcfs_any", False), ("preempt", True), ("gm", True)):
        _, full = proposition(3, scheduler, procs=n)
        _, alone = proposition(3, scheduler, procs=n, variant="alone")
        assert alone[top] == 4 * n + 1
        assert (full[top] == alone[top]) == independent, (scheduler, full[top])


def test_preempt_scheduler_resumes_a_job_on_its_own_processor_only():
    # Proposition 3 with n = 3 under "preempt": j4 (v0 = 2) preempts j1 on processor 0 at 4;
    # j1 may only resume there, after j4 ends at 13, although processors 1-2 idle from 6.
    result, d = proposition(3, "preempt", procs=3)
    assert d == {"j1": 15.0, "j2": 6.0, "j3": 6.0, "j4": 13.0}
    assert result.jobs.set_index("group").loc["j1", "fragments"] == 2


# -------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "change,message",
    [
        ({"protocol": {"name": "gm", "migration_cost": -1.0}}, "protocol.migration_cost: must be >= 0"),
        ({"protocol": {"name": "gm", "integral": "yes"}}, "protocol.integral: must be true or false"),
        (
            {"scheduler": {"name": "fcfs"}},
            'scheduler.name: the gm protocol starts jobs itself: set scheduler.name = "planned"',
        ),
        (
            {"workload": {"kind": "poisson", "rate": 0.3, "jobs": 10, "priority": [0, -1, 0]}},
            r"workload.priority\[1\]: must be >= 0",
        ),
        ({"sites": [{"name": "a", "speeds": [1.0, 0.0]}]}, r"sites\[0\].speeds\[1\]: must be > 0"),
        ({"workload": {"kind": "proposition", "number": 4}}, "workload.number: must be 1, 2 or 3"),
        ({"workload": {"kind": "proposition", "number": 1, "X": 7}}, "workload.X: must be an even integer"),
        (
            {"workload": {"kind": "proposition", "number": 1, "variant": "late"}},
            "workload.variant: Proposition 1 has variants base",
        ),
    ],
)
def test_bad_settings_name_the_key(change, message):
    data = grid(MIXED, jobs=10)
    data.update(change)
    with pytest.raises(ScenarioError, match=message):
        emulator.run(data)


def test_parallel_jobs_and_non_integral_releases_name_the_job():
    data = grid(MIXED, jobs=10)
    data["workload"] = {
        "kind": "jobs",
        "list": [{"site": 0, "release": 0, "size": 2}, {"site": 0, "release": 1, "size": 2, "procs": 2}],
    }
    with pytest.raises(
        ScenarioError, match="workload: job 1 needs 2 processors: the gm protocol schedules sequential jobs"
    ):
        emulator.run(data)
    data["workload"]["list"][1].update(procs=1, release=1.5)
    data["protocol"]["integral"] = True
    with pytest.raises(ScenarioError, match=r"protocol.integral: job 1 is released at t=1.5, not an integral time"):
        emulator.run(data)


def test_integral_completions_are_checked():
    # Speeds [1, 2]. Job 0 (size 4) runs on the fast machine and ends at 2; job 1 (released
    # at 1) runs on the slow one until then and moves to the fast one: with size 2, 1 unit
    # is left at speed 2, so it ends at 2.5, not an integral time.
    data = grid([{"name": "a", "speeds": [1.0, 2.0]}], jobs=2, integral=True)
    data["workload"] = {
        "kind": "jobs",
        "list": [{"site": 0, "release": 0, "size": 4}, {"site": 0, "release": 1, "size": 2}],
    }
    with pytest.raises(InvariantError, match=r"integral times: job 1 completes at t=2.5"):
        emulator.run(data)
    data["workload"]["list"][1]["size"] = 3.0  # 2 units left at speed 2: ends at 3
    assert emulator.run(data).jobs["end"].tolist() == [2.0, 3.0]


# ------------------------------------------------------------------ mode = "sampled"


def test_sampled_gm_places_a_waiting_job_where_a_probe_found_a_faster_processor_by_hand():
    # Site a: one processor of speed 1; site b: one of speed 2. Jobs A (priority 1) and B
    # (priority 0), size 4, both submitted at a at t=0. Local GM gives a's processor to A;
    # B waits and probes b (the only other site) at 0; b's bid (speed 2) is back at 0.2;
    # B moves, arrives at 0.3 and runs there at speed 2: ends 2.3. A ends at 4.
    data = {
        "network": {"latency": 0.1},
        "sites": [{"name": "a", "speeds": [1.0]}, {"name": "b", "speeds": [2.0]}],
        "scheduler": {"name": "planned"},
        "workload": {
            "kind": "jobs",
            "list": [
                {"release": 0.0, "size": 4.0, "site": "a", "priority": 1.0},
                {"release": 0.0, "size": 4.0, "site": "a", "priority": 0.0},
            ],
        },
        "protocol": {"name": "gm", "mode": "sampled", "samples": 1},
    }
    r = emulator.run(data)
    t = r.jobs.set_index("job_id")
    assert (t.loc[0, "exec_site"], t.loc[0, "start"], t.loc[0, "end"]) == (0, 0.0, 4.0)
    assert (t.loc[1, "exec_site"], t.loc[1, "migrations"]) == (1, 1)
    assert t.loc[1, "start"] == pytest.approx(0.3) and t.loc[1, "end"] == pytest.approx(2.3)
    # And each completion that leaves a processor idle asks the other site for work (none waits).
    assert r.summary["global"]["messages"] == {"job": 1, "probe": 1, "bid": 1, "steal": 2}


def test_sampled_gm_steals_a_waiting_job_when_a_processor_goes_idle_by_hand():
    # Site b's only job ends at 1 and leaves its processor idle: it asks a (the only other
    # site), whose job 2 is still waiting behind job 0 (b's bid at t=0 was 0: b was busy).
    data = {
        "network": {"latency": 0.1},
        "sites": [{"name": "a", "speeds": [1.0]}, {"name": "b", "speeds": [1.0]}],
        "scheduler": {"name": "planned"},
        "workload": {
            "kind": "jobs",
            "list": [
                {"release": 0.0, "size": 10.0, "site": "a", "priority": 1.0},
                {"release": 0.0, "size": 1.0, "site": "b", "priority": 1.0},
                {"release": 0.0, "size": 3.0, "site": "a", "priority": 0.0},
            ],
        },
        "protocol": {"name": "gm", "mode": "sampled", "samples": 1},
    }
    r = emulator.run(data)
    t = r.jobs.set_index("job_id")
    moved = t[t.migrations > 0]
    assert len(moved) == 1
    job = moved.iloc[0]
    assert job.submit_site == 0 and job.exec_site == 1
    assert job.start == pytest.approx(1.2) and job.end == pytest.approx(4.2)  # steal at 1, arrives 1.2
    assert r.summary["global"]["messages"]["steal"] >= 1


def test_sampled_gm_gives_one_job_table_for_any_shard_count_and_over_a_topology():
    data = grid(
        sites=[{"name": f"s{k}", "speeds": [1.0 + k % 3, 0.5]} for k in range(8)],
        jobs=400,
        latency=0.05,
        mode="sampled",
    )
    tables = [emulator.run(data, shards=k).jobs.sort_values("job_id").reset_index(drop=True) for k in (1, 3, 8)]
    for t in tables[1:]:
        pd.testing.assert_frame_equal(t, tables[0])
    data["network"]["topology"] = "ring"
    r = emulator.run(data)
    assert (r.jobs["state"] == "done").all()
    g = r.summary["global"]
    assert g["messages"].get("probe", 0) + g["messages"].get("steal", 0) <= 2 * g["jobs"] * 2  # d = 2 each
    ring = grid(sites=MIXED)
    ring["network"]["topology"] = "ring"
    with pytest.raises(ScenarioError, match='mode = "sampled" runs over any topology'):
        load_scenario(ring)


def test_sampled_gm_with_no_samples_sends_nothing():
    r = emulator.run(grid(jobs=200, latency=0.05, mode="sampled", samples=0))
    assert r.summary["global"]["messages_total"] == 0
    assert (r.jobs["migrations"] == r.jobs["migrations"]).all() and (r.jobs["exec_site"] == r.jobs["submit_site"]).all()


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_sampled_gm_without_samples_is_each_site_s_own_gm_by_the_reference(seed):
    # With d = 0 a site asks nobody: it runs GM on its own processors over its own jobs, which
    # the centralized reference (simulate, written apart from the agents' ranking) computes
    # site by site. The hand tests cover placing and stealing; this covers the local GM the
    # sampled agent runs between them, on every job of random mixed grids.
    data = grid(jobs=300, latency=0.05, seed=seed, mode="sampled", samples=0)
    got = ends(emulator.run(data))
    sc = load_scenario(data)
    submitted = generate_jobs(sc)[0]
    want: dict[int, float] = {}
    for k, site in enumerate(sc.sites):
        own = instance(submitted[submitted["submit_site"] == k])
        want.update(simulate(own, list(site.speeds), "gm").completion)
    assert len(want) == 300 and got.keys() == want.keys()
    assert all(got[j] == pytest.approx(want[j], rel=1e-12, abs=1e-9) for j in want)
