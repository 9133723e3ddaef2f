"""The ``gridemu`` command line end to end: list, validate, run, report, sweep.

Almost everything goes through ``emulator.cli.main(argv)`` in this process (cheap); one
test starts a real subprocess to prove the entry point works. Workloads are a few
hundred jobs so the whole file stays fast on two cores.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from importlib import metadata
from pathlib import Path

import pandas as pd
import pytest

from gridemu.emulator.cli import main

JOB_COLUMNS = [
    "job_id",
    "owner",
    "group",
    "release",
    "size",
    "procs",
    "submit_site",
    "exec_site",
    "start",
    "end",
    "migrations",
    "state",
    "deadline",
    "fragments",
    "proc",
    "proc_set",
]
ORG_KEYS = {"jobs", "sum_flow_time", "mean_flow_time", "makespan"}
GLOBAL_KEYS = {"makespan", "events", "messages", "windows", "wall_seconds", "events_per_second"}
QUICK = ["--backend", "inprocess", "--quiet", "--set", "workload.jobs=300"]

# Three organizations, one overloaded: averaging has jobs to move, so scores are not all 0.
SMALL_TOML = """\
[run]
seed = 11

[network]
latency = 0.5

[sites]
count = 3
procs = 2

[workload]
kind = "poisson"
rate = [1.8, 0.3, 0.3]
alpha = 2.0
beta = 2.0
jobs = 240

[protocol]
name = "averaging"
period = 10.0

[metrics]
counterfactual = "local"
"""


def run_cli(*argv: object) -> int:
    return main([str(a) for a in argv])


def read_jobs(folder: Path) -> pd.DataFrame:
    return pd.read_parquet(folder / "jobs.parquet")


def read_summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    """quickstart (averaging, 8 organizations) with 300 jobs, in-process, default seed."""
    out = tmp_path_factory.mktemp("base") / "run"
    assert run_cli("run", "quickstart", "--out", out, *QUICK) == 0
    return out


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> Path:
    """The same workload as base_run under the local protocol (no cooperation)."""
    out = tmp_path_factory.mktemp("local") / "run"
    assert run_cli("run", "quickstart", "--out", out, *QUICK, "--set", "protocol.name=local") == 0
    return out


# --------------------------------------------------------------------------- list, validate


def test_list_shows_shipped_scenarios(capsys):
    assert run_cli("list") == 0
    out = capsys.readouterr().out
    assert "quickstart" in out
    assert "averaging" in out  # its description is shown next to its name
    # Every registered protocol is listed with the keys it reads.
    from gridemu.brokers.registry import PROTOCOLS

    for name in PROTOCOLS:
        assert name in out
    assert "migration_cost" in out and "limit" in out


def test_list_is_plain_lines_for_scripts(capsys):
    from gridemu.brokers.registry import PROTOCOLS
    from gridemu.emulator.scenario import shipped_scenarios

    assert run_cli("list", "--plain") == 0  # also the default here: capsys is not a terminal
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert {r[1] for r in rows if r[0] == "scenario"} == set(shipped_scenarios())
    assert {r[1] for r in rows if r[0] == "protocol"} == set(PROTOCOLS)
    from gridemu.emulator.scenario import SCHEDULERS

    assert [r[1] for r in rows if r[0] == "scheduler"] == list(SCHEDULERS)  # listed with what each does
    assert run_cli("list", "easy") == 0 and "EASY backfilling" in capsys.readouterr().out
    # A protocol without keys says so (it printed nothing at all); scripts still read no line.
    assert run_cli("list", "random") == 0
    said = capsys.readouterr()
    assert said.out == "" and said.err.startswith("random: each new job goes to") and "no [protocol] keys" in said.err
    assert all(len(r) == (4 if r[0] == "protocol" else 3) for r in rows)
    assert "┃" not in "".join(sum(rows, []))  # no box drawing


def test_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        run_cli("--version")
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"gridemu {version('gridemu')}"


def test_validate_shipped_scenario(capsys):
    assert run_cli("validate", "quickstart") == 0
    out = capsys.readouterr().out
    assert "ok" in out
    assert "8 sites" in out and "8 organizations" in out and "protocol averaging" in out


def test_validate_estimates_the_run_without_drawing_it(capsys):
    # quickstart: 20,000 jobs at 5.8 jobs per time unit (3,448 time units), a report from each of
    # 8 sites to the 7 others every 50 from t = 50: 68 rounds of 56 reports.
    assert run_cli("validate", "quickstart") == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.startswith("estimate: about 20,000 jobs released over 3,448 time units")
    # (3,449: the last release and one link latency, a job's transfer)
    assert "about 3,808 messages" in line and "about 68 rounds, one every 50" in line
    # 10^8 jobs are sized, not drawn (past this machine's memory: --force); a limit you set
    # is refused in one line, exit 2.
    assert run_cli("validate", "quickstart", "--set", "workload.jobs=1e8", "--force") == 0
    assert "about 100,000,000 jobs" in capsys.readouterr().out
    assert run_cli("validate", "quickstart", "--max-messages", "1000") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "about 3,808 messages, more than --max-messages 1,000" in err[0]
    # A valid run that would not end in practice: jobs of 4e7 time units, a round every 1:
    # refused (issue 45), or said before the run with --force.
    assert run_cli("validate", "averaging-game", "--set", "workload.alpha=2e7") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gridemu: error: ")
    assert "--force (force=True in Python) runs it anyway" in err[0]
    assert run_cli("validate", "averaging-game", "--set", "workload.alpha=2e7", "--force") == 0
    assert "gridemu: warning: " in capsys.readouterr().err
    # At 4e12 a window of the lookahead no longer advances the clock: no --force helps.
    assert run_cli("validate", "averaging-game", "--set", "workload.alpha=2e12", "--force") == 2
    assert "float resolution" in capsys.readouterr().err


def test_validate_scenario_file_and_overrides(tmp_path, capsys):
    path = tmp_path / "small.toml"
    path.write_text(SMALL_TOML)
    assert run_cli("validate", path) == 0
    out = capsys.readouterr().out
    assert str(path) in out
    assert "3 sites" in out and "protocol averaging" in out and "lookahead 0.5" in out

    assert run_cli("validate", path, "--set", "protocol.name=random", "--set", "run.lookahead=0.25") == 0
    out = capsys.readouterr().out
    assert "protocol random" in out and "lookahead 0.25" in out


# --------------------------------------------------------------------------- run


def test_run_writes_every_result_file(base_run):
    for name in ("jobs.parquet", "sites.parquet", "summary.json", "scenario.toml", "timeseries.parquet"):
        assert (base_run / name).is_file(), name
        assert (base_run / name).stat().st_size > 0, name
    ts = pd.read_parquet(base_run / "timeseries.parquet")
    assert len(ts) > 0
    sites = pd.read_parquet(base_run / "sites.parquet")
    assert len(sites) == 8


def test_jobs_parquet_has_exactly_the_documented_columns(base_run):
    jobs = read_jobs(base_run)
    assert list(jobs.columns) == JOB_COLUMNS
    assert len(jobs) == 300
    assert jobs["job_id"].tolist() == list(range(300))
    assert set(jobs["owner"].astype(str)) <= {f"org{k}" for k in range(8)}
    # No horizon: every job finishes, after its release, on some site.
    assert (jobs["state"].astype(str) == "done").all()
    assert (jobs["start"] >= jobs["release"]).all()
    assert (jobs["end"] > jobs["start"]).all()
    assert jobs["exec_site"].between(0, 7).all()
    # Averaging moved some jobs off the overloaded site 0, and only moved jobs changed site.
    moved = jobs["migrations"] > 0
    assert moved.any()
    assert (jobs.loc[~moved, "exec_site"] == jobs.loc[~moved, "submit_site"]).all()


def test_summary_json_matches_the_job_table(base_run):
    summary = read_summary(base_run)
    jobs = read_jobs(base_run)
    orgs, glob = summary["organizations"], summary["global"]

    assert set(orgs) == {f"org{k}" for k in range(8)}
    for name, entry in orgs.items():
        assert ORG_KEYS <= set(entry), name
        mine = jobs[jobs["owner"].astype(str) == name]
        flow = (mine["end"] - mine["release"]).sum()
        assert entry["jobs"] == len(mine)
        assert entry["sum_flow_time"] == pytest.approx(flow, rel=1e-9)
        assert entry["mean_flow_time"] == pytest.approx(flow / len(mine), rel=1e-9)
        assert entry["makespan"] == pytest.approx(mine["end"].max(), rel=1e-12)
    assert sum(e["jobs"] for e in orgs.values()) == 300

    assert GLOBAL_KEYS <= set(glob)
    assert glob["makespan"] == pytest.approx(jobs["end"].max(), rel=1e-12)
    assert glob["events"] > 0 and glob["windows"] > 0
    assert glob["wall_seconds"] > 0
    assert glob["events_per_second"] == pytest.approx(glob["events"] / glob["wall_seconds"], rel=0.05)
    assert isinstance(glob["messages"], dict) and sum(glob["messages"].values()) > 0  # averaging talks
    assert glob["backend"] == "inprocess" and glob["shards"] == 1 and glob["seed"] == 1


def test_summary_json_puts_each_organization_on_one_line(base_run):
    """summary.json is indented, but each organization's figures are one line (a million
    organizations indented field by field are pure-Python encoding): the lines name every
    organization once, in order, and each parses alone to what the whole file says."""
    text = (base_run / "summary.json").read_text()
    summary = json.loads(text)
    lines = [line.strip().rstrip(",") for line in text.splitlines() if re.fullmatch(r'    "[^"]+": \{.+\},?', line)]
    assert [line.split('"')[1] for line in lines] == list(summary["organizations"])
    for line in lines:
        name, figures = line.split(": ", 1)
        assert json.loads(figures) == summary["organizations"][json.loads(name)]
    assert text.startswith('{\n  "') and text.endswith("\n}\n")
    assert '\n  "global": {\n    "' in text  # the other sections stay indented field by field


def test_resolved_scenario_toml_reruns_to_the_same_job_table(base_run, tmp_path):
    resolved = tomllib.loads((base_run / "scenario.toml").read_text())
    assert resolved["workload"]["jobs"] == 300  # the --set override is recorded
    # and said in the description, which would otherwise describe the scenario as shipped
    assert resolved["run"]["description"].endswith("one overloaded site (set: workload.jobs = 300)")
    assert resolved["run"]["backend"] == "inprocess"
    assert resolved["run"]["seed"] == 1
    again = tmp_path / "again"
    assert run_cli("run", base_run / "scenario.toml", "--out", again, "--quiet") == 0
    pd.testing.assert_frame_equal(read_jobs(base_run), read_jobs(again))
    assert read_summary(again)["organizations"] == read_summary(base_run)["organizations"]
    # Resolving an already resolved scenario changes nothing.
    assert tomllib.loads((again / "scenario.toml").read_text()) == resolved


@pytest.mark.parametrize(
    "description",
    [
        pytest.param('say "hi"', id="quotes"),
        pytest.param("C:\\grid\\runs", id="backslashes"),
        pytest.param("tab\tseparated", id="tab"),
        pytest.param("first line\nsecond line", id="newline"),
    ],
)
def test_resolved_scenario_toml_keeps_any_description(tmp_path, description):
    """Whatever string a scenario holds, its resolved scenario.toml is valid TOML that runs again."""
    escaped = description.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    path = tmp_path / "described.toml"
    path.write_text(
        SMALL_TOML.replace("seed = 11", f'seed = 11\ndescription = "{escaped}"').replace("jobs = 240", "jobs = 40")
    )
    first, second = tmp_path / "first", tmp_path / "second"
    assert run_cli("run", path, "--backend", "inprocess", "--out", first, "--quiet") == 0
    text = (first / "scenario.toml").read_text()
    try:
        resolved = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        pytest.fail(f"scenario.toml written by the run is not valid TOML ({exc}):\n{text[:200]}")
    assert resolved["run"]["description"] == description
    assert run_cli("run", first / "scenario.toml", "--out", second, "--quiet") == 0
    pd.testing.assert_frame_equal(read_jobs(first), read_jobs(second))


def test_run_without_quiet_prints_the_summary(tmp_path, capsys):
    out = tmp_path / "loud"
    assert run_cli("run", "quickstart", "--backend", "inprocess", "--out", out, "--set", "workload.jobs=100") == 0
    printed = capsys.readouterr().out
    assert "organizations" in printed and "org0" in printed
    assert "results written to" in printed and str(out) in printed
    assert (out / "jobs.parquet").is_file()


def test_seed_changes_the_jobs_and_reproduces_them(base_run, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli("run", "quickstart", "--seed", 5, "--out", a, *QUICK) == 0
    assert run_cli("run", "quickstart", "--seed", 5, "--out", b, *QUICK) == 0
    pd.testing.assert_frame_equal(read_jobs(a), read_jobs(b))
    assert read_summary(a)["global"]["seed"] == 5

    base = read_jobs(base_run)  # seed 1, from the scenario file
    other = read_jobs(a)
    assert len(other) == len(base)
    assert not (other["release"].to_numpy() == base["release"].to_numpy()).all()
    assert not (other["size"].to_numpy() == base["size"].to_numpy()).all()


def test_set_protocol_local_sends_no_messages(local_run, base_run):
    summary = read_summary(local_run)
    jobs = read_jobs(local_run)
    assert summary["global"]["protocol"] == "local"
    assert summary["global"]["messages"] == {}
    assert summary["global"].get("messages_total", 0) == 0
    assert (jobs["migrations"] == 0).all()
    assert (jobs["exec_site"] == jobs["submit_site"]).all()
    assert not (local_run / "timeseries.parquet").exists()  # only averaging records one
    assert tomllib.loads((local_run / "scenario.toml").read_text())["protocol"]["name"] == "local"
    # Same seed and workload size: the same jobs were submitted as in the averaging run.
    base = read_jobs(base_run)
    for col in ("release", "size", "procs", "submit_site", "owner"):
        pd.testing.assert_series_equal(jobs[col], base[col])


def test_shards_two_in_process_gives_the_same_job_table(base_run, tmp_path):
    out = tmp_path / "two"
    assert run_cli("run", "quickstart", "--shards", 2, "--out", out, *QUICK) == 0
    assert read_summary(out)["global"]["shards"] == 2
    pd.testing.assert_frame_equal(read_jobs(base_run), read_jobs(out))
    one = tmp_path / "one"
    assert run_cli("run", "quickstart", "--shards", 1, "--out", one, *QUICK) == 0
    pd.testing.assert_frame_equal(read_jobs(one), read_jobs(out))


def test_ray_backend_gives_the_same_job_table(ray_session, base_run, tmp_path):
    out = tmp_path / "ray"
    argv = [
        "run",
        "quickstart",
        "--backend",
        "ray",
        "--shards",
        2,
        "--out",
        out,
        "--quiet",
        "--set",
        "workload.jobs=300",
    ]
    assert run_cli(*argv) == 0
    glob = read_summary(out)["global"]
    assert glob["backend"] == "ray" and glob["shards"] == 2
    pd.testing.assert_frame_equal(read_jobs(base_run), read_jobs(out))
    assert read_summary(out)["organizations"] == read_summary(base_run)["organizations"]


# --------------------------------------------------------------------------- counterfactual score


def _expected_score(flow: float, flow_local: float) -> float:
    """S_k (thesis 4.5.2): positive when cooperating shortened the organization's flow time."""
    if flow < flow_local:
        return flow_local / flow - 1.0
    return -(flow / flow_local - 1.0)


def test_counterfactual_local_scores_every_organization(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL_TOML)
    coop, alone = tmp_path / "coop", tmp_path / "alone"
    assert run_cli("run", path, "--out", coop, "--quiet") == 0
    assert run_cli("run", path, "--out", alone, "--quiet", "--set", "protocol.name=local") == 0

    coop_orgs = read_summary(coop)["organizations"]
    alone_orgs = read_summary(alone)["organizations"]
    assert set(coop_orgs) == set(alone_orgs) == {"org0", "org1", "org2"}
    assert (read_jobs(coop)["migrations"] > 0).any()  # the protocol really moved jobs
    for name, entry in coop_orgs.items():
        assert "score" in entry, name
        # The counterfactual is exactly what the local protocol gives on the same workload.
        assert entry["sum_flow_time_local"] == pytest.approx(alone_orgs[name]["sum_flow_time"], rel=1e-12)
        assert entry["score"] == pytest.approx(_expected_score(entry["sum_flow_time"], entry["sum_flow_time_local"]))
    # The overloaded organization gains from sending work away.
    assert coop_orgs["org0"]["score"] > 0
    assert any(e["score"] != 0 for e in coop_orgs.values())

    # Under the local protocol itself every organization scores exactly 0.
    for name, entry in alone_orgs.items():
        assert entry["score"] == 0, name
        assert entry["sum_flow_time_local"] == entry["sum_flow_time"]


def test_no_counterfactual_no_score(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL_TOML.replace('counterfactual = "local"', 'counterfactual = "none"'))
    out = tmp_path / "run"
    assert run_cli("run", path, "--out", out, "--quiet") == 0
    for entry in read_summary(out)["organizations"].values():
        assert "score" not in entry and "sum_flow_time_local" not in entry


# --------------------------------------------------------------------------- report


def test_report_prints_tables_and_writes_a_png(base_run, tmp_path, capsys):
    folder = tmp_path / "r"
    shutil.copytree(base_run, folder)
    assert run_cli("report", folder) == 0
    out = capsys.readouterr().out
    assert "organizations" in out and "org0" in out and "org7" in out
    assert "averaging" in out  # the run table names the protocol
    for name in ("report.png", "flow_cdf.png"):
        png = folder / name
        assert png.is_file() and png.stat().st_size > 1000
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_no_plot_writes_no_png(base_run, tmp_path, capsys):
    folder = tmp_path / "r"
    shutil.copytree(base_run, folder)
    assert run_cli("report", folder, "--no-plot") == 0
    out = capsys.readouterr().out
    assert "organizations" in out and "org0" in out
    assert not (folder / "report.png").exists()


# --------------------------------------------------------------------------- sweep


def test_sweep_grid_and_repeat(ray_session, tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = [
        "sweep",
        "quickstart",
        "--grid",
        "protocol.name=local,averaging",
        "--repeat",
        2,
        "--set",
        "workload.jobs=200",
        "--out",
        out,
        "--quiet",
    ]
    assert run_cli(*argv) == 0

    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 4
    # The settings as the grid gives them (local first), though Ray's runs end in any order.
    assert list(zip(runs["protocol.name"], runs["seed"])) == [
        ("local", 1),
        ("local", 2),
        ("averaging", 1),
        ("averaging", 2),
    ]
    assert (runs["jobs"] == 200).all()
    assert (runs.loc[runs["protocol.name"] == "local", "messages_total"] == 0).all()
    assert (runs.loc[runs["protocol.name"] == "averaging", "messages_total"] > 0).all()
    # The two seeds give different workloads, hence different figures.
    for _, part in runs.groupby("protocol.name"):
        assert part["mean_flow_time"].nunique() == 2
        assert part["events"].nunique() == 2 or part["makespan"].nunique() == 2

    orgs = pd.read_parquet(out / "orgs.parquet")
    assert len(orgs) == 4 * 8
    assert set(orgs["organization"]) == {f"org{k}" for k in range(8)}
    assert list(orgs["protocol.name"]) == ["local"] * 16 + ["averaging"] * 16
    assert list(orgs["organization"][:8]) == [f"org{k}" for k in range(8)]
    assert {"score", "sum_flow_time", "makespan"} <= set(orgs.columns)
    assert (orgs.loc[orgs["protocol.name"] == "local", "score"] == 0).all()

    table = pd.read_csv(out / "table.csv", index_col=0)
    assert list(table.index) == ["local", "averaging"]
    assert (table["runs"] == 2).all()
    for figure in ("makespan", "mean_flow_time", "messages_total"):
        assert f"{figure}_mean" in table.columns and f"{figure}_std" in table.columns
    for proto, part in runs.groupby("protocol.name"):
        assert table.loc[proto, "mean_flow_time_mean"] == pytest.approx(part["mean_flow_time"].mean())
        assert table.loc[proto, "mean_flow_time_std"] == pytest.approx(part["mean_flow_time"].std())
        assert table.loc[proto, "mean_flow_time_std"] > 0

    # A sweep point is the same run as the single-run command with that seed and setting.
    single = tmp_path / "single"
    assert (
        run_cli(
            "run",
            "quickstart",
            "--backend",
            "inprocess",
            "--seed",
            2,
            "--set",
            "workload.jobs=200",
            "--set",
            "protocol.name=averaging",
            "--out",
            single,
            "--quiet",
        )
        == 0
    )
    row = runs[(runs["protocol.name"] == "averaging") & (runs["seed"] == 2)].iloc[0]
    glob = read_summary(single)["global"]
    assert row["makespan"] == pytest.approx(glob["makespan"], rel=1e-12)
    assert row["mean_flow_time"] == pytest.approx(glob["mean_flow_time"], rel=1e-12)
    assert row["events"] == glob["events"]


def test_sweep_over_run_seed_uses_the_swept_seeds(ray_session, tmp_path, capsys):
    """Sweeping run.seed must run those seeds (or refuse the key); never silently run another."""
    out = tmp_path / "seeds"
    code = run_cli(
        "sweep",
        "quickstart",
        "--grid",
        "run.seed=5,9",
        "--set",
        "workload.jobs=100",
        "--set",
        "protocol.name=local",
        "--out",
        out,
        "--quiet",
    )
    if code == 2:  # refusing the key is acceptable, with one line naming it
        err = capsys.readouterr().err.strip()
        assert err.startswith("gridemu: error:") and "run.seed" in err
        return
    assert code == 0
    runs = pd.read_parquet(out / "runs.parquet").sort_values("run.seed")
    assert runs["run.seed"].tolist() == [5, 9]
    assert runs["seed"].tolist() == [5, 9], "the runs did not use the swept seeds"
    assert runs["mean_flow_time"].nunique() == 2


# --------------------------------------------------------------------------- entry point


def test_console_script_points_at_main():
    scripts = {ep.name: ep.value for ep in metadata.entry_points(group="console_scripts")}
    assert scripts.get("gridemu") == "gridemu.emulator.cli:main"


def test_real_subprocess_runs_a_scenario(tmp_path):
    out = tmp_path / "sub"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gridemu.emulator.cli",
            "run",
            "quickstart",
            "--backend",
            "inprocess",
            "--out",
            str(out),
            "--quiet",
            "--set",
            "workload.jobs=100",
            "--seed",
            "4",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = read_summary(out)
    assert summary["global"]["jobs"] == 100 and summary["global"]["seed"] == 4
    assert len(read_jobs(out)) == 100
    assert math.isfinite(summary["global"]["makespan"])


def test_report_gantt_packs_jobs_without_overlap(tmp_path):
    import gridemu.emulator as emulator
    from gridemu.emulator.report import gantt_boxes
    from gridemu.model.errors import GridemuError

    data = {
        "run": {"seed": 3, "backend": "inprocess"},
        "sites": {"count": 3, "procs": 16},
        "scheduler": {"name": "list"},
        "workload": {"kind": "rigid", "model": "uni", "jobs": 60},
    }
    result = emulator.run(data, out=tmp_path / "rigid")
    boxes = gantt_boxes(result.jobs, {0: 16, 1: 16, 2: 16})
    # every job's boxes cover exactly its processor count
    assert boxes.groupby("job_id")["count"].sum().to_dict() == dict(zip(result.jobs["job_id"], result.jobs["procs"]))
    # no processor holds two jobs at once
    cells = [(b.site, p, b.start, b.end) for b in boxes.itertuples() for p in range(b.proc, b.proc + b.count)]
    by_proc: dict = {}
    for site, p, start, end in cells:
        by_proc.setdefault((site, p), []).append((start, end))
    for spans in by_proc.values():
        spans.sort()
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    assert run_cli("report", tmp_path / "rigid", "--gantt") == 0
    assert (tmp_path / "rigid" / "gantt.png").stat().st_size > 0
    # an overbooked site cannot be drawn: the error names the job
    bad = result.jobs.drop(columns=["proc", "proc_set"])  # no recorded placement: rebuilt
    bad["exec_site"] = 0
    bad["start"] = 0.0
    with pytest.raises(GridemuError, match=r"job \d+ needs \d+ processors of site 0"):
        gantt_boxes(bad, {0: 16})


def test_gantt_frees_processors_at_an_end_equal_to_a_start_up_to_rounding():
    """505.007 + 14 is 519.0070000000001 in floats: a schedule rebuilt from the job table (molba's
    local one) must still let a job starting at 519.007 take every processor (the README's
    ``gridemu report runs/m1 --gantt`` failed on this)."""
    from gridemu.emulator.report import gantt_boxes

    jobs = pd.DataFrame(
        {
            "job_id": [0, 1],
            "owner": ["org0", "org0"],
            "exec_site": [0, 0],
            "procs": [38, 38],
            "start": [505.007, 519.007],
            "end": [505.007 + 14, 530.0],
        }
    )
    boxes = gantt_boxes(jobs, {0: 38})
    assert boxes["proc"].tolist() == [0, 0] and boxes["count"].tolist() == [38, 38]


def csv_sweep(folder: Path, protocol: str = "local") -> tuple[Path, Path, Path]:
    """A scenario reading good.csv beside it, and a bad.csv that passes validation (it
    exists) but fails when a run reads it: (good, bad, scenario)."""
    good = folder / "good.csv"
    good.write_text("release,size,site\n0,1.0,0\n1,2.0,1\n2,3.0,0\n")
    bad = folder / "bad.csv"
    bad.write_text("release,size,site\n0,1.0,0\n1,2.0\n")
    scenario = folder / "s.toml"
    scenario.write_text(
        f'[sites]\ncount = 2\nprocs = 1\n[workload]\nkind = "csv"\npath = "good.csv"\n[protocol]\nname = "{protocol}"\n'
    )
    return good, bad, scenario


def test_a_failed_sweep_point_keeps_the_others(ray_session, tmp_path, capsys):
    good, bad, scenario = csv_sweep(tmp_path)
    out = tmp_path / "sw"
    code = run_cli("sweep", scenario, "--grid", f"workload.path={good},{bad}", "--repeat", 2, "--quiet", "--out", out)
    err = capsys.readouterr().err
    assert code == 1
    assert "2 of 4 runs failed" in err and "bad.csv:3: wrong number of columns" in err and "Traceback" not in err
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 2 and set(runs["workload.path"]) == {str(good)}
    failures = pd.read_csv(out / "failures.csv")
    assert len(failures) == 2 and failures["error"].str.contains("bad.csv:3:").all()
    # Its report says that runs are missing (their setting has no row and no point).
    assert run_cli("report", out, "--no-plot") == 0
    assert "2 runs of the sweep failed and are left out" in capsys.readouterr().err
    # An earlier sweep's folder is kept unless --overwrite; "good.csv" is found beside the scenario.
    code = run_cli("sweep", scenario, "--grid", "run.seed=1,2", "--quiet", "--out", out)
    assert code == 2 and "holds the results of an earlier sweep" in capsys.readouterr().err
    assert run_cli("sweep", scenario, "--grid", "run.seed=1,2", "--quiet", "--out", out, "--overwrite") == 0
    assert not (out / "failures.csv").exists() and len(pd.read_parquet(out / "runs.parquet")) == 2


def test_a_sweep_without_ray_gives_the_same_runs_and_keeps_failures(ray_session, tmp_path, capsys):
    good, bad, scenario = csv_sweep(tmp_path, "random")
    grid = ["--grid", "run.seed=1,2,3", "--quiet"]
    assert run_cli("sweep", scenario, *grid, "--out", tmp_path / "ray") == 0
    assert run_cli("sweep", scenario, *grid, "--out", tmp_path / "local", "--backend", "inprocess") == 0
    timing = ["wall_seconds", "site_cpu_seconds"]
    on_ray, local = (pd.read_parquet(tmp_path / d / "runs.parquet").drop(columns=timing) for d in ("ray", "local"))
    pd.testing.assert_frame_equal(on_ray, local)
    code = run_cli(
        "sweep",
        scenario,
        "--grid",
        f"workload.path={good},{bad}",
        "--quiet",
        "--out",
        tmp_path / "f",
        "--backend",
        "inprocess",
    )
    assert code == 1 and "1 of 2 runs failed" in capsys.readouterr().err
    assert pd.read_csv(tmp_path / "f" / "failures.csv")["error"].str.contains("bad.csv:3:").all()


def test_a_sweep_table_shows_whole_column_names(tmp_path, capsys):
    assert (
        run_cli(
            "sweep",
            "quickstart",
            "--backend",
            "inprocess",
            "--grid",
            "protocol.name=local,random",
            "--set",
            "workload.jobs=300",
            "--repeat",
            2,
            "--out",
            tmp_path / "s",
        )
        == 0
    )
    said = capsys.readouterr()
    out = said.out
    for name in ("protocol.name", "mean_flow_time", "makespan", "messages_per_job"):
        assert name in out
    assert "…" not in out and " ± " in out and "(mean ± 95 % confidence half-width over seeds)" in out
    table = pd.read_csv(tmp_path / "s" / "table.csv")
    assert {"mean_flow_time_mean", "mean_flow_time_std"} <= set(table.columns)
    row = table[table["protocol.name"] == "random"].iloc[0]  # the ± is report's: the interval's half
    assert f"{row['mean_flow_time_mean']:.4g} ± {row['mean_flow_time_ci95']:.2g}" in out
    # Off a terminal, lines instead of a bar (a log file got nothing until the end).
    assert re.search(r"gridemu: sweep: (\d+) / \1 runs done, \d+ s", said.err), said.err


def test_ray_failing_to_start_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    import ray

    def timed_out(*args, **kwargs):
        raise RuntimeError("The node with node id 42 timed out during startup.\nmore lines")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", timed_out)
    assert run_cli("sweep", "quickstart", "--grid", "run.seed=1,2", "--quiet", "--out", tmp_path / "s") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot start a local Ray instance" in err and "timed out during startup" in err
    assert "--backend inprocess" in err and not (tmp_path / "s").exists()


def test_jobs_that_never_finish_are_reported_and_strict_fails(tmp_path, capsys):
    # Site 1 crashes at 10.5 and is never repaired: its jobs wait for ever (no horizon: the
    # run ends when nothing is left). (A broker sending wide jobs to a small site did this
    # before; that now stops the run: tests/test_route.py.)
    (tmp_path / "jobs.csv").write_text("release,size,site,procs\n" + "".join(f"{i},5.0,1,1\n" for i in range(30)))
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        '[sites]\ncount = 2\nprocs = [4, 2]\n[workload]\nkind = "csv"\npath = "jobs.csv"\n'
        "[[faults.crash]]\nsite = 1\nat = 10.5\nduration = inf\n"
    )
    argv = ["run", scenario, "--backend", "inprocess", "--quiet"]
    assert run_cli(*argv, "--out", tmp_path / "a") == 0
    err = capsys.readouterr().err
    jobs = read_jobs(tmp_path / "a")
    stuck = int((jobs["state"] != "done").sum())
    assert stuck > 0 and set(jobs.loc[jobs["state"] != "done", "exec_site"]) == {1}
    assert f"warning: {stuck} of 30 jobs never finished (queued {stuck})" in err
    assert run_cli(*argv, "--out", tmp_path / "b", "--strict") == 1
    assert "never finished" in capsys.readouterr().err
    # With a horizon, jobs cut by it are expected: --strict does not fail, but a horizon that
    # leaves more than 5 % of the released jobs unfinished says so, with the count (issue 43).
    assert run_cli(*argv, "--out", tmp_path / "c", "--strict", "--set", "run.horizon=50") == 0
    err = capsys.readouterr().err
    assert "of the 30 jobs released before the horizon t=50" in err and "never finished" in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_sigint_and_sigterm_stop_a_run_cleanly(tmp_path, sig, code, word):
    out = tmp_path / "r"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gridemu.emulator.cli",
            "run",
            "quickstart",
            "--backend",
            "inprocess",
            "--quiet",
            "--set",
            "workload.jobs=3000000",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(5)  # past the imports: inside the run
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    said = {
        signal.SIGINT: ": nothing was written (a run's results are written whole or not at all); with --checkpoint "
        "SECONDS a run keeps its state to go on later (gridemu resume OUT)",
        signal.SIGTERM: " (SIGTERM)",
    }
    assert err.strip() == f"gridemu: {word}" + said[sig]
    assert list(tmp_path.iterdir()) == []  # no result folder, whole or partial


def _actors(pids: set[int]) -> list[int]:
    """The shard actors' worker processes among ``pids`` (Ray names them ray::_ShardActor)."""
    found = []
    for p in pids:
        try:
            if b"_ShardActor" in Path(f"/proc/{p}/cmdline").read_bytes():
                found.append(p)
        except OSError:
            pass
    return found


def _running(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:  # gone
        return False


def _process_tree(pid: int) -> set[int]:
    """pid and every process below it (Linux /proc)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        tree.add(p)
        todo.extend(parents.get(p, []))
    return tree


@pytest.mark.slow
def test_sigterm_on_ray_closes_the_shards_and_leaves_no_ray_process(tmp_path):
    out = tmp_path / "r"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gridemu.emulator.cli",
            "run",
            "quickstart",
            "--backend",
            "ray",
            "--shards",
            "2",
            "--quiet",
            "--set",
            "workload.jobs=3000000",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 90
    while not _actors(_process_tree(proc.pid)) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)  # until the shard actors exist (ray.init has returned)
    time.sleep(2)
    tree = _process_tree(proc.pid)
    assert proc.poll() is None and _actors(tree), proc.communicate()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 143, err
    assert err.strip() == "gridemu: terminated (SIGTERM)"  # no C++ stack dump
    time.sleep(2)
    alive = {p for p in tree if _running(p)}
    assert not alive, f"processes left: {alive}"
    assert list(tmp_path.iterdir()) == []


def test_wait_time_and_bounded_slowdown_by_hand(capsys):
    # One processor: jobs of size 2 and 30 released at 0 and 1. The second waits 1 (starts at
    # 2, ends 32): bounded slowdowns max(1, 2 / max(2, 10)) = 1 and 31 / 30; waits 0 and 1.
    import gridemu.emulator as emulator

    data = {
        "run": {"time_unit": "s"},
        "sites": [{"name": "a", "procs": 1}],
        "workload": {
            "kind": "jobs",
            "list": [{"release": 0.0, "size": 2.0, "site": 0}, {"release": 1.0, "size": 30.0, "site": 0}],
        },
    }
    g = emulator.run(data).summary
    assert g["global"]["mean_wait_time"] == 0.5
    assert g["global"]["mean_bounded_slowdown"] == pytest.approx((1.0 + 31.0 / 30.0) / 2)
    assert g["organizations"]["a"]["mean_wait_time"] == 0.5 and g["global"]["time_unit"] == "s"
    from gridemu.emulator.report import print_summary

    print_summary(g)
    out = capsys.readouterr().out
    assert "organizations (times in s)" in out and "mean wait" in out and "bounded slowdown" in out


def test_a_key_of_another_protocol_is_a_warning_naming_this_protocols_keys(capsys):
    # Kept (a sweep over protocol.name sets every protocol's keys), but never silently.
    assert run_cli("validate", "quickstart", "--set", "protocol.choices=3") == 0
    err = capsys.readouterr().err
    assert "protocol.choices is not read by the averaging protocol (its keys: period, start, exchange): ignored" in err
    assert run_cli("validate", "quickstart") == 0
    assert "not read by" not in capsys.readouterr().err


def test_keys_no_protocol_read_are_left_out_of_the_resolved_scenario():
    # scenario.toml is the run as it ran: bilb's keys under random would warn again on rerun.
    from gridemu.emulator.scenario import load_scenario

    sc = load_scenario("bilb", {"protocol.name": "random"})
    assert sc.data["protocol"] == {"name": "random"}
    assert "protocol.limit is not read by the random protocol" in " ".join(sc.extra["scenario_warnings"])
    kept = load_scenario("bilb").data["protocol"]
    assert kept["name"] == "bilb" and kept["limit"] == 1000.0 and list(kept)[:3] == ["name", "period", "limit"]


def test_a_ray_run_spent_in_barriers_gets_a_note_naming_the_one_process_backend(tmp_path, capsys):
    # Figures of `gridemu run bilb --backend ray --shards 2` on 2 cores (2026-11-25): 107 s
    # where one process took 9.9 s.
    import argparse
    from types import SimpleNamespace

    from gridemu.emulator import cli

    chatty = {
        "backend": "ray",
        "shards": 2,
        "wall_seconds": 107.1,
        "setup_seconds": 0.5,
        "windows": 36955,
        "site_cpu_seconds": 16.8,
    }
    result = SimpleNamespace(summary={"global": chatty})
    assert cli._with_progress(argparse.Namespace(quiet=True), tmp_path, lambda bar: result) is result
    err = capsys.readouterr().err
    assert "gridemu: note: 36,955 windows took 107 s (2.9 ms each), and each shard's sites worked 8.4 s" in err
    assert "--backend inprocess" in err
    # Not for one process, a short loop, or shards whose sites did most of the work.
    for other in (
        {"backend": "inprocess", "shards": 1},
        {"wall_seconds": 8.0},
        {"site_cpu_seconds": 60.0},
        {"site_cpu_seconds": None},
    ):
        assert cli.barrier_note({"global": {**chatty, **other}}) is None


@pytest.mark.parametrize("command", [("report", "--no-plot"), ("list",)])
def test_a_reader_that_stops_early_is_no_error(base_run, command):
    # `gridemu report RUN | head`: the pipe is closed before the first table is written. rich
    # ends a broken pipe with exit 1; gridemu treats it as the reader's choice (exit 0, silent).
    argv = [sys.executable, "-m", "gridemu.emulator.cli", command[0]]
    argv += [str(base_run), *command[1:]] if command[0] == "report" else []
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert err == ""


def test_python_dash_m_gridemu_is_the_command():
    # For an interpreter whose scripts folder is not on the PATH (a venv that sees gridemu
    # through the system's site-packages): the same command, the same exit codes.
    ok = subprocess.run([sys.executable, "-m", "gridemu", "--version"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("gridemu ")
    bad = subprocess.run(
        [sys.executable, "-m", "gridemu", "validate", "no-such-scenario"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.startswith("gridemu: error: ")


def test_sweep_arguments_are_checked_before_any_run(tmp_path, capsys):
    # --workers -1 left the Ray sweep no task to submit and its wait loop spun for ever.
    assert run_cli("sweep", "quickstart", "--grid", "protocol.name=local", "--workers", "-1", "--quiet") == 2
    assert "--workers: must be >= 0 (0: Ray's CPUs), got -1" in capsys.readouterr().err
    assert run_cli("sweep", "quickstart", "--grid", "protocol.name", "--backend", "inprocess") == 2
    assert "--grid: 'protocol.name' is not KEY=V1,V2,..." in capsys.readouterr().err
    # A value bad at one setting only stops the sweep before any run, naming the setting.
    out = tmp_path / "s"
    argv = ["--grid", "protocol.name=averaging,local", "--grid", "protocol.period=-5,50", "--backend", "inprocess"]
    assert run_cli("sweep", "quickstart", *argv, "--out", out) == 2
    err = capsys.readouterr().err
    assert "protocol.period: must be > 0, got -5 (at protocol.name='averaging', protocol.period=-5; no run" in err
    assert not out.exists()


def test_the_python_sweep_takes_its_grid_as_a_dict_too():
    import gridemu

    args = {"overrides": {"workload.jobs": 200}, "backend": "inprocess", "quiet": True}
    runs, _, _ = gridemu.sweep("quickstart", {"protocol.name": ["local", "random"]}, **args)
    again, _, _ = gridemu.sweep("quickstart", [("protocol.name", ["local", "random"])], **args)
    timing = ["wall_seconds", "site_cpu_seconds"]
    pd.testing.assert_frame_equal(runs.drop(columns=timing), again.drop(columns=timing))
    assert list(runs["protocol.name"]) == ["local", "random"]


def test_a_sweep_folder_given_where_a_run_folder_is_wanted_says_so(tmp_path, capsys):
    import gridemu

    out = tmp_path / "s"
    argv = ["--grid", "protocol.name=local", "--set", "workload.jobs=100", "--backend", "inprocess", "--quiet"]
    assert run_cli("sweep", "quickstart", *argv, "--out", out) == 0
    assert run_cli("resume", out) == 2
    assert "is a sweep folder: a sweep is not resumed, sweep again" in capsys.readouterr().err
    assert run_cli("export", out) == 2
    assert "a gridemu sweep folder, not a run's" in capsys.readouterr().err
    with pytest.raises(gridemu.GridemuError, match="a gridemu sweep folder, not a run's"):
        gridemu.load(out)
