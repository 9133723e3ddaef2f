"""The coordinator: build shards, run conservative windows, gather results.

Window rule (DESIGN.md): with T the earliest pending event or in-flight message and
B the earliest send bound of any site (an in-flight message counts as a bound of its
destination, whose agent may answer it), the next window is [T, W) with
W = max(B, T) + lookahead. No message sent inside the window can be delivered inside
it, so shards handle their events independently. Windows are capped at 1/``WINDOW_SLICES``
of the workload's span (never below the lookahead while jobs are released) where agents may
send or progress is shown (see the loop); a shorter window never changes the job table.
"""
from __future__ import annotations

import ctypes
import gc
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from gridemu.brokers import registry
from gridemu.brokers.agent import GridInfo
from gridemu.emulator import checkpoint as ckpt
from gridemu.emulator.backends import BACKENDS, ShardLost, ensure_ray, ray_cpus
from gridemu.emulator.scenario import Scenario
from gridemu.emulator.shard import ShardSpec, StepInfo
from gridemu.model.errors import GridemuError, ScenarioError
from gridemu.model.jobs import JOB_DTYPE, records, take
from gridemu.model.messages import to_batch
from gridemu.scenarios.poisson import SiteDraws
from gridemu.scenarios.workload import check_scheduler_jobs, checks_jobs, generate_jobs, no_jobs_error, site_draws

WINDOW_SLICES = 200
#: Lost shards rebuilt in one run before giving up (a node that keeps failing is not transient).
MAX_REBUILDS = 3


@dataclass
class Progress:
    """What the coordinator reports after every window (for a progress bar)."""

    virtual_time: float
    end_time: float
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
    scenario: Scenario, jobs: np.ndarray | None, n_shards: int, recurrence: bool = True, groups: list[str] | None = None,
    draws: SiteDraws | None = None,
) -> list[ShardSpec]:
    """One spec per shard: its sites and their jobs (``jobs``), or what they need to draw
    them (``draws``, with ``jobs`` None)."""
    sites = scenario.sites
    site_to_shard = pack_sites(len(sites), n_shards, scenario.data["run"]["packing"])
    org_index = {org: k for k, org in enumerate(scenario.orgs)}
    owners = [org_index[s.org] for s in sites]
    grid = GridInfo(len(sites), tuple(owners), scenario.seed, scenario.lookahead, scenario.max_latency, scenario.topology.neighbors)
    job_shard = site_to_shard[jobs["submit_site"]] if jobs is not None else None
    plugin = scenario.plugin
    extra = plugin.grid_info(scenario.facts()) if plugin.grid_info else {}
    if "policy" in scenario.data:  # the runtime policy tree every fairshare scheduler shares
        extra["policy"] = scenario.runtime_policy(groups or [], set(np.unique(jobs["group"]).tolist()))
        for k, why in enumerate(extra["policy"].partial.values()):
            if k == 5:
                print(f"gridemu: warning: and {len(extra['policy'].partial) - 5} more such groups", file=sys.stderr)
                break
            print(f"gridemu: warning: {why}", file=sys.stderr)
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
                protocol=scenario.protocol,
                grid=grid,
                recurrence=recurrence,
                extra=extra,
                faults=scenario.faults,
                draws=draws,
            )
        )
    return specs


def resolve_shards(scenario: Scenario, backend: str) -> int:
    shards = int(scenario.data["run"]["shards"])
    if shards == 0:
        shards = ray_cpus() if backend == "ray" else 1
    return max(1, min(shards, len(scenario.sites)))


def run_windows(
    scenario: Scenario,
    *,
    address: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    recurrence: bool = True,
    checkpoint_every: float | None = None,
    checkpoint_to: Path | None = None,
    resume: ckpt.Checkpoint | None = None,
    n_shards: int | None = None,
    warn: bool = True,
) -> RawRun:
    """Run a validated scenario to its horizon (or until no event is left); ``warn``: print
    the workload's warnings (off for a second run of the same jobs).

    ``checkpoint_every`` (wall seconds; 0: at every barrier) keeps a checkpoint at a
    barrier that often, written to ``checkpoint_to`` when given; a lost Ray shard rebuilds
    every shard from the last one (or from the start) and replays the windows since.
    ``resume`` goes on from a checkpoint (with its ``n_shards``)."""
    backend_name = scenario.data["run"]["backend"]
    if backend_name == "ray":
        ensure_ray(address)
    n_shards = n_shards or resolve_shards(scenario, backend_name)
    draws = site_draws(scenario) if _drawn_in_shards(scenario) else None
    if draws is None:
        jobs, groups = generate_jobs(scenario)
    else:  # each shard draws its own sites' jobs: the driver never holds them during the run
        jobs, groups = None, list(scenario.orgs)
    for line in scenario.extra.get("workload_warnings", []) if warn else []:
        print(f"gridemu: warning: {line}", file=sys.stderr)
    if jobs is not None:
        check_scheduler_jobs(scenario.sites, jobs)
        if not scenario.plugin.dedicated and (jobs["target_site"] >= 0).any():
            j = int(jobs["job_id"][np.argmax(jobs["target_site"] >= 0)])
            runs = " or ".join(repr(p.name) for p in registry.PROTOCOLS.values() if p.dedicated)
            raise ScenarioError("protocol.name", f"job {j} names a target site (a dedicated job): only protocol.name = {runs} runs such jobs")
        if scenario.plugin.check_jobs is not None:
            scenario.plugin.check_jobs(scenario.protocol, jobs, scenario.facts())
    horizon = scenario.horizon
    lookahead = scenario.lookahead
    # Random crashes ([faults] mtbf) come forever, as periodic protocols' timers do.
    periodic = scenario.plugin.periodic or (scenario.faults is not None and math.isfinite(scenario.faults.mtbf))

    t0 = time.perf_counter()
    # Shards create and drop millions of small tuples and never leave a reference cycle, so
    # the cyclic collector would only walk the live job columns over and over (9 % of a
    # 300,000-job run, growing with the job count): it is paused for the run.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    specs = build_shard_specs(scenario, jobs, n_shards, recurrence, groups, draws)
    make = BACKENDS[backend_name]
    backend = make(specs, resume.shards if resume is not None else None)
    stop = ckpt.StopAtBarrier(checkpoint_to is not None)
    try:
        status = backend.status()
        n_jobs = sum(i.submitted for i in status)
        if not n_jobs:
            raise no_jobs_error(scenario.workload)
        span = max(i.last_release for i in status)
        if math.isfinite(horizon):
            span = min(span, horizon) if span > 0 else horizon
        slice_ = max(span, lookahead) / WINDOW_SLICES
        # Every window may reach T + lookahead (W = max(B, T) + lookahead): while jobs are
        # still released, a cap below that would only add barriers.
        releasing_cap = max(slice_, lookahead)
        last = resume or ckpt.Checkpoint(0, status, [[] for _ in range(n_shards)], [math.inf] * n_shards, None)
        windows, infos, inboxes, in_min = _restart(last)
        setup = time.perf_counter() - t0  # building shards (Ray: starting actors)
        saved_at, rebuilds = time.perf_counter(), 0
        stall = _Stall(max(span, 10 * (scenario.max_latency + (scenario.faults.delay_max if scenario.faults else 0.0))))
        stalled_at = None
        while True:
            start = min(min(i.next_time for i in infos), min(in_min))
            if start >= horizon or math.isinf(start):
                break
            # Periodic protocols set timers (and reports) forever: without a horizon the run
            # ends once every job is finished. A job inside a message is not finished, so
            # what may still be in flight then is only reports.
            if math.isinf(horizon) and sum(i.done for i in infos) == n_jobs:
                break
            bound = min(min(i.bound for i in infos), min(in_min))
            # Periodic protocols' timers run until the barrier that sees the last job finish,
            # so their windows have a cap that depends on T alone: the run then ends after
            # the same events whatever the windows' other bounds. It is 1/200 of the span,
            # and never shorter than the lookahead until the last release; after it, 1/200,
            # so the run ends close to the last job's end (a longer last window would add
            # rounds of reports that nobody reads). Sites that never talk get one window
            # (every barrier costs a Ray round trip) unless progress is shown. Other talking
            # sites' windows are bounded by their send bounds and the lookahead alone.
            if periodic or (on_progress is not None and math.isinf(bound)):
                cap = releasing_cap if start < span else slice_
            else:
                cap = math.inf
            until = min(max(bound, start) + lookahead, horizon, start + cap)
            if not until > start:  # t + lookahead == t once t is large enough beside it
                raise GridemuError(
                    f"run.lookahead: a window of {lookahead:g} no longer advances virtual time at t={start:g} "
                    "(float resolution): use a larger network.latency or run.lookahead, or a shorter run"
                )
            # Any call to a shard may find its actor dead: the step, a snapshot, a status.
            try:
                infos, outs = backend.step(until, inboxes)
                windows += 1
                inboxes = [[] for _ in range(n_shards)]
                in_min = [math.inf] * n_shards
                for info, out in zip(infos, outs):
                    for dest, t in info.out_min.items():
                        inboxes[dest].append(out[dest])
                        in_min[dest] = min(in_min[dest], t)
                if checkpoint_every is not None and time.perf_counter() - saved_at >= checkpoint_every:
                    inboxes = backend.materialize(inboxes)
                    # The loop rebinds infos, inboxes and in_min every window: no copy needed.
                    last = ckpt.Checkpoint(windows, infos, inboxes, in_min, backend.snapshot())
                    if checkpoint_to is not None:
                        ckpt.save(checkpoint_to, last, scenario.data, scenario.source, backend_name, n_shards)
                    saved_at = time.perf_counter()
                if periodic and math.isinf(horizon) and stall.stuck(until, infos, backend):
                    stalled_at = until
                    break
            except ShardLost as lost:
                rebuilds += 1
                if rebuilds > MAX_REBUILDS:
                    raise GridemuError(f"{lost}, and {MAX_REBUILDS} rebuilds did not get the run through") from None
                where = f"the checkpoint of window {last.windows}" if last.shards is not None else "the start"
                print(f"gridemu: warning: {lost}; rebuilding the shards from {where} and replaying the windows since", file=sys.stderr)
                backend.close()
                backend = make(specs, last.shards)
                windows, infos, inboxes, in_min = _restart(last)
                continue
            if on_progress is not None:
                on_progress(
                    Progress(until, span, sum(i.done for i in infos), n_jobs, sum(i.events for i in infos), time.perf_counter() - t0)
                )
            if stop.pending is not None:  # Ctrl-C or SIGTERM: a checkpoint at this barrier, then stop
                last = ckpt.Checkpoint(windows, infos, backend.materialize(inboxes), in_min, backend.snapshot())
                ckpt.save(checkpoint_to, last, scenario.data, scenario.source, backend_name, n_shards)
                stop.resume_signal()
        results = backend.results(horizon)
        # The batches still in flight, as arrays (in-process shards pass rows).
        in_flight = [b if isinstance(b, np.ndarray) else to_batch(b) for inbox in backend.materialize(inboxes) for b in inbox]
        if jobs is None:
            jobs = _submitted(results, n_jobs)
    finally:
        stop.restore()
        backend.close()
        del backend
        if gc_was_enabled:
            gc.enable()
    # In-process shards were freed by reference counting at close (Shard.close breaks the
    # site -> agent -> view -> site cycles: a collection that finds them walks every object
    # of every site, 0.76 s of CPU at 20,000 averaging sites against 0.06 s). This pass frees
    # what a protocol's agents may still hold in cycles of their own, before the result
    # tables double the peak. glibc keeps the freed small blocks in its heap; handing them
    # back to the system lowers the tables' peak (1M jobs: 937 -> 517 MiB resident before the
    # tables). Ray shards lived in their actors:
    # the driver has no cycle to free, and a full collection only walks its imported modules
    # (0.1 s at 10000x1M).
    if backend_name == "inprocess":
        gc.collect()
    _release_free_memory()
    wall = time.perf_counter() - t0
    events = sum(int(s["events"]) for r in results for s in r["sites"])
    extra = {"setup_seconds": setup}
    if stalled_at is not None:
        extra["stalled_at"] = stalled_at
    return RawRun(scenario, jobs, groups, results, in_flight, windows, events, wall, backend_name, n_shards, extra)


@dataclass
class _Stall:
    """Liveness of a periodic protocol's run without a horizon: no job finished for ``span`` of
    virtual time, and twice in a row no shard with a job that could move without an agent's
    decision (StepInfo.live): the run is stuck with only timers left."""

    span: float
    done: int = -1
    since: float = 0.0
    seen: int = 0

    def stuck(self, now: float, infos: list[StepInfo], backend: Any) -> bool:
        done = sum(i.done for i in infos)
        if done != self.done:
            self.done, self.since, self.seen = done, now, 0
        elif now - self.since >= self.span:
            self.since = now
            self.seen = self.seen + 1 if sum(i.live for i in backend.status()) == 0 else 0
        return self.seen == 2


def _restart(c: ckpt.Checkpoint) -> tuple[int, list[StepInfo], list[list[Any]], list[float]]:
    """The loop's counters and inboxes from a checkpoint (copies: a replay must not eat it)."""
    return c.windows, list(c.infos), [list(b) for b in c.inboxes], list(c.in_min)


def _submitted(results: list[dict[str, Any]], n_jobs: int) -> np.ndarray:
    """The jobs the shards drew, in job id order (the ids are 0..n-1 over all shards)."""
    parts = [r.pop("submitted") for r in results]
    if len(parts) == 1:
        return parts[0]  # numbered in order already
    jobs = np.empty(n_jobs, dtype=JOB_DTYPE)
    rows = records(jobs)
    for part in parts:
        rows[part["job_id"]] = records(part)
    return jobs


def _drawn_in_shards(scenario: Scenario) -> bool:
    """Whether shards may draw their own sites' jobs: nothing before the run needs the whole
    job set (a protocol's job checks, a share policy's groups, a scheduler's job checks)."""
    plugin = scenario.plugin
    return plugin.check_jobs is None and not plugin.dedicated and "policy" not in scenario.data and not checks_jobs(scenario.sites)


def _release_free_memory() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass
