"""Setting up a run: the workload the driver draws and checks, sites packed on shards, the
shards' specs, and what the coordinator reports and returns (``Progress``, ``RawRun``).

The loop of windows is :mod:`gridemu.emulator.coordinator`; the window rule itself is
:mod:`gridemu.emulator.window`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from gridemu.brokers import registry
from gridemu.brokers.agent import GridInfo
from gridemu.emulator.backends import ray_cpus
from gridemu.emulator.plugins import carried
from gridemu.emulator.scenario import Scenario
from gridemu.emulator.shard import ShardSpec
from gridemu.model.jobs import take
from gridemu.scenarios.poisson import SiteDraws
from gridemu.scenarios.workload import check_scheduler_jobs, checks_jobs, generate_jobs, site_draws
from gridemu.sites.sections import given

#: Called with the name of each phase a run enters: "start" (before the workload is drawn
#: and the shards built), "fetch" (the shards' results, after the last barrier), "tables"
#: (the result tables), "counterfactual" (the run without cooperation, when asked for),
#: "write" (the result folder). The CLI's progress says them on long runs; tests send a
#: signal or kill a shard there.
PHASE_HOOKS: list[Callable[[str], None]] = []


def enter_phase(name: str) -> None:
    for hook in PHASE_HOOKS:
        hook(name)


@dataclass
class Progress:
    """What the coordinator reports after every window (for a progress bar)."""

    virtual_time: float
    end_time: float
    #: Jobs finished; with divisible load (jobs split into pieces) a lower bound: a job counts
    #: once its last piece ends, and the shards count pieces, not jobs (coordinator._report).
    jobs_done: int
    jobs_total: int
    events: int
    wall: float


@dataclass
class RawRun:
    scenario: Scenario
    jobs: np.ndarray  # the submitted workload
    groups: list[str]
    shard_results: list[dict[str, Any]]
    in_flight: list[np.ndarray]
    windows: int
    events: int
    wall_seconds: float
    backend: str
    shards: int
    extra: dict[str, Any] = field(default_factory=dict)


def pack_sites(n_sites: int, n_shards: int, packing: str = "block") -> np.ndarray:
    """Site -> shard, shard sizes differing by at most one.

    ``block``: contiguous runs of site ids (neighbours in a latency matrix ordered by
    region stay together); ``round_robin``: site i on shard i mod S (spreads a run of
    heavy sites, e.g. the first organizations of a Zipf draw, over all shards).
    """
    if packing == "round_robin":
        return np.arange(n_sites) % n_shards
    return (np.arange(n_sites) * n_shards) // n_sites


def build_shard_specs(
    scenario: Scenario,
    jobs: np.ndarray | None,
    n_shards: int,
    recurrence: bool = True,
    groups: list[str] | None = None,
    draws: SiteDraws | None = None,
) -> list[ShardSpec]:
    """One spec per shard: its sites and their jobs (``jobs``), or what they need to draw
    them (``draws``, with ``jobs`` None)."""
    sites = scenario.sites
    site_to_shard = pack_sites(len(sites), n_shards, scenario.data["run"]["packing"])
    org_index = {org: k for k, org in enumerate(scenario.orgs)}
    owners = [org_index[s.org] for s in sites]
    plugin = scenario.plugin
    info = plugin.grid_info(scenario.facts()) if plugin.grid_info else {}
    grid = GridInfo(
        len(sites),
        tuple(owners),
        scenario.seed,
        scenario.lookahead,
        scenario.max_latency,
        scenario.topology.neighbors,
        info,
    )
    job_shard = site_to_shard[jobs["submit_site"]] if jobs is not None else None
    shared, warnings = scheduler_states(scenario, jobs, groups or [])
    for line in warnings:
        print(f"gridemu: warning: {line}", file=sys.stderr)
    specs = []
    for k in range(n_shards):
        ids = np.flatnonzero(site_to_shard == k)
        specs.append(
            ShardSpec(
                shard_id=k,
                n_shards=n_shards,
                sites=[sites[i] for i in ids],
                jobs=take(jobs, job_shard == k) if n_shards > 1 and jobs is not None else jobs,
                latency=scenario.latency[ids] if isinstance(scenario.latency, np.ndarray) else scenario.latency,
                owners=[owners[i] for i in ids],
                site_to_shard=site_to_shard,
                protocol=scenario.protocol["name"],
                params=scenario.params,
                grid=grid,
                recurrence=recurrence,
                schedulers=shared,
                faults=scenario.faults,
                draws=draws,
                plugin=carried(plugin),
            )
        )
    return specs


def scheduler_states(
    scenario: Scenario, jobs: np.ndarray | None, groups: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """Scheduler -> the state its sites share, built from its section (sites/sections.py),
    and the sections' warnings; the sections' checks against the jobs' groups raise here."""
    shared: dict[str, Any] = {}
    warnings: list[str] = []
    for section in given(scenario.data):
        used = set(np.unique(jobs["group"]).tolist())
        shared[section.scheduler], lines = section.hooks().shared(
            scenario.data[section.name], groups, used, scenario.folder
        )
        warnings += lines
    return shared, warnings


def resolve_shards(scenario: Scenario, backend: str) -> int:
    shards = int(scenario.data["run"]["shards"])
    if shards == 0:
        shards = ray_cpus() if backend == "ray" else 1
    return max(1, min(shards, len(scenario.sites)))


@dataclass
class Workload:
    """The jobs of a run as the driver holds them before it: all of them (``jobs``), or what
    the shards need to draw their own sites' jobs (``draws``, with ``jobs`` None)."""

    jobs: np.ndarray | None
    groups: list[str]
    draws: SiteDraws | None


def prepare_workload(scenario: Scenario, warn: bool = True, same_as: Workload | None = None) -> Workload:
    """Draw the jobs where the driver must (see ``_drawn_in_shards``) and check them against
    the sites' schedulers and the protocol; ``warn``: print the workload's warnings (off for
    a second run of the same jobs). ``same_as``: a workload prepared already from the same
    ``[workload]``, sites and seed (the counterfactual's is the first run's): its jobs, where
    it holds them, are taken instead of drawn (or a trace read) again."""
    if same_as is not None and same_as.jobs is not None:
        jobs, groups, draws = same_as.jobs, same_as.groups, None
    else:
        draws = site_draws(scenario) if _drawn_in_shards(scenario) else None
        # With draws, each shard draws its own sites' jobs: the driver never holds them during the run.
        jobs, groups = generate_jobs(scenario) if draws is None else (None, list(scenario.orgs))
    for line in scenario.extra.get("workload_warnings", []) if warn else []:
        print(f"gridemu: warning: {line}", file=sys.stderr)
    if jobs is not None:
        check_scheduler_jobs(scenario.sites, jobs)
        if (jobs["target_site"] >= 0).any():
            j = int(jobs["job_id"][np.argmax(jobs["target_site"] >= 0)])
            registry.require(
                scenario.plugin, "targets", "protocol.name", f"job {j} names a target site (a dedicated job)"
            )
        if scenario.plugin.check_jobs is not None:
            settled = scenario.plugin.check_jobs(scenario.params, jobs, scenario.facts())
            scenario.params = settled if settled is not None else scenario.params
    return Workload(jobs, groups, draws)


def _drawn_in_shards(scenario: Scenario) -> bool:
    """Whether shards may draw their own sites' jobs: nothing before the run needs the whole
    job set (a protocol's job checks, a scheduler section's groups, a scheduler's job checks)."""
    plugin = scenario.plugin
    return (
        plugin.check_jobs is None
        and not plugin.can("targets")
        and not given(scenario.data)
        and not checks_jobs(scenario.sites)
    )
