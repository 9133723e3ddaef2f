"""Validate is the run's gate (issue 45): every refusal ``gridemu run`` makes before its first
window, ``gridemu validate`` makes too, with the same line; what validate accepts, run
finishes. Every shipped scenario, made tiny, is mutated by a fixed set of mutations."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from gridemu.emulator import cli
from gridemu.emulator.scenario import shipped_scenarios

SHIPPED = shipped_scenarios()


@pytest.fixture(autouse=True)
def fixed_memory(monkeypatch):
    """The same memory budget for validate and run: a refusal names the memory it measured
    (21.4 GiB at validate, 21.3 at run, when other processes on the machine moved between)."""
    monkeypatch.setattr("gridemu.emulator.limits.available_memory", lambda: 16 * 2**30)


def tiny(name: str) -> list[str]:
    """``--set`` overrides that make a shipped scenario a run of a second or so."""
    raw = tomllib.loads(SHIPPED[name].read_text())
    wl, sites, sets = raw.get("workload", {}), raw.get("sites"), []
    if isinstance(sites, dict) and sites.get("count", 0) > 10:
        sets.append("sites.count=10")
    kind = wl.get("kind", "poisson")
    if kind in ("poisson", "streams") and "until" in wl:
        sets += ["workload.until=30.0"] + (["run.horizon=3600.0"] if kind == "streams" else [])
    if kind in ("poisson", "rigid") and "jobs" in wl:
        sets.append("workload.jobs=30")
    if kind == "dedicated":
        sets.append("workload.rounds=2")
    if kind == "swf":
        sets += ["workload.duration=5000.0", "run.horizon=5000.0"]
    return sets


#: Mutations every scenario gets in CI: each once made ``run`` throw the work away after it.
FAST = [
    [],
    ['metrics.counterfactual="local"'],
    ['scheduler.name="preempt"', "workload.procs=2"],
    ['scheduler.name="planned"'],
    ["network.latency=1e300"],
]
#: And by hand (``-m slow``): other protocols, workloads and float-resolution cases.
SLOW = [
    ["workload.procs=2"],
    ['protocol={name="gm"}'],
    ['protocol={name="directcontr"}', 'metrics.counterfactual="local"'],
    ['workload={kind="poisson", jobs=30}'],
    ["workload.rate=1e-300"],
    ["sites.speed=1e-300"],
    ["workload.beta=1e300"],
    ['workload={kind="jobs", list=[{release=1e300, size=1.0, site=0}]}'],
]


def outcome(capsys: pytest.CaptureFixture, argv: list[str]) -> tuple[int, list[str]]:
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, [line for line in err.splitlines() if line.startswith("gridemu: error:")]


def agree(capsys: pytest.CaptureFixture, tmp_path: Path, name: str, mutation: list[str]) -> None:
    sets = [a for s in tiny(name) + mutation for a in ("--set", s)]
    code, errors = outcome(capsys, ["validate", name, *sets])
    assert code in (0, 2), (name, mutation, errors)
    out = tmp_path / f"{name}-{abs(hash(tuple(mutation)))}"
    run_code, run_errors = outcome(capsys, ["run", name, *sets, "--out", str(out), "--quiet"])
    if code == 0:
        assert run_code == 0, (name, mutation, run_errors)
        assert (out / "summary.json").is_file()
    else:
        assert run_code == 2, (name, mutation, errors)
        assert len(run_errors) == 1 and run_errors[0] in errors, (name, mutation, errors, run_errors)
        assert not out.exists()


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_validate_and_run_agree_on_every_shipped_scenario(capsys, tmp_path, name):
    for mutation in FAST:
        agree(capsys, tmp_path, name, mutation)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_validate_and_run_agree_on_more_mutations(capsys, tmp_path, name):
    for mutation in SLOW:
        agree(capsys, tmp_path, name, mutation)


def refused(capsys: pytest.CaptureFixture, argv: list[str], key: str) -> str:
    """``argv`` exits 2 with one error line naming ``key``, no traceback; returns the line."""
    code, errors = outcome(capsys, argv)
    assert code == 2 and len(errors) == 1, errors
    assert errors[0].startswith(f"gridemu: error: {key}: "), errors
    return errors[0]


def test_the_counterfactual_of_a_planned_protocol_runs_on_fcfs(tmp_path):
    from gridemu.emulator.api import run
    from gridemu.emulator.gate import counterfactual
    from gridemu.emulator.scenario import load_scenario

    sc = load_scenario("gm-grid", {"metrics.counterfactual": "local", "workload.jobs": 40})
    alone = counterfactual(sc)
    assert alone.protocol["name"] == "local" and {s.scheduler for s in alone.sites} == {"fcfs"}
    orgs = run(sc).summary["organizations"]
    assert all("sum_flow_time_local" in o for o in orgs.values())


def test_a_counterfactual_that_cannot_run_is_refused_by_validate(capsys):
    line = refused(
        capsys,
        ["validate", "dedicated", "--set", "workload.rounds=2", "--set", 'metrics.counterfactual="local"'],
        "metrics.counterfactual",
    )
    assert "target site" in line


@pytest.mark.parametrize(
    "sets, key",
    [
        (["workload.rate=1e-300"], "run.lookahead"),  # releases past float resolution
        (["workload.beta=1e300"], "run.lookahead"),  # work that lasts past it
        (["sites.speed=1e-300"], "run.lookahead"),
        (['workload={kind="jobs", list=[{release=1e300, size=1.0, site=0}]}'], "run.lookahead"),
        (["network.latency=1e300"], "network.latency"),  # 1e300 rounds of reports, the latency's doing
        (["protocol.period=1e-9"], "protocol"),
    ],
)
def test_runs_that_cannot_end_are_refused_by_validate_and_run(capsys, tmp_path, sets, key):
    args = [a for s in sets for a in ("--set", s)]
    line = refused(capsys, ["validate", "quickstart", *args], key)
    assert refused(capsys, ["run", "quickstart", *args, "--out", str(tmp_path / "r")], key) == line
    assert not (tmp_path / "r").exists()


def test_a_crash_storm_is_refused_and_force_lets_validate_through(capsys):
    # Refused on the key that causes it (it named "protocol" before 2026-11-27), and forced,
    # the estimate says inf where it said "peak memory about nan MiB".
    line = refused(capsys, ["validate", "faults", "--set", "faults.mtbf=1e-9"], "faults.mtbf")
    assert "restarted jobs would never finish" in line and "--force" in line
    assert cli.main(["validate", "faults", "--set", "faults.mtbf=1e-9", "--force"]) == 0
    captured = capsys.readouterr()
    assert "gridemu: error" not in captured.err
    assert "peak memory about" in captured.out and "nan" not in captured.out


def test_a_forced_run_is_told_it_goes_on_not_how_to_force_it():
    from gridemu.emulator.estimate import estimate
    from gridemu.emulator.scenario import load_scenario

    est = estimate(load_scenario("faults", {"faults.mtbf": 1e-9}))
    (told,) = est.warnings()  # validate's: how to run it anyway
    assert "never finish" in told and "--force (force=True in Python) runs it anyway" in told
    (forced,) = est.warnings(forced=True)  # run --force's
    assert "never finish" in forced and "running it anyway (--force)" in forced and "--force runs" not in forced


def test_validate_prints_memory_and_wall_time(capsys):
    assert cli.main(["validate", "quickstart"]) == 0
    out = capsys.readouterr().out
    assert "peak memory about" in out and "wall time about" in out and "bench/calibrate.py" in out


def test_memory_and_time_budgets_refuse_unless_forced(capsys, tmp_path, monkeypatch):
    from gridemu.emulator import limits

    monkeypatch.setattr(limits, "available_memory", lambda: 1 << 20)
    line = refused(capsys, ["validate", "quickstart"], "workload")
    assert "MiB of memory" in line and "--force" in line
    refused(capsys, ["run", "quickstart", "--out", str(tmp_path / "r")], "workload")
    monkeypatch.undo()
    monkeypatch.setattr(limits, "DEFAULT_MAX_HOURS", 1e-9)
    alone = ["--set", 'protocol={name="local"}']  # no windows to speak of: the jobs' time
    assert "budget" in refused(capsys, ["validate", "quickstart", *alone], "workload")
    sets = ["--set", "workload.jobs=30", "--quiet"]
    assert cli.main(["run", "quickstart", *sets, "--out", str(tmp_path / "f"), "--force"]) == 0
    sweep = ["sweep", "quickstart", *alone, "--quiet", "--backend", "inprocess", "--out", str(tmp_path / "s")]
    refused(capsys, sweep, "workload")


def test_memory_bombs_are_refused_before_allocation(capsys, tmp_path):
    big = ["--set", "sites.count=10000000", "--set", "sites.procs=1000000", "--set", "workload.rate=1.0"]
    refused(capsys, ["validate", "quickstart", *big], "sites.count")
    big = ["--set", "sites.count=100000", "--set", "sites.procs=1000000", "--set", "workload.rate=1.0"]
    refused(capsys, ["validate", "quickstart", *big], "sites.procs")
    refused(capsys, ["sweep", "quickstart", "--repeat", "1000000000", "--out", str(tmp_path / "s")], "--repeat")
    trace = tmp_path / "wide.swf"
    trace.write_text("1 0 0 10 1000000000 -1 -1 1000000000 -1 -1 1 1 1 -1 -1 -1 -1 -1\n")
    sc = tmp_path / "wide.toml"
    sc.write_text(
        f"[sites]\ncount = 2\nprocs = 4\n[workload]\nkind = \"swf\"\npath = \"{trace}\"\nsplit_parallel = true\n"
    )
    refused(capsys, ["validate", str(sc)], "workload.split_parallel")


def test_input_files_are_bounded(capsys, tmp_path, monkeypatch):
    import os

    deep = tmp_path / "deep.toml"
    deep.write_text("[run]\nx = " + "[" * 50_000 + "]" * 50_000 + "\n")
    assert "nested more than" in refused(capsys, ["validate", str(deep)], "scenario")
    refused(capsys, ["validate", "quickstart", "--set", "run.x=" + "[" * 5000 + "]" * 5000], "run.x")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    assert "FIFO" in refused(capsys, ["validate", str(fifo)], "scenario")
    assert "device" in refused(capsys, ["validate", "/dev/zero"], "scenario")
    refused(capsys, ["run", "/dev/zero", "--out", str(tmp_path / "r")], "scenario")
    monkeypatch.setenv("GRIDEMU_MAX_INPUT_MIB", "0.0001")
    assert "GRIDEMU_MAX_INPUT_MIB" in refused(capsys, ["validate", "quickstart"], "scenario")
    monkeypatch.delenv("GRIDEMU_MAX_INPUT_MIB")
    for name, sets in (
        ("shapley", ["workload.path=" + str(fifo)]),
        ("averaging-topology", ['network.topology_file="/dev/zero"']),
    ):
        args = [a for s in sets for a in ("--set", s)]
        key = "workload.path" if name == "shapley" else "network.topology_file"
        refused(capsys, ["validate", name, *args], key)
    policy = tmp_path / "policy.bin"
    policy.write_bytes(b"\xff\xfe\x00binary")
    line = refused(capsys, ["validate", "fairshare-idle", "--set", f'policy={{file="{policy}"}}'], "policy.file")
    assert "UTF-8" in line
    refused(capsys, ["validate", "fairshare-idle", "--set", f'policy={{file="{tmp_path}"}}'], "policy.file")


def test_what_the_slow_mutations_found_is_refused_by_validate(capsys, tmp_path):
    # An empty Poisson draw stopped the run once its shards were built; integral sizes of
    # 1e300 passed directcontr's checks and overflowed int64 in its summary after the run.
    for name, sets, needle in (
        ("bilb", ["workload.rate=1e-300"], "gridemu: error: the poisson workload has no job to run"),
        ("shapley-scale", ["workload.beta=1e300"], "gridemu: error: workload: job "),
    ):
        args = [a for s in tiny(name) + sets for a in ("--set", s)]
        code, errors = outcome(capsys, ["validate", name, *args])
        assert code == 2 and len(errors) == 1 and errors[0].startswith(needle), errors
        run_code, run_errors = outcome(capsys, ["run", name, *args, "--out", str(tmp_path / name)])
        assert run_code == 2 and run_errors == errors


def test_a_round_of_all_to_all_reports_counts_in_the_memory_estimate(capsys):
    """Issue 45: 20,000 sites of full-graph averaging at period 1 died at 8 GiB after the
    estimate said 0.3 GiB; a round's 4e8 reports held at once are now in the estimate."""
    sets = ["sites.count=20000", "protocol.period=1", "workload.rate=0.05"]
    code, lines = outcome(capsys, ["validate", "quickstart", *[a for s in sets for a in ("--set", s)]])
    assert code == 2
    # A full graph of 20,000 sites: the topology is the lever (it named "protocol" before).
    assert lines[-1].startswith("gridemu: error: network.topology: the run needs about")
    assert "GiB of memory" in lines[-1]
    # A tenth of the sites: a hundredth of a round's reports, which fit.
    sets[0] = "sites.count=200"
    code, _ = outcome(capsys, ["validate", "quickstart", *[a for s in sets for a in ("--set", s)]])
    assert code == 0


def test_the_memory_estimate_counts_pieces_and_rounds_of_a_protocol_that_keeps_them():
    """BILB leaves a piece at each receiver of an offer and keeps a record per site and round:
    its memory estimate grows with its messages and rounds (bilb-topology at 1,000 sites held
    485 MiB against an estimate of 158 MiB that counted sites and jobs only); averaging's
    load reports leave nothing, so its estimate has no piece term."""
    from gridemu.emulator.estimate import estimate
    from gridemu.emulator.scenario import load_scenario

    often = estimate(load_scenario("bilb-topology", {"sites.count": 1000, "protocol.min_gap": 0.5}))
    seldom = estimate(load_scenario("bilb-topology", {"sites.count": 1000, "protocol.min_gap": 2.0}))
    assert often.memory_terms["job_message"] > 3 * seldom.memory_terms["job_message"] > 0
    assert often.memory_terms["site_round"] > 3 * seldom.memory_terms["site_round"] > 0
    assert estimate(load_scenario("bilb-topology", {"sites.count": 1000})).memory > 485 * 2**20  # what it held
    reports = estimate(load_scenario("averaging-topology", {"sites.count": 1000}))
    assert reports.memory_terms["job_message"] == 0


@pytest.mark.parametrize(
    "name, sets",
    [
        pytest.param("gm-prop1", {"metrics.counterfactual": "local"}, id="driver draws"),
        pytest.param("averaging-topology", {"sites.count": 40, "workload.until": 5}, id="shards draw"),
    ],
)
def test_the_counterfactual_runs_the_first_runs_jobs_without_drawing_them_again(monkeypatch, name, sets):
    from gridemu import emulator
    from gridemu.emulator import engine, shard

    drawn = []
    by_driver, by_shard = engine.generate_jobs, shard.draw_jobs
    monkeypatch.setattr(engine, "generate_jobs", lambda s: drawn.append("driver") or by_driver(s))
    monkeypatch.setattr(shard, "draw_jobs", lambda spec: drawn.append("shard") or by_shard(spec))
    result = emulator.run(name, overrides={**sets, "metrics.counterfactual": "local"}, backend="inprocess")
    assert len(drawn) == 1, drawn  # the first run's draw only
    orgs = result.summary["organizations"].values()
    assert all("sum_flow_time_local" in o for o in orgs)  # the counterfactual did run


def test_a_latency_that_outlasts_the_jobs_is_blamed_for_the_traffic(capsys):
    # A billion time units of load reports are the latency's doing: it named "protocol".
    line = refused(capsys, ["validate", "quickstart", "--set", "network.latency=1e9"], "network.latency")
    assert "GiB of memory" in line and "the run lasts at least 1e+09" in line
    # Past the jobs' own span the protocol's traffic is its own.
    refused(capsys, ["validate", "quickstart", "--set", "protocol.period=1e-6"], "protocol")


def test_a_full_graph_of_many_sites_is_blamed_on_the_topology(capsys):
    # n^2 reports a round: the lever is network.topology (it named "protocol").
    full = ["--set", "network.topology=full", "--set", "sites.count=10000"]
    assert "GiB of memory" in refused(capsys, ["validate", "averaging-topology", *full], "network.topology")


def test_max_limits_are_numbers_of_at_least_zero_and_said_in_full(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["validate", "quickstart", "--max-jobs", "-1"])  # -1 was a limit every run is past
    assert exc.value.code == 2 and "expected a number >= 0, got '-1'" in capsys.readouterr().err
    assert cli.main(["validate", "quickstart", "--max-jobs", "9600"]) == 2
    assert "about 20,000 jobs, more than --max-jobs 9,600" in capsys.readouterr().err  # was 2e+04 and 9.6e+03


def test_the_counterfactual_of_a_sites_table_draws_the_same_sites_from_it():
    # It is loaded from the [sites] table, not from the table's expanded entries (copied and
    # checked one by one, half of validate's time at a million sites): the same sites.
    from gridemu.emulator.gate import counterfactual
    from gridemu.emulator.scenario import load_scenario

    drawn = {"sites.count": 40, "sites.procs": {"dist": "uniform", "low": 1, "high": 8}, "run.seed": 7}
    sc = load_scenario("averaging-topology", drawn)
    alone = counterfactual(sc)
    assert alone.protocol["name"] == "local" and alone.sites_table is not None
    assert alone.sites == sc.sites and len({len(s.speeds) for s in sc.sites}) > 1
    listed = load_scenario(sc.data, {"protocol": {"name": "local"}, "run.backend": "inprocess", "run.shards": 1})
    assert listed.sites == alone.sites


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_the_counterfactual_is_what_loading_the_scenario_again_as_local_gives(name):
    # counterfactual() changes the protocol, backend and planned schedulers of a validated
    # scenario in place of validating it all again (its sites and topology built again from
    # the seed: seconds at a million sites); loading it again is the reference.
    from gridemu.emulator.gate import counterfactual
    from gridemu.emulator.scenario import load_scenario, parse_override

    sc = load_scenario(name, dict(parse_override(s) for s in tiny(name)))
    alone = counterfactual(sc)
    sets: dict = {"protocol": {"name": "local"}, "run.backend": "inprocess", "run.shards": 1}
    data = sc.saved_data()
    if sc.sites_table is not None and sc.sites_table["scheduler"] == "planned":
        sets["sites"] = {**sc.sites_table, "scheduler": "fcfs"}
    elif any(s.scheduler == "planned" for s in sc.sites):
        data = sc.data
        sets["sites"] = [
            {**s, "scheduler": "fcfs" if s["scheduler"] == "planned" else s["scheduler"]} for s in data["sites"]
        ]
    if any(s.scheduler == "planned" for s in sc.sites):
        if data["scheduler"]["name"] == "planned":
            sets["scheduler.name"] = "fcfs"
    again = load_scenario(data, sets, source=sc.source)
    for run in (alone.data["run"], again.data["run"]):
        run.pop("description", None)  # loading again notes the overrides there
    assert alone.data == again.data and list(alone.data) == list(again.data)
    assert alone.sites == again.sites and alone.orgs == again.orgs and alone.sites_table == again.sites_table
    assert np.array_equal(np.asarray(alone.latency), np.asarray(again.latency))
    assert (alone.lookahead, alone.source, alone.topology, alone.faults, alone.extra) == (
        again.lookahead,
        again.source,
        again.topology,
        again.faults,
        again.extra,
    )
    assert alone.params == again.params and alone.plugin.name == "local"
    assert sc.protocol["name"] == "local" or sc.data is not alone.data  # the scenario itself unchanged
