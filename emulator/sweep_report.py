"""``gridemu report SWEEPDIR``: a sweep's headline figures per setting, with their spread.

For every setting of the swept keys (over its seeds): each headline figure's mean, standard
deviation, number of runs and 95 % confidence interval (Student t, :mod:`emulator.stats`),
printed and written to ``SWEEPDIR/stats.csv``; ``SWEEPDIR/sweep.png`` draws them as point
ranges (the mean and its interval) per figure against the first swept key, one series per
setting of the others, the figures of time in one unit (seconds, hours or days). Warnings
name the settings where many jobs never finished and the swept keys that changed nothing
(every value gave the same schedules: a key the protocol ignores).
Sweeps of the thesis ch. 4 protocols also get their per-period scores (``report.report_sweep``,
which ``report.report`` calls after this module's report).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gridemu.emulator.figures import DEFAULT_DPI, save_figure, time_axis
from gridemu.emulator.results import read_table
from gridemu.emulator.stats import TAIL_FIGURES, confidence, interval_text, paired

#: The figures a sweep report gives per setting (those its runs have), in this order.
HEADLINE = (
    "mean_flow_time",
    "mean_wait_time",
    "mean_bounded_slowdown",
    "makespan",
    *(f"{f}_{q}" for f in TAIL_FIGURES for q in ("p50", "p95", "p99", "max")),
    "score_mean",
    "messages_total",
    "messages_per_job",
)
#: The ones drawn and printed (stats.csv has every headline figure).
SHOWN = (
    "mean_flow_time",
    "flow_time_p95",
    "mean_wait_time",
    "mean_bounded_slowdown",
    "makespan",
    "messages_per_job",
    "score_mean",
)
#: Figures that depend on the schedule only (not on timing): equal in two runs of the same schedule.
SCHEDULE = ("jobs", "makespan", "mean_flow_time", "events", "messages_total")
#: The figures that are lengths of virtual time (drawn in the run's time unit).
TIME_FIGURES = ("mean_flow_time", "mean_wait_time", "makespan", "flow_time_", "wait_time_")
#: A setting whose runs leave more than this share of their released jobs unfinished is named.
UNFINISHED_SHARE = 0.05


def settings_of(runs: pd.DataFrame) -> list[str]:
    """The swept keys: runs.parquet's columns before ``seed`` (emulator/sweep.py)."""
    return list(runs.columns[: runs.columns.get_loc("seed")])


def sweep_statistics(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """:func:`stats.confidence` of every headline figure the runs have."""
    return confidence(runs, keys, [f for f in HEADLINE if f in runs.columns])


def ignored_keys(runs: pd.DataFrame, keys: list[str]) -> list[tuple[str, list[str]]]:
    """The swept keys (with more than one value) whose values all gave the same schedules, seed for
    seed: each with the settings of the other keys where that happened (empty: everywhere)."""
    figures = [f for f in SCHEDULE if f in runs.columns]
    out = []
    for key in keys:
        if runs[key].nunique() < 2 or not figures:
            continue
        rest = [k for k in keys if k != key]
        same = runs.groupby(rest + ["seed"], dropna=False)[figures].nunique(dropna=False).le(1).all(axis=1)
        if not rest:
            if same.all():
                out.append((key, []))
            continue
        by_setting = same.groupby(level=list(range(len(rest)))).all()
        if by_setting.all():
            out.append((key, []))
        elif by_setting.any():
            where = [idx if isinstance(idx, tuple) else (idx,) for idx in by_setting[by_setting].index]
            out.append((key, [", ".join(f"{k}={_text(v)}" for k, v in zip(rest, w)) for w in where]))
    return out


def warnings_of(runs: pd.DataFrame, keys: list[str]) -> list[str]:
    """One line per setting with many unfinished jobs and per swept key that changed nothing."""
    lines = []
    if {"jobs_unfinished", "jobs_released"} <= set(runs.columns):
        groups = runs.groupby(keys, sort=False) if keys else [((), runs)]
        for key, part in groups:
            left, released = int(part["jobs_unfinished"].sum()), int(part["jobs_released"].sum())
            if released and left > UNFINISHED_SHARE * released:
                key = key if isinstance(key, tuple) else (key,)
                where = ", ".join(f"{k}={_text(v)}" for k, v in zip(keys, key)) or "every run"
                lines.append(
                    f"{where}: {left:,} of the {released:,} jobs released in its {len(part)} runs "
                    f"({100 * left / released:.0f} %) never finished; its means cover the finished jobs only"
                )
    for key, where in ignored_keys(runs, keys):
        values = ", ".join(map(_text, runs[key].unique()))
        lines.append(
            f"{key}: its values ({values}) gave the same schedules, seed for seed"
            + (f", where {'; '.join(where)}" if where else "")
            + " (jobs, makespan, mean flow time, events, messages): the protocol ignores this key, or it changes "
            "nothing there but what the schedule does not show (a score's periods)"
        )
    return lines


def _text(value: object) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


#: A tick label longer than this is shortened (a swept per-site list is its JSON text).
TICK_CHARS = 14


def _ticks(values: list[object]) -> tuple[list[str], str]:
    """The x tick labels of swept settings, and a note for under the axis where they had to be
    cut or numbered: a list of one value repeated reads ``[0.1]×8``; a longer text is cut (the
    note gives it whole), and where cut texts would look alike the settings are numbered #1,
    #2... and the note lists them."""
    texts = [_text(v) for v in values]
    short = []
    for t in texts:
        try:
            items = json.loads(t) if t.startswith("[") else None
        except ValueError:
            items = None
        if isinstance(items, list) and items and all(x == items[0] for x in items):
            t = f"[{_text(items[0])}]×{len(items)}"
        short.append(_cut(_short(t), TICK_CHARS))
    if len(set(short)) == len(short):
        # A cut label is told apart, but the reader still needs the value it stands for.
        cut = [(s, t) for s, t in zip(short, texts) if s != t and s.endswith("…")]
        return short, "; ".join(f"{s} = {_cut(t, 60)}" for s, t in cut)
    numbered = [f"#{i}" for i in range(1, len(texts) + 1)]
    return numbered, "; ".join(f"#{i}: {_cut(t, 60)}" for i, t in enumerate(texts, 1))


def _short(value: object) -> str:
    """A setting as a label: a file's path by its name (which tells the settings apart, not
    its folder), anything else as it is."""
    t = _text(value)
    return "…/" + t.rsplit("/", 1)[1] if "/" in t and len(t) > TICK_CHARS else t


def _same(label: object, values: tuple) -> bool:
    """Whether a series' label (a groupby key of the other swept keys) names ``values``."""
    label = label if isinstance(label, tuple) else (label,)
    return [_text(v) for v in label] == [_text(v) for v in values]


def _cut(text: str, most: int) -> str:
    """``text`` in at most ``most`` characters, its end an ellipsis where it was cut."""
    return text if len(text) <= most else text[: most - 1] + "…"


def report_sweep_folder(sweep_dir: Path, plot: bool = True, fmt: str = "png", dpi: float = DEFAULT_DPI) -> Path:
    """Print and write a sweep's statistics (and figures); returns the stats.csv written."""
    from gridemu.emulator.console import stdout_console

    runs = read_table(sweep_dir / "runs.parquet")
    keys = settings_of(runs)
    table = sweep_statistics(runs, keys)
    path = sweep_dir / "stats.csv"
    table.to_csv(path)
    console = stdout_console()
    shown = [f for f in SHOWN if f"{f}_mean" in table.columns]
    title = f"{sweep_dir}: mean ± 95 % confidence half-width (Student t) over n runs"
    console.print(
        _interval_table(title, table, keys, shown, lambda row, f: interval_text(row[f"{f}_mean"], row[f"{f}_ci95"]))
    )
    print(f"statistics written to {path} (every headline figure's mean, std, n, ci95, lo, hi)")
    _print_paired(sweep_dir, runs, keys, console)
    for line in warnings_of(runs, keys):
        print(f"gridemu: warning: {line}", file=sys.stderr)
    failures = sweep_dir / "failures.csv"
    failed_runs = pd.read_csv(failures) if failures.is_file() else None
    if failed_runs is not None:  # their settings have no row above and no point in the figure
        n = len(failed_runs)
        print(
            f"gridemu: warning: {n:,} run{'s' * (n != 1)} of the sweep failed and "
            f"{'are' if n != 1 else 'is'} left out ({failures}: the setting, seed and error of each)",
            file=sys.stderr,
        )
    if plot and len(table):
        units = runs["time_unit"].dropna().unique() if "time_unit" in runs else []
        unit = str(units[0]) if len(units) == 1 else "time units"  # sweeps written before it was kept: as they were
        failed = failed_settings(failed_runs, table, keys)
        print(f"figure written to {plot_sweep(sweep_dir, table, keys, shown, fmt, dpi, unit, failed)}")
    return path


def _interval_table(
    title: str, table: pd.DataFrame, keys: list[str], figures: list[str], cell: Any, min_width: int | None = None
) -> Any:
    """A rich table of a :func:`stats.confidence` table: the settings (``keys``), the runs
    behind each row (``n``), and ``cell(row, figure)`` for each figure."""
    from rich.table import Table

    out = Table(title=title, min_width=min_width)
    for col in keys + ["n"] + figures:
        out.add_column(col, justify="right", min_width=len(col))
    for idx, row in table.iterrows():
        idx = idx if isinstance(idx, tuple) else (idx,)
        out.add_row(*[_text(v) for v in idx][: len(keys)], str(int(row["runs"])), *(cell(row, f) for f in figures))
    return out


@dataclass(frozen=True)
class _XAxis:
    """Where a sweep figure puts its settings: numbers (three or more) on a numeric axis,
    logarithmic where they span 20 times or more (sites 100 to 20,000, a period 0.5 to 50),
    so that a slope reads as one; anything else one slot per setting, in the grid's order.
    A series is set off a little beside the others at each setting."""

    values: tuple[float, ...] | None  # the settings as numbers, or None: slots
    log: bool
    series: int

    @classmethod
    def of(cls, xs: list[object], series: int) -> "_XAxis":
        numbers = [v for v in xs if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)]
        if len(numbers) < 3 or len(numbers) != len(xs) or not np.isfinite(np.array(numbers, dtype=float)).all():
            return cls(None, False, series)
        values = np.array(numbers, dtype=float)
        return cls(tuple(values.tolist()), bool(values.min() > 0 and values.max() / values.min() >= 20), series)

    @property
    def numeric(self) -> bool:
        return self.values is not None

    def _u(self, v: float) -> float:
        return math.log10(v) if self.log else v

    def place(self, k: int, i: int) -> float:
        """The x of setting ``k`` (its index among the settings) for series ``i``."""
        off = i - (self.series - 1) / 2
        if self.values is None:
            return k + off * 0.5 / max(1, self.series)
        u = [self._u(v) for v in self.values]
        span = (max(u) - min(u)) or 1.0
        w = self._u(self.values[k]) + off * 0.012 * span
        return 10**w if self.log else w

    def draw(self, ax: Any, ticks: list[str]) -> None:
        if self.values is None:
            ax.set_xticks(range(len(ticks)), ticks)
            ax.set_xlim(-0.5, len(ticks) - 0.5)  # every setting's slot, a failed one's too
            return
        if self.log:
            ax.set_xscale("log")
            ax.minorticks_off()
        ax.set_xticks(list(self.values), ticks)
        u = [self._u(v) for v in self.values]
        pad = 0.06 * ((max(u) - min(u)) or 1.0)
        lo, hi = min(u) - pad, max(u) + pad
        ax.set_xlim((10**lo, 10**hi) if self.log else (lo, hi))


def failed_settings(failed: pd.DataFrame | None, table: pd.DataFrame, keys: list[str]) -> list[tuple]:
    """The settings (values of ``keys``, in the order of ``failed``, failures.csv's rows, or
    None where no run failed) whose every run failed: they have no row in ``table`` and would
    have no point in the figure."""
    if not keys or failed is None or not set(keys) <= set(failed.columns):
        return []
    done = {tuple(_text(v) for v in (i if isinstance(i, tuple) else (i,))) for i in table.index}
    out = []
    for row in failed[keys].itertuples(index=False):
        setting = tuple(row)
        if tuple(_text(v) for v in setting) not in done and setting not in out:
            out.append(setting)
    return out


#: The figures the paired table prints (paired.csv has every headline figure).
PAIRED_SHOWN = ("mean_flow_time", "makespan", "messages_per_job")


def _print_paired(sweep_dir: Path, runs: pd.DataFrame, keys: list[str], console: Any) -> None:
    """Every setting against the first value of the last swept key, seed by seed
    (:func:`stats.paired`), printed and written to paired.csv: where intervals overlap in the
    table above, the same seeds may still say which setting is lower."""
    found = paired(runs, keys, [f for f in HEADLINE if f in runs.columns])
    if found is None:
        return
    key, first, table = found
    path = sweep_dir / "paired.csv"
    table.to_csv(path)
    shown = [f for f in PAIRED_SHOWN if f"{f}_mean" in table.columns]
    title = f"against {key}={_text(first)}, seed by seed: mean difference ± 95 % half-width (seeds lower)"

    def cell(row: pd.Series, f: str) -> str:
        text = interval_text(row[f"{f}_mean"], row[f"{f}_ci95"], signed=True)
        return text if text == "-" else f"{text} ({int(row[f'{f}_below'])} of {int(row[f'{f}_n'])} lower)"

    names = [n for n in table.index.names if n]
    console.print(_interval_table(title, table, names, shown, cell, min_width=len(title)))  # its title unwrapped
    print(f"paired differences written to {path}")


#: The least value a figure can take: a bar is drawn down to it at most (a 95 % interval of a
#: few seeds reached -0.05 days of waiting and a bounded slowdown of -260).
FLOOR = {"mean_bounded_slowdown": 1.0, "score_mean": -math.inf}


def _bars_note(table: pd.DataFrame, figures: list[str]) -> str:
    """The runs behind each point, and why a point may have no bar: one run, or seeds that
    all gave the same value (an interval of 0, which "n = 1" alone would misname)."""
    runs = table["runs"].astype(int)
    note = [f"n = {runs.min()}" if runs.min() == runs.max() else f"n = {runs.min()} to {runs.max()}"]
    if (runs == 1).any():
        note.append("no bar: one run")
    if any(((table[f"{f}_ci95"] == 0) & (runs > 1)).any() for f in figures):
        note.append("no bar: every seed gave the same value")
    if any((table[f"{f}_mean"] - table[f"{f}_ci95"] < FLOOR.get(f, 0.0)).any() for f in figures):
        note.append("bars cut at the least value a figure can take")
    return "; ".join(note)


def has_period_scores(sweep_dir: Path) -> bool:
    """Whether the sweep's runs scored each period (thesis ch. 4 protocols: ``report.report_sweep``)."""
    orgs = sweep_dir / "orgs.parquet"
    return orgs.is_file() and "score_period_mean" in read_table(orgs).columns


def plot_sweep(
    sweep_dir: Path,
    table: pd.DataFrame,
    keys: list[str],
    figures: list[str],
    fmt: str = "png",
    dpi: float = DEFAULT_DPI,
    unit: str = "time units",
    failed: list[tuple] = (),
) -> Path:
    """Point ranges (mean, 95 % interval) of each figure against the first swept key; figures
    of time in one unit for all panels, chosen from the longest (:func:`time_axis`; ``unit``:
    the runs' ``run.time_unit``), and named in each panel's title. ``failed``: settings whose
    every run failed (:func:`failed_settings`), marked "failed" where their point would be."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flat = table.reset_index() if keys else table.assign(setting="all")
    x_key = keys[0] if keys else "setting"
    others = keys[1:]
    xs = list(dict.fromkeys(flat[x_key]))
    shown = {_text(x) for x in xs}
    xs += [f[0] for f in failed if _text(f[0]) not in shown and not shown.add(_text(f[0]))]
    ticks, tick_note = _ticks(xs)
    series = [((), flat)] if not others else list(flat.groupby(others, sort=False))
    x = _XAxis.of(xs, len(series))
    cols = min(3, len(figures))
    rows = -(-len(figures) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    timed = [f for f in figures if f.startswith(TIME_FIGURES)]
    spans = flat[[f"{f}_mean" for f in timed]].to_numpy(dtype=float) if timed else np.zeros(0)
    axis = time_axis(float(np.nanmax(spans)) if np.isfinite(spans).any() else 0.0, unit)
    for ax, f in zip(axes.flat, figures):
        scale = axis.scale if f in timed else 1.0
        for i, (label, part) in enumerate(series):
            if x.numeric:  # in the settings' order along the axis: the line joins neighbours
                part = part.iloc[np.argsort(part[x_key].to_numpy(dtype=float), kind="stable")]
            pos = np.array([x.place(xs.index(v), i) for v in part[x_key]], dtype=float)
            mean = part[f"{f}_mean"].to_numpy(dtype=float) / scale
            half = np.nan_to_num(part[f"{f}_ci95"].to_numpy(dtype=float)) / scale
            below = np.minimum(half, np.maximum(mean - FLOOR.get(f, 0.0) / scale, 0.0))
            label = label if isinstance(label, tuple) else (label,)
            name = ", ".join(f"{k}={_text(v)}" for k, v in zip(others, label)) or None
            ax.errorbar(pos, mean, yerr=[below, half], fmt="o-" if x.numeric else "o", capsize=3, label=name)
        for setting in failed:  # where the point would be: at the x tick, in the series' slot
            i = next((j for j, (label, _) in enumerate(series) if _same(label, setting[1:])), 0)
            pos = x.place([_text(v) for v in xs].index(_text(setting[0])), i)
            ax.text(
                pos,
                0.04,
                "×\nfailed",
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=7,
                color=f"C{i}" if others else "0.35",  # the colour of the series whose runs failed
            )
        x.draw(ax, ticks)
        ax.set_xlabel(x_key + (" (log scale)" if x.log else ""))
        means = flat[f"{f}_mean"].to_numpy(dtype=float)
        means = means[np.isfinite(means)]
        # Settings an order of magnitude apart (local against any broker): on a linear axis
        # every setting but the worst sits on the floor.
        log = len(means) and means.min() > 0 and means.max() / means.min() > 30
        if log:
            ax.set_yscale("log")
        what = ", ".join(([axis.label] if f in timed else []) + (["log scale"] if log else []))
        ax.set_title(f + (f" ({what})" if what else ""), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(figures) :]:
        ax.set_visible(False)
    if others:
        axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"{sweep_dir.name}: mean and 95 % confidence interval over seeds ({_bars_note(table, figures)})")
    notes = [f"{x_key}: {tick_note}"] if tick_note else []
    if failed:
        listed = "; ".join(", ".join(f"{k}={_short(v)}" for k, v in zip(keys, f)) for f in failed[:4])
        more = f" and {len(failed) - 4} more" if len(failed) > 4 else ""
        notes.append(f"failed: every run of {listed}{more} (failures.csv: the errors)")
    if notes:
        fig.text(0.5, 0.005, "\n".join(notes), ha="center", va="bottom", fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.04 * len(notes), 1, 1))
    path = sweep_dir / f"sweep.{fmt}"
    save_figure(fig, path, fmt, dpi)
    return path
