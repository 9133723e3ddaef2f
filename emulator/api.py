"""The Python API: ``emulator.run(scenario, seed=..., backend=..., overrides={...})``.

The CLI is a thin layer over this module.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from gridemu.brokers.metrics import fairness_summary
from gridemu.brokers.protocol import RunFacts, Summary
from gridemu.emulator import checkpoint as ckpt
from gridemu.emulator.checks import check_conservation, check_guarantees
from gridemu.emulator.coordinator import run_windows
from gridemu.emulator.engine import Progress, RawRun, Workload, enter_phase, prepare_workload
from gridemu.emulator.gate import counterfactual, gate
from gridemu.emulator.limits import Limits
from gridemu.emulator.provenance import provenance
from gridemu.emulator.results import (
    LOCK,
    MARKER,
    PIECE_COLUMNS,
    ForeignEntries,
    RunResult,
    check_out,
    job_table,
    labelled,
    locked,
    marked,
    outage_table,
    partial_folder,
    piece_table,
    site_table,
    summarize,
    take_back_parents,
    timeseries_table,
    usage_table,
    whole_pieces,
    write_marker,
)
from gridemu.emulator.scenario import Scenario, load_scenario
from gridemu.model.errors import GridemuError
from gridemu.sites.sections import SectionFacts, given

#: Told of each run folder this process makes or marks when a run starts (``made``: it made
#: the folder; else it marked the user's empty one). The ``gridemu`` command's supervisor
#: (emulator/cli.py) takes such a folder back when its child dies before a word: no Python
#: code of the child runs after a SIGKILL, or after Ray ends it when its raylet dies.
on_folder: Callable[[Path, bool], None] | None = None


def run(
    scenario: str | Path | dict[str, Any] | Scenario,
    *,
    seed: int | None = None,
    backend: str | None = None,
    shards: int | None = None,
    overrides: dict[str, Any] | None = None,
    address: str | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    recurrence: bool = True,
    checkpoint: float | None = None,
    force: bool = False,
    warn: bool = True,
) -> RunResult:
    """Run one emulation and return its tables (pandas) and summary (dict).

    ``scenario`` is a path, a shipped scenario name, a dict or a loaded Scenario;
    ``seed``, ``backend`` and ``shards`` override ``run.*``; ``overrides`` maps dotted
    keys to values (as ``--set``). ``address`` joins a Ray cluster (``auto`` or
    ``ray://host:port``) and implies the Ray backend. ``out`` writes the result files (all
    or nothing; checked before any work: missing, empty or a gridemu run folder, one with an
    earlier run's results only with ``overwrite``; see results.check_out).
    ``warn=False`` leaves the workload's warnings (summary.json keeps them) and the long-run
    note unprinted (a sweep prints each once for all its runs).
    ``recurrence=False`` forces the event loop where the FCFS recurrence would apply.
    ``checkpoint``: seconds (of wall time) between checkpoints at barriers, written to
    ``out/checkpoint.gridemu`` for :func:`resume` (0: at every barrier; see emulator/checkpoint.py).
    Before any work, :func:`gridemu.emulator.gate.gate` makes every check ``gridemu validate``
    makes; ``force`` lets a run past the memory and wall-time budgets of its estimate.
    """
    if address and backend is None:
        backend = "ray"
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, overrides, seed=seed, backend=backend, shards=shards)
    elif overrides or seed is not None or backend is not None or shards is not None:
        scenario = load_scenario(
            scenario.data, overrides, source=scenario.source, seed=seed, backend=backend, shards=shards
        )
    ckpt.check_every(checkpoint)
    if out is not None:
        out = check_out(out, overwrite)  # before any work
    _, work = gate(scenario, Limits.here(force), warn, checkpoint=checkpoint is not None)
    if out is None:
        return _finish(_run_windows(scenario, address, on_progress, recurrence, checkpoint, None, work))
    # The folder is made (and marked) now and locked while the run goes, whether checkpoints
    # go into it or only the results at the end: a second run, or a resume, into the same
    # folder is refused at once rather than after doing all its work.
    made = not out.is_dir()
    if made:
        make_run_folder(out)
    marked_now = not made and marked(out) is None  # an empty folder the user made
    if marked_now:
        write_marker(out)
    if on_folder is not None and (made or marked_now):
        on_folder(out, made)
    try:
        with locked(out, "run"):
            # Again under the lock: another run may have finished into the folder since.
            check_out(out, overwrite)
            ckpt_file = None if checkpoint is None else out / ckpt.FILE
            raw = _run_windows(scenario, address, on_progress, recurrence, checkpoint, ckpt_file, work)
            result = _finish(raw)
            enter_phase("write")
            try:
                # Replaces the folder this run made or was allowed, checkpoint and all.
                result.write(out, overwrite=True)  # sets result.folder
            except ForeignEntries as exc:
                # Someone put a file into the folder while the run went on: it is never
                # replaced, and the run's work is not thrown away either.
                result.write(reserve_folder(out, "-results"), overwrite=True)
                print(f"gridemu: warning: {exc}; the results are in {result.folder}/ instead", file=sys.stderr)
        if result.folder != out:  # this run's lock and checkpoint there are superseded
            for name in (LOCK, ckpt.FILE):
                (out / name).unlink(missing_ok=True)
    except BaseException:
        # Stopped before any result or checkpoint was saved: what this run put there goes.
        undo_folder(out, made, marked_now)
        raise
    return result


def undo_folder(out: Path, made: bool, marked_now: bool) -> None:
    """Take back what a run that stopped early put into ``out``: the folder it made, or the
    marker and lock it wrote into the user's empty folder, where nothing else is there."""
    try:
        if not {p.name for p in out.iterdir()} <= {MARKER, LOCK}:
            return
        if made:
            shutil.rmtree(out, ignore_errors=True)
            take_back_parents(out)  # runs/ of the default --out, where this run made it
        elif marked_now:
            for name in (MARKER, LOCK):
                (out / name).unlink(missing_ok=True)
    except OSError:
        pass  # the folder is gone or unreadable: nothing of ours to take back


def reserve_folder(out: Path, suffix: str = "") -> Path:
    """Make a new run folder named ``out`` + ``suffix`` now (marked, empty, made at once), or
    with ``-2``, ``-3``, ... after it where that name is taken (another run of the same second
    took the default name, or the folder named gained files of someone else's)."""
    base = out.with_name(out.name + suffix)
    for k in range(1, 100):
        candidate = base if k == 1 else base.with_name(f"{base.name}-{k}")
        if candidate.exists():
            continue
        check_out(candidate)  # its parent made and writable
        try:
            make_run_folder(candidate)
        except OSError:
            if candidate.exists():  # made by another run since the check: the next name
                continue
            raise
        return candidate
    raise GridemuError(f"--out: {base} and 98 more names like it are taken: name a folder with --out")


def make_run_folder(out: Path) -> None:
    """Make the run folder ``out`` with its marker, all at once (a hidden sibling renamed)."""
    tmp = partial_folder(out)
    write_marker(tmp)
    try:
        os.rename(tmp, out)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # partial_folder's, just made
        raise


def _run_windows(
    scenario: Scenario,
    address: str | None,
    on_progress: Callable[[Progress], None] | None,
    recurrence: bool,
    checkpoint: float | None,
    target: Path | None,
    workload: Workload | None,
) -> RawRun:
    return run_windows(
        scenario,
        address=address,
        on_progress=on_progress,
        recurrence=recurrence,
        checkpoint_every=checkpoint,
        checkpoint_to=target,
        workload=workload,
    )


def resume(
    folder: str | Path,
    *,
    backend: str | None = None,
    address: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    checkpoint: float | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
) -> RunResult:
    """Go on with a stopped run from the checkpoint in ``folder`` and write its results there
    (or into ``out``, checked as :func:`run`'s, ``overwrite`` likewise; ``folder`` is then
    kept as it is): the same job table as a run that was never stopped. ``backend`` may
    differ from the stopped run's (shards are the same objects on either). The folder is
    locked while it runs: a second resume of it is refused at once. A run of a protocol that
    is not shipped goes on only once that protocol is registered again (the checkpoint names it)."""
    folder = Path(folder)
    if (folder / "summary.json").is_file() and not (folder / ckpt.FILE).exists() and not folder.is_symlink():
        # The run went through (its results replaced the checkpoint); the CLI says so and exits 0.
        raise GridemuError(
            f"resume: {folder}: the run is complete (summary.json), nothing to resume: gridemu.load reads its results"
        )
    if folder.is_symlink() or marked(folder) != "run":
        if not (folder / ckpt.FILE).exists():
            ckpt.load(folder)  # says what is missing: no checkpoint, or an older one
        raise GridemuError(f"resume: {folder} is no gridemu run folder (no {MARKER}): it is not resumed")
    target = folder if out is None else check_out(out, overwrite)
    with locked(folder, "resume"):
        state = ckpt.load(folder)
        scenario = load_scenario(state["scenario"], source=state["source"], backend=backend or state["backend"])
        if checkpoint is not None and target != folder:
            if not target.is_dir():
                make_run_folder(target)
            elif marked(target) is None:
                write_marker(target)
        raw = run_windows(
            scenario,
            address=address,
            on_progress=on_progress,
            resume=state["checkpoint"],
            n_shards=state["shards"],
            checkpoint_every=checkpoint,
            checkpoint_to=target / ckpt.FILE if checkpoint is not None else None,
        )
        result = _finish(raw)
        enter_phase("write")
        # Its own folder (or one it was allowed) is replaced, checkpoint and all.
        result.write(target, overwrite=target == folder or overwrite or checkpoint is not None)  # sets result.folder
    return result


def _finish(raw: RawRun) -> RunResult:
    scenario = raw.scenario
    enter_phase("tables")
    pieces = piece_table(raw)
    check_conservation(pieces, raw.jobs)  # causality: each shard checked its own sites (Shard.results)
    table = job_table(pieces)
    check_guarantees(table, scenario.horizon)
    sites = site_table(raw, pieces)
    local = None
    if scenario.data["metrics"].get("counterfactual") == "local":
        # The same workload with no cooperation: what each organization would have had alone.
        # It runs in this process (no shard to lose), from the seed: a stopped run's resume
        # runs it again.
        enter_phase("counterfactual")
        alone = counterfactual(scenario)
        # The first run's jobs (gathered from its shards where they drew them), not drawn again.
        work = prepare_workload(alone, warn=False, same_as=Workload(raw.jobs, raw.groups, None))
        local = job_table(piece_table(run_windows(alone, warn=False, workload=work)))
    summary = summarize(raw, table, sites, local)
    plugin = scenario.plugin
    added = (
        plugin.summary(RunFacts(scenario.params, scenario.facts(), raw.jobs, table, pieces)) if plugin.summary else None
    )
    if not isinstance(added, Summary):
        added = Summary(protocol=added)
    for org, figures in added.organizations.items():
        summary["organizations"][org].update(figures)
    sections = dict(added.sections)
    fairness = scenario.data["metrics"].get("fairness")
    # The migration paper's figures for any protocol: asked for, or its proposition workloads.
    if "fairness" not in sections and (fairness or (fairness is None and scenario.workload["kind"] == "proposition")):
        sections["fairness"] = fairness_summary(raw.jobs, table)
    summary.update(sections)
    if added.protocol is not None:
        summary["protocol"] = added.protocol
    summary["provenance"] = provenance(scenario.data)
    jobs = labelled(table, scenario.orgs, raw.groups)
    timeseries = timeseries_table(raw)
    for section in given(scenario.data) if not len(timeseries) else []:
        # A scheduler section's figures (sites/sections.py); its series fills timeseries.parquet.
        hooks, used = section.hooks(), set(np.unique(raw.jobs["group"]).tolist())
        state, _ = hooks.shared(scenario.data[section.name], raw.groups, used, scenario.folder)
        facts = SectionFacts(state, jobs, raw.groups, sites, scenario.horizon, scenario.data["metrics"])
        summary[section.name], timeseries = hooks.results(facts)
    return RunResult(
        jobs=jobs,
        sites=sites,
        timeseries=timeseries,
        usage=usage_table(raw),
        outages=outage_table(raw),
        summary=summary,
        scenario=scenario.data,
        saved_scenario=scenario.saved_data(),
        pieces=_piece_rows(pieces, jobs, scenario.orgs, raw.groups),
    )


def _piece_rows(pieces: pd.DataFrame, jobs: pd.DataFrame, orgs: list[str], groups: list[str]) -> pd.DataFrame:
    """The labelled piece table; where no job was split it shares the job table's columns."""
    if len(pieces) != len(jobs):
        return labelled(pieces, orgs, groups, PIECE_COLUMNS)
    return whole_pieces(jobs, pieces["fragment"])
