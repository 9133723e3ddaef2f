"""Every user error of the CLI: one line ``gridemu: error: ...`` naming the key, file or value,
exit code 2, no traceback.

Errors go through ``emulator.cli.main(argv)``; the unreachable ``--address`` runs in a
subprocess because a Ray instance already started in this process would skip the
address path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gridemu.emulator as emulator
from gridemu.emulator.cli import main

# A valid little scenario the file-based cases start from.
TINY = """\
[run]
seed = 3

[network]
latency = 0.5

[sites]
count = 2
procs = 2

[workload]
kind = "poisson"
rate = 1.0
jobs = 50

[protocol]
name = "local"
"""

JOB_LIST = """\
[sites]
count = 2
procs = 2

[workload]
kind = "jobs"

[[workload.list]]
release = 0.0
size = 1.0
site = 0

[[workload.list]]
release = 1.0
{second}
"""

SWF_LINE = "{n:>6} {submit:>6} 0 {run:>5} 1 -1 -1 1 -1 -1 1 {user} 1 -1 1 -1 -1 -1\n"


def call(argv: list[object]) -> int:
    """main's exit code: returned, or raised by argparse as SystemExit. Any other exception fails."""
    try:
        return main([str(a) for a in argv])
    except SystemExit as exc:
        return exc.code
    except Exception as exc:  # a user error must never escape as an exception
        pytest.fail(f"main({argv}) raised {type(exc).__name__}: {exc} instead of exiting with code 2")


def expect_error(capsys, argv: list[object], *needles: str) -> str:
    """Run argv; check exit 2 and one stderr line ``gridemu: error: ...`` holding every needle."""
    code = call(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert code == 2, f"exit code {code}, stderr: {captured.err!r}"
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {captured.err!r}"
    line = lines[0]
    assert line.startswith("gridemu: error:"), line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- scenario files


def test_malformed_toml_names_the_file(tmp_path, capsys):
    path = write(tmp_path, "broken.toml", "[run\nseed = 1\n")
    line = expect_error(capsys, ["validate", path], str(path))
    assert "TOML" in line and "line 1" in line


def test_unknown_section(tmp_path, capsys):
    path = write(tmp_path, "s.toml", TINY + "\n[bogus]\nx = 1\n")
    line = expect_error(capsys, ["validate", path], "bogus", "unknown section")
    assert "workload" in line  # the allowed sections are listed


def test_a_misspelled_section_gets_a_suggestion(tmp_path, capsys):
    path = write(tmp_path, "s.toml", TINY + "\n[metric]\nwarmup = 1\n")
    expect_error(capsys, ["validate", path], "metric: unknown section: did you mean 'metrics'?")


def test_unknown_section_through_set(capsys):
    expect_error(capsys, ["validate", "quickstart", "--set", "bogus.x=1"], "bogus")


def test_nonexistent_scenario_name(capsys):
    line = expect_error(capsys, ["run", "no-such-scenario", "--backend", "inprocess"], "no-such-scenario")
    assert "quickstart" in line  # the shipped names are offered


def test_scenario_path_is_a_directory(tmp_path, capsys):
    """A folder given where a scenario file is expected (e.g. a result folder)."""
    expect_error(capsys, ["validate", tmp_path], str(tmp_path))


def test_a_folder_named_like_a_shipped_scenario_does_not_hide_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quickstart").mkdir()
    assert main(["validate", "quickstart"]) == 0
    assert "ok" in capsys.readouterr().out
    expect_error(capsys, ["validate", tmp_path / "quickstart"], "is a folder, not a scenario file")


def test_scenario_file_not_utf8(tmp_path, capsys):
    path = tmp_path / "latin1.toml"
    path.write_bytes('[run]\ndescription = "caf\u00e9"\n'.encode("latin-1"))
    expect_error(capsys, ["validate", path], str(path))


# --------------------------------------------------------------------------- keys and values

SET_CASES = [
    # (override, text the message must hold)
    pytest.param("run.sed=3", ["run.sed", "unknown key", "seed"], id="unknown-key-run.sed"),
    pytest.param("workload.rate=[1.0,2.0", ["workload.rate", "'[1.0,2.0' is not a TOML value"], id="set-unclosed"),
    pytest.param(
        "protocol.nam=3", ["protocol.nam", "did you mean 'name'?", "allowed: name, period"], id="protocol-nam"
    ),
    # keys [sites] once accepted and never read: a run with 4 organizations where 2 were asked
    pytest.param("sites.orgs=2", ["sites.orgs", "unknown key", "count, procs"], id="unknown-key-sites.orgs"),
    pytest.param("sites.zipf_a=1.5", ["sites.zipf_a", "unknown key"], id="unknown-key-sites.zipf_a"),
    pytest.param(
        "protocol.name=bogus", ["protocol.name", "bogus", "local", "random", "averaging"], id="unknown-protocol"
    ),
    pytest.param("scheduler.name=bogus", ["scheduler.name", "bogus", "fcfs"], id="unknown-scheduler"),
    pytest.param("sites.procs=0", ["sites.procs", "0"], id="zero-processors"),
    pytest.param("workload.procs=5", ["workload.procs", "5", "4"], id="job-wider-than-site"),
    # a fraction of a processor once ran every job on int(0.5) = 0 processors
    pytest.param("workload.procs=0.5", ["workload.procs", "integer", "0.5"], id="job-procs-fraction"),
    pytest.param('metrics.sample_interval="x"', ["metrics.sample_interval", "must be a number"], id="sample-interval"),
    pytest.param("workload.procs={low=1.5, high=2}", ["workload.procs.low", "integer"], id="job-procs-low-fraction"),
    pytest.param("run.lookahead=0", ["run.lookahead"], id="lookahead-zero"),
    pytest.param("run.lookahead=-0.5", ["run.lookahead", "-0.5"], id="lookahead-negative"),
    pytest.param("run.lookahead=0.75", ["run.lookahead", "0.75", "0.5"], id="lookahead-above-latency"),
    pytest.param("network.latency=0", ["network.latency"], id="latency-zero"),
    pytest.param("network.latency=-1.5", ["network.latency", "-1.5"], id="latency-negative"),
    pytest.param("workload.rate=-1.0", ["workload.rate", "-1.0"], id="rate-negative"),
    pytest.param(
        "workload.rate=[1.6, 0.6, -0.6, 0.6, 0.6, 0.6, 0.6, 0.6]", ["workload.rate[2]"], id="rate-negative-per-site"
    ),
    pytest.param("workload.rate={cycle=[1.0, -0.5]}", ["workload.rate.cycle[1]", "-0.5"], id="rate-negative-in-cycle"),
    pytest.param("workload.rate={cycle=[]}", ["workload.rate.cycle", "non-empty list"], id="rate-empty-cycle"),
    pytest.param(
        "workload.rate={cycle=[1.0], default=2.0}",
        ["workload.rate", "stands alone", "default"],
        id="rate-cycle-and-default",
    ),
    pytest.param(
        'sites.procs={dist="zipf", alpha=1}',
        ["sites.procs.alpha", "unknown key", "a, dist, max"],
        id="procs-zipf-unknown-key",
    ),
    pytest.param(
        'workload.procs={low=1, hgh=2}', ["workload.procs.hgh", "unknown key", "high, low"], id="job-procs-unknown-key"
    ),
    pytest.param(
        'workload.integral="yes"', ["workload.integral", "must be true or false", "'yes'"], id="integral-not-a-flag"
    ),
    pytest.param(
        'sites.procs={dist="uniform", total=40, low=2}', ["sites.procs.low", "unknown key"], id="procs-total-with-low"
    ),
    pytest.param(
        'network.latency={dist="uniform", high=1.0}', ["network.latency.low", "missing"], id="latency-dist-no-low"
    ),
    pytest.param(
        'network.latency={dist="uniform", low=2.0, high=1.0}',
        ["network.latency.high", ">= low"],
        id="latency-dist-high-below-low",
    ),
    pytest.param(
        'network.latency={dist="uniform", low=1.0, high=2.0, mean=1}',
        ["network.latency.mean", "unknown key"],
        id="latency-dist-unknown-key",
    ),
    pytest.param(
        'network.latency={dist="normal", low=1.0, high=2.0}',
        ["network.latency.dist", "normal", "uniform"],
        id="latency-dist-unknown",
    ),
    pytest.param(
        'workload.warm_start="fcfs"', ["workload.warm_start", "SWF trace", "poisson"], id="warm-start-not-a-trace"
    ),
    pytest.param("workload.alpha=-2.0", ["workload.alpha", "-2.0"], id="alpha-negative"),
    pytest.param("workload.beta=-0.5", ["workload.beta", "-0.5"], id="beta-negative"),
    pytest.param("workload.jobs=1.5", ["workload.jobs", "1.5"], id="jobs-fractional"),
    pytest.param("workload.jobs=many", ["workload.jobs", "many"], id="jobs-not-a-number"),
]


@pytest.mark.parametrize("override, needles", SET_CASES)
def test_bad_key_or_value_is_named(capsys, override, needles):
    expect_error(capsys, ["validate", "quickstart", "--set", override], *needles)


@pytest.mark.parametrize(
    "overrides, needles",
    [
        (['workload.warm_start="hot"'], ["workload.warm_start", "hot", "cold, fcfs"]),
        (['workload.warm_start="fcfs"', "workload.split_parallel=false"], ["workload.warm_start", "split_parallel"]),
    ],
    ids=["unknown", "parallel-jobs"],
)
def test_bad_warm_start_is_named(capsys, overrides, needles):
    argv = ["validate", "shapley"]
    for o in overrides:
        argv += ["--set", o]
    expect_error(capsys, argv, *needles)


def test_warm_start_without_a_window_is_named(tmp_path, capsys):
    assert main(["show", "shapley", "--set", 'workload.warm_start="fcfs"']) == 0
    toml = capsys.readouterr().out
    lines = [line for line in toml.splitlines() if not line.startswith(("t_start", "duration"))]
    (tmp_path / "s.toml").write_text("\n".join(lines) + "\n")
    expect_error(capsys, ["validate", str(tmp_path / "s.toml")], "workload.warm_start", "needs a window", "t_start")


def test_a_cycle_of_per_site_values_repeats_over_the_sites():
    import numpy as np

    from gridemu.emulator.scenario import load_scenario
    from gridemu.model.checks import per_site_values
    from gridemu.scenarios.workload import generate_jobs

    assert per_site_values("workload.rate", {"cycle": [3.0, 0.5]}, 5, positive=True) == [3.0, 0.5, 3.0, 0.5, 3.0]
    scenario = load_scenario(
        "quickstart", overrides={"workload.rate": {"cycle": [2.0, 1.0, 1.0, 1.0]}, "sites.count": 8}
    )
    jobs, _ = generate_jobs(scenario)
    per_site = np.bincount(jobs["submit_site"], minlength=8)
    assert per_site[[0, 4]].min() > per_site[[1, 2, 3, 5, 6, 7]].max()  # a quarter of the sites at twice the rate


def test_run_refuses_bad_protocol_before_writing_anything(tmp_path, capsys):
    out = tmp_path / "out"
    expect_error(
        capsys,
        ["run", "quickstart", "--backend", "inprocess", "--out", out, "--quiet", "--set", "protocol.name=bogus"],
        "protocol.name",
        "averaging",
    )
    assert not out.exists()


def test_unknown_key_in_a_scenario_file(tmp_path, capsys):
    path = write(tmp_path, "s.toml", TINY.replace("seed = 3", "seed = 3\nsed = 4"))
    expect_error(capsys, ["validate", path], "run.sed")


@pytest.mark.parametrize(
    "second, needles",
    [
        pytest.param("size = -2.0\nsite = 0", ["workload.list[1].size", "-2.0"], id="negative-size"),
        pytest.param("site = 0", ["workload.list[1].size", "missing"], id="missing-size"),
        pytest.param("size = 1.0\nprocs = 3\nsite = 1", ["workload.list[1].procs", "3", "2"], id="wider-than-site"),
    ],
)
def test_bad_explicit_job(tmp_path, capsys, second, needles):
    path = write(tmp_path, "jobs.toml", JOB_LIST.format(second=second))
    expect_error(capsys, ["validate", path], *needles)


def test_sanity_explicit_job_list_is_valid(tmp_path, capsys):
    """The base of the cases above is itself valid, so each case fails for its own reason."""
    path = write(tmp_path, "jobs.toml", JOB_LIST.format(second="size = 2.0\nsite = 1"))
    assert call(["validate", path]) == 0
    path = write(tmp_path, "tiny.toml", TINY)
    assert call(["validate", path]) == 0


# --------------------------------------------------------------------------- workload files


def test_warm_start_on_fractional_times_names_the_job(tmp_path, capsys):
    """The FCFS replay takes whole seconds: a fractional submit time before the window stops
    validate and the run (exit 2) with the key and the job named, and nothing is written."""
    fields = "{job} {submit} -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1"
    lines = [fields.format(job=1, submit=0.5), fields.format(job=2, submit=100)]
    trace = write(tmp_path, "t.swf", "\n".join(lines) + "\n")
    scenario = write(
        tmp_path,
        "warm.toml",
        f'[sites]\ncount = 2\nprocs = 2\n\n[workload]\nkind = "swf"\npath = "{trace}"\n'
        'split_parallel = true\nt_start = 50\nt_end = 200\nwarm_start = "fcfs"\n',
    )
    needles = ("workload.warm_start", "whole seconds", "job 1", "submit time 0.5")
    expect_error(capsys, ["validate", scenario], *needles)
    out = tmp_path / "out"
    expect_error(capsys, ["run", scenario, "--backend", "inprocess", "--out", out, "--quiet"], *needles)
    assert not out.exists()


def test_csv_row_with_wrong_column_count(tmp_path, capsys):
    csv_path = write(tmp_path, "jobs.csv", "release,size,site\n0,1.0,0\n1,2.0,1\n2,3.0\n4,1.0,0\n")
    scenario = write(
        tmp_path,
        "csv.toml",
        f'[sites]\ncount = 2\nprocs = 2\n\n[workload]\nkind = "csv"\npath = "{csv_path}"\n',
    )
    out = tmp_path / "out"
    expect_error(capsys, ["run", scenario, "--backend", "inprocess", "--out", out, "--quiet"], f"{csv_path}:4")
    assert not out.exists()


def test_swf_trace_with_broken_line(tmp_path, capsys):
    lines = ["; Version: 2.2\n", "; MaxProcs: 2\n"]
    lines += [SWF_LINE.format(n=i, submit=10 * i, run=5 + i, user=i % 3 + 1) for i in range(1, 6)]
    lines.append("     6     60 0 5 1 -1 -1 1 -1 -1 1\n")  # line 8: 11 fields instead of 18
    lines += [SWF_LINE.format(n=i, submit=10 * i, run=5, user=1) for i in range(7, 9)]
    trace = write(tmp_path, "broken.swf", "".join(lines))
    scenario = write(
        tmp_path,
        "swf.toml",
        f'[sites]\ncount = 2\nprocs = 2\n\n[workload]\nkind = "swf"\npath = "{trace}"\n',
    )
    expect_error(
        capsys, ["run", scenario, "--backend", "inprocess", "--out", tmp_path / "out", "--quiet"], f"{trace}:8"
    )


def test_swf_trace_without_the_broken_line_runs(tmp_path):
    """Control for the case above: the same trace minus its broken line is accepted."""
    lines = ["; Version: 2.2\n"] + [SWF_LINE.format(n=i, submit=10 * i, run=5 + i, user=i % 3 + 1) for i in range(1, 9)]
    trace = write(tmp_path, "ok.swf", "".join(lines))
    scenario = write(
        tmp_path,
        "swf.toml",
        f'[sites]\ncount = 2\nprocs = 2\n\n[workload]\nkind = "swf"\npath = "{trace}"\n',
    )
    assert call(["run", scenario, "--backend", "inprocess", "--out", tmp_path / "out", "--quiet"]) == 0


# --------------------------------------------------------------------------- command-line flags


@pytest.mark.parametrize(
    "pair, needle",
    [
        pytest.param("protocol.name", "protocol.name", id="no-equals"),
        pytest.param("=local", "=local", id="no-key"),
        pytest.param("protocol..name=local", "protocol..name", id="empty-part"),
    ],
)
def test_malformed_set(capsys, pair, needle):
    expect_error(capsys, ["run", "quickstart", "--backend", "inprocess", "--set", pair], needle)


def test_shards_zero(capsys, tmp_path):
    expect_error(
        capsys, ["run", "quickstart", "--backend", "inprocess", "--shards", 0, "--out", tmp_path / "o"], "--shards"
    )
    assert not (tmp_path / "o").exists()


def test_sweep_repeat_zero(capsys, tmp_path):
    expect_error(
        capsys,
        ["sweep", "quickstart", "--grid", "protocol.name=local", "--repeat", 0, "--out", tmp_path / "o"],
        "--repeat",
    )


def test_sweep_bad_grid_value_fails_before_running(capsys, tmp_path):
    expect_error(
        capsys,
        ["sweep", "quickstart", "--grid", "protocol.name=local,bogus", "--quiet", "--out", tmp_path / "o"],
        "protocol.name",
        "bogus",
    )
    assert not (tmp_path / "o").exists()


def test_sweep_malformed_grid(capsys, tmp_path):
    expect_error(
        capsys, ["sweep", "quickstart", "--grid", "protocol.name", "--quiet", "--out", tmp_path / "o"], "protocol.name"
    )


def test_out_is_an_existing_file(tmp_path, capsys):
    target = write(tmp_path, "taken", "not a folder\n")
    expect_error(
        capsys,
        ["run", "quickstart", "--backend", "inprocess", "--quiet", "--set", "workload.jobs=50", "--out", target],
        str(target),
    )


# --------------------------------------------------------------------------- report


def test_report_on_a_folder_that_is_not_a_run(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello\n")
    expect_error(capsys, ["report", tmp_path], str(tmp_path), "not a gridemu run")
    assert not (tmp_path / "report.png").exists()


def test_report_on_a_missing_folder(tmp_path, capsys):
    expect_error(capsys, ["report", tmp_path / "nope"], str(tmp_path / "nope"))


# --------------------------------------------------------------------------- Ray address


def test_unreachable_address_fails_fast(tmp_path):
    """A loopback port nobody listens on: exit 2 with one line, in well under a minute.

    Ray's client retries with back-off (5 s, 10 s, ... by default); the environment
    shortens its per-attempt timeouts so the test stays quick. The product's part, turning
    the failure into one line and exit 2 without hanging, is what is checked.
    """
    env = dict(os.environ, RAY_CLIENT_INITIAL_CONNECTION_TIMEOUT_S="1", RAY_CLIENT_MAX_CONNECTION_TIMEOUT_S="2")
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gridemu.emulator.cli",
            "run",
            "quickstart",
            "--address",
            "ray://127.0.0.1:1",
            "--quiet",
            "--set",
            "workload.jobs=50",
            "--set",
            "protocol.period=5",  # no warning that rounds outlast the releases
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("gridemu: error:")]
    assert len(errors) == 1, proc.stderr
    assert "--address" in errors[0] and "ray://127.0.0.1:1" in errors[0]
    assert not (tmp_path / "out").exists()
    assert lines == errors, f"stderr holds more than the one error line: {proc.stderr!r}"


# --------------------------------------------------------------------------- result folders

SMALL_RUN = [
    "run",
    "quickstart",
    "--backend",
    "inprocess",
    "--quiet",
    "--set",
    "workload.jobs=50",
    "--set",
    "protocol.period=5",  # rounds within the 8.6 time units of releases: no warning to say
    "--set",
    "metrics.counterfactual=none",
]


def test_an_earlier_runs_results_are_kept_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "r"
    assert call(SMALL_RUN + ["--out", out]) == 0
    (out / "fragments.parquet").write_text("a file of the earlier run")
    before = (out / "summary.json").read_text()
    expect_error(
        capsys,
        SMALL_RUN + ["--out", out, "--set", "protocol.name=random"],
        str(out),
        "holds the results of an earlier run",
        "--overwrite",
    )
    assert (out / "summary.json").read_text() == before
    assert call(SMALL_RUN + ["--out", out, "--set", "protocol.name=random", "--overwrite"]) == 0
    assert not (out / "fragments.parquet").exists()  # replaced whole: nothing of the old run stays
    assert '"protocol": "random"' in (out / "summary.json").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no partial or old folder left


def test_an_empty_folder_is_a_fine_out(tmp_path):
    (tmp_path / "r").mkdir()
    assert call(SMALL_RUN + ["--out", tmp_path / "r"]) == 0
    assert (tmp_path / "r" / "jobs.parquet").exists()


def test_out_under_a_file_fails_before_the_run(tmp_path, capsys, monkeypatch):
    import gridemu.emulator.api as api

    write(tmp_path, "taken", "a file\n")
    monkeypatch.setattr(api, "run_windows", lambda *a, **k: pytest.fail("the run started"))
    expect_error(capsys, SMALL_RUN + ["--out", tmp_path / "taken" / "r"], "is a file")


def test_results_are_written_whole_or_not_at_all(tmp_path, monkeypatch):
    import gridemu.emulator.results as results

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(results, "to_toml", broken)  # the last file written fails
    with pytest.raises(OSError, match="disk full"):
        emulator.run("quickstart", backend="inprocess", overrides={"workload.jobs": 50}, out=tmp_path / "r")
    assert list(tmp_path.iterdir()) == []  # no result folder, no partial one


# --------------------------------------------------------------------------- numbers that would crash or hang a run


@pytest.mark.parametrize(
    ("setting", "needle"),
    [
        ("workload.rate=inf", "workload.rate: must be a finite number"),  # was a ValueError traceback
        ("workload.beta=inf", "workload.beta: must be a finite number"),  # infinite sizes: the run never ended
        (
            "workload.rate=1e308",
            "workload.rate: the rates add up to more than a float holds",
        ),  # 8 jobs instead of 200, exit 0
        ("sites.procs=1e12", "sites.procs: must be at most 1e+06"),  # MemoryError
        ("sites.count=1e12", "sites.count: must be at most 1e+07"),
        ("network.latency=inf", "network.latency: must be a finite number"),  # hung
        ("network.latency=1e-300", "network.latency: must be >= 1e-09"),  # t + latency == t: hung
        ("run.lookahead=1e-12", "run.lookahead: must be >= 1e-09"),
        ("sites.speed=inf", "sites.speed: must be a finite number"),
    ],
)
def test_numbers_that_would_crash_or_hang_are_refused_before_the_run(capsys, setting, needle):
    expect_error(
        capsys,
        ["run", "quickstart", "--backend", "inprocess", "--quiet", "--set", "workload.jobs=200", "--set", setting],
        needle,
    )


def test_a_lookahead_below_the_float_resolution_of_the_clock_stops_with_one_line(tmp_path, capsys):
    # Releases near 1e12: t + 1e-9 == t, so a window would never advance the clock.
    (tmp_path / "jobs.csv").write_text("release,size,site\n1e12,1.0,0\n1e12,2.0,1\n")
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        '[network]\nlatency = 1e-9\n[sites]\ncount = 2\nprocs = 1\n[workload]\nkind = "csv"\npath = "jobs.csv"\n'
        '[protocol]\nname = "random"\n'
    )
    expect_error(
        capsys,
        ["run", scenario, "--backend", "inprocess", "--quiet", "--out", tmp_path / "o"],
        "run.lookahead",
        "float resolution",
    )


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("folder.csv", None, "workload.path: {path} is a folder, not a csv file"),  # was IsADirectoryError
        ("bin.csv", b"\xff\xfe\x00\x81binary", "not a text CSV file"),  # was UnicodeDecodeError
        ("header.csv", b"release,size,site\n", "has no job to run"),  # ran 0 jobs, exit 0
        (
            "inf.csv",
            b"release,size,site\n0,inf,0\n1,2,1\n",
            "inf.csv:2.size: must be a finite number",
        ),  # a job that never ended
    ],
)
def test_broken_job_files_are_one_line_and_exit_2(tmp_path, capsys, name, content, needle):
    path = tmp_path / name
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    scenario = write(tmp_path, "s.toml", f'[sites]\ncount = 2\nprocs = 1\n[workload]\nkind = "csv"\npath = "{path}"\n')
    expect_error(
        capsys,
        ["run", scenario, "--backend", "inprocess", "--quiet", "--out", tmp_path / "o"],
        needle.format(path=path),
    )
    assert not (tmp_path / "o").exists()


def test_an_empty_swf_trace_is_refused(tmp_path, capsys):
    trace = write(tmp_path, "empty.swf", "")
    scenario = write(tmp_path, "s.toml", f'[sites]\ncount = 2\nprocs = 1\n[workload]\nkind = "swf"\npath = "{trace}"\n')
    expect_error(
        capsys, ["run", scenario, "--backend", "inprocess", "--quiet", "--out", tmp_path / "o"], "has no job to run"
    )


def test_protocol_keys_without_a_name_are_refused(capsys):
    expect_error(
        capsys, ["validate", "quickstart", "--set", "protocol={period = 5.0}"], "protocol.name: missing", "period"
    )


def test_a_policy_provider_on_a_site_that_does_not_exist_is_refused(capsys):
    # It passed validation and raised IndexError in the middle of the run.
    expect_error(
        capsys,
        ["validate", "fairshare-swegrid", "--set", "policy.providers.VO-A.site=99"],
        "policy.providers.VO-A.site",
        "0..5",
        "99",
    )


def test_cases_the_fuzzer_found_are_one_line_and_exit_2(tmp_path, capsys):
    """tests/test_fuzz.py found these: each was a Python traceback (or a 86 GiB allocation)."""
    expect_error(
        capsys, ["validate", "fairshare-idle", "--set", "policy.providers=\"x\""], "policy.providers", "must be a table"
    )
    expect_error(
        capsys, ["validate", "gm-prop1", "--set", "workload.number=[]"], "workload.number", "must be 1, 2 or 3"
    )
    expect_error(
        capsys, ["validate", "shapley", "--set", "protocol.samples=1.5e10"], "protocol.samples", "at most 1e+06"
    )  # ran for ever
    out = tmp_path / "g"
    expect_error(
        capsys, ["run", "gm-grid", "--set", "workload.alpha=2e-6", "--out", out], "workload.alpha", "underflow to 0"
    )
    assert not out.exists()
    from gridemu.emulator.scenario import read_scenario_file, shipped_scenarios
    from gridemu.emulator.scenario_toml import to_toml

    raw, _ = read_scenario_file(shipped_scenarios()["fairshare-idle"])
    raw["workload"]["streams"][0]["interval"] = 1.5e-5
    path = tmp_path / "tiny-interval.toml"
    path.write_text(to_toml(raw))
    expect_error(capsys, ["validate", path], "workload.streams[0].interval", "the streams would submit 1.15e+10 jobs")
    raw["workload"]["streams"][0] |= {"interval": 15.0, "start": 900.0, "stop": 600.0}
    path.write_text(to_toml(raw))  # it blamed "an empty file" (a streams workload has none)
    expect_error(capsys, ["validate", path], "workload.streams[0].start", "900 is after the stream's stop, 600")


def test_validate_sizes_a_huge_generated_workload_without_drawing_it(capsys):
    # It used to draw the whole workload (5 GiB after 100 s at 10^10 jobs).
    expect_error(
        capsys, ["validate", "quickstart", "--set", "workload.jobs=1e10"], "workload.jobs: must be at most 1e+08"
    )
    # Sized, not drawn: past this machine's memory it is refused by the estimate, --force goes on.
    assert call(["validate", "quickstart", "--set", "workload.jobs=5e7", "--force"]) == 0
    assert "50,000,000 jobs" in capsys.readouterr().out
    expect_error(capsys, ["validate", "bilb", "--set", "workload.until=1e12"], "workload.until", "split the study")


@pytest.mark.parametrize(
    "override, needles",
    [
        ('protocol.round_timing="later"', ["protocol.round_timing", "'later'", "plan, unbounded"]),
        ('protocol.discrete="yes"', ["protocol.discrete", "must be true or false"]),
        ('protocol.local_from="later"', ["protocol.local_from", "'later'", "window, period, run"]),
        ('protocol.starting="soon"', ["protocol.starting", "'soon'", "queued, running"]),
        ('workload.integral="days"', ["workload.integral", '"releases"', "'days'"]),
    ],
)
def test_thesis_chapter_4_readings_name_a_bad_value(capsys, override, needles):
    expect_error(capsys, ["validate", "bilb", "--set", override], *needles)


def test_report_on_a_damaged_run_folder_is_one_line(tmp_path, capsys):
    out = tmp_path / "r"
    assert call(SMALL_RUN + ["--out", out]) == 0
    (out / "summary.json").write_text("{broken")
    expect_error(capsys, ["report", out, "--no-plot"], "summary.json: not a readable summary")
    (out / "summary.json").write_text("{}")
    (out / "jobs.parquet").write_bytes(b"not parquet")
    expect_error(capsys, ["report", out, "--no-plot"], "jobs.parquet: not a readable Parquet table")


def test_a_latency_matrix_below_the_floor_names_the_matrix(tmp_path, capsys):
    scenario = write(
        tmp_path,
        "s.toml",
        "[sites]\ncount = 2\nprocs = 1\n[network]\nlatency_matrix = [[0, 1e-12], [1e-12, 0]]\n"
        "[workload]\nrate = 1.0\njobs = 10\n",
    )
    expect_error(capsys, ["validate", scenario], "network.latency_matrix: must be >= 1e-09")


def test_validate_reports_every_error_and_run_the_first(tmp_path, capsys):
    path = write(
        tmp_path,
        "many.toml",
        """
[run]
seed = -1
[sites]
count = 4
procs = 0
[workload]
kind = "poisson"
rate = 1.0
alpha = -2
jobs = 100
bogus = 3
[protocol]
name = "averaging"
period = 0
""",
    )
    assert call(["validate", path]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(":")[2].strip() for line in lines] == [
        "run.seed",
        "sites.procs",
        "workload.bogus",
        "workload.alpha",
        "protocol.period",
    ]
    assert all(line.startswith("gridemu: error: ") for line in lines)
    expect_error(capsys, ["run", path, "--backend", "inprocess"], "run.seed")  # one line: the first


def test_validate_goes_on_past_a_bad_site_count_job_count_or_protocol_name(tmp_path, capsys):
    # Taken out, each of these ended the list at its first line (sites.count has no default,
    # nor workload.jobs; the protocol's keys mean nothing without its name): a stand-in count,
    # or the protocol table dropped, lets the keys after them be checked.
    path = write(
        tmp_path,
        "five.toml",
        """
[sites]
count = -3
procs = 0
[workload]
kind = "poisson"
jobs = -5
[protocol]
name = "averagin"
period = "x"
""",
    )
    assert call(["validate", path]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(":")[2].strip() for line in lines] == [
        "sites.count",
        "sites.procs",
        "protocol.name",
        "workload.jobs",
    ]
    assert "did you mean 'averaging'?" in lines[2]


def test_validate_stops_at_errors_that_only_follow_from_an_earlier_one(tmp_path, capsys):
    # A bad until taken out leaves neither jobs nor until: that is not a second error.
    expect_error(capsys, ["validate", "bilb", "--set", "workload.until=-1"], "workload.until")
