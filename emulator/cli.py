"""``gridemu``: list, validate, run, report and sweep scenarios (a thin layer over the API).

Every user error prints one line ``gridemu: error: ...`` naming the key, file or value,
and exits with code 2; no traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from gridemu.brokers import registry
from gridemu.emulator.console import stderr_console, stdout_console
from gridemu.emulator.figures import figure_options
from gridemu.emulator.results import check_out
from gridemu.emulator.scenario import load_scenario, parse_override, read_scenario_file, shipped_scenarios
from gridemu.model.checks import check_number
from gridemu.model.errors import GridemuError, InvariantError

EXIT_USAGE = 2
EXIT_INVARIANT = 3


def _overrides(pairs: Sequence[str] | None, warmup: float | None = None) -> dict[str, Any]:
    """``--set`` pairs, and ``--warmup T`` as the key it stands for (metrics.warmup)."""
    sets = dict(parse_override(p) for p in pairs or [])
    if warmup is not None:
        sets["metrics.warmup"] = warmup
    return sets


def _out_dir(args: argparse.Namespace, prefix: str = "") -> Path:
    """--out, or runs/<prefix><scenario>-<time>."""
    if args.out:
        return Path(args.out)
    return Path("runs") / f"{prefix}{Path(str(args.scenario)).stem}-{time.strftime('%Y%m%d-%H%M%S')}"


def cmd_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    if args.protocol is not None:
        return _list_keys(args)
    if args.plain or not sys.stdout.isatty():
        # One line per scenario and per protocol, tab-separated: what scripts read.
        for name, path in shipped_scenarios().items():
            raw, _ = read_scenario_file(path)
            print(f"scenario\t{name}\t{raw.get('run', {}).get('description', '')}")
        for proto in registry.PROTOCOLS.values():
            print(f"protocol\t{proto.name}\t{proto.description}\t{','.join(proto.params.keys())}")
        for name, what in _schedulers():
            print(f"scheduler\t{name}\t{what}")
        return 0
    table = Table(title="shipped scenarios")
    table.add_column("name")
    table.add_column("description")
    for name, path in shipped_scenarios().items():
        raw, _ = read_scenario_file(path)
        table.add_row(name, str(raw.get("run", {}).get("description", "")))
    protocols = Table(title="protocols (protocol.name)")
    for column in ("name", "keys", "what it does"):
        protocols.add_column(column)
    for proto in registry.PROTOCOLS.values():
        protocols.add_row(proto.name, ", ".join(proto.params.keys()), proto.description)
    schedulers = Table(title="local schedulers (scheduler.name, or a site's scheduler)")
    for column in ("name", "what it does"):
        schedulers.add_column(column)
    for name, what in _schedulers():
        schedulers.add_row(name, what)
    console = stdout_console()
    console.print(table)
    console.print(protocols)
    console.print(schedulers)
    return 0


def _scheduler_docs() -> dict[str, str]:
    """Each local scheduler's name (in the order validation lists them) and its class's documentation."""
    import inspect

    from gridemu.emulator.scenario import SCHEDULERS
    from gridemu.sites.schedulers import SCHEDULERS as CLASSES

    return {name: inspect.getdoc(CLASSES[name]) or "" for name in SCHEDULERS}


def _schedulers() -> list[tuple[str, str]]:
    """Each local scheduler's name and the first paragraph of its documentation, on one line."""
    return [(name, " ".join(doc.split("\n\n")[0].split())) for name, doc in _scheduler_docs().items()]


def _list_keys(args: argparse.Namespace) -> int:
    """``gridemu list PROTOCOL``: its [protocol] keys, their types, defaults and documentation."""
    from gridemu.model.checks import choice

    docs = _scheduler_docs()
    if args.protocol in docs and args.protocol not in registry.PROTOCOLS:  # a local scheduler: what it does
        print(f"local scheduler {args.protocol} (scheduler.name):\n{docs[args.protocol]}")
        return 0
    proto = registry.get(choice("protocol", args.protocol, tuple(registry.PROTOCOLS)))
    rows = [
        (key, kind, "(computed)" if default is None else json.dumps(default, ensure_ascii=False), doc)
        for key, kind, default, doc in proto.params.docs()
    ]
    plain = args.plain or not sys.stdout.isatty()
    if not rows:  # said, not an empty table (a script reading the keys still gets no line)
        print(f"{proto.name}: {proto.description}; it has no [protocol] keys", file=sys.stderr if plain else sys.stdout)
        return 0
    if plain:
        for row in rows:  # key, type, default (JSON), documentation
            print("\t".join(row))
        return 0
    from rich.table import Table

    table = Table(title=f"[protocol] keys of {proto.name}: {proto.description}")
    for column in ("key", "type", "default", "what it sets"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    stdout_console().print(table)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """``gridemu show SCENARIO``: its TOML on stdout, ready to edit and run (``> my.toml``)."""
    from gridemu.emulator.scenario import absolute_paths, apply_overrides
    from gridemu.emulator.scenario_toml import to_toml

    raw, source = read_scenario_file(args.scenario)
    overrides = _overrides(args.set)
    load_scenario(raw, overrides, source=source)  # a bad --set fails here, not in the copy's first run
    # Files it names, absolute: the copy runs from any folder.
    data = absolute_paths(apply_overrides(raw, overrides), source)
    print(f"# gridemu show {args.scenario}" + "".join(f" --set {p}" for p in args.set or []) + f"  (from {source})")
    sys.stdout.write(to_toml(data))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from gridemu.emulator.checkpoint import check_every
    from gridemu.emulator.gate import gate
    from gridemu.emulator.limits import Limits
    from gridemu.emulator.scenario import check_scenario

    check_every(args.checkpoint)

    sc, errors = check_scenario(args.scenario, _overrides(args.set))
    for exc in errors:  # every error it finds, one line each
        print(f"gridemu: error: {exc}", file=sys.stderr)
    if sc is None:
        return EXIT_USAGE
    wl = sc.workload
    # The run's own gate: what run would refuse before its first window, refused here.
    # Generated workloads are sized, not drawn (validating 10^8 jobs takes no memory) unless
    # the run's driver draws them too (a protocol or scheduler checks every job).
    est, _ = gate(
        sc,
        Limits.here(args.force),
        warn=False,
        checkpoint=args.checkpoint is not None,
        check=lambda est: _refuse_past_max(args, est),
    )
    print(
        f"{sc.source}: ok: {len(sc.sites)} sites, {len(sc.orgs)} organizations, {est.jobs:,.0f} jobs, "
        f"protocol {sc.protocol['name']}, workload {wl['kind']}, lookahead {sc.lookahead}"
        + (f", faults: {sc.faults.describe()}" if sc.faults is not None else "")
    )
    print(f"estimate: {est.describe()}")
    print(f"estimate: {est.resources()}")
    for line in sc.extra.get("scenario_warnings", []) + sc.extra.get("workload_warnings", []) + est.warnings():
        print(f"gridemu: warning: {line}", file=sys.stderr)
    return 0


def _max_options(p: argparse.ArgumentParser) -> None:
    for what in ("jobs", "messages", "rounds"):
        p.add_argument(f"--max-{what}", type=_limit, metavar="N", help=f"exit 2 if the run's estimated {what} exceed N")


def _limit(text: str) -> float:
    """A --max-* value: a number >= 0 (-1 was taken as a limit every run is past)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _refuse_past_max(args: argparse.Namespace, est: Any) -> None:
    """--max-jobs, --max-messages, --max-rounds: limits of the user's own on the estimate."""
    from gridemu.emulator.estimate import count_text

    for limit, value, what in (
        (args.max_jobs, est.jobs, "jobs"),
        (args.max_messages, est.messages, "messages"),
        (args.max_rounds, est.rounds, "rounds"),
    ):
        if limit is not None and value is not None and value > limit:
            past = f"about {count_text(value)} {what}, more than --max-{what} {count_text(limit)}"
            raise GridemuError(f"--max-{what}: {past} ({est.describe()})")  # the flag first, as every key


#: What a run does in each phase (engine.enter_phase), said where it takes long: from this
#: many seconds into the run, or from the start with this many sites.
PHASE_TEXT = {
    "start": "drawing the workload and building {sites:,} sites",
    "fetch": "gathering the shards' results",
    "tables": "building the result tables",
    "counterfactual": "running each organization alone (metrics.counterfactual)",
    "write": "writing the result files",
}
PHASE_AFTER_SECONDS, PHASE_SITES = 10.0, 50_000


class _ProgressBar:
    """Shows virtual time, jobs finished and events/s once a run has lasted a couple of
    seconds: a bar on a terminal; elsewhere (a log file, a batch job) one line on standard
    error every ``every`` seconds of wall time."""

    def __init__(self, delay: float = 2.0, every: float = 5.0, terminal: bool | None = None, sites: int = 0):
        self.delay, self.every = delay, every
        self.terminal = stderr_console().is_terminal if terminal is None else terminal
        self.next_line = delay
        self.bar = None
        self.task = None
        self.sites, self.t0 = sites, time.perf_counter()
        self.seen: set[str] = set()  # phases entered: a second "start" is the counterfactual's

    def phase(self, name: str) -> None:
        """A line as a run enters a phase with no windows to show (an engine.PHASE_HOOKS hook):
        building many sites, and what a long run does after its last window (a million sites
        spent 30 s before the first window and over a minute after the last, silent)."""
        text = PHASE_TEXT.get(name)
        wall = time.perf_counter() - self.t0
        again = name in self.seen
        self.seen.add(name)
        if text is None or again or not (wall >= PHASE_AFTER_SECONDS or self.sites >= PHASE_SITES):
            return  # again: the counterfactual's own start, said by its phase
        line = f"gridemu: {text.format(sites=self.sites)}" + (f" ({wall:,.0f} s so far)" if name != "start" else "")
        if self.bar is not None:
            self.bar.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=sys.stderr, flush=True)

    def __call__(self, p) -> None:
        if p.wall < self.delay:
            return
        if not self.terminal:
            if p.wall >= self.next_line:
                self.next_line = p.wall + self.every
                print(progress_line(p), file=sys.stderr, flush=True)
            return
        if self.bar is None:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("t={task.fields[vt]:>12.1f}"),
                BarColumn(),
                TextColumn("{task.fields[done]:>10,} / {task.fields[njobs]:,} jobs"),
                TextColumn("{task.fields[eps]:>10,.0f} events/s"),
                TimeElapsedColumn(),
                console=stderr_console(),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("run", total=p.end_time, vt=0.0, done=0, njobs=p.jobs_total, eps=0.0)
        self.bar.update(
            self.task,
            completed=min(p.virtual_time, p.end_time),
            vt=p.virtual_time,
            done=p.jobs_done,
            eps=p.events / max(p.wall, 1e-9),
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def progress_line(p) -> str:
    """One progress line off a terminal: virtual time against the run's end (the last release:
    past it, the jobs still running say how far the run is), jobs done, speed."""
    if p.virtual_time > p.end_time:
        where = f"past the last release at {p.end_time:,.1f}"
    else:
        share = f" ({100 * p.virtual_time / p.end_time:.0f} %)" if math.isfinite(p.end_time) and p.end_time > 0 else ""
        where = f"of {p.end_time:,.1f}{share}"
    return (
        f"gridemu: t={p.virtual_time:,.1f} {where}, {p.jobs_done:,} / {p.jobs_total:,} jobs done, "
        f"{p.events / max(p.wall, 1e-9):,.0f} events/s, {p.wall:,.0f} s"
    )


def cmd_run(args: argparse.Namespace) -> int:
    from gridemu.emulator.api import reserve_folder, run, undo_folder

    overrides = _overrides(args.set, args.warmup)
    backend = args.backend or ("ray" if args.address else None)
    scenario = load_scenario(args.scenario, overrides, seed=args.seed, backend=backend, shards=args.shards)
    if (args.max_jobs, args.max_messages, args.max_rounds) != (None, None, None):
        from gridemu.emulator.gate import gate
        from gridemu.emulator.limits import Limits

        # Before any folder is made.
        gate(scenario, Limits.here(args.force), warn=False, check=lambda est: _refuse_past_max(args, est))
    reserved = args.out is None  # runs/NAME-TIME: two runs started in the same second get a folder each
    out = reserve_folder(_out_dir(args)) if reserved else check_out(args.out, args.overwrite)  # before the run
    for line in scenario.extra.get("scenario_warnings", []):
        print(f"gridemu: warning: {line}", file=sys.stderr)
    if args.force and scenario.workload["kind"] in ("poisson", "streams"):  # past a budget: said, not refused
        from gridemu.emulator.estimate import estimate

        for line in estimate(scenario).warnings(forced=True):
            print(f"gridemu: warning: {line}", file=sys.stderr)
    try:
        result = _with_progress(
            args,
            out,
            lambda bar: run(
                scenario,
                address=args.address,
                on_progress=bar,
                out=out,
                overwrite=args.overwrite,
                checkpoint=args.checkpoint,
                force=args.force,
            ),
            sites=len(scenario.sites),
        )
    except BaseException:
        if reserved:
            undo_folder(out, made=True, marked_now=False)  # only while it holds nothing but the marker
        raise
    return _unfinished(result.summary, scenario.horizon, args.strict)


def _with_progress(args: argparse.Namespace, out: Path, go: Any, hint: Path | None = None, sites: int = 0) -> Any:
    """Run ``go(progress bar)`` (no bar with --quiet, so a run where no site talks keeps its
    single window), name the checkpoint to resume from if stopped, and print the summary."""
    from gridemu.emulator import engine
    from gridemu.emulator.report import print_summary

    bar = None if args.quiet else _ProgressBar(sites=sites)
    hooks = engine.PHASE_HOOKS
    if bar is not None:
        hooks.append(bar.phase)
    try:
        result = go(bar)
    except (KeyboardInterrupt, Terminated, SystemError):
        _resume_hint(hint or out, getattr(args, "plugin", None) or [])
        raise
    finally:
        if bar is not None:
            hooks.remove(bar.phase)
            bar.close()
    if not args.quiet:
        print_summary(result.summary)
        print(f"results written to {result.folder or out}/")
    note = barrier_note(result.summary)
    if note:
        print(f"gridemu: note: {note}", file=sys.stderr)
    return result


#: A Ray run's window loop that took at least this long while each shard's sites worked less
#: than this share of it went to barriers (docs/benchmarks.md, chapter-4 protocols).
BARRIER_NOTE_SECONDS, BARRIER_NOTE_SHARE = 10.0, 0.25


def barrier_note(summary: dict) -> str | None:
    """Advice after a Ray run that spent its time in barriers (a chatty protocol: thousands of
    windows with little work in each), where one process would have been faster."""
    g = summary["global"]
    if g.get("backend") != "ray" or g.get("site_cpu_seconds") is None or not g.get("windows"):
        return None
    loop = g["wall_seconds"] - g.get("setup_seconds", 0.0)
    work = g["site_cpu_seconds"] / max(1, g["shards"])
    if loop < BARRIER_NOTE_SECONDS or work >= BARRIER_NOTE_SHARE * loop:
        return None
    return (
        f"{g['windows']:,} windows took {loop:.0f} s ({1000 * loop / g['windows']:.1f} ms each), and each shard's "
        f"sites worked {work:.1f} s of it: on Ray every window waits for every shard's messages, so a run this "
        "chatty is faster in one process (--backend inprocess)"
    )


def _resume_hint(out: Path, plugins: list[str]) -> None:
    """The command that goes on from the checkpoint, with the plug-ins the run loaded (a resume
    without them is refused)."""
    from gridemu.emulator.checkpoint import FILE

    if (out / FILE).is_file():
        again = "".join(f" --plugin {shlex.quote(p)}" for p in plugins)
        print(f"gridemu: the last checkpoint is in {out}/{FILE}: gridemu resume {out}{again}", file=sys.stderr)


def cmd_resume(args: argparse.Namespace) -> int:
    from gridemu.emulator.api import resume
    from gridemu.emulator.checkpoint import FILE

    folder = Path(args.dir)
    if (folder / "summary.json").is_file() and not (folder / FILE).exists() and not folder.is_symlink():
        # The run went through: its results replaced the checkpoint (docs/reliability.md).
        print(f"{folder}: the run is complete (summary.json), nothing to resume")
        return 0
    out = check_out(args.out, args.overwrite) if args.out else folder  # fail before the run
    result = _with_progress(
        args,
        out,
        lambda bar: resume(
            folder,
            backend=args.backend,
            address=args.address,
            on_progress=bar,
            checkpoint=args.checkpoint,
            out=args.out,
            overwrite=args.overwrite,
        ),
        hint=folder if args.checkpoint is None else out,
    )
    return _unfinished(result.summary, float(result.scenario["run"]["horizon"]), args.strict)


#: A run with a horizon that leaves more than this share of its jobs unfinished says so:
#: its means cover a biased sample (the short jobs, the early ones).
UNFINISHED_SHARE = 0.05


def _unfinished(summary: dict, horizon: float, strict: bool) -> int:
    """Warn when a run without a horizon ended with jobs that never finished (a job too wide
    for the site it was sent to stays queued there), or a horizon left more than
    :data:`UNFINISHED_SHARE` of them unfinished; ``--strict`` makes the first exit code 1."""
    states = summary["global"]["jobs_by_state"]
    left = {state: n for state, n in states.items() if state != "done" and n}
    total = summary["global"]["jobs"]
    what = ", ".join(f"{state} {n:,}" for state, n in left.items())
    if math.isfinite(horizon):
        # Jobs still pending were not yet released at the horizon: outside the run, not unfinished.
        inside = {state: n for state, n in left.items() if state != "pending"}
        n, of = sum(inside.values()), total - left.get("pending", 0)
        if n > UNFINISHED_SHARE * of:
            what = ", ".join(f"{state} {k:,}" for state, k in inside.items())
            print(
                f"gridemu: warning: {n:,} of the {of:,} jobs released before the horizon t={horizon:g} "
                f"({100 * n / of:.0f} %) never finished ({what}); mean flow time and makespan cover the finished "
                "jobs only",
                file=sys.stderr,
            )
        return 0
    if not left:
        return 0
    if "stalled_at" in summary["global"]:
        print(
            f"gridemu: warning: the run stopped at t={summary['global']['stalled_at']:g}: no job could move any more "
            "(none running, arriving or travelling) and only the protocol's timers were left",
            file=sys.stderr,
        )
    print(
        f"gridemu: warning: {sum(left.values()):,} of {total:,} jobs never finished ({what}); mean flow time and "
        "makespan cover the finished jobs only (jobs.parquet has each job's state)",
        file=sys.stderr,
    )
    return 1 if strict else 0


def cmd_report(args: argparse.Namespace) -> int:
    from gridemu.emulator.figures import check_format, parse_window
    from gridemu.emulator.report import parse_sites, report

    parse_sites(args.gantt_sites, None)  # a typo is one line before any work
    check_format(args.format, args.dpi)
    window = parse_window(args.window)
    asked = [
        flag
        for flag, given in (("--gantt", args.gantt), ("--gantt-sites", args.gantt_sites), ("--window", window))
        if given
    ]
    if args.no_plot and asked:
        raise GridemuError(f"{asked[0]} draws the Gantt chart, a figure: leave out --no-plot")
    if args.warmup is not None:
        check_number("--warmup", args.warmup, nonneg=True, finite=True)
    report(
        Path(args.dir),
        plot=not args.no_plot,
        gantt=args.gantt or args.gantt_sites is not None or window is not None,
        gantt_sites=args.gantt_sites,
        fmt=args.format,
        dpi=args.dpi,
        window=window,
        warmup=args.warmup,
    )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from gridemu.emulator.export import check_file, export

    out = check_file(Path(args.out), args.overwrite) if args.out else None  # before any work
    print(f"{args.format} written to {export(Path(args.dir), args.format, out)}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from gridemu.emulator.sweep import SweepFailed, parse_grid, sweep

    grid = parse_grid(args.grid or [])
    out = _out_dir(args, prefix="sweep-")
    try:
        sweep(
            args.scenario,
            grid,
            repeat=args.repeat,
            overrides=_overrides(args.set, args.warmup),
            out=out,
            address=args.address,
            quiet=args.quiet,
            workers=args.workers,
            overwrite=args.overwrite,
            backend=args.backend,
            force=args.force,
            check=lambda est: _refuse_past_max(args, est),
        )
    except SweepFailed as exc:  # the finished points are written: not a usage error
        print(f"gridemu: sweep: {exc}", file=sys.stderr)
        return 1
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gridemu")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gridemu", description="Emulate multi-organization computational grids.")
    parser.add_argument("--version", action="version", version=f"gridemu {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list shipped scenarios and the protocols they may name, or one protocol's keys")
    p.add_argument(
        "protocol",
        nargs="?",
        help="list this protocol's [protocol] keys: type, default and what each sets (a local scheduler: what it does)",
    )
    p.add_argument(
        "--plain",
        action="store_true",
        help="tab-separated lines: kind, name, description (and a protocol's keys); the default when not on a terminal",
    )
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="print a scenario's TOML (gridemu show quickstart > my.toml: a copy to edit)")
    p.add_argument("scenario", help="the name of a shipped scenario, or a scenario file")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key (repeatable)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("validate", help="check a scenario; errors name the key")
    p.add_argument("scenario", help="a scenario file or the name of a shipped scenario")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key (repeatable)")
    _max_options(p)
    p.add_argument(
        "--force",
        action="store_true",
        help="go on past the estimate's memory and wall-time budgets (docs/reliability.md)",
    )
    p.add_argument(
        "--checkpoint",
        type=float,
        metavar="SECONDS",
        help="estimate a run that writes checkpoints (run --checkpoint): their memory counts",
    )
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("run", help="run a scenario and write its results")
    p.add_argument("scenario", help="a scenario file or the name of a shipped scenario")
    _max_options(p)
    p.add_argument("--seed", type=int, help="the run's seed (default: run.seed of the scenario)")
    p.add_argument("--out", help="result folder (default runs/<scenario>-<time>); written whole or not at all")
    p.add_argument("--overwrite", action="store_true", help="replace the results of an earlier run in --out")
    p.add_argument(
        "--backend", choices=["inprocess", "ray"], help="one process, or shards on Ray actors (default: run.backend)"
    )
    p.add_argument("--shards", type=int, help="number of shards (default: Ray's CPUs, or 1 in-process)")
    p.add_argument("--address", help="join a Ray cluster: auto, or ray://host:port (implies --backend ray)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress and no result tables (the files are written)")
    p.add_argument(
        "--strict", action="store_true", help="exit 1 when a run without a horizon ends with unfinished jobs"
    )
    _warmup_option(p)
    p.add_argument(
        "--checkpoint",
        type=float,
        metavar="SECONDS",
        help="save the run's state at a barrier every SECONDS of wall time in OUT (gridemu resume OUT)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="go on past the estimate's memory and wall-time budgets (docs/reliability.md)",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("resume", help="go on with a stopped run from the checkpoint in its result folder")
    p.add_argument("dir", help="the stopped run's --out folder (it holds checkpoint.gridemu)")
    p.add_argument("--out", help="write the results into this folder instead (checked as run's --out); DIR is kept")
    p.add_argument("--overwrite", action="store_true", help="replace the results of an earlier run in --out")
    p.add_argument("--backend", choices=["inprocess", "ray"], help="default: the stopped run's")
    p.add_argument("--address", help="join a Ray cluster: auto, or ray://host:port")
    p.add_argument("--checkpoint", type=float, metavar="SECONDS", help="keep checkpointing every SECONDS")
    p.add_argument("--quiet", action="store_true", help="no progress and no result tables (the files are written)")
    p.add_argument(
        "--strict", action="store_true", help="exit 1 when a run without a horizon ends with unfinished jobs"
    )
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("report", help="tables and plots of a finished run")
    p.add_argument("dir", help="a run's or a sweep's result folder")
    p.add_argument("--no-plot", action="store_true", help="tables only, no figure")
    p.add_argument(
        "--gantt", action="store_true", help="also draw DIR/gantt.png: jobs as boxes of processors over time, per site"
    )
    p.add_argument(
        "--gantt-sites",
        metavar="SITES",
        help='the sites the Gantt chart draws: "all", or ids and ranges like 0-3,7 '
        "(default: the first 16; at most 200)",
    )
    p.add_argument(
        "--window",
        metavar="T0:T1",
        help="the time range the Gantt chart draws, in the run's time unit (implies --gantt; 3600: from 3600 on)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        metavar="T",
        help="a run's job figures over the jobs released from virtual time T on (0: all); not for a sweep",
    )
    figure_options(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export", help="a finished run's jobs as an SWF trace or as the jobs CSV evalys reads")
    p.add_argument("dir", help="a run's result folder")
    p.add_argument(
        "--format", choices=["swf", "evalys"], default="swf", help="swf (DIR/jobs.swf) or evalys (DIR/jobs_evalys.csv)"
    )
    p.add_argument("--out", help="the file to write instead (never half-written)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("sweep", help="run the cartesian product of settings and seeds in parallel (Ray tasks)")
    p.add_argument("scenario", help="a scenario file or the name of a shipped scenario")
    p.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2,...",
        help="a swept key and its values, TOML each (an array or table is one value); repeatable; tables and "
        "figures list the settings in this order",
    )
    p.add_argument("--repeat", type=int, default=1, help="seeds per setting: run.seed, run.seed+1, ...")
    p.add_argument("--out", help="result folder (default runs/sweep-<scenario>-<time>); written whole or not at all")
    p.add_argument("--overwrite", action="store_true", help="replace the results of an earlier sweep in --out")
    p.add_argument("--address", help="join a Ray cluster: auto, or ray://host:port")
    p.add_argument("--workers", type=int, help="parallel tasks (default: Ray's CPUs)")
    _max_options(p)
    p.add_argument(
        "--backend",
        choices=["ray", "inprocess"],
        default="ray",
        help="ray: runs in parallel as Ray tasks (default); inprocess: one after another, no Ray",
    )
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key (repeatable)")
    p.add_argument(
        "--force",
        action="store_true",
        help="go on past the estimate's memory and wall-time budgets (docs/reliability.md)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress and no table")
    _warmup_option(p)
    p.set_defaults(func=cmd_sweep)
    for name, p in sub.choices.items():
        if name in PLUGIN_COMMANDS:
            p.add_argument(
                "--plugin",
                action="append",
                metavar="MODULE",
                help="import a protocol of your own first: a .py file or a "
                "module name (its PROTOCOL is registered; repeatable)",
            )
    return parser


def _warmup_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--warmup",
        type=float,
        metavar="T",
        help="leave jobs released before virtual time T out of every job figure (--set metrics.warmup=T)",
    )


#: The commands that may load a protocol of the user's (``--plugin``); a Ray sweep's tasks
#: run in other processes, which would not have it, so sweep takes it in-process only.
PLUGIN_COMMANDS = ("list", "validate", "run", "resume", "report", "sweep")


def _load_plugins(args: argparse.Namespace) -> None:
    from gridemu.emulator.plugins import load_plugin

    targets = getattr(args, "plugin", None) or []
    if targets and args.command == "sweep" and args.backend != "inprocess":
        raise GridemuError("--plugin: a sweep's Ray tasks would not see the protocol: add --backend inprocess")
    for target in targets:
        load_plugin(target)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "shards", None) is not None and args.shards <= 0:
        parser.exit(EXIT_USAGE, f"gridemu: error: --shards: must be >= 1, got {args.shards}\n")
    if getattr(args, "repeat", None) is not None and args.repeat <= 0:
        parser.exit(EXIT_USAGE, f"gridemu: error: --repeat: must be >= 1, got {args.repeat}\n")
    if argv is None and args.command in SUPERVISED and not getattr(args, "address", None) and hasattr(os, "fork"):
        return _supervise()
    previous = _stop_on_sigterm()
    try:
        try:
            _load_plugins(args)
            return args.func(args)
        except SystemError as exc:
            # SIGTERM inside a Ray call (ray.get checks signals): Ray wraps our Terminated.
            if isinstance(exc.__cause__, Terminated):
                raise exc.__cause__ from None
            raise
    except Terminated:
        print("gridemu: terminated (SIGTERM)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except InvariantError as exc:
        print(f"gridemu: invariant violated: {exc}", file=sys.stderr)
        return EXIT_INVARIANT
    except GridemuError as exc:
        print(f"gridemu: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        lost = args.command == "run" and getattr(args, "checkpoint", None) is None
        print(
            "gridemu: interrupted"
            + (
                ": nothing was written (a run's results are written whole or not at all); "
                "with --checkpoint SECONDS a run keeps its state to go on later (gridemu resume OUT)"
                if lost
                else ""
            ),
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:  # the reader stopped early (gridemu list | head): not an error
        # Point stdout at devnull so the interpreter's last flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


#: Commands that may start a local Ray instance: the ``gridemu`` command runs them in a child
#: process (:func:`_supervise`).
SUPERVISED = ("run", "resume", "sweep")


def _supervise() -> int:
    """Run the command in a child process and wait for it. When the local Ray instance's
    raylet dies (killed, out of memory), Ray's core worker ends its process at once with exit
    code 1: no Python code runs there, so neither a gridemu line nor exit 2 could come from
    it. This parent, which starts no Ray, says it instead.

    The child has a process group of its own, so that a signal reaches it once: SIGINT and
    SIGTERM sent to this process, to its group or by a terminal (Ctrl-C) are passed on; this
    process ending for any reason sends the child SIGTERM (it stops as it would)."""
    said, word = os.pipe()
    parent = os.getpid()
    signals = {signal.SIGINT, signal.SIGTERM, signal.SIGCHLD}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)  # nothing lost between the fork and the wait
    child = os.fork()
    if child == 0:
        os.close(said)
        os.setpgid(0, 0)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
        _die_with_parent(parent)
        from gridemu.emulator import api

        def tell(out: Path, made: bool) -> None:  # each run folder made or marked, for the parent
            os.write(word, (b"m" if made else b"k") + os.fsencode(os.path.abspath(out)) + b"\0")

        api.on_folder = tell
        try:
            code = main(sys.argv[1:])
        finally:  # gridemu had its word: a result, an error line, even a traceback
            with contextlib.suppress(OSError):  # the parent is gone
                os.write(word, b"x")
        sys.exit(code)
    os.close(word)
    with contextlib.suppress(OSError):  # as the child does: whichever runs first
        os.setpgid(child, child)
    while True:
        info = signal.sigwaitinfo(signals)
        if info.si_signo != signal.SIGCHLD:
            os.kill(child, info.si_signo)
            continue
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            said_all = _read_all(said)
            finished = said_all.endswith(b"x")
            if not finished:
                _take_back(said_all)
            return _child_ended(finished, os.waitstatus_to_exitcode(status))


def _read_all(fd: int) -> bytes:
    """What the ended child wrote into the pipe ``fd`` (its writing end is closed)."""
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _take_back(said: bytes) -> None:
    """The run folders a child that died without a word made or marked (``m`` or ``k``, then
    the path and a NUL): each goes, or loses the marker and lock put into it, where nothing
    else is there yet and no other process holds it."""
    from gridemu.emulator.api import undo_folder
    from gridemu.emulator.results import locked

    for entry in said.split(b"\0")[:-1]:
        out = Path(os.fsdecode(entry[1:]))
        with contextlib.suppress(GridemuError, OSError):
            with locked(out, "take back"):
                undo_folder(out, made=entry[:1] == b"m", marked_now=entry[:1] == b"k")


def _child_ended(finished: bool, code: int) -> int:
    """The exit code of the supervised child, and one line when it ended without a word."""
    if finished and code >= 0:
        return code
    if code < 0 and -code in (signal.SIGINT, signal.SIGTERM):  # before gridemu's handlers were in place
        print("gridemu: interrupted" if -code == signal.SIGINT else "gridemu: terminated (SIGTERM)", file=sys.stderr)
        return 128 - code
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"ended at once with exit code {code}"
    print(
        f"gridemu: error: the run's process {how}, without a word: its local Ray instance failed (its raylet "
        "was killed, or ran out of memory) or the system stopped it; results are written whole or not at all, "
        "and a checkpoint kept with --checkpoint resumes it (gridemu resume OUT)",
        file=sys.stderr,
    )
    return EXIT_USAGE


def _die_with_parent(parent: int) -> None:
    """SIGTERM to this process when its parent ends (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it ended before the call above
        os.kill(os.getpid(), signal.SIGTERM)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that the run unwinds like an interrupt: the
    shards (Ray actors) are closed and no result folder is left half-written."""


def _stop_on_sigterm() -> Any:
    last = [-math.inf]

    def stop(signum: int, frame: Any) -> None:
        # A signal to every process of a job (systemd, Slurm) reaches the gridemu command and
        # its child at once, and the command passes its own on: the same stop, not a second one.
        now = time.monotonic()
        if now - last[0] < 1.0:
            return
        last[0] = now
        raise Terminated()

    try:
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (main() called from a worker thread): leave it
        return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
