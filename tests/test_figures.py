"""Figures ready for a paper (``emulator/figures.py``, ``gridemu report``): formats and
resolution, one time unit per run, what the panels show; the fairshare policy table; the
progress line off a terminal. Tiny runs: the whole file takes seconds."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gridemu.emulator.cli import _ProgressBar, main, progress_line
from gridemu.emulator.engine import Progress
from gridemu.emulator.figures import (
    TimeAxis,
    check_format,
    duration_text,
    org_colors,
    parse_window,
    time_axis,
)
from gridemu.emulator.report import run_panels, run_title
from gridemu.emulator.scenario_toml import to_toml
from gridemu.experiments.fairshare_grid import grid
from gridemu.model.errors import GridemuError

QUICK = ["--backend", "inprocess", "--set", "workload.jobs=300", "--quiet"]


def run_cli(*argv: object) -> int:
    return main([str(a) for a in argv])


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fig") / "run"
    assert run_cli("run", "quickstart", "--out", out, *QUICK) == 0
    return out


@pytest.fixture(scope="module")
def fairshare_run(tmp_path_factory) -> Path:
    """Grid-wide fairshare over 3 sites for one hour of seconds."""
    folder = tmp_path_factory.mktemp("fs")
    data = grid(hours=1.0)
    data["run"]["time_unit"] = "s"
    (folder / "fs.toml").write_text(to_toml(data))
    assert run_cli("run", folder / "fs.toml", "--out", folder / "run", "--quiet") == 0
    return folder / "run"


# --------------------------------------------------------------------------- the time unit


@pytest.mark.parametrize(
    "span, unit, label, scale",
    [
        (3 * 3600.0, "s", "s", 1.0),  # three hours: still seconds
        (3 * 3600.0 + 1, "s", "hours", 3600.0),
        (3 * 86400.0, "s", "hours", 3600.0),
        (8 * 86400.0, "s", "days", 86400.0),  # a week-long trace: days, not raw seconds
        (8 * 86400.0, "seconds", "days", 86400.0),
        (0.5, "h", "hours", 1.0),  # never a unit shorter than the run's own
        (200.0, "h", "days", 24.0),
        (0.5, "d", "days", 1.0),
        (30.0, "min", "min", 1.0),  # no shown unit is a minute: the run's
        (3000.0, "min", "hours", 60.0),
        (1e6, "time units", "time units", 1.0),  # not a length of time: as it is
        (1e6, "rounds", "rounds", 1.0),
    ],
)
def test_the_time_unit_is_chosen_by_the_runs_span(span, unit, label, scale):
    axis = time_axis(span, unit)
    assert (axis.label, axis.scale) == (label, scale)
    assert axis(span) == pytest.approx(span / scale)


@pytest.mark.parametrize(
    "value, unit, text",
    [
        (3642.0, "s", "1.01 hours"),
        (50.0, "s", "50 s"),
        (90.0, "s", "1.5 minutes"),
        (2.5, "d", "2.5 days"),
        (17.6, "time units", "17.6 time units"),
        (350.0, "time units", "350 time units"),
    ],
)
def test_a_bin_width_is_said_in_the_largest_unit_it_fills(value, unit, text):
    assert duration_text(value, unit) == text


def test_every_figure_of_a_run_says_the_same_unit(tmp_path):
    """A week of seconds: the report, the flow-time and the Gantt chart all in days (report.png
    said "time units", shares.png "hours" for the same run)."""
    from gridemu.emulator.report import report

    folder = tmp_path / "week"
    day = 86400.0
    data = {
        "run": {"time_unit": "s", "seed": 1},
        "sites": {"count": 2, "procs": 2},
        "workload": {
            "kind": "jobs",
            "list": [
                {"site": k % 2, "release": k * day, "size": day / 2 + 3600 * k, "procs": 1 + k % 2} for k in range(8)
            ],
        },
    }
    (tmp_path / "week.toml").write_text(to_toml(data))
    assert run_cli("run", tmp_path / "week.toml", "--out", folder, "--quiet") == 0
    import matplotlib.figure

    labels: list[str] = []
    original = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kwargs):
        labels.extend(ax.get_xlabel() for ax in fig.axes if ax.get_xlabel())
        return original(fig, *args, **kwargs)

    matplotlib.figure.Figure.savefig = spy
    try:
        report(folder, gantt=True)
    finally:
        matplotlib.figure.Figure.savefig = original
    time_labels = [x for x in labels if "virtual time" in x]
    assert len(time_labels) >= 2, labels  # report.png and gantt.png
    assert all("(days" in x for x in time_labels), time_labels
    # flow times of half a day to a day: between two round marks (1 h, 1 day), so in days too
    assert "flow time: end - release (days, log scale)" in labels


# --------------------------------------------------------------------------- formats and dpi


def test_each_format_is_written_and_not_empty(quick_run, tmp_path):
    folder = tmp_path / "run"
    import shutil

    shutil.copytree(quick_run, folder)
    for fmt, magic in (("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")):
        assert run_cli("report", folder, "--format", fmt, "--gantt-sites", "0-1") == 0
        for name in ("report", "flow_cdf", "gantt"):
            data = (folder / f"{name}.{fmt}").read_bytes()
            assert len(data) > 1000 and data.startswith(magic), (name, fmt)
    assert b"<svg" in (folder / "report.svg").read_bytes()


def test_the_same_figure_gives_the_same_pdf_and_svg_bytes(quick_run, tmp_path):
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(quick_run, folder)
    for fmt in ("pdf", "svg"):
        assert run_cli("report", folder, "--format", fmt) == 0
        first = (folder / f"flow_cdf.{fmt}").read_bytes()
        assert run_cli("report", folder, "--format", fmt) == 0
        assert (folder / f"flow_cdf.{fmt}").read_bytes() == first, fmt


def test_dpi_sets_the_png_size(quick_run, tmp_path):
    import shutil

    sizes = {}
    for dpi in (60, 180):
        folder = tmp_path / f"d{dpi}"
        shutil.copytree(quick_run, folder)
        assert run_cli("report", folder, "--dpi", dpi, "--gantt-sites", "0") == 0
        sizes[dpi] = {name: png_size(folder / f"{name}.png") for name in ("report", "flow_cdf", "gantt")}
    for name in sizes[60]:
        (w1, h1), (w3, h3) = sizes[60][name], sizes[180][name]
        assert w3 / w1 == pytest.approx(3, rel=0.03) and h3 / h1 == pytest.approx(3, rel=0.03), name


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--format", "jpg"], "invalid choice: 'jpg'"),
        (["--dpi", "0"], "--dpi: must be between 10 and 2400"),
        (["--window", "10"], "--window: '10' is not T0:T1"),
        (["--window", "5:1"], "T0 must be less than T1"),
        (["--window", "a:b"], "is not T0:T1"),
        # With --no-plot a Gantt chart's options drew nothing and said nothing.
        (["--window", "0:10"], "--window draws the Gantt chart, a figure: leave out --no-plot"),
        (["--gantt"], "--gantt draws the Gantt chart, a figure: leave out --no-plot"),
        (["--gantt-sites", "0-3"], "--gantt-sites draws the Gantt chart"),
    ],
)
def test_bad_figure_options_are_one_line_and_exit_2(quick_run, argv, message, capsys):
    try:
        code = run_cli("report", quick_run, "--no-plot", *argv)
    except SystemExit as exc:  # argparse's own check (--format choices)
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_check_format_and_parse_window():
    check_format("svg", 300)
    with pytest.raises(GridemuError, match="--format: 'tiff'"):
        check_format("tiff", 100)
    assert parse_window("10:20") == (10.0, 20.0)
    assert parse_window(":20") == (-np.inf, 20.0)
    assert parse_window("3600:") == (3600.0, np.inf)
    assert parse_window(None) is None


# --------------------------------------------------------------------------- Gantt chart


def test_a_gantt_window_draws_only_its_jobs(quick_run, tmp_path):
    import shutil

    import matplotlib.collections
    import matplotlib.figure

    folder = tmp_path / "run"
    shutil.copytree(quick_run, folder)
    jobs = pd.read_parquet(folder / "jobs.parquet")
    t0, t1 = 10.0, 20.0
    inside = jobs[(jobs["exec_site"] == 0) & (jobs["start"] < t1) & (jobs["end"] > t0)]
    seen = {}
    original = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kwargs):
        ax = fig.axes[0]
        seen["xlim"] = ax.get_xlim()
        seen["boxes"] = sum(
            len(c.get_paths()) for c in ax.collections if isinstance(c, matplotlib.collections.PolyCollection)
        )
        return original(fig, *args, **kwargs)

    matplotlib.figure.Figure.savefig = spy
    try:
        assert run_cli("report", folder, "--no-plot") == 0  # tables alone draw nothing
        assert "boxes" not in seen
        from gridemu.emulator.report import plot_gantt

        sites = pd.read_parquet(folder / "sites.parquet")
        plot_gantt(folder, jobs, sites, "0", axis=TimeAxis(1.0, "time units"), window=(t0, t1))
    finally:
        matplotlib.figure.Figure.savefig = original
    assert seen["xlim"] == (t0, t1)
    assert seen["boxes"] >= len(inside) > 0  # a job on several processor runs is several boxes
    # Its times are the run's unit: the error says which, and when the jobs ran.
    ran = jobs.attrs.get("pieces", jobs)
    lo, hi = float(ran["start"].min()), float(ran["end"].max())
    with pytest.raises(GridemuError, match=r"--window: no job ran between 1e\+09 and 2e\+09 s: jobs ran from ") as info:
        plot_gantt(folder, jobs, sites, "0", unit="s", window=(1e9, 2e9))
    assert str(info.value).endswith(f"{lo:g} to {hi:,.0f}" if hi >= 1000 else f"{lo:g} to {hi:g}")


def test_an_organization_keeps_its_gantt_colour_whatever_the_window(quick_run, tmp_path):
    # The palette once came from the owners of the boxes drawn: a window or a site where only
    # some organizations ran shifted every colour after the first missing one.
    import matplotlib.figure

    from gridemu.emulator.report import plot_gantt

    jobs = pd.read_parquet(quick_run / "jobs.parquet")
    sites = pd.read_parquet(quick_run / "sites.parquet")
    legends = []
    original = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kwargs):
        handles = fig.legends[0].legend_handles if fig.legends else fig.axes[0].get_legend().legend_handles
        legends.append({h.get_label(): tuple(h.get_facecolor()) for h in handles})
        return original(fig, *args, **kwargs)

    # The run's last moments, where only some organizations still run jobs, one of them not
    # the first in name order: the case that shifted colours.
    owners = sorted(jobs["owner"].unique())
    span = float(jobs["end"].max())
    for t0 in sorted(jobs["end"], reverse=True):
        late = sorted(jobs.loc[jobs["end"] > t0, "owner"].unique())
        if any(late.index(o) != owners.index(o) for o in late):
            break
    matplotlib.figure.Figure.savefig = spy
    try:
        plot_gantt(tmp_path, jobs, sites, "all", axis=TimeAxis(1.0, "time units"))
        plot_gantt(tmp_path, jobs, sites, "all", axis=TimeAxis(1.0, "time units"), window=(t0, span))
    finally:
        matplotlib.figure.Figure.savefig = original
    everyone, some = legends
    assert sorted(everyone) == owners and sorted(some) == late and set(late) < set(owners)
    assert all(some[o] == everyone[o] for o in some)


def test_twenty_and_more_organizations_get_colours_far_apart():
    for n in (8, 20, 45):
        colors = org_colors(n)[:, :3]
        assert len(colors) == n
        closest = min(np.linalg.norm(a - b) for a, b in itertools.combinations(colors, 2))
        assert closest > (0.25 if n <= 20 else 0.02), (n, closest)
        # no near-white colour that a white background would swallow
        assert (colors.mean(axis=1) < 0.85).all(), n
    near = org_colors(20)[:2, :3]
    assert np.linalg.norm(near[0] - near[1]) > 0.5  # org0 and org1 are not two blues
    consecutive = org_colors(45)[:, :3]
    assert min(np.linalg.norm(consecutive[i] - consecutive[i + 1]) for i in range(44)) > 0.25


# --------------------------------------------------------------------------- report.png panels


def test_a_log_axis_of_durations_is_marked_in_round_lengths_of_time():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gridemu.emulator.figures import mark_durations

    fig, ax = plt.subplots()
    ax.set_xscale("log")
    days = time_axis(8 * 86400.0, "s")
    assert mark_durations(ax, days, "s", 1e-5, 2.0)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["1 s", "10 s", "1 min", "10 min", "1 h", "1 day"]
    assert ax.get_xticks()[-1] == pytest.approx(1.0) and ax.get_xticks()[4] == pytest.approx(1 / 24)
    assert not mark_durations(ax, TimeAxis(1.0, "time units"), "time units", 1e-3, 1e3)
    assert not mark_durations(ax, days, "s", 0.5, 0.9)  # no two marks within
    plt.close(fig)


def test_constant_panels_are_left_out_and_named():
    waiting = {"a": np.zeros(5), "b": np.zeros(5)}
    levels = pd.DataFrame({"site": [0, 1, 0, 1], "period": [0, 0, 1, 1], "level": [1000.0] * 4})
    draw, dropped = run_panels(waiting, None, levels, "declared level l_k")
    assert draw == ["util"]
    assert dropped == ["jobs waiting (always 0)", "declared level l_k (the same, 1000, for every site in every period)"]
    levels.loc[3, "level"] = 5.0
    waiting["b"][2] = 1.0
    backlog = pd.DataFrame({0: [1.0, 2.0], 1: [0.0, 3.0]}, index=[10.0, 20.0])
    assert run_panels(waiting, backlog, levels, "l_k") == (["util", "waiting", "backlog", "level"], [])


@pytest.mark.parametrize("sites, title", [(10, None), (20, "sites 0-11 of 20")])
def test_the_strategy_panel_gives_each_site_drawn_its_own_colour_and_says_how_many(sites, title):
    # matplotlib's cycle of ten colours gave sites 1 and 11 the same blue, and past 12 sites
    # the panel drew the first 12 without saying so.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gridemu.emulator.report import _plot_levels

    ts = pd.DataFrame(
        [{"site": k, "period": p, "level": 10.0 + k + p} for k in range(sites) for p in range(3)],
    )
    fig, ax = plt.subplots()
    try:
        assert _plot_levels(ax, ts, "bilb") == title
        colours = {line.get_label(): matplotlib.colors.to_hex(line.get_color()) for line in ax.get_lines()}
    finally:
        plt.close(fig)
    assert len(colours) == min(sites, 12)
    assert len(set(colours.values())) == len(colours), colours
    assert colours["site 0"] == "#000000" and colours["site 1"] == "#1f77b4"  # as before: black, then tab10


def flow_cdf_lines(folder: Path, jobs: pd.DataFrame, summary: dict) -> dict:
    """What plot_flow_cdf draws: its legend's labels, each line's marker and style."""
    import matplotlib.figure

    from gridemu.emulator.report import plot_flow_cdf

    seen = {}
    original = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kwargs):
        ax = fig.axes[0]
        seen["labels"] = [t.get_text() for t in ax.get_legend().get_texts()]
        seen["legend_title"] = ax.get_legend().get_title().get_text()
        seen["markers"] = {line.get_label().split()[0]: line.get_marker() for line in ax.get_lines()}
        seen["styles"] = {line.get_label().split()[0]: line.get_linestyle() for line in ax.get_lines()}
        seen["title"] = ax.get_title()
        return original(fig, *args, **kwargs)

    matplotlib.figure.Figure.savefig = spy
    try:
        plot_flow_cdf(folder, jobs, summary)
    finally:
        matplotlib.figure.Figure.savefig = original
    return seen


def few_jobs() -> pd.DataFrame:
    rows = []
    for org, n in (("org10", 30), ("org2", 3), ("org1", 12)):
        rows += [{"owner": org, "release": float(i), "end": float(2 * i + 1), "state": "done"} for i in range(n)]
    return pd.DataFrame(rows)


def test_flow_cdf_legend_is_sorted_and_few_points_are_dots(tmp_path):
    summary = {"global": {"protocol": "local", "sites": 3, "seed": 1, "time_unit": "s"}}
    seen = flow_cdf_lines(tmp_path, few_jobs(), summary)
    assert seen["labels"] == ["org1 (12 jobs)", "org2 (3 jobs)", "org10 (30 jobs)"]
    assert seen["markers"]["org2"] == "o" and seen["styles"]["org2"] == "None"  # 3 points: dots
    assert seen["styles"]["org10"] == "-"


def test_flow_cdf_says_how_many_released_jobs_never_finished(tmp_path):
    # A curve reaches 1 of the finished jobs: org0's 126 of 446 read as all of them (a study).
    jobs = few_jobs()
    jobs.loc[(jobs["owner"] == "org10") & (jobs["release"] >= 20), ["state", "end"]] = ["queued", float("nan")]
    jobs.loc[len(jobs)] = {"owner": "org1", "release": 99.0, "end": float("nan"), "state": "pending"}  # not released
    summary = {"global": {"protocol": "local", "sites": 3, "seed": 1, "time_unit": "s"}}
    seen = flow_cdf_lines(tmp_path, jobs, summary)
    assert seen["labels"] == ["org1 (12 jobs)", "org2 (3 jobs)", "org10 (20 jobs of 30 released)"]


def test_a_runs_curves_start_at_its_first_release():
    # A trace read without a window keeps its times: KTH-SP2 starts at 599,850 s, and a week
    # of nothing began every panel and diluted the whole run's utilization (0.59 for 0.82).
    from gridemu.emulator.report import curves

    jobs = pd.DataFrame(
        {
            "owner": ["org0"] * 2,
            "exec_site": [0, 0],
            "procs": [1, 1],
            "release": [1000.0, 1000.0],
            "start": [1000.0, 1050.0],
            "end": [1050.0, 1100.0],
        }
    )
    sites = pd.DataFrame({"site_id": [0], "owner": ["org0"], "procs": [1]})
    t, util, waiting = curves(jobs, sites, bins=10, per_bin=4)
    assert t[0] == pytest.approx(1005.0) and t[-1] == pytest.approx(1095.0)
    assert util["org0"] == pytest.approx(np.ones(10))  # busy from the first release to the end
    assert waiting["org0"][:5] == pytest.approx(np.ones(5)) and waiting["org0"][5:] == pytest.approx(np.zeros(5))


def test_the_utilization_title_says_what_its_mean_covers(quick_run, tmp_path, monkeypatch):
    # A run whose first job comes a moment after 0 read "from the first release on": the bins
    # start at 0, but their first centre less half a bin came out 1e-16 above it.
    from gridemu.emulator import report as report_module

    titles = []
    monkeypatch.setattr(report_module, "save_figure", lambda fig, *a, **k: titles.append(fig.axes[0].get_title()))
    jobs, sites, ts, summary, outages = report_module.load_run(quick_run)
    assert 0 < jobs["release"].min() < 0.01 * jobs["end"].max()
    report_module.plot_run(tmp_path, jobs, sites, ts, summary)
    later = jobs.assign(release=jobs["release"] + 1e6, start=jobs["start"] + 1e6, end=jobs["end"] + 1e6)
    report_module.plot_run(tmp_path, later, sites, None, summary)  # a trace's own times
    assert "(whole grid, whole run: " in titles[0] and "(whole grid, from the first release on: " in titles[1]


def test_a_figures_title_names_the_protocol_keys_set_away_from_their_defaults(tmp_path):
    # Runs of d = 2 and d = 3 had the same titles.
    import gridemu.emulator as emulator
    from gridemu.emulator.report import load_run

    overrides = {"workload.jobs": 300, "protocol.period": 5.0, "metrics.counterfactual": "none"}
    emulator.run("quickstart", backend="inprocess", overrides=overrides, out=tmp_path / "r")
    assert load_run(tmp_path / "r")[3]["global"]["protocol_keys"] == "period = 5"
    emulator.run("quickstart", backend="inprocess", overrides={"workload.jobs": 300}, out=tmp_path / "q")
    # quickstart's own, not the default 100
    assert load_run(tmp_path / "q")[3]["global"]["protocol_keys"] == "period = 50"
    g = {"protocol": "averaging", "sites": 8, "jobs": 300, "seed": 1, "protocol_keys": "period = 5"}
    assert run_title(g) == "averaging protocol (period = 5), 8 sites, 300 jobs, seed 1"


def test_a_figures_title_says_how_many_jobs_finished_where_not_all_did():
    # A horizon cut at t = 300 finished 1,667 of quickstart's 20,000: "20,000 jobs" alone
    # read as a run of all of them.
    g = {"protocol": "averaging", "sites": 8, "jobs": 20000, "seed": 1}
    cut = {**g, "jobs_by_state": {"pending": 18279, "done": 1667, "queued": 34, "running": 20}}
    assert run_title(cut) == "averaging protocol, 8 sites, 20,000 jobs (1,667 finished), seed 1"
    assert run_title({**g, "jobs_by_state": {"done": 20000}}) == "averaging protocol, 8 sites, 20,000 jobs, seed 1"
    assert run_title({**g, "sites": 1, "jobs": 1}) == "averaging protocol, 1 site, 1 job, seed 1"


def test_flow_cdf_of_a_run_with_a_warmup_cut_draws_the_jobs_its_figures_count(tmp_path):
    summary = {"global": {"protocol": "local", "sites": 3, "seed": 1, "time_unit": "s", "warmup": 10.0}}
    seen = flow_cdf_lines(tmp_path, few_jobs(), summary)
    assert seen["labels"] == ["org1 (2 jobs)", "org10 (20 jobs)"]  # org2's jobs all came before t=10
    assert "released from t=10 s on" in seen["title"]


def test_flow_cdf_of_many_organizations_says_which_it_draws(tmp_path):
    # Past MAX_LINES organizations, the grid's distribution and the three of highest mean
    # flow time: the legend said only their names, not why those three.
    rows = [
        {"owner": f"org{k}", "release": 0.0, "end": float(k + 1 + i), "state": "done"}
        for k in range(14)
        for i in range(12)
    ]
    summary = {"global": {"protocol": "local", "sites": 14, "seed": 1, "time_unit": "s"}}
    seen = flow_cdf_lines(tmp_path, pd.DataFrame(rows), summary)
    assert seen["labels"] == ["all organizations (168 jobs)", "org13 (12 jobs)", "org12 (12 jobs)", "org11 (12 jobs)"]
    assert seen["legend_title"] == "of 14 organizations: all, and\nthe 3 of highest mean flow time"
    few = flow_cdf_lines(tmp_path, few_jobs(), {"global": {**summary["global"], "sites": 3}})
    assert few["legend_title"] == ""  # each organization drawn: nothing to explain


# --------------------------------------------------------------------------- fairshare policy table


def test_the_fairshare_policy_table_is_printed_and_written(fairshare_run, capsys):
    table = pd.read_csv(fairshare_run / "policy.csv")
    assert list(table.columns) == [
        "entry",
        "target_percent",
        "final_share_percent",
        "final_deviation_points",
        "mean_abs_deviation_points",
        "settled_from",
    ]
    assert run_cli("report", fairshare_run, "--no-plot") == 0
    out = capsys.readouterr().out
    assert "share policy: target against final share (policy.csv)" in out
    assert "VO-A/P-A1" in out and "settled from (s)" in out and "final - target (points)" in out


def test_the_policy_tables_final_shares_are_the_job_tables(fairshare_run):
    """Each VO's final share: its jobs' processor-time up to the last sample, over all jobs'."""
    import json

    table = pd.read_csv(fairshare_run / "policy.csv").set_index("entry")
    jobs = pd.read_parquet(fairshare_run / "jobs.parquet")
    horizon = json.loads((fairshare_run / "summary.json").read_text())
    end = min(3600.0, float(np.nanmax(jobs[["start", "end"]].to_numpy())))
    ran = jobs[jobs["start"].notna()]
    stop = ran["end"].fillna(np.inf).clip(upper=end)
    used = ((stop - ran["start"]).clip(lower=0) * ran["procs"]).groupby(ran["group"].astype(str).str.split("/").str[0])
    share = 100 * used.sum() / used.sum().sum()
    assert horizon["global"]["time_unit"] == "s"
    for vo in ("VO-A", "VO-B"):
        assert table.loc[vo, "final_share_percent"] == pytest.approx(share[vo], abs=1e-9)
        assert table.loc[vo, "final_deviation_points"] == pytest.approx(share[vo] - table.loc[vo, "target_percent"])
    # settled from: within ±2 points of the target at every sample from then on, not just before
    ts = pd.read_parquet(fairshare_run / "timeseries.parquet")
    for entry, row in table.iterrows():
        part = ts[ts["entry"] == entry]
        off = (100 * (part["share"] - part["target"])).abs() > 2
        if np.isnan(row["settled_from"]):
            assert off.iloc[-1]
            continue
        later = part["time"] >= row["settled_from"]
        assert not off[later].any()
        earlier = off[~later]
        assert not len(earlier) or earlier.iloc[-1]


def test_other_protocols_write_no_policy_table(quick_run):
    assert not (quick_run / "policy.csv").exists()


# --------------------------------------------------------------------------- progress off a terminal


def test_off_a_terminal_a_progress_line_comes_every_few_seconds(capsys):
    bar = _ProgressBar(delay=2.0, every=5.0, terminal=False)
    for wall in (0.5, 1.9, 2.0, 3.0, 6.9, 7.0, 7.5, 12.5):
        bar(Progress(virtual_time=8 * wall, end_time=100.0, jobs_done=int(wall), jobs_total=12, events=100, wall=wall))
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "gridemu: t=16.0 of 100.0 (16 %), 2 / 12 jobs done, 50 events/s, 2 s",
        "gridemu: t=56.0 of 100.0 (56 %), 7 / 12 jobs done, 14 events/s, 7 s",
        "gridemu: t=100.0 of 100.0 (100 %), 12 / 12 jobs done, 8 events/s, 12 s",
    ]


def test_long_phases_without_windows_are_said_once(capsys, monkeypatch):
    # A million sites spent 30 s before the first window and over a minute after the last,
    # silent (scale audit, 2026-11-27).
    import gridemu.emulator.cli as cli

    clock = [100.0]
    monkeypatch.setattr(cli.time, "perf_counter", lambda: clock[0])
    big, small = _ProgressBar(terminal=False, sites=60_000), _ProgressBar(terminal=False, sites=10)
    for name in ("start", "fetch"):
        big.phase(name)
        small.phase(name)  # a small run's phases go unsaid for its first seconds
    clock[0] += 12.0
    for name in ("tables", "counterfactual", "start", "write"):  # "start" again: the counterfactual's own
        big.phase(name)
        small.phase(name)
    assert capsys.readouterr().err.splitlines() == [
        "gridemu: drawing the workload and building 60,000 sites",
        "gridemu: gathering the shards' results (0 s so far)",
        "gridemu: building the result tables (12 s so far)",
        "gridemu: building the result tables (12 s so far)",
        "gridemu: running each organization alone (metrics.counterfactual) (12 s so far)",
        "gridemu: running each organization alone (metrics.counterfactual) (12 s so far)",
        "gridemu: writing the result files (12 s so far)",
        "gridemu: writing the result files (12 s so far)",
    ]


def test_progress_line_of_a_run_without_a_known_end():
    p = Progress(virtual_time=5.0, end_time=float("inf"), jobs_done=1, jobs_total=2, events=10, wall=2.0)
    assert progress_line(p) == "gridemu: t=5.0 of inf, 1 / 2 jobs done, 5 events/s, 2 s"


def test_progress_line_past_the_last_release_gives_no_share_over_100_percent():
    p = Progress(virtual_time=20.5, end_time=1.0, jobs_done=74_862, jobs_total=74_903, events=10, wall=2.0)
    assert progress_line(p) == (
        "gridemu: t=20.5 past the last release at 1.0, 74,862 / 74,903 jobs done, 5 events/s, 2 s"
    )


def test_quiet_prints_neither_progress_nor_tables(tmp_path, capsys, monkeypatch):
    import gridemu.emulator.cli as cli

    made = []
    monkeypatch.setattr(cli, "_ProgressBar", lambda *a, **k: made.append(1) or _ProgressBar(terminal=False))
    assert run_cli("run", "quickstart", "--out", tmp_path / "q", *QUICK) == 0
    captured = capsys.readouterr()
    assert made == [] and captured.out == "" and "gridemu: t=" not in captured.err
    assert run_cli("run", "quickstart", "--out", tmp_path / "l", *QUICK[:-1]) == 0
    assert made == [1] and "organizations" in capsys.readouterr().out


def test_the_results_scripts_take_format_and_dpi(capsys):
    # docs/results' table scripts draw their figures through save_figure, with report's two options.
    from gridemu.experiments.decentralization_tables import table_args

    args = table_args(["runs/x", "--format", "pdf", "--dpi", "300"], None)
    assert (args.root, args.format, args.dpi, args.write) == ("runs/x", "pdf", 300.0, False)
    assert table_args(["runs/x", "--write"], None).format == "png"
    with pytest.raises(SystemExit) as refused:
        table_args(["runs/x", "--format", "jpg"], None)
    assert refused.value.code == 2 and "--format: invalid choice: 'jpg'" in capsys.readouterr().err


def test_report_curves_are_each_organizations_step_functions_sampled_and_averaged():
    # curves() builds every organization's row at once (one pass over the jobs per
    # organization took 223 s at 10,000 of them): checked against sampling by hand.
    from gridemu.emulator.report import curves

    sites = pd.DataFrame({"site_id": [0, 1, 2], "owner": ["a", "b", "a"], "procs": [2, 1, 1]})
    jobs = pd.DataFrame(
        {
            "owner": ["a", "a", "b", "b", "a"],
            "exec_site": [0, 1, 1, 2, -1],  # a's second job ran at b's site, b's second at a's; the last never ran
            "release": [0.0, 1.0, 0.5, 2.0, 3.0],
            "start": [0.5, 1.5, 2.0, 4.0, np.nan],
            "end": [3.0, 2.5, 4.0, 8.0, np.nan],
            "procs": [2, 1, 1, 1, 1],
        }
    )
    bins, per_bin = 8, 5
    t, util, waiting = curves(jobs, sites, bins=bins, per_bin=per_bin)
    samples = np.linspace(0.0, 8.0, bins * per_bin, endpoint=False) + 8.0 / (2 * bins * per_bin)
    assert list(util) == ["a", "b"] and np.allclose(t, np.arange(bins) + 0.5)
    org_of_site, procs = {0: "a", 1: "b", 2: "a"}, {"a": 3, "b": 1}
    for org in ("a", "b"):
        ran = [j for j in jobs.itertuples() if org_of_site.get(j.exec_site) == org]
        busy = [sum(j.procs for j in ran if j.start <= s) - sum(j.procs for j in ran if j.end <= s) for s in samples]
        own = [j for j in jobs.itertuples() if j.owner == org]
        wait = [
            sum(j.release <= s for j in own) - sum(j.start <= s for j in own if j.start == j.start) for s in samples
        ]
        assert np.allclose(util[org], np.reshape(busy, (bins, per_bin)).mean(axis=1) / procs[org])
        assert np.allclose(waiting[org], np.reshape(wait, (bins, per_bin)).mean(axis=1))
    assert util["b"].max() > 0 and waiting["a"][-1] == 1.0  # a's last job waits to the end
