"""The coordinator: advance every shard window by window (the rule: :mod:`gridemu.emulator.window`).

A window is one ``step`` call per shard; between two windows (a *barrier*) the coordinator
hands each shard the batches the others sent it. Around that loop it keeps checkpoints,
rebuilds the shards when a Ray actor is lost, stops at a barrier on a signal, detects a
periodic run that can no longer move, and reports progress: each one a method below.
"""

from __future__ import annotations

import ctypes
import gc
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from gridemu.emulator import checkpoint as ckpt
from gridemu.emulator.backends import BACKENDS, ShardLost, ensure_ray
from gridemu.emulator.engine import (
    Progress,
    RawRun,
    Workload,
    build_shard_specs,
    enter_phase,
    prepare_workload,
    resolve_shards,
)
from gridemu.emulator.exchange import ChunkPlan, Stall, in_flight_min, window_after
from gridemu.emulator.scenario import Scenario
from gridemu.emulator.shard import ShardSpec, StepInfo
from gridemu.emulator.window import WindowRule
from gridemu.model.errors import GridemuError
from gridemu.model.jobs import JOB_DTYPE, records
from gridemu.model.messages import to_batch
from gridemu.scenarios.workload import no_jobs_error

#: Lost shards rebuilt in one run before giving up (a node that keeps failing is not transient).
MAX_REBUILDS = 3
#: Wall seconds a chunk of windows runs on Ray shards before they stop at a barrier, where the
#: coordinator reports progress, keeps checkpoints and sees a signal (emulator/exchange.py).
CHUNK_SECONDS = 0.5


def run_windows(scenario: Scenario, **options: Any) -> RawRun:
    """Run a validated scenario to its horizon (or until no event is left); ``options`` are
    :class:`Coordinator`'s keywords."""
    return Coordinator(scenario, **options).run()


class Coordinator:
    """One run of a validated scenario.

    ``warn``: print the workload's warnings (off for a second run of the same jobs).
    ``checkpoint_every`` (wall seconds; 0: at every barrier) keeps a checkpoint at a barrier
    that often, written to ``checkpoint_to`` when given; a lost Ray shard rebuilds every
    shard from the last one (or from the start) and replays the windows since. ``resume``
    goes on from a checkpoint (with its ``n_shards``). ``workload``: the jobs
    :func:`gridemu.emulator.gate.gate` drew and checked (else they are drawn here)."""

    def __init__(
        self,
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
        workload: Workload | None = None,
    ):
        self.scenario = scenario
        self.workload = workload  # drawn and checked by the gate (emulator/gate.py), else here
        self.address, self.on_progress, self.recurrence, self.warn = address, on_progress, recurrence, warn
        self.checkpoint_every, self.checkpoint_to, self.resume = checkpoint_every, checkpoint_to, resume
        self.backend_name: str = scenario.data["run"]["backend"]
        self.n_shards = n_shards
        self.backend: Any = None  # BACKENDS[backend_name] over the shards, while the run lasts
        # The state at the current barrier (the loop rebinds each of them every window).
        self.windows = 0
        self.infos: list[StepInfo] = []
        self.inboxes: list[list[Any]] = []  # per destination shard: batches for the next window
        self.in_min: list[float] = []  # per destination shard: the earliest delivery in its inbox
        self.last: ckpt.Checkpoint | None = None  # what a lost shard is rebuilt from
        self.saved_at = 0.0
        self.rebuilds = 0

    def run(self) -> RawRun:
        # While checkpoints are written, SIGINT and SIGTERM are held from the very start: one
        # before the first barrier stops once checkpoint zero is saved, one during the results
        # fetch once the shards are closed (the folder keeps the last checkpoint); never dropped.
        stop = ckpt.StopAtBarrier(self.checkpoint_to is not None)
        try:
            raw = self._run(stop)
        finally:
            stop.restore()
        if stop.pending is not None:
            stop.resume_signal()
        return raw

    def _run(self, stop: ckpt.StopAtBarrier) -> RawRun:
        scenario = self.scenario
        enter_phase("start")
        if self.backend_name == "ray":
            ensure_ray(self.address)
        self.n_shards = self.n_shards or resolve_shards(scenario, self.backend_name)
        work = self.workload if self.workload is not None else prepare_workload(scenario, self.warn)
        horizon = scenario.horizon
        # Random crashes ([faults] mtbf) come forever, as periodic protocols' timers do.
        periodic = scenario.plugin.can("periodic") or (
            scenario.faults is not None and math.isfinite(scenario.faults.mtbf)
        )

        t0 = time.perf_counter()
        collector = _pause_collector(collect_after=self.backend_name == "inprocess")
        self.last = self.resume  # None: a shard lost while they start is built from its spec again
        stalled_at = None
        try:
            specs = build_shard_specs(scenario, work.jobs, self.n_shards, self.recurrence, work.groups, work.draws)
            status = self._start(specs)
            n_jobs = sum(i.submitted for i in status)
            if not n_jobs:
                raise no_jobs_error(scenario.workload)
            rule = WindowRule.for_run(
                scenario.lookahead,
                horizon,
                max(i.last_release for i in status),
                periodic,
                self.on_progress is not None,
                any(i.answers for i in status),
                all(i.waits for i in status),
            )
            self._first_barrier(status, stop)
            setup = time.perf_counter() - t0  # building shards (Ray: starting actors)
            self.saved_at = time.perf_counter()
            delay_max = scenario.faults.delay_max if scenario.faults else 0.0
            # A periodic run without horizon stops when it is stuck with only timers left.
            span = max(rule.span, 10 * (scenario.max_latency + delay_max))
            watch = Stall(span) if periodic and math.isinf(horizon) else None
            while True:
                window = window_after(rule, self.infos, min(self.in_min), n_jobs)
                # Any call to a shard may find its actor dead: the step, a snapshot, a status,
                # the results (all are rolled back to the last checkpoint and replayed).
                try:
                    if window is None:
                        results, in_flight, jobs = self._end(stop, horizon, work, n_jobs)
                        break
                    if hasattr(self.backend, "run_windows"):
                        end, due = self._chunk(rule, n_jobs, watch)
                    else:
                        self._step(window.end, rule.span)
                        end = window.end
                        due = watch is not None and watch.due(end, sum(i.done for i in self.infos))
                    if self.checkpoint_every is not None:
                        self._keep_checkpoint()
                    if due and watch.ask(end, sum(i.live for i in self.backend.status())):
                        results, in_flight, jobs = self._end(stop, horizon, work, n_jobs)
                        stalled_at = end
                        break
                except ShardLost as lost:
                    self._rebuild(lost, specs)
                    continue
                if self.on_progress is not None:
                    self._report(end, rule.span, n_jobs, t0)
                if stop.pending is not None:  # Ctrl-C or SIGTERM: a checkpoint at this barrier, then stop
                    self._stop(stop)
        finally:
            if self.backend is not None:
                self.backend.close()
            self.backend = None
            _resume_collector(*collector)
        _trim_heap()
        wall = time.perf_counter() - t0
        events = sum(int(s["events"]) for r in results for s in r["sites"])
        extra: dict[str, Any] = {"setup_seconds": setup}
        if stalled_at is not None:
            extra["stalled_at"] = stalled_at
        if self.resume is not None:
            # This process ran from the checkpoint on: its wall time covers what came after it.
            c = self.resume
            extra["resumed"] = {
                "window": c.windows,
                "events": sum(i.events for i in c.infos),
                "jobs_done": max(0, sum(i.done for i in c.infos)),
            }
        return RawRun(
            scenario,
            jobs,
            work.groups,
            results,
            in_flight,
            self.windows,
            events,
            wall,
            self.backend_name,
            self.n_shards,
            extra,
        )

    def _start(self, specs: list[ShardSpec]) -> list[StepInfo]:
        """The shards built and their first status. A shard lost while they start (building
        its sites, drawing its jobs) is built again from its spec, or from the resumed
        checkpoint: start-up is deterministic, so nothing of it needs keeping."""
        try:
            self.backend = BACKENDS[self.backend_name](specs, self.last.shards if self.last is not None else None)
        except ShardLost as lost:
            self._rebuild(lost, specs)
        while True:
            try:
                return self.backend.status()
            except ShardLost as lost:
                self._rebuild(lost, specs)

    def _first_barrier(self, status: list[StepInfo], stop: ckpt.StopAtBarrier) -> None:
        """Checkpoint zero (the shards as built: a resume builds them again), written when
        checkpoints are: from here on the folder always holds one to resume from. A signal
        held while the shards started stops the run here."""
        if self.last is None:
            n = self.n_shards
            self.last = ckpt.Checkpoint(0, status, [[] for _ in range(n)], [math.inf] * n, None)
            if self.checkpoint_to is not None:
                self._save()
        self._restart()
        if stop.pending is not None:
            stop.resume_signal()

    def _end(
        self, stop: ckpt.StopAtBarrier, horizon: float, work: Workload, n_jobs: int
    ) -> tuple[list[dict[str, Any]], list[np.ndarray], np.ndarray]:
        """The last barrier: a signal held during the last window stops here after a
        checkpoint, as at any barrier; otherwise the results are fetched."""
        if stop.pending is not None:
            self._stop(stop)
        enter_phase("fetch")
        return self._gather(horizon, work, n_jobs)

    def _step(self, until: float, span: float) -> None:
        """One window: every shard handles its events before ``until``; their outgoing batches
        become the next window's inboxes. ``span``: the rule's (Shard.step)."""
        self.infos, outs = self.backend.step(until, self.inboxes, span)
        self.windows += 1
        self.inboxes = [[] for _ in range(self.n_shards)]
        for info, out in zip(self.infos, outs):
            for dest in info.out_min:
                self.inboxes[dest].append(out[dest])
        self.in_min = in_flight_min(self.infos, self.n_shards)

    def _chunk(self, rule: WindowRule, n_jobs: int, watch: Stall | None) -> tuple[float, bool]:
        """Windows run by the shards among themselves (:mod:`gridemu.emulator.exchange`) until
        the chunk's wall budget passes, the run ends, or ``watch`` must ask the shards whether
        a job can still move. Returns the last window's end and whether to ask."""
        budget = CHUNK_SECONDS if self.checkpoint_every is None else min(CHUNK_SECONDS, self.checkpoint_every)
        plan = ChunkPlan(rule, n_jobs, self.windows, budget, watch)
        ends = self.backend.run_windows(plan, self.infos, self.in_min, self.inboxes)
        first = ends[0]
        if any((e.windows, e.end, e.reason) != (first.windows, first.end, first.reason) for e in ends):
            raise GridemuError(  # a fault of gridemu's: the shards chose different windows
                "internal error: the shards ended a chunk of windows differently: "
                + "; ".join(f"shard {k}: {e.windows} windows to {e.end:g} ({e.reason})" for k, e in enumerate(ends))
            )
        self.windows += first.windows
        self.infos = [e.info for e in ends]
        self.inboxes = [e.inbox for e in ends]
        self.in_min = in_flight_min(self.infos, self.n_shards)
        if watch is not None:
            watch.done, watch.since, watch.seen = first.stall.done, first.stall.since, first.stall.seen
        return first.end, first.reason == "stall"

    def _checkpoint(self) -> ckpt.Checkpoint:
        # The loop rebinds infos, inboxes and in_min every window: no copy needed.
        self.inboxes = self.backend.materialize(self.inboxes)
        return ckpt.Checkpoint(self.windows, self.infos, self.inboxes, self.in_min, self.backend.snapshot())

    def _save(self) -> None:
        ckpt.save(
            self.checkpoint_to,
            self.last,
            self.scenario.saved_data(),
            self.scenario.source,
            self.backend_name,
            self.n_shards,
        )

    def _keep_checkpoint(self) -> None:
        """A checkpoint at this barrier when ``checkpoint_every`` has passed since the last."""
        if time.perf_counter() - self.saved_at < self.checkpoint_every:
            return
        self.last = self._checkpoint()
        if self.checkpoint_to is not None:
            self._save()
        self.saved_at = time.perf_counter()

    def _stop(self, stop: ckpt.StopAtBarrier) -> None:
        """A signal came during the window: save a checkpoint here, then let it stop the run."""
        self.last = ckpt.Checkpoint(
            self.windows, self.infos, self.backend.materialize(self.inboxes), self.in_min, self.backend.snapshot()
        )
        self._save()
        stop.resume_signal()

    def _rebuild(self, lost: ShardLost, specs: list[ShardSpec]) -> None:
        """Every shard rebuilt from the last checkpoint (or the start): the windows since are
        replayed, and each shard is deterministic given its inputs."""
        self.rebuilds += 1
        if self.rebuilds > MAX_REBUILDS:
            raise GridemuError(f"{lost}, and {MAX_REBUILDS} rebuilds did not get the run through") from None
        last = self.last
        states = last.shards if last is not None else None
        where = f"the checkpoint of window {last.windows}" if states is not None else "the start"
        print(
            f"gridemu: warning: {lost}; rebuilding the shards from {where} and replaying the windows since",
            file=sys.stderr,
            flush=True,
        )
        if self.backend is not None:
            self.backend.close()
        self.backend = None
        try:
            self.backend = BACKENDS[self.backend_name](specs, states)
        except ShardLost as again:  # lost again while starting (a node going away takes a while to be seen)
            self._rebuild(again, specs)
            return
        if last is not None:
            self._restart()

    def _restart(self) -> None:
        """The barrier's counters and inboxes from the last checkpoint (copies: a replay must not eat it)."""
        c = self.last
        self.windows, self.infos, self.inboxes, self.in_min = (
            c.windows,
            list(c.infos),
            [list(b) for b in c.inboxes],
            list(c.in_min),
        )

    def _report(self, now: float, span: float, n_jobs: int, t0: float) -> None:
        infos = self.infos
        # A shard's done is its finished pieces less the pieces split off jobs: the job count
        # once every piece ends, but below it, and below zero, while split pieces still run.
        # It is never above the jobs finished (a job counts once its last piece ends), so the
        # progress shows it floored at 0: exact without splits, a lower bound with them.
        done = max(0, sum(i.done for i in infos))
        self.on_progress(Progress(now, span, done, n_jobs, sum(i.events for i in infos), time.perf_counter() - t0))

    def _gather(
        self, horizon: float, work: Workload, n_jobs: int
    ) -> tuple[list[dict[str, Any]], list[np.ndarray], np.ndarray]:
        """The shards' results, the batches still in flight (as arrays: in-process shards pass
        rows) and the submitted jobs (from the shards where they drew them)."""
        results = self.backend.results(horizon)
        in_flight = [
            b if isinstance(b, np.ndarray) else to_batch(b)
            for inbox in self.backend.materialize(self.inboxes)
            for b in inbox
        ]
        jobs = work.jobs if work.jobs is not None else _submitted(results, n_jobs)
        return results, in_flight, jobs


def _pause_collector(collect_after: bool) -> tuple[bool, bool]:
    """Pause the cyclic collector for a run; returns what :func:`_resume_collector` needs.

    Shards create and drop millions of small tuples and never leave a reference cycle, so
    the collector would only walk the live job columns over and over (9 % of a 300,000-job
    run, growing with the job count). With ``collect_after`` (in-process shards), what the
    process held before the run (imports, the caller's objects) is set apart (``gc.freeze``),
    so the collection after the run walks only what the run made: a walk of everything cost
    0.05 s at any size, a third of a 1,000-site run's gathering."""
    enabled = gc.isenabled()
    gc.disable()
    if collect_after:
        gc.freeze()
    return enabled, collect_after


def _resume_collector(enabled: bool, collect_after: bool) -> None:
    """After the run, finished or failed: collect its cycles, then hand back what was set apart.

    In-process shards were freed by reference counting once their results were taken
    (SiteEngine.close breaks the site -> agent -> view -> site cycles: a collection that finds
    them walks every object of every site, 0.76 s of CPU at 20,000 averaging sites against
    0.06 s). This pass frees what a protocol's agents may still hold in cycles of their own,
    before the result tables double the peak. Ray shards lived in their actors: the driver has
    no cycle to free."""
    if enabled:
        gc.enable()
    if collect_after:
        try:
            gc.collect()
        finally:
            gc.unfreeze()  # the objects held before the run: the oldest generation again


def _trim_heap() -> None:
    # glibc keeps the freed small blocks in its heap; handing them back to the system lowers
    # the tables' peak (1M jobs: 937 -> 517 MiB resident before the tables).
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


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
