"""The ``power_of_d`` protocol: the pure choice and samples, the agent against the
centralized reference (brokers/power_of_d/reference.py), hand-checked runs, determinism
over shards and backends, faults, and errors that name the key."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.power_of_d.algorithm import power_of_d_choice, power_of_d_samples
from gridemu.brokers.power_of_d.reference import simulate
from gridemu.emulator.cli import main
from gridemu.emulator.scenario import load_scenario
from gridemu.model.errors import ScenarioError
from gridemu.model.rng import named_rng
from gridemu.scenarios.workload import generate_jobs
from tests.conftest import small_grid

# ----------------------------------------------------------------------------- pure functions


@pytest.mark.parametrize(
    ("own", "loads", "choice"),
    [
        (3, [1, 2], 0),
        (3, [2, 1], 1),
        (1, [1, 1, 1], -1),  # ties stay at the site itself
        (0, [0], -1),
        (2, [], -1),  # d = 0: nothing to compare with
        (5, [4, 2, 2, 3], 1),  # equal samples: the earliest drawn
        (2, [2.5, 1.5], 1),  # reports plus jobs sent since are counts, compared as numbers
        (1, [3, 3], -1),
    ],
)
def test_power_of_d_choice(own, loads, choice):
    assert power_of_d_choice(own, loads) == choice


class _Site:  # what Agent.random_neighbors reads of a site
    def __init__(self, site_id: int):
        self.site_id = site_id


@pytest.mark.parametrize("neighbors", [None, ((3, 5, 9), (0,), (1, 2), (4, 6, 7, 8))])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_samples_are_one_random_neighbors_draw_per_job(neighbors, d):
    """One vectorized draw gives, row by row, what the agent base's power-of-d sample would
    draw once per arrival from the same stream; never the site itself on the full graph."""
    n_sites, me = 10, 3
    nb = None if neighbors is None else neighbors[me]
    grid = GridInfo(
        n_sites, tuple(range(n_sites)), 7, 0.5, neighbors=None if neighbors is None else (None, None, None, nb)
    )
    agent = Agent.__new__(Agent)
    agent.site, agent.grid = _Site(me), grid
    rng = named_rng(7, me, "power_of_d", "samples")
    rows = power_of_d_samples(7, me, nb, n_sites, 200, d)
    assert rows == [agent.random_neighbors(rng, d) for _ in range(200)]
    drawn = {k for row in rows for k in row}
    assert drawn == (set(range(n_sites)) - {me} if nb is None else set(nb))


@pytest.mark.parametrize("neighbors", [None, (1, 5, 7)])
def test_closed_samples_without_replacement(neighbors):
    """Mitzenmacher's customers: the site itself is a candidate, d distinct a job (all of
    them where d is larger), each candidate as likely as the others."""
    n_sites, me = 9, 4
    cands = set(range(n_sites)) if neighbors is None else {*neighbors, me}
    rows = power_of_d_samples(5, me, neighbors, n_sites, 3000, 2, closed=True, replace=False)
    assert all(len(r) == 2 and len(set(r)) == 2 and set(r) <= cands for r in rows)
    counts = np.bincount([k for r in rows for k in r], minlength=n_sites)[sorted(cands)]
    expected = 2 * 3000 / len(cands)
    assert np.abs(counts - expected).max() < 5 * np.sqrt(expected)
    everyone = power_of_d_samples(5, me, neighbors, n_sites, 50, 1000, closed=True, replace=False)
    assert all(sorted(r) == sorted(cands) for r in everyone) and len({tuple(r) for r in everyone}) > 1
    with_repl = power_of_d_samples(5, me, neighbors, n_sites, 3000, 2, closed=True)
    assert {k for r in with_repl for k in r} == cands


@pytest.mark.parametrize("closed", [False, True])
@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("d", [1, 3, 12])
def test_full_graph_samples_are_draws_over_the_listed_candidates(closed, replace, d):
    """On the full graph no candidate list is built; the samples are still the docstring's:
    the site's stream drawing positions in the sorted list of candidates (every site, or every
    other site), with replacement in one draw, or without it one job at a time."""
    n_sites, me, jobs = 11, 6, 40
    cands = np.array([k for k in range(n_sites) if closed or k != me])
    rng = named_rng(8, me, "power_of_d", "samples")
    if replace:
        expected = cands[rng.integers(len(cands), size=(jobs, d))].tolist()
    else:
        expected = [cands[rng.choice(len(cands), size=min(d, len(cands)), replace=False)].tolist() for _ in range(jobs)]
    assert power_of_d_samples(8, me, None, n_sites, jobs, d, closed=closed, replace=replace) == expected
    listed = power_of_d_samples(8, me, tuple(k for k in range(n_sites) if k != me), n_sites, jobs, d, closed, replace)
    assert listed == expected  # the same neighbors named one by one


def test_no_samples_without_choices():
    assert power_of_d_samples(1, 0, (1, 2), 3, 4, 0) == [[]] * 4
    assert power_of_d_samples(1, 0, None, 1, 4, 2) == [[]] * 4


# ----------------------------------------------------------------------------- the agent


def _pod_grid(jobs: int = 1500, sites: int = 12, **protocol) -> dict:
    data = small_grid(
        "power_of_d", jobs=jobs, sites=sites, network={"topology": "random:3"}, metrics={"counterfactual": "none"}
    )
    data["workload"]["rate"] = [3.0] + [0.9] * (sites - 1)
    data["protocol"].update(protocol)
    return data


def scenario_jobs(scenario) -> dict[str, np.ndarray]:
    """The submitted jobs in job-id order, as the reference takes them."""
    jobs, _ = generate_jobs(scenario)
    return {"release": jobs["release"], "size": jobs["size"], "site": jobs["submit_site"]}


def reference(data: dict, period: "float | None | str" = "scenario"):
    """The reference on the scenario's grid, jobs and keys; ``period``: the scenario's, or another."""
    scenario = load_scenario(data)
    p, sub = scenario.data["protocol"], scenario_jobs(scenario)
    return simulate(
        sub["release"],
        sub["size"],
        sub["site"],
        len(scenario.sites),
        scenario.topology.neighbors,
        [len(s.speeds) for s in scenario.sites],
        p["d"],
        p["period"] if period == "scenario" else period,
        float(scenario.data["network"]["latency"]),
        scenario.data["run"]["seed"],
        speed=[s.speeds[0] for s in scenario.sites],
        home=p["home"],
        correct=p["correct"],
        replace=p["replace"],
    )


def same_schedule(res, ref) -> None:
    t = res.jobs.sort_values("job_id")
    np.testing.assert_array_equal(t["start"].to_numpy(), ref.start)
    np.testing.assert_array_equal(t["end"].to_numpy(), ref.end)
    np.testing.assert_array_equal(t["exec_site"].to_numpy(), ref.exec_site)


@pytest.mark.parametrize(
    ("topology", "protocol", "sites_extra"),
    [
        ("random:3", {"d": 2, "period": 10.0}, {}),
        ("random:3", {"d": 1, "period": 0.7}, {}),
        ("random:3", {"d": 3, "period": 25.0}, {"procs": 2}),
        ("ring", {"d": 2, "period": 3.0}, {}),
        ("full", {"d": 2, "period": 5.0}, {}),
    ],
)
def test_the_agents_give_the_reference_schedule(topology, protocol, sites_extra):
    """The reference simulates the same grid on one heap, from the model (reports as one
    message each, the counts a site keeps, gridemu's order at one instant): same starts,
    ends and sites to the last bit, and the same numbers of reports and transfers."""
    data = _pod_grid(**protocol)
    data["network"]["topology"] = topology
    data["sites"].update(sites_extra)
    res = emulator.run(data)
    ref = reference(data)
    same_schedule(res, ref)
    msgs = res.summary["global"]["messages"]
    assert msgs["job"] == ref.transfers > 0
    # Reports go on after the last job ends until the run's last barrier: at least the reference's.
    assert msgs["report"] >= ref.reports > 0


@pytest.mark.parametrize(
    ("topology", "protocol"),
    [
        ("full", {"d": 2, "period": 2.0, "home": False, "correct": False, "replace": False}),
        ("full", {"d": 1000, "period": 4.0, "home": False, "correct": False, "replace": False}),
        ("full", {"d": 1, "period": 3.0, "home": False}),
        ("random:3", {"d": 2, "period": 2.5, "home": False, "replace": False}),
        ("random:3", {"d": 3, "period": 1.5, "correct": False}),
    ],
)
def test_mitzenmacher_settings_give_the_reference_schedule(topology, protocol):
    """The keys of the paper's own setting (no home, no correction, distinct samples),
    one by one and together: the agents' schedule is the reference's, bit for bit."""
    data = _pod_grid(**protocol)
    data["network"]["topology"] = topology
    res, ref = emulator.run(data), reference(data)
    same_schedule(res, ref)
    assert res.summary["global"]["messages"]["job"] == ref.transfers > 0
    if not protocol.get("home", True):  # a job stays only where its sample drew the site itself
        t = res.jobs.sort_values("job_id")
        kept = t[t["exec_site"] == t["submit_site"]]
        assert 0 < len(kept) < len(t)


def test_without_home_the_board_decides_alone():
    """Two sites, d = 1, no home, no correction: each job goes to its one sample, the site
    itself or the other, whatever the queues hold: both reported 0 at t = 0 and nothing
    after, so every sample looks empty."""
    jobs = [(0.1 * i, 0) for i in range(20)]
    data = two_sites(jobs, period=100.0)
    data["protocol"].update(home=False, correct=False)
    blind = emulator.run(data).jobs.sort_values("job_id")
    sample = power_of_d_samples(3, 0, None, 2, 20, 1, closed=True)
    assert blind["exec_site"].tolist() == [row[0] for row in sample]
    assert set(blind["exec_site"]) == {0, 1}


def test_the_reference_schedule_with_heterogeneous_sites():
    data = _pod_grid(d=2, period=4.0)
    data["sites"] = [{"name": f"s{i}", "procs": 1 + i % 3, "speed": 1.0 + 0.5 * (i % 2)} for i in range(12)]
    same_schedule(emulator.run(data), reference(data))


def two_sites(jobs: list[tuple[float, int]], period: float, **extra) -> dict:
    """Two single-processor sites, d = 1, latency 0.5; jobs of size 10 as (release, site)."""
    return {
        "run": {"seed": 3},
        "network": {"latency": 0.5},
        "sites": {"count": 2, "procs": 1},
        "workload": {"kind": "jobs", "list": [{"release": r, "size": 10.0, "site": s} for r, s in jobs]},
        "protocol": {"name": "power_of_d", "d": 1, "period": period},
        "metrics": {"counterfactual": "none"},
        **extra,
    }


def test_a_report_and_a_transfer_by_hand():
    """Reports at 0, 100...; jobs 0, 2 and 3 at site 0 (t = 0, 0.2, 0.4), job 1 at site 1 (0.1).
      * t = 0: site 0's report (0 jobs) goes before its arrival; job 0 stays (0 vs 0: ties stay).
      * t = 0.2: site 0 holds 1; site 1's report of 0 (sent at 0) is heard only at 0.5, and a
        neighbor not heard yet counts 0: job 2 goes to site 1, counted there as 1 from now on.
      * t = 0.4: 1 here, 0 + 1 sent there: a tie, job 3 stays and waits behind job 0.
    Site 1 runs job 1 from 0.1 to 10.1, then job 2 (arrived at 0.7) to 20.1.
    With full information (the reference, period None) job 2 sees site 1 holding job 1 and
    stays; job 3 sees 2 here against 1 there and goes."""
    data = two_sites([(0.0, 0), (0.1, 1), (0.2, 0), (0.4, 0)], period=100.0)
    t = emulator.run(data).jobs.sort_values("job_id")
    assert t[["exec_site", "start", "end"]].values.tolist() == [
        [0, 0.0, 10.0],
        [1, 0.1, 10.1],
        [1, 10.1, 20.1],
        [0, 10.0, 20.0],
    ]
    full = reference(data, period=None)
    assert full.exec_site.tolist() == [0, 1, 0, 1]
    assert full.start.tolist() == [0.0, 0.1, 10.0, 10.1]


def test_no_choice_is_the_local_schedule():
    """d = 0, or a grid of one site: every job stays, no message is sent."""
    data = _pod_grid(d=0)
    res = emulator.run(data)
    local = emulator.run(data, overrides={"protocol.name": "local"}, recurrence=False)  # proc as the event loop sets it
    pd.testing.assert_frame_equal(res.jobs, local.jobs)
    assert res.summary["global"]["messages_total"] == 0
    one = _pod_grid(jobs=300, sites=1, d=3)
    one["network"]["topology"] = "full"
    one = emulator.run(one)
    assert one.summary["global"]["messages_total"] == 0 and one.summary["protocol"]["jobs_moved"] == 0


def test_reports_go_to_the_neighbors_once_a_period_and_jobs_one_hop():
    data = _pod_grid(d=3, period=5.0)
    res = emulator.run(data)
    nb = load_scenario(data).topology.neighbors
    sent = res.sites["sent_report"].to_numpy()
    rounds = sent // np.array([len(x) for x in nb])
    assert (sent == rounds * np.array([len(x) for x in nb])).all() and len(set(rounds)) == 1
    moved = res.jobs[res.jobs["exec_site"] != res.jobs["submit_site"]]
    assert len(moved) == res.summary["protocol"]["jobs_moved"] > 0
    assert all(e in nb[s] for s, e in zip(moved.submit_site, moved.exec_site))
    assert (moved["migrations"] == 1).all()  # never brokered again


def test_full_information_is_never_worse_than_blind_placement_here():
    """The reference's full information (exact loads now, jobs in flight included) against
    reports so stale they are never heard: the mean flow time is lower, and every job ran
    at its site or a neighbor, exactly once."""
    data = _pod_grid(jobs=3000, d=2)
    scenario = load_scenario(data)
    sub = scenario_jobs(scenario)
    args = (sub["release"], sub["size"], sub["site"], 12, scenario.topology.neighbors, 3, 2)
    fresh = simulate(*args, None, 0.5, 7)
    blind = simulate(*args, 1e9, 0.5, 7)  # one report at 0 (all empty), none after
    flow = lambda s: float(np.mean(s.end - sub["release"]))  # noqa: E731
    assert flow(fresh) < flow(blind)
    assert fresh.reports == 0 and np.isfinite(fresh.end).all()
    nb = scenario.topology.neighbors
    assert all(e == s or e in nb[s] for s, e in zip(sub["site"], fresh.exec_site))
    assert fresh.transfers == int((fresh.exec_site != sub["site"]).sum())


# ----------------------------------------------------------------------------- determinism


def test_same_job_table_for_any_shard_count_and_on_ray(ray_session):
    data = _pod_grid(jobs=800, sites=6, d=2, period=3.0)
    base = emulator.run(data, backend="inprocess", shards=1)
    assert base.summary["protocol"]["jobs_moved"] > 0
    for backend, shards in [("inprocess", 3), ("ray", 2)]:
        pd.testing.assert_frame_equal(base.jobs, emulator.run(data, backend=backend, shards=shards).jobs)


# ----------------------------------------------------------------------------- faults


def test_a_crash_that_loses_jobs_is_counted_again_at_the_next_report():
    """Site 0 runs job 0 from 0; it crashes at 1 (on_crash = "lose") and is repaired at 2.
    No hook tells the agent of the lost job: job 1, held while the site was down and handled
    at the repair, still counts it (1 here against 0 reported by site 1) and goes. The report
    at 5 counts the site again (0 jobs): job 2 at 6 ties with site 1 and stays."""
    data = two_sites(
        [(0.0, 0), (1.5, 0), (6.0, 0)],
        period=5.0,
        faults={"on_crash": "lose", "crash": [{"site": 0, "at": 1.0, "duration": 1.0}]},
    )
    t = emulator.run(data).jobs.sort_values("job_id")
    assert t[["state", "exec_site", "start"]].values.tolist() == [["lost", 0, 0.0], ["done", 1, 2.5], ["done", 0, 6.0]]


def test_faults_give_one_job_table_for_any_shard_count():
    faults = {"message_loss": 0.1, "message_delay": 0.2, "delay_max": 3.0, "mtbf": 150.0, "mttr": 10.0}
    data = _pod_grid(jobs=800, sites=6, d=2, period=3.0)
    data["faults"] = faults
    base = emulator.run(data)
    assert base.summary["global"]["faults"]["crashes"] > 0
    pd.testing.assert_frame_equal(base.jobs, emulator.run(data, shards=3).jobs)


# ----------------------------------------------------------------------------- scenario and errors


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("d", -1, "must be >= 0"),
        ("d", 1.5, "must be an integer"),
        ("d", "two", "must be a number"),
        ("d", 2e9, "must be at most 1000"),
        ("period", 0.0, "must be > 0"),
        ("period", -3.0, "must be > 0"),
        ("period", float("inf"), "must be a finite number"),
        ("home", "maybe", "must be true or false"),
        ("replace", 1, "must be true or false"),
    ],
)
def test_bad_keys_name_the_key(key, value, words):
    with pytest.raises(ScenarioError, match=words) as err:
        load_scenario(_pod_grid(**{key: value}))
    assert err.value.key == f"protocol.{key}"


def test_the_shipped_scenario_validates_and_a_bad_key_exits_2(capsys):
    assert main(["validate", "power-of-d"]) == 0
    out = capsys.readouterr().out
    assert "1000 sites" in out and "100,000 jobs" in out and "protocol power_of_d" in out
    assert main(["validate", "power-of-d", "--set", "protocol.d=-2"]) == 2
    assert "protocol.d" in capsys.readouterr().err
    assert main(["validate", "power-of-d", "--set", "protocol.correct=maybe"]) == 2
    assert "protocol.correct: must be true or false, got 'maybe'" in capsys.readouterr().err
    scenario = load_scenario("power-of-d")
    assert scenario.data["protocol"] == {
        "name": "power_of_d",
        "d": 2,
        "period": 10.0,
        "home": True,
        "correct": True,
        "replace": True,
    }
    assert scenario.topology.name == "random:8"
