"""The wall-time estimate counts each protocol's own work (``Protocol.work``, issue 45): the
structure of the model, never a clock. The figures against measured CPU time are in
docs/reliability.md ("The size of a run, before it runs")."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gridemu import emulator
from gridemu.brokers.registry import PROTOCOLS
from gridemu.emulator import gate as gate_module
from gridemu.emulator.estimate import _duration, estimate, gamma_tail, largest_gamma
from gridemu.emulator.limits import COSTS_FILE, Limits
from gridemu.emulator.scenario import load_scenario
from gridemu.model.errors import ScenarioError


def test_every_protocol_with_a_work_hook_has_a_calibrated_coefficient():
    declared = sorted(name for name in PROTOCOLS if PROTOCOLS[name].work is not None)
    assert {"molba", "bilb", "averaging_game", "directcontr"} <= set(declared)
    coefficients = json.loads(COSTS_FILE.read_text())["work_seconds"]
    assert sorted(coefficients) == declared
    assert all(v > 0 for v in coefficients.values())


def test_molba_planning_grows_with_the_square_of_the_jobs_and_with_the_planners():
    """MOLBA at 20,000 jobs was estimated 5.7 s (linear costs) and ran past 600 s."""
    small = estimate(load_scenario("molba", {"workload.jobs": 2000}))
    large = estimate(load_scenario("molba", {"workload.jobs": 20000}))
    assert large.work.units == pytest.approx(100 * small.work.units, rel=0.01)
    assert large.wall > 50 * small.wall
    assert large.wall > 600  # what it was seen to take at least
    assert large.wall_terms["work"] > 10 * sum(v for k, v in large.wall_terms.items() if k != "work")
    # Replicated, every site plans (and the summary once); negotiated, only the summary.
    many = estimate(load_scenario("molba", {"sites.count": 200}))
    assert (
        many.work.units
        > 100 * estimate(load_scenario("molba", {"sites.count": 200, "protocol.mode": "negotiated"})).work.units
    )
    assert "201 plans" in many.describe()


def test_divisible_rounds_grow_with_rounds_and_neighbors():
    often = estimate(load_scenario("bilb-topology", {"protocol.min_gap": 0.5}))
    seldom = estimate(load_scenario("bilb-topology", {"protocol.min_gap": 2.0}))
    assert often.work.units == pytest.approx(4 * seldom.work.units, rel=0.01)
    sparse = estimate(load_scenario("bilb-topology", {"network.topology": "random:4"}))
    assert (
        seldom.work.units < often.work.units and sparse.work.units < estimate(load_scenario("bilb-topology")).work.units
    )
    game = estimate(load_scenario("averaging-game"))
    assert game.work.units > 0 and game.wall_terms["work"] > 0


@pytest.mark.parametrize(
    "name, first_at_zero",
    [("power-of-d", True), ("fairshare-imbalanced", True), ("bilb-topology", True), ("averaging-topology", False)],
)
def test_a_periodic_protocol_counts_whole_rounds_from_its_first(name, first_at_zero):
    """A run shorter than one period still holds the round at 0 (power-of-d at a million
    sites: 8 million reports at once, which the estimate had as 0.2 of a period's)."""
    sc = load_scenario(name)
    every = sc.plugin.traffic(sc.params, 2, 1.0).round_every
    short = estimate(load_scenario(name, {"run.horizon": every / 4}))
    assert short.rounds == (1.0 if first_at_zero else 0.0)
    assert short.messages >= (short.jobs * short.traffic.per_job + short.traffic.per_time * every) * short.rounds
    assert estimate(load_scenario(name, {"run.horizon": 2.5 * every})).rounds == (3.0 if first_at_zero else 2.0)


def test_the_round_at_zero_is_in_the_messages_of_a_short_run():
    # power-of-d at 2,000 sites, a run shorter than its period: the round at 0 is 16,000 reports.
    overrides = {"sites.count": 2000, "workload.jobs": 2000, "metrics.counterfactual": "none"}
    est = estimate(load_scenario("power-of-d", overrides))
    ran = emulator.run("power-of-d", backend="inprocess", overrides=overrides).summary["global"]["messages_total"]
    assert ran / 2 <= est.messages <= 2 * ran


@pytest.mark.parametrize("x", [0.1, 1.0, 2.5, 3.0, 10.0, 40.0])
def test_the_gamma_tail_is_the_closed_form_where_there_is_one(x):
    assert gamma_tail(1.0, x) == pytest.approx(math.exp(-x), rel=1e-12)
    assert gamma_tail(2.0, x) == pytest.approx(math.exp(-x) * (1 + x), rel=1e-12)
    assert gamma_tail(0.5, x) == pytest.approx(math.erfc(math.sqrt(x)), rel=1e-9)


@pytest.mark.parametrize(
    "shape, scale, n", [(2.0, 2.0, 20_000), (1.0, 1.0, 100_000), (0.5, 3.0, 1_000), (5.0, 1.0, 100), (5e4, 1.0, 1_000)]
)
def test_the_largest_of_n_gamma_draws_is_about_their_maximum(shape, scale, n):
    rng = np.random.default_rng(7)
    drawn = np.median([rng.gamma(shape, scale, n).max() for _ in range(40)])
    assert largest_gamma(shape, scale, n) == pytest.approx(drawn, rel=0.15)


def test_a_huge_shape_takes_the_normal_approximation_and_ends():
    # the series would take about sqrt(shape) terms a digit: 1e300 used to mean forever
    assert largest_gamma(1e300, 1.0, 1e6) == pytest.approx(1e300)
    assert largest_gamma(1e5, 1.0, 1e6) == pytest.approx(1e5 + 4.75 * math.sqrt(1e5), rel=1e-3)


def test_a_short_stream_of_releases_lasts_as_long_as_its_longest_job():
    """power-of-d at 100,000 sites with 20,000 jobs released over 0.22 time units ran past t =
    10, a second round of reports the estimate (lasting 0.32) did not count: 0.8 of the 1.6
    million messages. Here at 2,000 sites, released over 1.1 time units, a report every 2."""
    overrides = {"sites.count": 2000, "workload.jobs": 2000, "protocol.period": 2.0, "metrics.counterfactual": "none"}
    est = estimate(load_scenario("power-of-d", overrides))
    assert est.span < 1.2 and est.duration > 5  # the largest of 2,000 exp(1) sizes: about 7.6
    result = emulator.run("power-of-d", backend="inprocess", overrides=overrides)
    assert est.duration <= result.jobs["end"].max() + 1
    ran = result.summary["global"]["messages_total"]
    assert ran / 1.5 <= est.messages <= 1.5 * ran


def test_a_clock_past_float_resolution_names_what_takes_it_there(capsys):
    from gridemu.emulator import cli

    jobs = 'workload={kind="jobs", list=[{release=0.0, size=2.0, site=0}, {release=0.5, size=1e300, site=0}]}'
    assert cli.main(["validate", "quickstart", "--set", jobs]) == 2
    assert "(its longest job, job 1, released at 0.5 with size 1e+300; float resolution)" in capsys.readouterr().err
    assert cli.main(["validate", "quickstart", "--set", "workload.rate=1e-300"]) == 2
    assert "(its releases; float resolution)" in capsys.readouterr().err


def test_a_trace_job_past_float_resolution_is_named(tmp_path, capsys):
    from gridemu.emulator import cli

    line = "{n} {t} 0 {run} 1 -1 -1 1 20 -1 1 {n} 1 1 1 1 -1 -1\n"
    trace = tmp_path / "big.swf"
    trace.write_text(line.format(n=1, t=0, run=10) + line.format(n=2, t=5, run="1e300") + line.format(n=3, t=6, run=10))
    wl = f'workload={{kind="swf", path="{trace}", orgs=2}}'
    assert cli.main(["validate", "quickstart", "--set", "sites.count=2", "--set", wl]) == 2
    err = capsys.readouterr().err
    assert "job 1, released at 5 with size 1e+300" in err


def test_an_organizations_imbalance_is_a_readable_ratio():
    from gridemu.model.jobs import empty_jobs
    from gridemu.scenarios.swf_workload import org_warnings

    jobs = empty_jobs(2)
    jobs["owner"], jobs["group"], jobs["size"], jobs["procs"] = [0, 1], [0, 1], [1e300, 10.0], [1, 1]
    (warning,) = org_warnings(jobs, np.array([4, 4]), ["org0", "org1"], "random")
    assert "differs 1e+299x between organizations" in warning  # not the ratio's 300 digits
    jobs["size"] = [23_980.0, 10.0]
    (warning,) = org_warnings(jobs, np.array([4, 4]), ["org0", "org1"], "random")
    assert "differs 2,398x between organizations" in warning  # not 2.4e+03


def test_a_job_list_lasts_until_its_last_job_can_end():
    # molba-swf releases everything at 0; one of its jobs runs 31,618 time units.
    est = estimate(load_scenario("molba-swf"))
    assert est.span == 0 and est.duration >= 31_618


def test_shapley_reference_doubles_with_each_organization():
    # REF schedules every coalition: one more organization, twice the schedules.
    five = estimate(load_scenario("shapley", {"protocol.compare": ["ref"], "protocol.mode": "sampled"}))
    six = estimate(
        load_scenario("shapley", {"sites.count": 6, "protocol.compare": ["ref"], "protocol.mode": "sampled"})
    )
    per_org_job = [e.work.units / (e.jobs * e.sites) for e in (five, six)]
    assert per_org_job[1] == pytest.approx(2 * per_org_job[0], rel=0.01)


def test_a_long_run_is_announced_before_it_starts(capsys):
    """Within the budget it runs, with one line that says how long it is estimated to take."""
    sc = load_scenario("molba", {"workload.jobs": 20000})
    est, _ = gate_module.gate(sc, Limits(float("inf")))
    err = capsys.readouterr().err.splitlines()
    assert est.wall > gate_module.LONG_RUN
    assert len(err) == 1 and err[0].startswith("gridemu: note: peak memory about") and "Ctrl-C" in err[0]
    gate_module.gate(load_scenario("molba"), Limits(float("inf")))
    assert capsys.readouterr().err == ""
    # A budget below the estimate refuses it, naming the protocol's term.
    with pytest.raises(ScenarioError, match="protocol: the run would take about"):
        gate_module.gate(sc, Limits(float("inf"), wall_seconds=est.wall / 2))


def test_a_run_that_writes_checkpoints_counts_their_copy_of_the_state():
    # Writing a checkpoint opens the shards' states beside the live ones: about the first
    # run's state once more (not the counterfactual's, which runs after the checkpoints).
    sc = load_scenario("quickstart", {"workload.jobs": 400000})
    plain, checkpointed = estimate(sc), estimate(sc, checkpoint=True)
    state = sum(plain.memory_terms[k] for k in ("site", "proc", "job_message", "site_round"))
    assert checkpointed.memory - plain.memory == pytest.approx(checkpointed.memory_terms["checkpoint"])
    assert checkpointed.memory_terms["checkpoint"] == pytest.approx(state + plain.memory_terms["job"] / 2)
    assert "checkpoint" not in plain.memory_terms


def test_validate_and_run_with_checkpoints_refuse_what_only_their_copy_makes_too_big(monkeypatch, tmp_path, capsys):
    sc = load_scenario("quickstart", {"workload.jobs": 400000, "run.backend": "inprocess"})
    plain, checkpointed = estimate(sc), estimate(sc, checkpoint=True)
    between = Limits(memory_bytes=(plain.memory + checkpointed.memory) / 2, wall_seconds=1e9, force=False)
    monkeypatch.setattr(Limits, "here", staticmethod(lambda force=False: between))
    from gridemu.emulator.cli import main

    argv = ["quickstart", "--set", "workload.jobs=400000", "--set", "run.backend=inprocess"]
    assert main(["validate", *argv]) == 0
    assert main(["validate", *argv, "--checkpoint", "5"]) == 2
    assert main(["run", *argv, "--checkpoint", "5", "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert "memory" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("seconds, text", [(3.9, "3.9 s"), (110.0, "110 s"), (130.0, "2 min"), (5400.0, "90 min")])
def test_wall_time_reads_as_a_person_would_say_it(seconds, text):
    assert _duration(seconds) == text  # 110 s used to read "1.1e+02 s"


def test_messages_held_for_a_latency_of_many_rounds_are_counted_together():
    # Reports are held for their latency: with a latency of 10,000 rounds nearly all of them
    # are in flight at once (a run of this scenario at 1e6 peaked at 8.3 GiB; the estimate
    # counted one round's batch, 1.4 GiB). A latency shorter than a round changes nothing.
    held = {lat: estimate(load_scenario("averaging-topology", {"network.latency": lat})) for lat in (1e-3, 0.5, 1e6)}
    assert held[0.5].memory_terms["in_flight"] < 2 * held[1e-3].memory_terms["in_flight"]
    assert held[1e6].memory_terms["in_flight"] > 8 * 2**30
    assert held[1e6].memory_terms["in_flight"] <= held[1e6].messages * 420.0


def test_too_many_rounds_are_blamed_on_a_latency_never_on_a_topology():
    # A topology changes how many messages a round sends, not how many rounds a run has.
    from gridemu.brokers.protocol import Traffic
    from gridemu.emulator.estimate import MAX_ROUNDS, Estimate

    def key(because: str | None) -> str:
        est = Estimate(10.0, 1.0, 1e9, 0.0, MAX_ROUNDS * 2, Traffic(round_every=1.0), long_because=because)
        return est.refusal(Limits(math.inf, math.inf)).key

    assert key("network.topology") == "protocol" and key(None) == "protocol"
    assert key("network.latency") == "network.latency"


def test_jobs_released_within_one_round_are_said(capsys):
    # A sweep over sites.count with a total workload.jobs shortened the span as the sites grew
    # (20,000 sites: 5.6 time units, a report every 10): flow time seemed to fall with scale.
    from gridemu.emulator.cli import main

    assert main(["validate", "power-of-d", "--set", "sites.count=2000", "--set", "workload.jobs=2000"]) == 0
    err = capsys.readouterr().err
    assert "less than one round of power_of_d (one every 10)" in err and "workload.until keeps the span" in err
    result = emulator.run(
        "power-of-d",
        backend="inprocess",
        overrides={"sites.count": 200, "workload.jobs": 200, "metrics.counterfactual": "none"},
    )
    assert any("less than one round" in w for w in result.summary["global"]["workload_warnings"])
    capsys.readouterr()
    # The shipped setting releases over about 110 time units: nothing to say.
    assert main(["validate", "power-of-d"]) == 0
    assert "less than one round" not in capsys.readouterr().err
