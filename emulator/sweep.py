"""``gridemu sweep``: the cartesian product of settings and seeds, one Ray task per run
(or, with ``backend = "inprocess"``, one run after another in this process, no Ray).

Each task runs one emulation with the in-process backend. Results, in ``OUT``:
``runs.parquet`` (and ``runs.csv``): one row per run: the swept settings, the seed, and
the run's global figures (with ``faults_*`` for a run with ``[faults]``, and the numbers
of the summary's ``protocol`` and ``fairness`` sections); ``orgs.parquet``: one row per run and organization with its
figures (jobs, flow times, makespan, score); ``table.csv``: mean, standard deviation, count
and 95 % confidence interval of every figure per setting (over seeds), the table the paper
reproductions quote. ``gridemu report OUT`` draws them (``emulator/sweep_report.py``).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

from gridemu.emulator.estimate import FORCE_HINT, check_resolution, estimate
from gridemu.emulator.gate import SIZED
from gridemu.emulator.limits import MAX_SWEEP_RUNS, Limits
from gridemu.emulator.results import check_out, write_whole
from gridemu.emulator.scenario import load_scenario, parse_override, read_scenario_file
from gridemu.emulator.stats import QUANTILES, TAIL_FIGURES, confidence, interval_text
from gridemu.model.errors import GridemuError, ScenarioError, first_line
from gridemu.model.inputs import gib
from gridemu.scenarios.workload import generate_jobs
from gridemu.sites.sections import SECTIONS

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.emulator.estimate import Estimate

GLOBAL_FIGURES = (
    "jobs",
    "makespan",
    "mean_flow_time",
    "mean_wait_time",
    "mean_bounded_slowdown",
    *(f"{f}_{q}" for f in TAIL_FIGURES for q, _ in QUANTILES),
    "events",
    "messages_total",
    "windows",
    "wall_seconds",
    "site_cpu_seconds",
)
ORG_FIGURES = (
    "jobs",
    "jobs_done",
    "sum_flow_time",
    "mean_flow_time",
    "mean_wait_time",
    "mean_bounded_slowdown",
    "makespan",
    "jobs_migrated",
    "sum_flow_time_local",
    "score",
    "score_period_mean",
    "score_period_std",
    "periods_scored",
)


def parse_grid(items: list[str]) -> list[tuple[str, list[Any]]]:
    """``["key=v1,v2", ...]`` -> [(key, [v1, v2]), ...]; values are read as TOML scalars."""
    grid = []
    for item in items:
        if "=" not in item:
            raise ScenarioError("--grid", f"{item!r} is not KEY=V1,V2,... (e.g. --grid protocol.name=local,random)")
        name, raw = item.split("=", 1)
        try:  # the key checked alone: the values are read one by one below
            key = parse_override(f"{name}=0")[0]
        except ScenarioError:
            raise ScenarioError(
                "--grid", f"{item!r}: {name.strip()!r} is not a dotted key path such as protocol.name"
            ) from None
        if not raw.strip():
            raise ScenarioError(key, f"--grid {item!r} lists no values")
        parts = _top_level_split(raw)
        empty = [i for i, v in enumerate(parts, 1) if not v.strip()]
        if empty:  # "1,,2" or "1,2,": a value lost to a typo, not a shorter sweep
            raise ScenarioError(key, f"--grid {item!r}: value {empty[0]} of {len(parts)} is empty")
        values = [parse_override(f"{key}={v}")[1] for v in parts]
        grid.append((key, values))
    keys = [k for k, _ in grid]
    if len(set(keys)) != len(keys):
        raise ScenarioError("--grid", "a key is swept twice")
    return grid


def _top_level_split(raw: str) -> list[str]:
    """``raw`` cut at the commas outside brackets, braces and quotes: a TOML array or table
    is one value (``[1,2],[3,4]``: two per-site rate lists, not four pieces)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(raw):
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth = max(0, depth - 1)
        elif c == "," and depth == 0:
            parts.append(raw[start:i])
            start = i + 1
    return parts + [raw[start:]]


def _cells(point: dict[str, Any]) -> dict[str, Any]:
    """A point's settings as table cells: an array or table swept whole (per-site rates, a
    processor distribution) as its JSON text, which pandas can group and sort."""
    return {k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in point.items()}


def _in_task_order(ranked: list[tuple[int, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The rows of ``(task, organization, row)`` triples by task, then organization."""
    return [row for _, _, row in sorted(ranked, key=lambda r: r[:2])]


def _setting(point: dict[str, Any]) -> str:
    """Where in the grid: ``at protocol.name='local', ...``."""
    return f"at {', '.join(f'{k}={v!r}' for k, v in point.items())}"


def run_one(
    data: dict[str, Any], settings: dict[str, Any], seed: int, source: str | None = None, force: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """One sweep point: (row for runs.parquet, rows for orgs.parquet, the run's workload
    warnings). ``source``: the scenario file ``data`` was read from (its relative file names
    are found beside it)."""
    from gridemu.emulator.api import run

    sets = dict(settings)
    sets.update({"run.backend": "inprocess", "run.shards": 1, "run.seed": seed})
    result = run(load_scenario(data, sets, source=source), force=force, warn=False)
    g = result.summary["global"]
    row = {**_cells(settings), "seed": seed, **{f: g.get(f) for f in GLOBAL_FIGURES}}
    states = g["jobs_by_state"]
    # Released before the end (not pending) and not finished: what the report warns about.
    row["jobs_released"] = g["jobs"] - states.get("pending", 0)
    row["jobs_unfinished"] = row["jobs_released"] - states.get("done", 0)
    row["time_unit"] = g["time_unit"]  # what the time figures count in (the report's axes)
    # The cost side of a protocol beside its figures (messages_total counts a run's every job).
    row["messages_per_job"] = g["messages_total"] / g["jobs"] if g["jobs"] else None
    if "trace_load" in g:  # workload.load: what the trace offered and the scale applied
        row["trace_offered_load"] = g["trace_load"]["offered"]
        row["arrival_scale"] = g["trace_load"]["arrival_scale"]
    if "jobs_measured" in g:  # metrics.warmup: the jobs the figures cover
        row["jobs_measured"] = g["jobs_measured"]
    row.update({f"messages_{kind}": n for kind, n in g["messages"].items()})
    row.update({f"faults_{k}": v for k, v in g.get("faults", {}).items()})
    # A protocol's own figures (e.g. molba's scores of local, MOLBA and MOLBA+ILBA); one named
    # as a figure already in the row takes its section's name first (molba's makespan, from
    # T0: protocol_makespan), so that it never replaces the run's.
    for section in ("protocol", "fairness", *(s.name for s in SECTIONS.values())):
        for k, v in result.summary.get(section, {}).items():
            if k != "name" and (v is None or isinstance(v, (int, float))):
                row[f"{section}_{k}" if k in row else k] = v
    scores = [o["score"] for o in result.summary["organizations"].values() if o.get("score") is not None]
    if scores:
        row["score_mean"] = sum(scores) / len(scores)
        row["score_min"] = min(scores)
        row["score_max"] = max(scores)
    orgs = [
        {**_cells(settings), "seed": seed, "organization": name, **{f: o.get(f) for f in ORG_FIGURES if f in o}}
        for name, o in result.summary["organizations"].items()
    ]
    return row, orgs, g.get("workload_warnings", [])


def _workers_that_fit(
    workers: int | None, biggest: float, limits: Limits, backend: str, address: str | None, n_runs: int, quiet: bool
) -> int | None:
    """At most as many runs at once as the memory here holds: each run's estimate was held to
    the budget alone, and a local sweep runs one a CPU (two 13.9 GiB runs started together on
    22 GiB). A cluster (``address``), or one run at a time (in-process), is left as asked."""
    if backend != "ray" or address is not None or biggest <= 0 or limits.force:
        return workers
    asked = workers or os.cpu_count() or 1
    fit = max(1, int(limits.memory_bytes // biggest))
    if min(asked, n_runs) <= fit:
        return workers
    if not quiet:
        print(
            f"gridemu: note: sweep: {fit} run{'s' * (fit > 1)} at a time, not {min(asked, n_runs)}: each needs "
            f"about {gib(biggest)} of the {gib(limits.memory_bytes)} available (--workers sets fewer)",
            file=sys.stderr,
        )
    return fit


def sweep(  # noqa: C901
    scenario: str | Path | dict[str, Any],
    grid: "list[tuple[str, list[Any]]] | Mapping[str, list[Any]]",
    *,
    repeat: int = 1,
    overrides: dict[str, Any] | None = None,
    out: str | Path | None = None,
    address: str | None = None,
    quiet: bool = False,
    workers: int | None = None,
    overwrite: bool = False,
    backend: str = "ray",
    force: bool = False,
    check: "Callable[[Estimate], None] | None" = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Run every setting of ``grid`` with seeds run.seed .. run.seed+repeat-1; see module doc.
    ``backend = "inprocess"`` runs them one after another in this process (no Ray).

    A point whose run fails does not stop the others: every finished point is written, the
    failed ones go to ``failures.csv`` with their error, and a :class:`SweepFailed` naming
    the first is raised once the files are written. Before any run, each setting's estimate
    is held to the budgets (``force``: past them) and the sweep's runs to ``MAX_SWEEP_RUNS``;
    ``check`` (the CLI's ``--max-*``) sees each setting's estimate too and may refuse it."""
    if repeat < 1:
        raise ScenarioError("--repeat", f"must be >= 1, got {repeat}")
    if workers is not None and workers < 0:  # -1 once left no task to submit, and the wait spun for ever
        raise ScenarioError("--workers", f"must be >= 0 (0: Ray's CPUs), got {workers}")
    if isinstance(grid, Mapping):  # {"protocol.name": ["local", "random"]}: the same as its items
        grid = list(grid.items())
    data, source = (scenario, None) if isinstance(scenario, dict) else read_scenario_file(scenario)
    base = load_scenario(data, overrides, source=source)
    keys = [k for k, _ in grid]
    n_runs = math.prod(len(v) for _, v in grid) * repeat
    if n_runs > MAX_SWEEP_RUNS:
        raise ScenarioError(
            "--repeat" if repeat > 1 else "--grid",
            f"{n_runs:,} runs (settings x --repeat), more than a sweep may list ({MAX_SWEEP_RUNS:,})",
        )
    points = [dict(zip(keys, combo)) for combo in itertools.product(*[v for _, v in grid])] or [{}]
    limits, wall, biggest = Limits.here(force), 0.0, 0.0
    table_of: tuple[str, Any] = ("", None)  # the last workload read or drawn, by key: one held at a time
    for point in points:  # fail before launching anything: a value bad for some points is a typo
        try:
            sc = load_scenario(data, {**(overrides or {}), **point}, source=source)
        except ScenarioError as exc:
            if not point:
                raise
            raise ScenarioError(exc.key, f"{exc.problem} ({_setting(point)}; no run was started)") from None
        if sc.workload["kind"] in SIZED:
            est = estimate(sc)
        else:
            # Jobs read or drawn, so that --max-* and the budgets hold them too: again only
            # where the workload differs from the point before (points that differ in protocol
            # keys share it), one set held at a time. A file that does not read fails its own
            # points when they run, not the sweep.
            key = json.dumps([sc.workload, sc.sites_table or len(sc.sites), sc.seed], sort_keys=True, default=str)
            if key != table_of[0]:
                try:
                    table_of = (key, generate_jobs(sc)[0])
                except GridemuError:
                    table_of = (key, None)
            if table_of[1] is None:
                continue
            est = estimate(sc, table_of[1])
        check_resolution(est)
        refusal = est.refusal(limits)
        if refusal is not None:
            raise ScenarioError(refusal.key, f"{_setting(point)}: {refusal.problem}" if point else refusal.problem)
        if check is not None:
            try:
                check(est)
            except GridemuError as exc:
                raise GridemuError(f"{_setting(point)}: {exc}; no run was started" if point else str(exc)) from None
        wall += est.wall * repeat
        biggest = max(biggest, est.memory)
    table_of = ("", None)  # its jobs freed before the runs start
    workers = _workers_that_fit(workers, biggest, limits, backend, address, n_runs, quiet)
    if wall / (workers or os.cpu_count() or 1) > limits.wall_seconds and not force:
        raise ScenarioError(
            "--repeat" if repeat > 1 else "--grid",
            f"the sweep's {n_runs:,} runs would take about {wall / 3600:,.3g} h of CPU, more than the "
            f"{limits.wall_seconds / 3600:g} h budget on {workers or os.cpu_count() or 1} workers; " + FORCE_HINT,
        )
    if out is not None:
        out = check_out(out, overwrite, SWEEP_FILES, "sweep")
    # A swept run.seed is the first seed of that point's repeats.
    tasks = [(point, int(point.get("run.seed", base.seed)) + r) for point in points for r in range(repeat)]

    if backend not in ("ray", "inprocess"):
        raise ScenarioError("--backend", f"must be ray or inprocess, got {backend!r}")
    # The base overrides travel inside the scenario data, so each task starts from one dict.
    from gridemu.emulator.scenario import apply_overrides

    base_data = apply_overrides(data, overrides or {})
    rows, org_rows, failed = [], [], []
    warned: dict[str, int] = {}  # each workload warning once, with how many runs gave it
    # Tables and figures list the settings in the order the grid gives them (``--grid
    # faults.mtbf=1e12,400,100``: no faults first), seeds ascending: the tasks' order, which
    # Ray's results come back out of.
    rank = {(tuple(_cells(point).values()), seed): i for i, (point, seed) in enumerate(tasks)}

    def record(point: dict[str, Any], seed: int, outcome: tuple | BaseException) -> None:
        at = rank[tuple(_cells(point).values()), seed]
        if isinstance(outcome, BaseException):
            error = f"{type(outcome).__name__}: {first_line(outcome)}"
            failed.append((at, "", {**_cells(point), "seed": seed, "error": error}))
        else:
            rows.append((at, "", outcome[0]))
            org_rows.extend((at, org["organization"], org) for org in outcome[1])
            for line in outcome[2]:
                warned[line] = warned.get(line, 0) + 1
        if progress is not None:
            progress.advance(bar)
        elif lines and (time.perf_counter() - said[0] >= LINE_EVERY or len(rows) + len(failed) == len(tasks)):
            # Off a terminal (a log file, a batch job) a line every few seconds, as a run's.
            said[0] = time.perf_counter()
            bad = f" ({len(failed)} failed)" if failed else ""
            print(
                f"gridemu: sweep: {len(rows) + len(failed):,} / {len(tasks):,} runs done{bad}, {said[0] - t0:,.0f} s",
                file=sys.stderr,
                flush=True,
            )

    from gridemu.emulator.console import stderr_console

    progress = None
    lines = not quiet and not stderr_console().is_terminal
    if not quiet and not lines:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(
            TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=stderr_console()
        )
        progress.start()
        bar = progress.add_task("runs", total=len(tasks))
    t0 = time.perf_counter()
    said = [t0]
    try:
        if backend == "inprocess":
            for point, seed in tasks:
                try:
                    outcome = run_one(base_data, point, seed, source, force)
                except Exception as exc:  # as a Ray task's failure: recorded, the others go on
                    outcome = exc
                record(point, seed, outcome)
        else:
            _ray_tasks(base_data, tasks, source, address, workers, record, force)
    finally:
        if progress is not None:
            progress.stop()
    for line, n in warned.items():  # on Ray the tasks' own printing would not reach this terminal
        print(f"gridemu: warning: {line}" + (f" ({n} of the sweep's runs)" if n < len(tasks) else ""), file=sys.stderr)
    order = keys + ["seed"]
    runs = pd.DataFrame(_in_task_order(rows), columns=None if rows else order)
    orgs_df = pd.DataFrame(_in_task_order(org_rows), columns=None if org_rows else order + ["organization"])
    failures = pd.DataFrame(_in_task_order(failed), columns=None if failed else order + ["error"])
    table = aggregate(runs, keys) if rows else pd.DataFrame()

    def write(folder: Path) -> None:
        # How to repeat the sweep: its base scenario (files it names absolute) and its grid.
        from gridemu.emulator.provenance import provenance, toml_header
        from gridemu.emulator.scenario import absolute_paths, apply_overrides
        from gridemu.emulator.scenario_toml import to_toml

        repeatable = absolute_paths(apply_overrides(base_data, {}), source or "<dict>")
        about = {"grid": [[k, list(v)] for k, v in grid], "repeat": repeat, "backend": backend}
        about["provenance"] = provenance(repeatable)
        (folder / "scenario.toml").write_text(toml_header(about["provenance"]) + to_toml(repeatable))
        (folder / "sweep.json").write_text(json.dumps(about, indent=1, default=str) + "\n")
        runs.to_parquet(folder / "runs.parquet", index=False)
        runs.to_csv(folder / "runs.csv", index=False)
        orgs_df.to_parquet(folder / "orgs.parquet", index=False)
        table.to_csv(folder / "table.csv")
        if failed:
            failures.to_csv(folder / "failures.csv", index=False)

    if out is not None:
        write_whole(out, write, overwrite, SWEEP_FILES, "sweep")
    if not quiet and rows:
        _print_table(table, len(rows), time.perf_counter() - t0, out)
    if rows:
        from gridemu.emulator.sweep_report import warnings_of

        for line in warnings_of(runs, keys):
            print(f"gridemu: warning: {line}", file=sys.stderr)
    if failed:
        where = (
            f"; the {len(rows)} finished runs are in {out}/, the failed ones in {out}/failures.csv"
            if out is not None
            else ""
        )
        first = failures.iloc[0]
        setting = ", ".join(f"{k}={first[k]}" for k in order)
        raise SweepFailed(f"{len(failed)} of {len(tasks)} runs failed (first: {setting}: {first['error']}){where}")
    return runs, orgs_df, table


def _ray_tasks(
    data: dict[str, Any],
    tasks: list[tuple[dict[str, Any], int]],
    source: str | None,
    address: str | None,
    workers: int | None,
    record: Any,
    force: bool = False,
) -> None:
    """Run the sweep's points as Ray tasks, at most ``workers`` at once; ``record`` each outcome."""
    from gridemu.emulator.backends import ensure_ray

    ray = ensure_ray(address)
    payload = ray.put(data)
    remote = ray.remote(num_cpus=1)(run_one)
    limit = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    pending: dict[Any, int] = {}
    queue = list(enumerate(tasks))
    while queue or pending:
        while queue and len(pending) < limit:
            i, (point, seed) = queue.pop(0)
            pending[remote.remote(payload, point, seed, source, force)] = i
        # A bounded wait: a signal handler (SIGTERM, Ctrl-C) only runs between waits, and a
        # run may take minutes.
        done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
        for ref in done:
            point, seed = tasks[pending.pop(ref)]
            try:
                outcome = ray.get(ref)
            except ray.exceptions.RayError as exc:
                outcome = exc.cause if isinstance(getattr(exc, "cause", None), Exception) else exc
            record(point, seed, outcome)


#: A sweep's result files (an earlier sweep's are kept unless overwrite).
#: Off a terminal, a sweep says how far it is at most this often (seconds), and at its end.
LINE_EVERY = 5.0
SWEEP_FILES = ("runs.parquet", "runs.csv", "orgs.parquet", "table.csv", "failures.csv", "sweep.json")


class SweepFailed(GridemuError):
    """Some points of a sweep failed; the finished ones were written."""


def aggregate(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean, standard deviation, count and 95 % confidence interval (``_ci95`` half-width,
    ``_lo``, ``_hi``: Student t) of every numeric figure per setting."""
    figures = [c for c in runs.columns if c not in keys and c != "seed" and pd.api.types.is_numeric_dtype(runs[c])]
    return confidence(runs, keys, figures)


def _print_table(table: pd.DataFrame, n: int, wall: float, out: Path | None) -> None:
    """The main figures per setting as ``mean ± 95 % half-width`` over seeds, headers never cut (the
    full table, every figure's mean, std, n and 95 % interval in its own columns, is table.csv)."""
    from rich.table import Table

    from gridemu.emulator.console import stdout_console

    figures = [
        f for f in ("mean_flow_time", "makespan", "messages_per_job", "score_mean") if f"{f}_mean" in table.columns
    ]
    # The same ± as gridemu report's: a 95 % confidence half-width, not a standard deviation.
    t = Table(title=f"sweep: {n} runs in {wall:.1f} s (mean ± 95 % confidence half-width over seeds)")
    index_names = [n for n in (table.index.names or []) if n]
    for name in index_names + ["runs"] * ("runs" in table.columns) + figures:
        t.add_column(str(name), justify="right", min_width=len(str(name)))
    for idx, row in table.iterrows():
        idx = idx if isinstance(idx, tuple) else (idx,)
        cells = [str(v) for v in idx][: len(index_names)] + ([str(int(row["runs"]))] if "runs" in table.columns else [])
        cells += [interval_text(row[f"{f}_mean"], row[f"{f}_ci95"]) for f in figures]
        t.add_row(*cells)
    stdout_console().print(t)
    if out is not None:
        print(
            f"sweep results written to {out}/ (runs.parquet, runs.csv, "
            "orgs.parquet, table.csv: every figure's mean, std, n and 95 % interval; "
            f"gridemu report {out}: its figures)"
        )
