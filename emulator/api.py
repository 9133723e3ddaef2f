"""The Python API: ``emulator.run(scenario, seed=..., backend=..., overrides={...})``.

The CLI is a thin layer over this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from gridemu.brokers.metrics import fairness_summary
from gridemu.brokers.protocol import RunFacts, Summary
from gridemu.emulator import checkpoint as ckpt
from gridemu.emulator.checks import check_conservation, check_guarantees
from gridemu.emulator.coordinator import run_windows
from gridemu.emulator.engine import Progress, RawRun
from gridemu.emulator.gate import counterfactual, gate
from gridemu.emulator.limits import Limits
from gridemu.emulator.plugins import require_registered
from gridemu.emulator.results import (
    PIECE_COLUMNS,
    RunResult,
    check_out,
    job_table,
    labelled,
    piece_table,
    site_table,
    summarize,
    timeseries_table,
    usage_table,
)
from gridemu.emulator.scenario import Scenario, load_scenario
from gridemu.model.errors import ScenarioError
from gridemu.sites.sections import SectionFacts, given


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
) -> RunResult:
    """Run one emulation and return its tables (pandas) and summary (dict).

    ``scenario`` is a path, a shipped scenario name, a dict or a loaded Scenario;
    ``seed``, ``backend`` and ``shards`` override ``run.*``; ``overrides`` maps dotted
    keys to values (as ``--set``). ``address`` joins a Ray cluster (``auto`` or
    ``ray://host:port``) and implies the Ray backend. ``out`` writes the result files (all
    or nothing; checked before any work; a folder with an earlier run's results only with
    ``overwrite``).
    ``recurrence=False`` forces the event loop where the FCFS recurrence would apply.
    ``checkpoint``: seconds (of wall time) between checkpoints at barriers, written to
    ``out/checkpoint.pkl`` for :func:`resume` (0: at every barrier; see emulator/checkpoint.py).
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
    if checkpoint is not None and not checkpoint >= 0:
        raise ScenarioError("--checkpoint", f"must be a number of seconds >= 0, got {checkpoint}")
    target = None
    if out is not None:
        check_out(out, overwrite)  # before any work
        if checkpoint is not None:
            Path(out).mkdir(parents=True, exist_ok=True)
            target = Path(out) / ckpt.FILE
    _, work = gate(scenario, Limits.here(force))
    raw = run_windows(
        scenario,
        address=address,
        on_progress=on_progress,
        recurrence=recurrence,
        checkpoint_every=checkpoint,
        checkpoint_to=target,
        workload=work,
    )
    result = _finish(raw)
    if out is not None:
        result.write(out, overwrite)  # replaces the folder, and the checkpoint with it
    return result


def resume(
    out: str | Path,
    *,
    backend: str | None = None,
    address: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    checkpoint: float | None = None,
) -> RunResult:
    """Go on with a stopped run from the checkpoint in ``out`` and write its results there:
    the same job table as a run that was never stopped. ``backend`` may differ from the
    stopped run's (shards are the same objects on either). A run of a protocol that is not
    shipped goes on only once that protocol is registered again (the checkpoint names it)."""
    state = ckpt.load(Path(out))
    require_registered(state["scenario"]["protocol"]["name"], f"resume {out}")
    scenario = load_scenario(state["scenario"], source=state["source"], backend=backend or state["backend"])
    raw = run_windows(
        scenario,
        address=address,
        on_progress=on_progress,
        resume=state["checkpoint"],
        n_shards=state["shards"],
        checkpoint_every=checkpoint,
        checkpoint_to=Path(out) / ckpt.FILE if checkpoint is not None else None,
    )
    result = _finish(raw)
    result.write(out, overwrite=False)
    return result


def _finish(raw: RawRun) -> RunResult:
    scenario = raw.scenario
    pieces = piece_table(raw)
    check_conservation(pieces, raw.jobs)  # causality: each shard checked its own sites (Shard.results)
    table = job_table(pieces)
    check_guarantees(table, scenario.horizon)
    sites = site_table(raw, pieces)
    local = None
    if scenario.data["metrics"].get("counterfactual") == "local":
        # The same workload with no cooperation: what each organization would have had alone.
        local = job_table(piece_table(run_windows(counterfactual(scenario), warn=False)))
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
        summary=summary,
        scenario=scenario.data,
        pieces=_piece_rows(pieces, jobs, scenario.orgs, raw.groups),
    )


def _piece_rows(pieces: pd.DataFrame, jobs: pd.DataFrame, orgs: list[str], groups: list[str]) -> pd.DataFrame:
    """The labelled piece table; where no job was split it shares the job table's columns
    (the same rows: a second labelled copy would be the run's largest object again)."""
    if len(pieces) != len(jobs):
        return labelled(pieces, orgs, groups, PIECE_COLUMNS)
    cols = {c: (pieces[c] if c == "fragment" else jobs[c]) for c in PIECE_COLUMNS}
    return pd.DataFrame(cols, copy=False)
