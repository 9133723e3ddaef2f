"""Statistics of runs and sweeps: tail percentiles, the warm-up cut, a sweep's confidence
intervals and figures, and the warnings for unfinished jobs and for swept keys that change
nothing."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import gridemu
from gridemu import emulator
from gridemu.emulator.cli import main
from gridemu.emulator.report import load_run
from gridemu.emulator.stats import confidence, t975
from gridemu.emulator.sweep import sweep

SMALL = {"workload.jobs": 300}


@pytest.mark.parametrize("df, t", [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (24, 2.064), (100, 1.984)])
def test_t_quantiles_match_the_table_of_student_t(df, t):
    assert t975(df) == pytest.approx(t, abs=1e-3)


def test_confidence_interval_of_a_setting():
    runs = pd.DataFrame({"k": ["a"] * 5 + ["b"], "seed": range(6), "x": [1.0, 2.0, 3.0, 4.0, 5.0, 7.0]})
    table = confidence(runs, ["k"], ["x"])
    a = table.loc["a"]
    assert a["runs"] == 5 and a["x_n"] == 5 and a["x_mean"] == 3.0
    assert a["x_std"] == pytest.approx(math.sqrt(2.5))
    assert a["x_ci95"] == pytest.approx(2.7764 * math.sqrt(2.5) / math.sqrt(5), rel=1e-4)
    assert a["x_lo"] == pytest.approx(3.0 - a["x_ci95"]) and a["x_hi"] == pytest.approx(3.0 + a["x_ci95"])
    assert math.isnan(table.loc["b", "x_ci95"])  # one run: no interval


def test_runs_that_agree_have_no_spread():
    # The tutorial's sweep: three seeds of a protocol that draws nothing, the same mean flow
    # time each; numpy's rounded mean of them is an ulp off, which made the std 2.2e-12.
    x = 15161.686210032884
    assert np.asarray([x] * 3).std(ddof=1) > 0  # the case this guards against
    table = confidence(pd.DataFrame({"k": ["a"] * 3, "x": [x] * 3}), ["k"], ["x"])
    assert table.loc["a", "x_std"] == 0.0 and table.loc["a", "x_ci95"] == 0.0


def test_a_run_reports_the_tail_of_flow_wait_and_bounded_slowdown():
    result = emulator.run("quickstart", backend="inprocess", overrides=SMALL)
    g, jobs = result.summary["global"], result.jobs
    done = jobs[jobs["state"] == "done"]
    flow = (done["end"] - done["release"]).to_numpy()
    assert g["flow_time_p50"] == pytest.approx(np.median(flow))
    assert g["flow_time_p99"] == pytest.approx(np.quantile(flow, 0.99))
    assert g["flow_time_max"] == pytest.approx(flow.max())
    assert g["wait_time_p95"] == pytest.approx(np.quantile(done["start"] - done["release"], 0.95))
    assert g["bounded_slowdown_max"] >= g["bounded_slowdown_p95"] >= g["bounded_slowdown_p50"] >= 1.0


def test_the_warmup_cut_leaves_early_jobs_out_of_the_figures():
    full = emulator.run("quickstart", backend="inprocess", overrides=SMALL)
    cut = emulator.run("quickstart", backend="inprocess", overrides={**SMALL, "metrics.warmup": 20.0})
    jobs = full.jobs
    late = jobs[(jobs["release"] >= 20.0) & (jobs["state"] == "done")]
    g = cut.summary["global"]
    assert g["warmup"] == 20.0 and g["jobs_measured"] == int((jobs["release"] >= 20.0).sum())
    assert g["mean_flow_time"] == pytest.approx((late["end"] - late["release"]).mean())
    assert g["jobs"] == len(jobs)  # every job ran: the cut is in the figures only
    pd.testing.assert_frame_equal(full.jobs, cut.jobs)


def test_warmup_option_and_its_check(tmp_path, capsys):
    assert (
        main(
            [
                "run",
                "quickstart",
                "--backend",
                "inprocess",
                "--quiet",
                "--set",
                "workload.jobs=200",
                "--warmup",
                "10",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )
    assert gridemu.load(tmp_path / "r").summary["global"]["warmup"] == 10.0
    assert main(["run", "quickstart", "--warmup", "-1", "--out", str(tmp_path / "x")]) == 2
    assert "metrics.warmup" in capsys.readouterr().err
    # A cut before the first release leaves nothing out, and the table says so (a trace read
    # without a window starts late: KTH-SP2 at 599,850 s, a cut at one day cut nothing).
    first = float(gridemu.load(tmp_path / "r").jobs["release"].min())
    assert main(["report", str(tmp_path / "r"), "--no-plot", "--warmup", f"{first / 2}"]) == 0
    assert "measured (no job is released before it: nothing is left out)" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "r"), "--no-plot", "--warmup", "10"]) == 0
    assert "nothing is left out" not in capsys.readouterr().out


def test_a_horizon_that_leaves_most_jobs_unfinished_is_named(tmp_path, capsys):
    argv = ["run", "quickstart", "--backend", "inprocess", "--quiet", "--set", "workload.jobs=2000"]
    assert main([*argv, "--set", "run.horizon=30", "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "jobs released before the horizon t=30" in err and "never finished" in err


def test_report_of_any_sweep_gives_intervals_figures_and_warnings(tmp_path, capsys):
    grid = [("protocol.name", ["local", "averaging"]), ("protocol.period", [2.0, 1.0])]
    sweep("quickstart", grid, repeat=2, overrides=SMALL, out=tmp_path / "s", backend="inprocess", quiet=True)
    err = capsys.readouterr().err
    assert "protocol.period: its values (2, 1) gave the same schedules, seed for seed, where protocol.name=local" in err
    assert main(["report", str(tmp_path / "s")]) == 0
    out = capsys.readouterr()
    assert "95 % confidence" in out.out and "protocol.name=local" in out.err
    # In a pipe or a file a table keeps its own width: at 160 columns a wider one lost its
    # last column's name ("score_me", an exploratory study's report > file).
    from rich.table import Table

    from gridemu.emulator.console import stdout_console

    wide = Table()
    for k in range(12):
        wide.add_column(f"figure_number_{k:02d}")
    wide.add_row(*(f"{k}" for k in range(12)))
    stdout_console().print(wide)
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) > 160 and "figure_number_11" in lines[1]
    stats = pd.read_csv(tmp_path / "s" / "stats.csv", index_col=[0, 1])
    runs = pd.read_parquet(tmp_path / "s" / "runs.parquet")
    part = runs[(runs["protocol.name"] == "averaging") & (runs["protocol.period"] == 1.0)]["mean_flow_time"]
    row = stats.loc[("averaging", 1.0)]
    assert row["mean_flow_time_n"] == 2 and row["mean_flow_time_mean"] == pytest.approx(part.mean())
    assert row["mean_flow_time_ci95"] == pytest.approx(12.7062 * part.std() / math.sqrt(2))
    for figure in ("flow_time_p95", "wait_time_p99", "bounded_slowdown_max"):
        assert f"{figure}_ci95" in stats.columns
    assert (tmp_path / "s" / "sweep.png").stat().st_size > 10_000
    # Every table lists the settings in the grid's order, not sorted: local first, period 2 before 1.
    given = [("local", 2.0), ("local", 1.0), ("averaging", 2.0), ("averaging", 1.0)]
    assert list(stats.index) == given
    assert list(pd.read_csv(tmp_path / "s" / "table.csv", index_col=[0, 1]).index) == given
    assert list(zip(runs["protocol.name"], runs["protocol.period"], runs["seed"])) == [
        (*setting, seed) for setting in given for seed in (1, 2)
    ]


def test_a_key_ignored_everywhere_is_named_and_a_sweep_without_keys_reports(tmp_path, capsys):
    grid = [("protocol.period", [1.0, 3.0])]
    sweep(
        "quickstart",
        grid,
        overrides={**SMALL, "protocol.name": "local"},
        out=tmp_path / "s",
        backend="inprocess",
        quiet=True,
    )
    err = capsys.readouterr().err
    assert "protocol.period: its values (1, 3) gave the same schedules, seed for seed (jobs, makespan" in err
    sweep("quickstart", [], repeat=3, overrides=SMALL, out=tmp_path / "t", backend="inprocess", quiet=True)
    assert main(["report", str(tmp_path / "t")]) == 0
    assert (tmp_path / "t" / "sweep.png").is_file()
    assert pd.read_csv(tmp_path / "t" / "stats.csv")["runs"].tolist() == [3]


def test_a_sweep_folder_says_how_to_repeat_it(tmp_path, capsys):
    """Issue 43: the sweep's base scenario (with its --set) and grid are written beside the
    runs, with the versions that ran it; the saved scenario repeats one of its runs."""
    import json

    grid = [("protocol.name", ["local", "random"])]
    runs, _, _ = sweep("quickstart", grid, overrides=SMALL, out=tmp_path / "s", backend="inprocess", quiet=True)
    about = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert about["grid"] == [["protocol.name", ["local", "random"]]] and about["repeat"] == 1
    assert about["provenance"]["python"] and about["provenance"]["numpy"] == np.__version__
    again = gridemu.run(
        str(tmp_path / "s" / "scenario.toml"), backend="inprocess", overrides={"protocol.name": "random"}
    )
    row = runs[runs["protocol.name"] == "random"].iloc[0]
    assert again.summary["global"]["mean_flow_time"] == pytest.approx(row["mean_flow_time"], rel=1e-12)


def test_report_warmup_counts_a_runs_figures_again_as_the_run_would(tmp_path, capsys):
    """Issue 43: ``report RUN --warmup T`` gives the figures a run with ``metrics.warmup = T``
    writes (the same code), whatever cut the run had; S_k, which needs the counterfactual, is
    left out with a note; summary.json stays as the run wrote it."""
    full = emulator.run("quickstart", backend="inprocess", overrides=SMALL, out=tmp_path / "r")
    cut = emulator.run("quickstart", backend="inprocess", overrides={**SMALL, "metrics.warmup": 20.0})
    _, _, _, again, _ = load_run(tmp_path / "r", warmup=20.0)
    g, want = again["global"], cut.summary["global"]
    assert g["warmup"] == 20.0 and g["jobs_measured"] == want["jobs_measured"] < g["jobs"]
    for key, value in want.items():
        if key not in ("wall_seconds", "site_cpu_seconds", "setup_seconds", "events_per_second", "jobs_per_second"):
            assert g[key] == value, key
    assert g["mean_flow_time"] != full.summary["global"]["mean_flow_time"]
    for org, figures in cut.summary["organizations"].items():
        assert again["organizations"][org] == {
            k: v for k, v in figures.items() if k not in ("score", "sum_flow_time_local")
        }
    # 0 takes the cut of a run that had one away.
    _, _, _, none, _ = load_run(tmp_path / "r", warmup=0.0)
    assert (
        "warmup" not in none["global"] and none["global"]["mean_flow_time"] == full.summary["global"]["mean_flow_time"]
    )

    assert main(["report", str(tmp_path / "r"), "--warmup", "20", "--no-plot"]) == 0
    out = capsys.readouterr()
    assert "jobs released before 20 left out" in out.out and "score S_k" not in out.out
    assert "S_k left out" in out.err
    assert "warmup" not in gridemu.load(tmp_path / "r").summary["global"]
    assert main(["report", str(tmp_path / "r"), "--warmup", "-1"]) == 2
    assert "--warmup" in capsys.readouterr().err


def test_report_warmup_of_a_sweep_is_refused_in_one_line(tmp_path, capsys):
    sweep(
        "quickstart",
        [("protocol.name", ["local"])],
        overrides=SMALL,
        out=tmp_path / "s",
        backend="inprocess",
        quiet=True,
    )
    capsys.readouterr()
    assert main(["report", str(tmp_path / "s"), "--warmup", "20"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "keep no job table" in err and "--set metrics.warmup=T" in err
    assert not (tmp_path / "s" / "stats.csv").exists()  # refused before any work


def test_a_sweep_with_a_warmup_cut_says_how_many_jobs_its_figures_cover(tmp_path):
    runs, _, _ = sweep(
        "quickstart",
        [],
        overrides={**SMALL, "metrics.warmup": 20.0},
        out=tmp_path / "s",
        backend="inprocess",
        quiet=True,
    )
    cut = emulator.run("quickstart", backend="inprocess", overrides={**SMALL, "metrics.warmup": 20.0})
    assert runs["jobs_measured"].tolist() == [cut.summary["global"]["jobs_measured"]]
    assert runs["jobs_measured"].iloc[0] < runs["jobs"].iloc[0]
    assert runs["time_unit"].tolist() == ["time units"]  # what the report's axes count in


def test_a_sweeps_time_figures_share_one_unit_chosen_by_their_span(tmp_path, monkeypatch):
    from gridemu.emulator import sweep_report

    runs = pd.DataFrame(
        {
            "k": ["b", "b", "a", "a"],  # as a grid gave them: drawn in this order, not sorted
            "seed": [1, 2, 1, 2],
            "mean_flow_time": [3600.0, 7200.0, 1800.0, 1800.0],
            "makespan": [8 * 86400.0, 8 * 86400.0, 9 * 86400.0, 9 * 86400.0],
            "mean_bounded_slowdown": [2.0, 3.0, 1.0, 1.0],
        }
    )
    table = confidence(runs, ["k"], ["mean_flow_time", "makespan", "mean_bounded_slowdown"])
    drawn = {}
    monkeypatch.setattr(sweep_report, "save_figure", lambda fig, *a, **k: drawn.setdefault("fig", fig))
    sweep_report.plot_sweep(tmp_path, table, ["k"], ["mean_flow_time", "makespan", "mean_bounded_slowdown"], unit="s")
    axes = drawn["fig"].axes
    assert [ax.get_title() for ax in axes[:3]] == ["mean_flow_time (days)", "makespan (days)", "mean_bounded_slowdown"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["b", "a"]
    points = axes[1].lines[0].get_ydata()  # the errorbar's means
    assert list(points) == pytest.approx([8.0, 9.0])
    assert list(axes[2].lines[0].get_ydata()) == pytest.approx([2.5, 1.0])  # no unit: as it is
    # b's flow times (1 and 2 h) give a 95 % interval of +-6.4 h around 1.5 h: its bar stops at 0,
    # as bounded slowdown's stops at 1, and the title says so.
    assert min(seg[:, 1].min() for seg in axes[0].collections[0].get_segments()) == pytest.approx(0.0)
    assert min(seg[:, 1].min() for seg in axes[2].collections[0].get_segments()) == pytest.approx(1.0)
    assert "bars cut at the least value a figure can take" in drawn["fig"]._suptitle.get_text()


@pytest.mark.parametrize(
    ("values", "scale", "line"),
    [([20000, 100, 1000], "log", True), ([1.0, 3.0, 2.0], "linear", True), ([1.0, 2.0], "linear", False)],
)
def test_numbers_swept_are_drawn_on_a_numeric_axis(tmp_path, monkeypatch, values, scale, line):
    # Settings 100, 1,000, 5,000, 20,000 sat evenly spaced in slots: a scaling slope bent.
    from gridemu.emulator import sweep_report

    runs = pd.DataFrame(
        {"k": [v for v in values for _ in (1, 2)], "seed": [1, 2] * len(values), "makespan": range(2 * len(values))}
    )
    table = confidence(runs, ["k"], ["makespan"])
    drawn = {}
    monkeypatch.setattr(sweep_report, "save_figure", lambda fig, *a, **k: drawn.setdefault("fig", fig))
    sweep_report.plot_sweep(tmp_path, table, ["k"], ["makespan"])
    ax = drawn["fig"].axes[0]
    assert ax.get_xscale() == scale
    points = ax.lines[0]
    if line:  # three numbers or more: at their values, joined in their order along the axis
        assert list(points.get_xdata()) == pytest.approx(sorted(values))
        assert points.get_linestyle() == "-"
        assert [float(t) for t in ax.get_xticks()] == pytest.approx(values)
    else:  # two: one slot each, as any other setting
        assert list(points.get_xdata()) == [0.0, 1.0] and points.get_linestyle() == "None"


def test_a_setting_whose_every_run_failed_is_marked_where_its_point_would_be(tmp_path, monkeypatch):
    # Its setting has no row of statistics: the figure had no tick and no word of it.
    from gridemu.emulator import sweep_report

    good, bad = "/data/study/traces/good.csv", "/data/study/traces/bad.csv"
    runs = pd.DataFrame(
        {"workload.path": [good] * 4, "p": ["a", "a", "b", "b"], "seed": [1, 2, 1, 2], "makespan": [5.0, 6, 7, 8]}
    )
    pd.DataFrame(
        {"workload.path": [bad, bad, good], "p": ["b", "b", "c"], "seed": [1, 2, 1], "error": ["WorkloadError: x"] * 3}
    ).to_csv(tmp_path / "failures.csv", index=False)
    keys = ["workload.path", "p"]
    table = confidence(runs, keys, ["makespan"])
    failed = sweep_report.failed_settings(pd.read_csv(tmp_path / "failures.csv"), table, keys)
    assert failed == [(bad, "b"), (good, "c")]
    drawn = {}
    monkeypatch.setattr(sweep_report, "save_figure", lambda fig, *a, **k: drawn.setdefault("fig", fig))
    sweep_report.plot_sweep(tmp_path, table, keys, ["makespan"], failed=failed)
    fig = drawn["fig"]
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["…/good.csv", "…/bad.csv"]
    marks = [(t.get_position()[0], t.get_text()) for t in ax.texts]
    assert len(marks) == 2 and all(text == "×\nfailed" for _, text in marks)
    assert marks[0][0] > 0.5 and marks[1][0] < 0.5  # bad.csv's slot (x = 1), then good.csv's (x = 0)
    note = " ".join(t.get_text() for t in fig.texts)
    assert "failed: every run of workload.path=…/bad.csv, p=b; workload.path=…/good.csv, p=c" in note


def test_a_local_ray_sweep_runs_at_once_only_what_the_memory_holds(capsys):
    # Each run's estimate was held to the budget alone: two 13.9 GiB runs started together on
    # 22 GiB (scale audit, 2026-11-27).
    from gridemu.emulator.limits import Limits
    from gridemu.emulator.sweep import _workers_that_fit

    gb = 2.0**30
    here = Limits(22 * gb)
    assert _workers_that_fit(None, 13.9 * gb, here, "ray", None, 2, quiet=False) == 1
    assert "1 run at a time, not 2: each needs about 13.9 GiB of the 22.0 GiB available" in capsys.readouterr().err
    assert _workers_that_fit(8, 5 * gb, here, "ray", None, 100, quiet=True) == 4
    assert _workers_that_fit(3, 5 * gb, here, "ray", None, 100, quiet=True) == 3  # fits as asked
    assert _workers_that_fit(8, 5 * gb, here, "ray", None, 2, quiet=True) == 8  # two runs: both fit
    assert _workers_that_fit(8, 5 * gb, here, "inprocess", None, 100, quiet=True) == 8  # one at a time anyway
    assert _workers_that_fit(8, 5 * gb, here, "ray", "auto", 100, quiet=True) == 8  # a cluster's nodes
    assert _workers_that_fit(8, 5 * gb, Limits(22 * gb, force=True), "ray", None, 100, quiet=True) == 8


def test_sweep_holds_every_setting_to_the_max_limits_before_any_run(tmp_path, capsys):
    from gridemu.emulator import cli

    out = tmp_path / "s"
    argv = ["sweep", "averaging-topology", "--grid", "sites.count=100,1000", "--set", "workload.until=5"]
    assert cli.main([*argv, "--max-jobs", "1000", "--backend", "inprocess", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "at sites.count=1000: --max-jobs: about 3,756 jobs, more than --max-jobs 1,000" in err
    assert "no run was started" in err and not out.exists()
    # A workload that is drawn or read, not sized (molba's rigid instances, a trace), is held
    # to them too: it ran (100 jobs) past --max-jobs 10 before, and past the CPU budget.
    molba = ["sweep", "molba", "--backend", "inprocess", "--out", str(out)]
    assert cli.main([*molba, "--max-jobs", "10"]) == 2
    assert "--max-jobs: about 100 jobs, more than --max-jobs 10" in capsys.readouterr().err
    assert cli.main([*molba, "--set", "workload.jobs=20000", "--repeat", "60"]) == 2
    assert "more than the 24 h budget" in capsys.readouterr().err and not out.exists()


def test_a_sweep_says_each_workload_warning_once(tmp_path, capsys):
    # Each run printed the trace's warnings (twice for two runs in-process; on Ray the tasks'
    # printing never reached the terminal): the sweep says each once, with how many runs gave it.
    from pathlib import Path

    tiny = Path(__file__).resolve().parent.parent / "scenarios" / "data" / "tiny.swf"
    data = {"sites": {"count": 3, "procs": 64}, "workload": {"kind": "swf", "path": str(tiny)}}
    sweep(data, [("scheduler.name", ["fcfs", "easy"])], backend="inprocess", quiet=True)
    lines = [line for line in capsys.readouterr().err.splitlines() if "cannot be emulated" in line]
    assert len(lines) == 1 and lines[0].startswith("gridemu: warning: tiny.swf: ")


def test_a_protocol_figure_named_as_the_runs_own_keeps_both(tmp_path):
    # molba's protocol section has a makespan of its own (from T0): it replaced the run's in
    # runs.parquet (172.0 for 172.007).
    runs, _, _ = sweep("molba", [], backend="inprocess", quiet=True)
    row = runs.iloc[0]
    assert row["makespan"] == pytest.approx(172.007) and row["protocol_makespan"] == 172.0
    assert "jobs_migrated" in runs.columns  # a figure of the section alone keeps its name


def test_the_sweep_figure_says_why_a_point_has_no_bar():
    # "no bar: n = 1" was the only reason given, where a bar of 0 came from seeds that agreed
    # (the local protocol's score is 0 in every run).
    import pandas as pd

    from gridemu.emulator.sweep_report import _bars_note

    agreed = pd.DataFrame(
        {
            "runs": [3, 3],
            "score_mean_mean": [-0.5, 0.0],
            "score_mean_ci95": [0.04, 0.0],
            "makespan_mean": [900.0, 950.0],
            "makespan_ci95": [60.0, 80.0],
        }
    )
    assert _bars_note(agreed, ["score_mean", "makespan"]) == "n = 3; no bar: every seed gave the same value"
    assert _bars_note(agreed, ["makespan"]) == "n = 3"
    one = pd.DataFrame({"runs": [1, 4], "makespan_mean": [900.0, 5.0], "makespan_ci95": [float("nan"), 9.0]})
    assert _bars_note(one, ["makespan"]) == "n = 1 to 4; no bar: one run; bars cut at the least value a figure can take"


def test_settings_are_compared_seed_by_seed_against_the_first_value_of_the_last_key(tmp_path, capsys):
    # d = 3 against d = 1 at period 10: intervals that overlap, though d = 3 was worse in every
    # seed (a user walk computed that from runs.parquet by hand).
    from gridemu.emulator.stats import paired

    flow = {(10, 1): [3.5, 3.9, 3.2], (10, 3): [3.6, 4.1, 3.35], (20, 1): [4.0, 3.1, 3.6], (20, 3): [3.9, 3.3, 3.5]}
    runs = pd.DataFrame(
        [
            {"period": p, "d": d, "seed": s, "mean_flow_time": v}
            for (p, d), values in flow.items()
            for s, v in zip((1, 2, 3), values)
        ]
    )
    key, first, table = paired(runs, ["period", "d"], ["mean_flow_time"])
    assert (key, first) == ("d", 1) and list(table.index) == [(10, 3), (20, 3)]
    for p in (10, 20):
        diff = np.array(flow[(p, 3)]) - np.array(flow[(p, 1)])  # seed by seed, written here
        row = table.loc[(p, 3)]
        assert row["mean_flow_time_mean"] == pytest.approx(diff.mean())
        assert row["mean_flow_time_ci95"] == pytest.approx(4.3026527 * diff.std(ddof=1) / np.sqrt(3), rel=1e-4)
        assert row["mean_flow_time_below"] == int((diff < 0).sum())
    assert table.loc[(10, 3), "mean_flow_time_below"] == 0  # worse in every seed
    # A key given one value compares nothing: the last key given more is compared instead.
    assert paired(runs[runs["d"] == 1], ["period", "d"], ["mean_flow_time"])[:2] == ("period", 10)
    one = runs[(runs["d"] == 1) & (runs["period"] == 10)]
    assert paired(one, ["period", "d"], ["mean_flow_time"]) is None  # one setting: nothing to compare
    # gridemu report prints it and writes paired.csv.
    grid = [("protocol.name", ["local", "averaging"])]
    sweep("quickstart", grid, repeat=2, overrides=SMALL, out=tmp_path / "s", backend="inprocess", quiet=True)
    assert main(["report", str(tmp_path / "s"), "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "against protocol.name=local, seed by seed" in out and "of 2 lower)" in out
    assert (tmp_path / "s" / "paired.csv").is_file()
    # It is gridemu's own file: the sweep folder is still replaced with --overwrite.
    sweep(
        "quickstart",
        grid,
        repeat=2,
        overrides=SMALL,
        out=tmp_path / "s",
        backend="inprocess",
        quiet=True,
        overwrite=True,
    )
    assert not (tmp_path / "s" / "paired.csv").exists()
