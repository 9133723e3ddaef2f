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

import sys

from gridemu.emulator.engine import Workload, prepare_workload, scheduler_states
from gridemu.emulator.estimate import FORCE_HINT, Estimate, check_resolution, estimate
from gridemu.emulator.limits import Limits
from gridemu.emulator.scenario import Scenario, load_scenario
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
    planned, so alone its sites run their jobs first come, first served (fcfs)."""
    sets: dict = {"protocol": {"name": "local"}, "run.backend": "inprocess", "run.shards": 1}
    if any(s.scheduler == "planned" for s in scenario.sites):
        sets["sites"] = [
            {**site, "scheduler": "fcfs" if site["scheduler"] == "planned" else site["scheduler"]}
            for site in scenario.data["sites"]
        ]
        if scenario.data["scheduler"]["name"] == "planned":
            sets["scheduler.name"] = "fcfs"
        return load_scenario(scenario.data, sets, source=scenario.source)
    # A [sites] table stays a table (the same seed draws the same sites): its million site
    # entries were copied and checked one by one again, half of validate's 38 s at 1M sites.
    return load_scenario(scenario.saved_data(), sets, source=scenario.source)


def gate(
    scenario: Scenario, limits: Limits | None = None, warn: bool = True, checkpoint: bool = False
) -> tuple[Estimate, Workload]:
    """Every check a run makes before its first window; returns the estimate and the
    workload (the jobs, or what the shards draw them from) for the run to go on with.
    ``warn``: the workload's warnings, and the estimate of a run past :data:`LONG_RUN`, are
    printed (``run``); validate prints its own. ``checkpoint``: the run writes checkpoints
    (their memory counts)."""
    limits = limits or Limits.here()
    if scenario.workload["kind"] in SIZED:
        est = _checked(estimate(scenario, checkpoint=checkpoint), limits)
        work = prepare_workload(scenario, warn)
    else:
        _presize(scenario, limits)
        work = prepare_workload(scenario, warn)
        est = _checked(estimate(scenario, work.jobs, checkpoint), limits)
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


def _checked(est: Estimate, limits: Limits) -> Estimate:
    check_resolution(est)
    refusal = est.refusal(limits)
    if refusal is not None:
        raise refusal
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
