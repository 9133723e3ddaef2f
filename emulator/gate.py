"""The gate of a run: every refusal ``gridemu run`` can make before its first window, in one
place, so that ``gridemu validate`` makes it too and nothing it accepts is thrown away after
the work (issue 45).

In order: the estimate (memory, wall time, rounds, messages: budgets that ``--force`` lets
through) and the float resolution of the clock; the jobs drawn where the driver draws them,
checked against the sites' schedulers and the protocol (``prepare_workload``), or a small
workload that the shards would draw drawn here to see it is not empty; the scheduler
sections' states built from the jobs' groups (a fairshare policy that does not match them);
the counterfactual run's scenario and the same checks of it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from gridemu.brokers import registry
from gridemu.brokers.protocol import ScenarioFacts
from gridemu.emulator.engine import Workload, prepare_workload, scheduler_states
from gridemu.emulator.estimate import FORCE_HINT, Estimate, check_resolution, estimate
from gridemu.emulator.limits import Limits
from gridemu.emulator.scenario import Scenario
from gridemu.emulator.scenario_toml import copy_tree
from gridemu.model.errors import ScenarioError
from gridemu.model.inputs import gib
from gridemu.scenarios.workload import generate_jobs

#: Below this many expected jobs, a workload the shards would draw is drawn here to see that
#: it holds one (the run refuses an empty one after building its shards); above it, an empty
#: Poisson draw has a probability below e^-1000.
FEW_JOBS = 1000
#: A run estimated to take longer than this (seconds in one process) is announced before it
#: starts, with its estimate: it is within the budget, so it runs, but not in a minute.
LONG_RUN = 600.0
#: Workloads that are sized without being drawn; the others are drawn (or read) first and
#: sized from their job table, so a trace is read once.
SIZED = ("poisson", "streams")


def counterfactual(scenario: Scenario) -> Scenario:
    """The same workload with no cooperation (``metrics.counterfactual = "local"``): what each
    organization would have had alone. The planned scheduler starts only what a protocol
    planned, so alone its sites run their jobs first come, first served (fcfs).

    Only the protocol, the backend and the scheduler of planned sites change, so the rest is
    the scenario's own, not validated again: its sites and topology were built again from the
    same seed before (8 s of a 1M-site validate's 20 s, and as long again after the run). What
    ``load_scenario`` would give with those overrides, except the description's note of them
    (tests/test_gate.py compares the two)."""
    planned = any(s.scheduler == "planned" for s in scenario.sites)
    data = copy_tree({k: v for k, v in scenario.data.items() if k != "sites"})
    data["run"].update(backend="inprocess", shards=1)
    data["protocol"] = {"name": "local"}
    sites, sites_table = scenario.sites, scenario.sites_table
    if planned:
        sites = [replace(s, scheduler="fcfs") if s.scheduler == "planned" else s for s in sites]
        data["sites"] = [
            {**site, "scheduler": "fcfs" if site["scheduler"] == "planned" else site["scheduler"]}
            for site in scenario.data["sites"]
        ]
        if data["scheduler"]["name"] == "planned":
            data["scheduler"]["name"] = "fcfs"
        if sites_table is not None:
            sites_table = {**sites_table, "scheduler": sites[0].scheduler}
    else:
        data["sites"] = scenario.data["sites"]  # read, never written: shared, not copied (a million entries)
    data = {k: data[k] for k in scenario.data}  # the scenario's order of tables (scenario.toml)
    local = registry.get("local")
    params = local.params.from_table(
        data["protocol"], ScenarioFacts(sites, data, scenario.max_latency), ignore=registry.all_keys()
    )
    data["protocol"] = {"name": "local"} | params.table()
    return replace(scenario, data=data, sites=sites, params=params, extra={}, sites_table=sites_table)


def gate(
    scenario: Scenario,
    limits: Limits | None = None,
    warn: bool = True,
    checkpoint: bool = False,
    check: Callable[[Estimate], None] | None = None,
) -> tuple[Estimate, Workload]:
    """Every check a run makes before its first window; returns the estimate and the
    workload (the jobs, or what the shards draw them from) for the run to go on with.
    ``warn``: the workload's warnings, and the estimate of a run past :data:`LONG_RUN`, are
    printed (``run``); validate prints its own. ``checkpoint``: the run writes checkpoints
    (their memory counts). ``check`` (the CLI's ``--max-*``) sees the estimate as soon as it
    is made and may refuse it, before the workload's and the counterfactual's checks."""
    limits = limits or Limits.here()
    if scenario.workload["kind"] in SIZED:
        est = _checked(estimate(scenario, checkpoint=checkpoint), limits, check)
        _short_span(scenario, est, False)  # printed with the workload's own warnings
        work = prepare_workload(scenario, warn)
    else:
        _presize(scenario, limits)
        work = prepare_workload(scenario, warn)
        est = _checked(estimate(scenario, work.jobs, checkpoint), limits, check)
        _short_span(scenario, est, warn)
    _too_wide_for_some(scenario, work, warn)
    if work.jobs is not None:
        scheduler_states(scenario, work.jobs, work.groups)
    elif est.jobs < FEW_JOBS:
        # The shards draw the jobs; a run whose draw is empty stops once they are built.
        generate_jobs(scenario)  # raises no_jobs_error on an empty draw
    if scenario.data["metrics"].get("counterfactual") == "local":
        try:  # the second run's own checks, so that it cannot fail after the first
            alone = counterfactual(scenario)
            alone_work = prepare_workload(alone, warn=False, same_as=work)
            if alone_work.jobs is not None:
                scheduler_states(alone, alone_work.jobs, alone_work.groups)
        except ScenarioError as exc:
            raise ScenarioError(
                "metrics.counterfactual",
                f'the "local" run of the same jobs (every organization alone) cannot run: {exc}',
            ) from None
    if warn and est.wall > LONG_RUN:  # announced once nothing can refuse the run any more
        print(
            f"gridemu: note: {est.resources()}; Ctrl-C stops it (with --checkpoint, to resume later)",
            file=sys.stderr,
        )
    return est, work


def _short_span(scenario: Scenario, est: Estimate, say: bool) -> None:
    """A periodic protocol whose jobs are all released within one of its rounds acts on few of
    them: a sweep over ``sites.count`` with a total ``workload.jobs`` shortened the span as the
    sites grew (20,000 sites: 5.6 time units, a report every 10) and the mean flow time seemed to
    fall with scale. Said as a workload warning (summary.json keeps it)."""
    every = est.traffic.round_every
    if est.rounds is None or not (0 < every < math.inf) or not est.jobs or est.span >= every:
        return
    line = (
        f"workload: the jobs are released over {est.span:,.4g} {est.unit}, less than one round of "
        f"{scenario.protocol['name']} (one every {every:g}): it acts on few of them before arrivals end"
        + (
            "; workload.jobs is a total over the sites (more sites, a shorter span): workload.until keeps the span"
            if "jobs" in scenario.workload and scenario.workload["kind"] == "poisson"
            else ""
        )
    )
    _workload_warning(scenario, line, say)


def _too_wide_for_some(scenario: Scenario, work: Workload, say: bool) -> None:
    """A protocol that may send a job to a site without looking at its processors (it does not
    declare the ``widths`` capability), with jobs wider than the narrowest site: the run stops
    the first time it sends one there (exit 3, mid-run), though validate said ok (a user
    walk: a trace's machine split into sites of 12 and 13 processors under random)."""
    # A workload the shards draw (Poisson) is refused at validation where a job may be wider
    # than a site (scenarios/workload.py: _check_procs): only a job table can hold such jobs.
    if scenario.plugin.can("widths") or work.jobs is None:
        return
    narrow = min(scenario.sites, key=lambda s: s.procs)
    wide = int(np.count_nonzero(work.jobs["procs"] > narrow.procs))
    if not wide:
        return
    line = (
        f"workload: {wide:,} jobs need more processors than site {narrow.name} has ({narrow.procs}); the "
        f"{scenario.protocol['name']} protocol chooses a job's site without looking at its processors "
        "(it does not declare the widths capability), and the run stops if it sends one there: give "
        "every site enough processors, or use a protocol that does (gridemu list)"
    )
    _workload_warning(scenario, line, say)


def _workload_warning(scenario: Scenario, line: str, say: bool) -> None:
    """A warning about the workload found at the gate: kept with the workload's own
    (summary.json, a sweep's once-for-all), printed where those were printed already."""
    scenario.extra.setdefault("workload_warnings", []).append(line)
    if say:
        print(f"gridemu: warning: {line}", file=sys.stderr)


def _checked(est: Estimate, limits: Limits, check: Callable[[Estimate], None] | None) -> Estimate:
    check_resolution(est)
    refusal = est.refusal(limits)
    if refusal is not None:
        raise refusal
    if check is not None:
        check(est)
    return est


def _presize(scenario: Scenario, limits: Limits) -> None:
    """A generated workload that states its job count (rigid, dedicated, a job list) is held to
    the memory budget before a job is drawn."""
    from gridemu.emulator.limits import costs

    jobs = scenario.workload.get("jobs")
    if limits.force or not isinstance(jobs, int) or isinstance(jobs, bool):
        return
    need = costs().memory.get("per_job", 0.0) * jobs
    if need > limits.memory_bytes:
        raise ScenarioError(
            "workload.jobs",
            f"{jobs:,} jobs need about {gib(need)} of memory, more than the {gib(limits.memory_bytes)} available; "
            + FORCE_HINT,
        )
