"""``gridemu report DIR``: summary tables and figures of a finished run, or the table of a sweep.

Every figure is written as ``--format`` png (default), pdf or svg at ``--dpi``, and shows
virtual time in one unit for the whole run, chosen from its span (seconds, hours or days
where ``run.time_unit`` is a unit of time: ``emulator/figures.py``).

``DIR/report.<fmt>`` shows, over virtual time, each organization's utilization of its
processors (a heatmap; from ``fragments.parquet`` where jobs were split) and the number of
each one's jobs waiting (released, not started), from ``jobs.parquet``; when the protocol
recorded a time series with a ``load`` column (averaging load balancing), a panel shows each
site's reported backlog, and with a ``level`` column (averaging game: p_k; BILB: l_k) a panel
shows each organization's strategy against the period (thesis Figs. 4.3-4.5). A panel that
would be one flat line is left out and named under the figure. ``DIR/flow_cdf.<fmt>``: each
organization's flow-time distribution; ``DIR/shares.<fmt>``: a share policy's entries over time.

With ``--gantt``, ``DIR/gantt.<fmt>`` draws every job as a box of processors over time, one
panel per site, colored by owner (:func:`plot_gantt`; for rigid-job schedules, thesis ch. 5);
``--window T0:T1`` draws that time range only.

A protocol's result tables (``Report.tables``: fairshare's policy table) are printed after
the run's. ``--warmup T`` counts a run's job figures again over the jobs released from T on
(:func:`load_run`; a sweep, which keeps no job table, is refused).

For a sweep folder (``runs.parquet``), ``emulator/sweep_report.py`` gives every headline
figure's mean and 95 % interval per setting, with figures; for the thesis ch. 4 protocols it
also prints the scores per setting the way thesis Tables 4.2-4.5 aggregate them and writes
``DIR/scores.csv`` (see :func:`sweep_scores`).
"""

from __future__ import annotations

import math
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gridemu.brokers import registry
from gridemu.emulator.figures import (
    DEFAULT_DPI,
    MORE_TEN,
    TimeAxis,
    check_canvas,
    duration_text,
    mark_durations,
    org_colors,
    run_span,
    save_figure,
    time_axis,
)
from gridemu.emulator.results import load, with_warmup
from gridemu.model.checks import parse_int
from gridemu.model.errors import GridemuError, ScenarioError, first_few
from gridemu.sites.results import interval_runs

MAX_LINES = 12


def print_summary(summary: dict[str, Any]) -> None:
    from rich.table import Table

    from gridemu.emulator.console import stdout_console

    console = stdout_console()
    orgs = summary["organizations"]
    with_score = any("score" in v for v in orgs.values())
    unit = summary["global"].get("time_unit", "time units")
    table = Table(title=f"organizations (times in {unit})")
    for col in [
        "organization",
        "jobs",
        "done",
        "mean flow",
        "mean wait",
        "bounded slowdown",
        "makespan",
        "migrated",
    ] + (["score S_k"] if with_score else []):
        table.add_column(col, justify="right" if col != "organization" else "left")
    rows = list(orgs.items())
    shown = rows if len(rows) <= 40 else rows[:20] + rows[-20:]
    for name, v in shown:
        cells = [
            name,
            f"{v['jobs']:,}",
            f"{v['jobs_done']:,}",
            _fmt(v["mean_flow_time"]),
            _fmt(v.get("mean_wait_time")),
            _fmt(v.get("mean_bounded_slowdown")),
            _fmt(v["makespan"]),
            f"{v['jobs_migrated']:,}",
        ]
        if with_score:
            cells.append(_fmt(v.get("score"), 3))
        table.add_row(*cells)
    notes = []
    if with_score:
        notes.append(
            "S_k (thesis §4.5.2): F the organization's flow times summed, F~ the same jobs alone; "
            "F~/F − 1 > 0 when cooperation made them finish sooner, −(F/F~ − 1) < 0 when later, 0: no change"
        )
    if len(rows) > len(shown):
        notes.append(f"{len(rows) - len(shown)} organizations not shown; all are in summary.json")
    if notes:
        table.caption = "\n".join(notes)
    console.print(table)
    g = summary["global"]
    gt = Table(title="run")
    gt.add_column("figure")
    gt.add_column("value", justify="right")
    for key in (
        "protocol",
        "backend",
        "shards",
        "sites",
        "jobs",
        "time_unit",
        "makespan",
        "mean_flow_time",
        "mean_wait_time",
        "mean_bounded_slowdown",
        "events",
        "messages_total",
        "windows",
        "wall_seconds",
        "events_per_second",
    ):
        value = g.get(key)
        # Counts with thousands separators, as the rows below and the organizations' table give them.
        gt.add_row(key, f"{value:,}" if type(value) is int else _fmt(value))
    _tail_rows(gt, g)
    gt.add_row("jobs by state", ", ".join(f"{k} {v:,}" for k, v in g["jobs_by_state"].items()))
    if "warm_start_jobs" in g:
        gt.add_row("warm start (FCFS backlog at t_start)", f"{g['warm_start_jobs']:,} of the jobs")
    if g.get("messages"):
        gt.add_row("messages by type", ", ".join(f"{k} {v:,}" for k, v in g["messages"].items()))
    if "faults" in g:
        f = g["faults"]
        gt.add_row(
            "faults",
            f"{f['crashes']:,} crashes, {f['jobs_killed']:,} jobs requeued, {f['jobs_lost']:,} lost, "
            f"{f['messages_lost']:,} messages lost, {f['messages_late']:,} late",
        )
    console.print(gt)
    proto = summary.get("protocol")
    if proto:
        title = f"{proto['name']} (summary.json: protocol)"
        pt = Table(title=title, min_width=min(len(title), 120))  # a narrow table's title would wrap word by word
        pt.add_column("figure")
        pt.add_column("value", justify="right")
        for key, value in proto.items():
            if key != "name" and not isinstance(value, (list, dict)):
                pt.add_row(key, _fmt(value, 3))
        console.print(pt)
    print_result_tables(console, summary)


def print_result_tables(console: Any, summary: dict[str, Any]) -> None:
    """The protocol's tables of the run's main result (``Report.tables``), as its CSV files hold them."""
    from rich.table import Table

    for result in registry.report_of(summary["global"]["protocol"]).result_tables(summary):
        title = f"{result.title} ({result.name}.csv)"
        rt = Table(title=title, caption=result.caption or None, min_width=min(len(title), 120))
        for i, col in enumerate(result.frame.columns):
            header = result.headers.get(col, str(col).replace("_", " "))
            rt.add_column(header, justify="left" if i == 0 else "right")
        for row in result.frame.itertuples(index=False):
            rt.add_row(*(_fmt(None if _missing(v) else v) for v in row))
        console.print(rt)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _tail_rows(table: Any, g: dict[str, Any]) -> None:
    """The run table's rows of tail percentiles and of the warm-up cut."""
    for figure in ("flow_time", "wait_time", "bounded_slowdown"):
        if g.get(f"{figure}_p50") is not None:  # summaries written before the tails were kept have none
            tail = ", ".join(_fmt(g[f"{figure}_{q}"]) for q in ("p50", "p95", "p99", "max"))
            table.add_row(f"{figure} p50, p95, p99, max", tail)
    if g.get("warmup"):
        none = " (no job is released before it: nothing is left out)" if g["jobs_measured"] == g["jobs"] else ""
        table.add_row(
            "warm-up cut", f"jobs released before {g['warmup']:g} left out: {g['jobs_measured']:,} measured{none}"
        )


def _setting(value: Any) -> str:
    """A swept value as the user wrote it (rows of mixed tables come back as floats)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value + 0.0 if round(value, digits) else 0.0:,.{digits}f}"  # never "-0.000"
    return str(value)


def load_run(
    run_dir: Path, warmup: float | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None, dict[str, Any], pd.DataFrame | None]:
    """The tables the report draws: jobs (with ``attrs["pieces"]`` where jobs were split:
    what each site ran is in the pieces, waiting is per job), sites, timeseries or None,
    summary (with ``protocol_keys`` in its global section for the titles: :func:`_set_keys`),
    and the crashes (outages.parquet) or None;
    with ``warmup``, the summary's job figures over the jobs released from it on
    (:func:`with_warmup`, the run's own metric code)."""
    result = load(run_dir)
    jobs = result.jobs
    if len(result.pieces) != len(jobs):
        jobs.attrs["pieces"] = result.pieces
    summary = result.summary
    if warmup is not None:
        if "metrics" not in result.scenario:
            raise GridemuError(f"report --warmup: {run_dir / 'scenario.toml'} is missing (its metrics.slowdown_bound)")
        if any("score" in v for v in summary["organizations"].values()):
            print(
                "gridemu: note: report --warmup: S_k left out: it needs the counterfactual run, which the folder "
                f"does not keep (gridemu run ... --warmup {warmup:g} counts it)",
                file=sys.stderr,
            )
        summary = with_warmup(summary, jobs, result.scenario["metrics"], warmup)
    keys = _set_keys(result.scenario.get("protocol", {}), summary["global"]["protocol"])
    if keys:  # the figures' titles name the protocol's settings (runs of another d look alike)
        summary = {**summary, "global": {**summary["global"], "protocol_keys": keys}}
    timeseries = result.timeseries if len(result.timeseries) else None
    return jobs, result.sites, timeseries, summary, result.outages if "down" in result.outages else None


def curves(
    jobs: pd.DataFrame, sites: pd.DataFrame, bins: int = 200, per_bin: int = 20
) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Utilization and waiting-job count per organization, averaged over ``bins`` time bins.

    Both are sampled ``per_bin`` times in each bin and averaged, so a plot shows the
    level rather than every start and end. All organizations at once (a pass over the jobs
    per organization took 223 s at 10,000 of them): rows of one array, by organization.
    """
    edges, t = _sample_times(jobs, bins, per_bin)
    procs_by_org, row_of_org, row_of_site = _org_rows(sites)
    orgs = procs_by_org.index
    ran = jobs.attrs.get("pieces", jobs)
    ran_row = ran["exec_site"].map(row_of_site).to_numpy(dtype=float)
    q = ran["procs"].to_numpy(dtype=float)
    busy = _binned_steps(
        len(orgs), t, per_bin, [(ran_row, ran["start"].to_numpy(float), q), (ran_row, ran["end"].to_numpy(float), -q)]
    )
    own_row = jobs["owner"].map(row_of_org).to_numpy(dtype=float)
    one = np.ones(len(jobs))
    waiting = _binned_steps(
        len(orgs),
        t,
        per_bin,
        [(own_row, jobs["release"].to_numpy(float), one), (own_row, jobs["start"].to_numpy(float), -one)],
    )
    util = busy / procs_by_org.to_numpy(dtype=float)[:, None]
    return (
        (edges[:-1] + edges[1:]) / 2,
        {org: util[i] for i, org in enumerate(orgs)},
        {org: waiting[i] for i, org in enumerate(orgs)},
    )


def _org_rows(sites: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Each organization's processors (in the order of the figures' rows), its row by name,
    and each site's row by site id."""
    procs_by_org = sites.groupby("owner")["procs"].sum()
    row_of_org = pd.Series(np.arange(len(procs_by_org)), index=procs_by_org.index)
    row_of_site = pd.Series(sites["owner"].map(row_of_org).to_numpy(), index=sites["site_id"].to_numpy())
    return procs_by_org, row_of_org, row_of_site


def _bins_span(jobs: pd.DataFrame) -> tuple[float, float]:
    """Where the report's bins start and end: from the first release (0 where it comes in the
    run's first hundredth) to the run's last end (or release). A trace read without a window
    keeps its own times (KTH-SP2's first job comes at 599,850 s): a week of nothing at the
    start of every panel, and in the whole run's utilization, said nothing about the run."""
    end = float(np.nanmax(jobs["end"].to_numpy())) if jobs["end"].notna().any() else float(jobs["release"].max())
    start = max(0.0, float(jobs["release"].min())) if len(jobs) else 0.0
    return (start if start > 0.01 * end else 0.0), end  # a first job a moment after 0 starts the run at 0


def _sample_times(jobs: pd.DataFrame, bins: int, per_bin: int) -> tuple[np.ndarray, np.ndarray]:
    """The bins' edges over :func:`_bins_span` and ``per_bin`` sample times in each."""
    start, end = _bins_span(jobs)
    edges = np.linspace(start, max(end, start + 1e-9), bins + 1)
    width = (edges[-1] - start) / (bins * per_bin)
    return edges, start + np.arange(bins * per_bin) * width + width / 2


def down_shares(
    jobs: pd.DataFrame, sites: pd.DataFrame, outages: pd.DataFrame, bins: int = 200, per_bin: int = 20
) -> np.ndarray:
    """The share of each organization's processors down (crashed sites, outages.parquet) in
    the bins of :func:`curves`, rows in its order of organizations."""
    _, t = _sample_times(jobs, bins, per_bin)
    procs_by_org, _, row_of_site = _org_rows(sites)
    row = outages["site_id"].map(row_of_site).to_numpy(dtype=float)
    q = outages["site_id"].map(pd.Series(sites["procs"].to_numpy(), index=sites["site_id"])).to_numpy(dtype=float)
    down = _binned_steps(
        len(procs_by_org),
        t,
        per_bin,
        [(row, outages["down"].to_numpy(float), q), (row, outages["up"].to_numpy(float), -q)],
    )
    return down / procs_by_org.to_numpy(dtype=float)[:, None]


def _binned_steps(
    n_rows: int, t: np.ndarray, per_bin: int, steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> np.ndarray:
    """Rows of step functions (each a sum of ``weight`` from ``time`` on, in its ``row``: the
    (row, time, weight) arrays of ``steps``; a NaN row or time counts nowhere) sampled at
    ``t`` and averaged over each run of ``per_bin`` samples: (n_rows, len(t) // per_bin).
    A step at sample i (the first with t >= time) counts in full from the next bin on and
    for the samples from i in its own bin."""
    bins = len(t) // per_bin
    delta = np.zeros(n_rows * (bins + 1))
    for row, time, weight in steps:
        keep = ~(np.isnan(row) | np.isnan(time))
        i = np.searchsorted(t, time[keep], side="left")
        inside = i < len(t)
        i, r, w = i[inside], row[keep][inside].astype(np.int64), weight[keep][inside]
        k = i // per_bin
        part = (per_bin - i % per_bin) / per_bin
        flat = r * (bins + 1) + k
        delta += np.bincount(flat, weights=w * part, minlength=len(delta))
        delta += np.bincount(flat + 1, weights=w * (1.0 - part), minlength=len(delta))
    return np.cumsum(delta.reshape(n_rows, bins + 1), axis=1)[:, :bins]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _constant(values: np.ndarray) -> bool:
    """Whether a panel would draw one flat line: every finite value the same (or none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return not len(v) or bool(np.ptp(v) == 0)


def plot_run(
    run_dir: Path,
    jobs: pd.DataFrame,
    sites: pd.DataFrame,
    ts: pd.DataFrame | None,
    summary: dict[str, Any],
    axis: TimeAxis | None = None,
    fmt: str = "png",
    dpi: float = DEFAULT_DPI,
    outages: pd.DataFrame | None = None,
) -> Path:
    """``DIR/report.<fmt>``: utilization per organization over time (a heatmap, ``outages``'
    processors down marked on it), jobs waiting, the sites' backlog at balanced rounds and the
    strategies per period, where they were recorded; a panel that would be a flat line is left
    out and named under the figure."""
    plt = _pyplot()
    g = summary["global"]
    axis = axis or time_axis(run_span(jobs), g.get("time_unit", "time units"))
    t, util, waiting = curves(jobs, sites)
    down = down_shares(jobs, sites, outages) if outages is not None and len(outages) else None
    backlog = None
    if ts is not None and "load" in ts.columns:
        # Sites report at the same round times: the band over sites at each balanced round.
        backlog = ts.assign(backlog=ts["load"] - ts["time"]).pivot_table(index="time", columns="site", values="backlog")
    draw, dropped = run_panels(waiting, backlog, ts, registry.report_of(g["protocol"]).level_label)
    heights = {"util": 2.2 + 0.04 * min(len(util), 40), "waiting": 2.2, "backlog": 2.2, "level": 2.2}
    fig, axes = plt.subplots(
        len(draw),
        1,
        figsize=(10, sum(heights[d] for d in draw) + 1.0),
        gridspec_kw={"height_ratios": [heights[d] for d in draw]},
        squeeze=False,
        layout="constrained",
    )
    axes = dict(zip(draw, axes[:, 0]))
    width_text = duration_text(float(t[1] - t[0]) if len(t) > 1 else 0.0, g.get("time_unit", "time units"))
    since = "from the first release on" if _bins_span(jobs)[0] > 0 else "whole run"
    _heatmap(axes["util"], axis(t), util, sites, width_text, down, since)
    if "waiting" in axes:
        # Per organization, lines overlap into a tangle past two or three: the organizations'
        # mean, the band from the lowest to the highest, and the one that stands out most.
        orgs = list(waiting)
        _band(axes["waiting"], axis(t), waiting, "organization", top=max(orgs, key=lambda o: float(np.sum(waiting[o]))))
        axes["waiting"].set_ylabel(f"jobs waiting\n(means over {width_text})")
    if "backlog" in axes:
        series = {f"site {c}": axis(backlog[c].to_numpy()) for c in backlog.columns}
        top = max(series, key=lambda k: float(np.nansum(series[k])))
        _band(axes["backlog"], axis(backlog.index.to_numpy()), series, "site", top=top, points=len(backlog) < 60)
        axes["backlog"].set_ylabel(f"backlog L_k - t ({axis.label})\nat balanced rounds")
    timed = [axes[d] for d in draw if d != "level"]
    for ax in timed[1:]:
        ax.sharex(timed[0])
    for ax in timed[:-1]:
        ax.tick_params(labelbottom=False)
    timed[-1].set_xlabel(f"virtual time ({axis.label})")
    level_title = _plot_levels(axes["level"], ts, g["protocol"]) if "level" in axes else None
    # After every panel is drawn: the strategy panel's lines did not exist yet, so it got an
    # empty legend and matplotlib's "No artists with labels" warning on every report.
    for name, ax in axes.items():
        if name != "util" and ax.get_legend_handles_labels()[0]:
            title = level_title if name == "level" else None
            ax.legend(
                fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, title=title, title_fontsize=7
            )
    fig.suptitle(run_title(g))
    if dropped:
        fig.text(0.01, 0.0, "not drawn, constant: " + "; ".join(dropped), fontsize=7, va="top", color="0.3")
    return save_figure(fig, run_dir / "report.png", fmt, dpi, tight=True)


def run_panels(
    waiting: dict[str, np.ndarray], backlog: pd.DataFrame | None, ts: pd.DataFrame | None, level_label: str
) -> tuple[list[str], list[str]]:
    """The panels of ``report.png`` (util, waiting, backlog, level: those with something to
    show) and, for each left out because it would be one flat line, what it would have shown."""
    draw, dropped = ["util"], []
    if _constant(np.concatenate(list(waiting.values()))):
        dropped.append(f"jobs waiting (always {float(next(iter(waiting.values()))[0]):g})")
    else:
        draw.append("waiting")
    if backlog is not None:
        if _constant(backlog.to_numpy()):
            dropped.append("backlog L_k - t (the same at every round)")
        else:
            draw.append("backlog")
    if ts is not None and "level" in ts.columns and len(ts):
        if _constant(ts["level"].to_numpy()):
            level = float(ts["level"].dropna().iloc[0]) if ts["level"].notna().any() else float("nan")
            dropped.append(f"{level_label} (the same, {level:g}, for every site in every period)")
        else:
            draw.append("level")
    return draw, dropped


def _heatmap(
    ax: Any,
    t: np.ndarray,
    util: dict[str, np.ndarray],
    sites: pd.DataFrame,
    width_text: str,
    down: np.ndarray | None = None,
    since: str = "whole run",
) -> None:
    """Each organization's utilization over time as a row of colour (0 white, 1 dark blue),
    the grid's processor-weighted mean in the title: where a band from the least to the most
    used organization would span 0 to 1 all along, this shows which one was busy when.
    ``down``: the share of each one's processors down in each bin (:func:`down_shares`), in red
    over it, so that a crashed site does not read as an idle one. ``since``: what the mean
    covers (the bins', :func:`_bins_span`)."""
    orgs = list(util)
    values = np.array([util[o] for o in orgs], dtype=float)
    procs = sites.groupby("owner")["procs"].sum().reindex(orgs).to_numpy(dtype=float)
    grid = float(np.average(values.mean(axis=1), weights=procs)) if procs.sum() else float("nan")
    half = (t[1] - t[0]) / 2 if len(t) > 1 else 0.5
    image = ax.imshow(
        values,
        aspect="auto",
        interpolation="nearest",
        cmap="Blues",
        vmin=0.0,
        vmax=1.0,
        extent=(t[0] - half, t[-1] + half, len(orgs) - 0.5, -0.5),
    )
    marked = down is not None and bool((down > 0).any())
    if marked:
        red = np.zeros(down.shape + (4,))
        red[..., 0], red[..., 1], red[..., 2] = 0.84, 0.15, 0.16
        red[..., 3] = 0.9 * np.clip(down, 0.0, 1.0)
        ax.imshow(red, aspect="auto", interpolation="nearest", extent=image.get_extent())
    if len(orgs) <= 24:
        ax.set_yticks(range(len(orgs)), orgs, fontsize=7 if len(orgs) > 10 else 8)
    else:
        import matplotlib.ticker

        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True, nbins=8))
        ax.yaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(lambda v, _: orgs[int(v)] if 0 <= v < len(orgs) else "")
        )
    ax.set_ylabel("organization")
    ax.set_title(
        f"utilization of each organization's processors, means over {width_text} (whole grid, {since}: {grid:.2f})"
        + ("; red: the share of them down (crashed)" if marked else ""),
        fontsize=9,
    )
    bar = ax.figure.colorbar(image, cax=ax.inset_axes([1.01, 0.0, 0.015, 1.0]))
    bar.set_label("utilization", fontsize=8)
    bar.ax.tick_params(labelsize=7)


def _band(ax, t: np.ndarray, series: dict[str, np.ndarray], what: str, top: str | None, points: bool = False) -> None:
    """The mean of ``series``, the band from the lowest to the highest, and the ``top`` one."""
    values = np.array(list(series.values()), dtype=float)
    t = np.asarray(t, dtype=float)
    if len(t) > 2:  # no line or band across a gap with nothing (rounds missed: crashes, lost reports)
        d = np.diff(t)
        cut = np.flatnonzero(d > 3 * np.median(d)) + 1
        t = np.insert(t, cut, np.nan)
        values = np.insert(values, cut, np.nan, axis=1)
        series = dict(zip(series, values))
    marker = "." if points else None
    if len(series) == 1:  # one organization or site: its own line, no mean and band of one
        name, line = next(iter(series.items()))
        ax.plot(t, line, color="tab:blue", marker=marker, label=name)
        return
    with warnings.catch_warnings():  # a round some site missed (lost reports, crashes) is NaN there
        warnings.simplefilter("ignore", RuntimeWarning)
        ax.plot(t, np.nanmean(values, axis=0), color="tab:blue", marker=marker, label=f"mean of {len(series)} {what}s")
        ax.fill_between(
            t,
            np.nanmin(values, axis=0),
            np.nanmax(values, axis=0),
            alpha=0.25,
            color="tab:blue",
            label=f"lowest to highest {what}",
        )
    if top is not None and len(series) > 1:
        ax.plot(t, series[top], color="tab:red", lw=1, marker=marker, label=f"{top} (the most, summed over time)")


def _natural(name: str) -> tuple:
    """Sort key putting org2 before org10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


#: A distribution of fewer points than this is drawn as dots, not as a staircase.
DOTS_BELOW = 10


def plot_flow_cdf(
    run_dir: Path,
    jobs: pd.DataFrame,
    summary: dict[str, Any],
    axis: TimeAxis | None = None,
    fmt: str = "png",
    dpi: float = DEFAULT_DPI,
) -> Path:
    """Each organization's flow times as a cumulative distribution (finished jobs; log time
    axis): ``DIR/flow_cdf.<fmt>``, the legend in name order and each organization in its
    colour of the Gantt chart. Past MAX_LINES organizations: the grid's, and the three of
    highest mean flow time. A distribution of fewer than DOTS_BELOW jobs is drawn as dots.
    With a warm-up cut (``global.warmup``), the jobs released from it on, as the summary's."""
    plt = _pyplot()
    g = summary["global"]
    axis = axis or time_axis(run_span(jobs), g.get("time_unit", "time units"))
    released = jobs[jobs["state"] != "pending"]
    if g.get("warmup"):  # the same jobs as the summary's flow-time figures
        released = released[released["release"] >= g["warmup"]]
    done = released[released["state"] == "done"]
    # Jobs released and never finished have no flow time: the legend says how many there were.
    owed = released["owner"].astype(str).value_counts()
    flow = pd.Series(axis(done["end"] - done["release"]), index=done.index).clip(lower=1e-12)
    owner = done["owner"].astype(str)
    fig, ax = plt.subplots(figsize=(9, 4.8))
    orgs = sorted(dict.fromkeys(jobs["owner"].astype(str)), key=_natural)
    colors = dict(zip(orgs, org_colors(len(orgs))))
    legend_title = None
    if len(orgs) > MAX_LINES:
        means = flow.groupby(owner).mean().sort_values(ascending=False)
        chosen = [("all organizations", flow)] + [(o, flow[owner == o]) for o in means.index[:3]]
        # Without it, a reader sees three organizations of many and cannot tell why those.
        legend_title = f"of {len(orgs):,} organizations: all, and\nthe {len(chosen) - 1} of highest mean flow time"
    else:
        chosen = [(o, flow[owner == o]) for o in orgs]
    for name, values in chosen:
        x = np.sort(values.to_numpy())
        if not len(x):
            continue
        y = np.arange(1, len(x) + 1) / len(x)
        color = "black" if name == "all organizations" else colors[name]
        of = len(released) if name == "all organizations" else int(owed.get(name, 0))
        label = (
            f"{name} ({len(x):,} job{'s' if len(x) > 1 else ''}" + (f" of {of:,} released" if of > len(x) else "") + ")"
        )
        if len(x) < DOTS_BELOW:
            ax.plot(x, y, ls="none", marker="o", ms=5, color=color, label=label)
        else:
            ax.step(x, y, where="post", lw=2 if name == "all organizations" else 1.2, color=color, label=label)
    ax.set_xscale("log")
    if len(flow) and mark_durations(ax, axis, g.get("time_unit", "time units"), *ax.get_xlim()):
        ax.set_xlabel("flow time: end - release (log scale)")
    else:
        ax.set_xlabel(f"flow time: end - release ({axis.label}, log scale)")
    ax.set_ylabel("share of the organization's finished jobs")
    ax.set_ylim(0, 1.03)
    ax.grid(alpha=0.3)
    ax.legend(
        fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, title=legend_title, title_fontsize=7
    )
    cut = f", jobs released from t={g['warmup']:g} {g.get('time_unit', 'time units')} on" if g.get("warmup") else ""
    ax.set_title(f"flow time per organization: {_protocol(g)}, {_sites(g)}, seed {g['seed']}{cut}", fontsize=10)
    return save_figure(fig, run_dir / "flow_cdf.png", fmt, dpi, tight=True)


def plot_shares(
    run_dir: Path,
    ts: pd.DataFrame,
    title: str = "",
    axis: TimeAxis | None = None,
    fmt: str = "png",
    dpi: float = DEFAULT_DPI,
) -> Path:
    """``DIR/shares.<fmt>``: each policy entry's aggregated utilization share over time, one
    panel per group of siblings, the target as a dashed line (the fairshare paper's Figs. 5-14).
    ``axis``: the run's time axis (default: chosen from the series' span, in seconds)."""
    plt = _pyplot()
    axis = axis or time_axis(float(ts["time"].max()), "s")
    entries = list(dict.fromkeys(ts["entry"]))
    parents = list(dict.fromkeys(e.rsplit("/", 1)[0] if "/" in e else "" for e in entries))
    fig, axes = plt.subplots(len(parents), 1, figsize=(10, 2.6 * len(parents)), squeeze=False, sharex=True)
    for ax, parent in zip(axes[:, 0], parents):
        kids = [e for e in entries if (e.rsplit("/", 1)[0] if "/" in e else "") == parent]
        for entry in kids:
            part = ts[ts["entry"] == entry]
            line = ax.plot(axis(part["time"]), 100 * part["share"], lw=1.3, label=entry.rsplit("/", 1)[-1])[0]
            ax.axhline(100 * part["target"].iloc[0], color=line.get_color(), ls="--", lw=0.9)
        ax.set_ylabel("usage share, % of\n" + (parent.rsplit("/", 1)[-1] + "'s" if parent else "the grid's"))
        ax.set_ylim(0, 100)
        ax.legend(fontsize=7, ncol=len(kids), loc="upper right")
    axes[-1, 0].set_xlabel(f"virtual time ({axis.label}); dashed: target")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, run_dir / "shares.png", fmt, dpi)


#: The strategy panel's colour for site 11 (sites 1 to 10 take tab10's, as before): the
#: first of MORE_TEN that is not near black (site 0's line).
LEVEL_EXTRA = MORE_TEN[1]


def _plot_levels(ax: Any, ts: pd.DataFrame, protocol: str) -> str | None:
    """Each organization's strategy at the end of every period (thesis Figs. 4.3-4.5): site 0
    in black, the next MAX_LINES - 1 sites each in a colour of its own (matplotlib's cycle of
    ten gave sites 1 and 11 the same blue). Returns the title of the panel's legend: past
    MAX_LINES sites, which of them are drawn (else None)."""
    import matplotlib

    palette = [matplotlib.colormaps["tab10"](i) for i in range(10)] + [matplotlib.colors.to_rgba(LEVEL_EXTRA)]
    sites = sorted(ts["site"].unique())
    for site_id, part in ts.groupby("site"):
        if site_id < MAX_LINES:
            ax.plot(
                part["period"] + 1,
                part["level"],
                lw=2.2 if site_id == 0 else 1,
                color="black" if site_id == 0 else palette[(site_id - 1) % len(palette)],
                label=f"site {site_id}",
            )
    look = registry.report_of(protocol)
    ax.set_ylabel(look.level_label)
    if look.level_log:
        levels = ts["level"].to_numpy(dtype=float)
        # l_k may span 1 to 1000; a level that stays within a decade reads better on a linear axis.
        if levels.size and levels.max() > 10 * levels.min():
            ax.set_yscale("log")
    elif look.level_range is not None:
        ax.set_ylim(*look.level_range)
    else:
        ax.axhline(0.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("round (period T)")
    return f"sites 0-{MAX_LINES - 1} of {len(sites):,}" if len(sites) > MAX_LINES else None


def sweep_scores(orgs: pd.DataFrame, settings: list[str]) -> pd.DataFrame:
    """Scores per setting, aggregated as thesis Tables 4.2-4.5 do.

    Each organization's per-period scores are pooled over every period of every seed of a
    setting (the thesis runs one period per run, 1000 runs per row): their mean and
    standard deviation. Per setting, the table gives the mean of those over
    organizations with the range (min, max), for all organizations, for the "typical"
    ones (all but organization 0) and for organization 0 (the overloaded one in the
    heterogeneous scenarios).
    """
    orgs = orgs[orgs["periods_scored"] > 0]
    n = orgs["periods_scored"].astype(float)
    mean, std = orgs["score_period_mean"].astype(float), orgs["score_period_std"].astype(float)
    # Pool (count, mean, std) triples exactly: E[x] and E[x^2] weighted by counts.
    pooled = orgs[settings + ["organization"]].assign(n=n, s1=n * mean, s2=n * (std**2 + mean**2))
    pooled = pooled.groupby(settings + ["organization"], sort=False)[["n", "s1", "s2"]].sum().reset_index()
    pooled["score"] = pooled["s1"] / pooled["n"]
    pooled["std"] = np.sqrt(np.maximum(pooled["s2"] / pooled["n"] - pooled["score"] ** 2, 0.0))
    rows = []
    groups = pooled.groupby(settings, sort=False) if settings else [((), pooled)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(settings, key))
        row["runs_periods"] = int(part["n"].min())
        first = part["organization"] == sorted(part["organization"])[0]
        for label, sel in (("all", part), ("typical", part[~first]), ("org0", part[first])):
            for fig in ("score", "std"):
                name = f"{label}_{fig}"
                row[name] = sel[fig].mean()
                if label != "org0":
                    row[name + "_min"], row[name + "_max"] = sel[fig].min(), sel[fig].max()
        rows.append(row)
    return pd.DataFrame(rows)


def sweep_table(sweep_dir: Path) -> tuple[list[str], pd.DataFrame]:
    """The swept settings of a sweep folder and its :func:`sweep_scores` table."""
    orgs = pd.read_parquet(sweep_dir / "orgs.parquet")
    if "score_period_mean" not in orgs:
        raise GridemuError(
            f"{sweep_dir}: the sweep's protocol records no per-period scores (thesis ch. 4 protocols do)"
        )
    # orgs.parquet rows start with the swept settings, then the seed (emulator/sweep.py).
    settings = list(orgs.columns[: orgs.columns.get_loc("seed")])
    return settings, sweep_scores(orgs, settings)


def report_sweep(sweep_dir: Path) -> Path:
    from rich.table import Table

    from gridemu.emulator.console import stdout_console

    settings, table = sweep_table(sweep_dir)
    path = sweep_dir / "scores.csv"
    table.to_csv(path, index=False)
    console = stdout_console()
    out = Table(title=f"scores per period, pooled over seeds (mean over organizations [min, max]), {sweep_dir}")
    for col in settings + [
        "periods",
        "all: score",
        "all: std",
        "typical: score",
        "typical: std",
        "org 0: score",
        "org 0: std",
    ]:
        out.add_column(col, justify="right")
    for _, r in table.iterrows():
        cells = [_setting(r[c]) for c in settings + ["runs_periods"]]
        for label in ("all", "typical"):
            for fig in ("score", "std"):
                name = f"{label}_{fig}"
                cells.append(f"{r[name]:.2f} [{r[name + '_min']:.2f}, {r[name + '_max']:.2f}]")
        cells += [f"{r['org0_score']:.2f}", f"{r['org0_std']:.2f}"]
        out.add_row(*cells)
    console.print(out)
    print(f"table written to {path}")
    return path


def gantt_boxes(jobs: pd.DataFrame, site_procs: dict[int, int]) -> pd.DataFrame:
    """Each started piece as boxes of processors at its site, for drawing.

    The processors a piece ran on are the ones its site recorded (``proc``, ``proc_set``).
    A site run by the FCFS recurrence (``sites/fcfs_recurrence.py``) or a table without
    those columns (a schedule rebuilt from the job table, such as molba's local one) records
    none: there each job, in start order, takes the q lowest-numbered processors free at its
    start, the event loop's rule for identical processors (a job ending at t frees them for
    one starting at t, to float rounding). Returns one row per contiguous run of processors:
    job_id, owner, site, start, end (the horizon where unfinished), first processor, count.
    A job that cannot be placed means the run overbooked a site: error.
    """
    ran = jobs[jobs["start"].notna()].copy()
    ran["stop"] = ran["end"].fillna(np.nanmax(ran[["start", "end"]].to_numpy()))
    rows = []
    if "proc" not in ran:  # a schedule rebuilt from a job table: no placement recorded
        ran["proc"], ran["proc_set"] = -1, ""
    recorded = ran["proc"].to_numpy() >= 0
    rec = ran[recorded]
    single = rec["proc_set"].astype(str).to_numpy() == ""
    s = rec[single]
    rows.extend(
        zip(
            s["job_id"],
            s["owner"],
            s["exec_site"].astype(int),
            s["start"],
            s["stop"],
            s["proc"].astype(int),
            s["procs"].astype(int),
        )
    )
    for job in rec[~single].itertuples():
        rows.extend(
            (job.job_id, job.owner, int(job.exec_site), job.start, job.stop, a, c)
            for a, c in interval_runs(str(job.proc_set))
        )
    for site, part in ran[~recorded].sort_values(["start", "job_id"]).groupby("exec_site", sort=True):
        m = int(site_procs[int(site)])
        busy_until = np.full(m, -np.inf)
        for job in part.itertuples():
            free = np.flatnonzero(busy_until <= job.start + 1e-9 * max(1.0, abs(job.start)))[: int(job.procs)]
            if len(free) < job.procs:
                raise GridemuError(
                    f"job {job.job_id} needs {job.procs} processors of "
                    f"site {site} at t={job.start}; {len(free)} are free"
                )
            busy_until[free] = job.end if job.end == job.end else np.inf  # running at the end: busy for good
            runs = np.split(free, np.flatnonzero(np.diff(free) != 1) + 1)
            rows.extend((job.job_id, job.owner, int(site), job.start, job.stop, int(r[0]), len(r)) for r in runs)
    return pd.DataFrame(rows, columns=["job_id", "owner", "site", "start", "end", "proc", "count"])


def parse_sites(text: str | None, known: list[int] | None) -> list[int]:
    """``--gantt-sites``: "all", or site ids and ranges ("0-3,7"); None: the first 16 sites.
    ``known``: the sites that ran a job (None: check the syntax only, before any work)."""
    if text is None or text == "all":
        chosen = [] if known is None else known[: GANTT_SITES if text is None else len(known)]
        return _few_enough(chosen)
    chosen: list[int] = []
    for part in text.split(","):
        a, dash, b = part.strip().partition("-")
        try:
            lo = parse_int(a, "--gantt-sites")
            hi = parse_int(b, "--gantt-sites") if dash else lo
        except ScenarioError:
            raise GridemuError(f"--gantt-sites: {part.strip()!r} is not a site id or a range like 0-3") from None
        if hi < lo:
            raise GridemuError(f"--gantt-sites: {part.strip()!r} is a range that goes down: write {hi}-{lo}")
        chosen.extend(range(lo, hi + 1))
    if known is None:
        return _few_enough(sorted(set(chosen)))
    missing = sorted(set(chosen) - set(known))
    if missing:
        raise GridemuError(
            f"--gantt-sites: no started job ran on site {missing[0]} (the sites where jobs ran: {first_few(known)})"
        )
    return _few_enough(sorted(set(chosen)))


def _few_enough(chosen: list[int]) -> list[int]:
    if len(chosen) > GANTT_MAX_SITES:
        first = chosen[0]
        raise GridemuError(
            f"--gantt-sites: {len(chosen):,} sites in one chart, more than the {GANTT_MAX_SITES} it draws "
            f"(a panel each): name some by ids and ranges, e.g. {first}-{first + GANTT_MAX_SITES - 1}"
        )
    return chosen


#: Sites drawn by default (``--gantt-sites all`` draws every one, up to GANTT_MAX_SITES).
GANTT_SITES = 16
#: The most sites one Gantt chart draws: a panel each, 1.3 inches high (200: 262 inches,
#: about 20 s to lay out; a thousand did not finish in 5 minutes).
GANTT_MAX_SITES = 200


def plot_gantt(
    run_dir: Path,
    jobs: pd.DataFrame,
    sites: pd.DataFrame,
    shown: str | None = None,
    compare: tuple[str, pd.DataFrame] | None = None,
    title: str = "executed",
    unit: str = "time units",
    axis: TimeAxis | None = None,
    window: tuple[float, float] | None = None,
    fmt: str = "png",
    dpi: float = DEFAULT_DPI,
    heading: str | None = None,
) -> Path:
    """``DIR/gantt.<fmt>``: every piece as a box of its processors over its run, colored by
    owner (:func:`org_colors`), one panel per site (``shown``: see :func:`parse_sites`), one
    collection of boxes per panel (a 20,000-job chart takes seconds). ``window`` (run time
    units): draw only that time range. Boxes narrower or lower than a few pixels have no edge,
    so a thin job keeps its owner's colour; larger ones a darker edge of their own colour.

    ``compare`` adds a first column with another schedule of the same jobs (for molba runs:
    the local schedule), on the same time axis.
    """
    import matplotlib
    from matplotlib.collections import PolyCollection

    plt = _pyplot()
    procs = dict(zip(sites["site_id"], sites["procs"]))
    panels = ([compare] if compare is not None else []) + [(title, jobs.attrs.get("pieces", jobs))]
    boxes = [(name, gantt_boxes(table, procs)) for name, table in panels]
    axis = axis or time_axis(max((float(b["end"].max()) for _, b in boxes if len(b)), default=0.0), unit)
    if window is not None:
        t0, t1 = window
        ran = [b for _, b in boxes if len(b)]
        boxes = [(name, b[(b["end"] > t0) & (b["start"] < t1)]) for name, b in boxes]
        if not any(len(b) for _, b in boxes):
            # Its times are the run's unit, not the plot's (hours or days on a trace's axis).
            span = ""
            if ran:
                lo, hi = min(float(b["start"].min()) for b in ran), max(float(b["end"].max()) for b in ran)
                span = f": jobs ran from {_number(lo)} to {_number(hi)}"
            raise GridemuError(f"--window: no job ran between {t0:g} and {t1:g} {unit}{span}")
    chosen = parse_sites(shown, sorted(set().union(*(b["site"].unique() for _, b in boxes))))
    size = (10 * len(boxes) ** 0.5 + 2, 1.6 + 1.3 * len(chosen))
    check_canvas("gantt." + fmt, *size, fmt, dpi)  # before the panels are laid out: that takes the time
    fig, axes = plt.subplots(
        len(chosen),
        len(boxes),
        figsize=size,
        sharex=True,
        squeeze=False,
        layout="constrained",
    )
    # Every owner of the run, not of the boxes drawn: an organization keeps its colour (the
    # one flow_cdf.png gives it) whatever the window or the sites shown.
    tables = [jobs] + [table for _, table in panels]
    owners = sorted(set().union(*(t["owner"].astype(str).unique() for t in tables)), key=_natural)
    code = {o: i for i, o in enumerate(owners)}
    palette = org_colors(len(owners))
    edges = palette.copy()
    edges[:, :3] *= 0.6  # a darker shade of the box's own colour
    lo = min(float(b["start"].min()) for _, b in boxes if len(b))
    hi = max(float(b["end"].max()) for _, b in boxes if len(b))
    if window is not None:
        lo, hi = max(lo, window[0]), min(hi, window[1])
    # About 3 pixels of a 10-inch axis at 110 dpi: narrower boxes get no edge.
    thin = 3 * (hi - lo) / (10 * DEFAULT_DPI)
    drawn: set[str] = set()
    for col, (name, box) in enumerate(boxes):
        by_site = dict(tuple(box.groupby("site")))
        drawn.update(*(by_site[s]["owner"].astype(str) for s in chosen if s in by_site))
        for ax, site in zip(axes[:, col], chosen):
            part = by_site.get(site)
            if part is not None:
                x0, x1 = axis(part["start"]), axis(part["end"])
                y0 = part["proc"].to_numpy(float)
                y1 = y0 + part["count"].to_numpy()
                verts = np.stack([np.c_[x0, y0], np.c_[x0, y1], np.c_[x1, y1], np.c_[x1, y0]], axis=1)
                who = np.array([code[o] for o in part["owner"].astype(str)])
                # Under ~3 pixels wide, or one of 40 and more processor rows: no edge.
                narrow = ((part["end"] - part["start"]).to_numpy() < thin) | (
                    part["count"].to_numpy() < procs[site] / 40
                )
                ax.add_collection(
                    PolyCollection(
                        verts,
                        facecolors=palette[who],
                        edgecolors=np.where(narrow[:, None], palette[who], edges[who]),
                        linewidths=np.where(narrow, 0.6, 0.3),
                    )
                )
            ax.set_ylim(0, procs[site])
            ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True, nbins=4))
            if col == 0:
                ax.set_ylabel(f"site {site}\nprocessors", fontsize=8)
        axes[-1, col].set_xlabel(f"virtual time ({axis.label})")
        if len(boxes) > 1:
            axes[0, col].set_title(name, fontsize=9)
    pad = 0.01 * (hi - lo)
    axes[0, 0].set_xlim(axis(lo - (0 if window else pad)), axis(hi + (0 if window else pad)))
    legend_max = 40
    # Colours follow all the run's owners (the same in any window), the legend those drawn.
    shown_owners = [o for o in owners if o in drawn]
    handles = [matplotlib.patches.Patch(color=palette[code[o]], label=o) for o in shown_owners[:legend_max]]
    extra = f" (and {len(shown_owners) - legend_max} more)" if len(shown_owners) > legend_max else ""
    # Which run, above the owners: a chart copied out of its folder says so itself (a
    # suptitle and an outside legend overlap under the constrained layout).
    fig.legend(
        handles=handles,
        fontsize=7,
        ncol=math.ceil(len(handles) / math.ceil(len(handles) / 10)) if handles else 1,  # rows of even length
        loc="outside upper center",
        title=(f"{heading}\n" if heading else "") + f"job owner{extra}",
        title_fontsize=8,
        alignment="center",
    )
    return save_figure(fig, run_dir / "gantt.png", fmt, dpi)


def _number(x: float) -> str:
    """A time as people read it: 599,850 or 2,149,540, not 2.14954e+06; 12.5 as it is."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:g}"


def _protocol(g: dict[str, Any]) -> str:
    """ "power_of_d protocol (d = 3, period = 20)": the run's protocol and the keys it set away
    from their defaults (``protocol_keys``, :func:`load_run`), as every figure's title says it."""
    return f"{g['protocol']} protocol" + (f" ({g['protocol_keys']})" if g.get("protocol_keys") else "")


def _sites(g: dict[str, Any]) -> str:
    """ "1 site", "8 sites": the run's site count as a title says it."""
    return f"{g['sites']:,} site{'s' * (g['sites'] != 1)}"


def _set_keys(table: dict[str, Any], name: str, most: int = 4) -> str:
    """The run's [protocol] keys (``table``, scenario.toml's) that differ from their defaults,
    as a title says them: "d = 3, period = 20"; the first ``most``, scalars only."""
    proto = registry.PROTOCOLS.get(name)
    if proto is None:
        return ""
    defaults = {key: default for key, _, default, _ in proto.params.docs()}
    changed = [
        f"{k} = {_setting(v)}"
        for k, v in table.items()
        if k in defaults and defaults[k] is not None and isinstance(v, (int, float, str)) and v != defaults[k]
    ]
    return ", ".join(changed[:most]) + (", …" if len(changed) > most else "")


def run_title(g: dict[str, Any]) -> str:
    """Which run a figure shows, from ``summary.json``'s global section; where jobs did not
    finish (a horizon, a stalled run), how many did: the figure covers the run's span only."""
    jobs, done = g["jobs"], g.get("jobs_by_state", {}).get("done", g["jobs"])
    finished = f" ({done:,} finished)" if done < jobs else ""
    return f"{_protocol(g)}, {_sites(g)}, {jobs:,} job{'s' * (jobs != 1)}{finished}, seed {g['seed']}"


def report(
    run_dir: Path,
    plot: bool = True,
    gantt: bool = False,
    gantt_sites: str | None = None,
    fmt: str = "png",
    dpi: float = DEFAULT_DPI,
    window: tuple[float, float] | None = None,
    warmup: float | None = None,
) -> Path | None:
    """Print a run's tables and write its figures (``fmt``, ``dpi``), all in one time unit
    (:func:`time_axis` of the run's span); a sweep folder's table (:func:`report_sweep`).
    ``warmup``: the job figures over the jobs released from it on (0: all), whatever cut the
    run had; summary.json is left as the run wrote it."""
    if (run_dir / "runs.parquet").exists() and not (run_dir / "summary.json").exists():
        from gridemu.emulator.sweep_report import has_period_scores, report_sweep_folder

        if warmup is not None:
            raise GridemuError(
                f"report --warmup: {run_dir} is a sweep, whose runs keep no job table to cut: "
                "sweep again with --set metrics.warmup=T (or --warmup T)"
            )
        path = report_sweep_folder(run_dir, plot=plot, fmt=fmt, dpi=dpi)
        if has_period_scores(run_dir):
            report_sweep(run_dir)
        return path
    jobs, sites, ts, summary, outages = load_run(run_dir, warmup)
    if summary["global"]["protocol"] not in registry.PROTOCOLS:  # a plug-in's run: its Report is not here
        print(
            f"gridemu: note: the run's protocol {summary['global']['protocol']!r} is not registered here: its own "
            "tables and figure settings are left out (--plugin FILE|MODULE loads it)",
            file=sys.stderr,
        )
    print_summary(summary)
    if not plot:
        return None
    g = summary["global"]
    axis = time_axis(run_span(jobs), g.get("time_unit", "time units"))
    path_g = None
    if gantt:  # first: a site or window without jobs is an error before any figure is written
        compare, title, look = None, "executed", registry.report_of(g["protocol"])
        other = (
            look.gantt_compare(jobs, sites, summary["protocol"])
            if look.gantt_compare and summary.get("protocol")
            else None
        )
        if other is not None:
            compare, title = (other.label, other.jobs), other.title
        path_g = plot_gantt(
            run_dir,
            jobs,
            sites,
            gantt_sites,
            compare=compare,
            title=title,
            unit=g.get("time_unit", "time units"),
            axis=axis,
            window=window,
            fmt=fmt,
            dpi=dpi,
            heading=f"{run_title(g)}: each job on the processors it ran on",
        )
    path = plot_run(run_dir, jobs, sites, ts, summary, axis, fmt, dpi, outages)
    print(f"plot written to {path}")
    print(f"flow-time distributions written to {plot_flow_cdf(run_dir, jobs, summary, axis, fmt, dpi)}")
    if ts is not None and "entry" in ts.columns:
        title = f"{_protocol(g)}, {_sites(g)}, seed {g['seed']}"
        print(f"share plot written to {plot_shares(run_dir, ts, title, axis, fmt, dpi)}")
    if path_g is not None:
        print(f"Gantt chart written to {path_g}")
    return path
