"""Windows the shards run among themselves: the driver out of the exchange (Ray backend).

At a barrier the coordinator needs every shard's :class:`~gridemu.emulator.shard.StepInfo`
to choose the next window, and each shard needs the batches the others sent it. When the
driver did both (a ``step`` call per shard and window on Ray until 2026-11-27; the in-process
backend still works so), every batch passed through the driver, which on 16 cores capped a
run with many windows (1,491 windows at 10,000 sites: 5 ms of the driver's CPU a window,
1.75× in-process at best; docs/benchmarks.md).

Here each shard, after a window, sends every other shard its StepInfo and the batch for it,
receives theirs, and chooses the next window itself: every shard sees the same infos, so
every shard chooses the same window the coordinator would (:func:`window_after`, the rule
the coordinator applies). The driver asks for a *chunk* of windows and gets back, at its
end, each shard's last info and the batches it holds for the next window: the same barrier
state as after ``step``, so checkpoints, progress, signals and a lost shard's rebuild work
at chunk ends as they did at every barrier. A chunk ends

* where the run ends (no next window: :func:`window_after` is None),
* where a periodic run without horizon must ask the shards whether any job can still move
  (:meth:`Stall.due`; the coordinator asks, as it did at any barrier),
* where shard 0's clock passed the chunk's wall budget: shard 0 says so in its messages of
  that window, so every shard stops after the same window.

Where a chunk ends never changes what the shards do: the windows are chosen from the infos
alone. :func:`run_chunk` is the loop, written against two callables (post a window's
messages, collect the others'), so it runs over Ray actors (``emulator/links.py``) and in
plain threads (tests).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from gridemu.emulator.window import Window, WindowRule, next_window


@dataclass
class Stall:
    """Liveness of a periodic protocol's run without a horizon: no job finished for ``span`` of
    virtual time, and twice in a row no shard with a job that could move without an agent's
    decision (StepInfo.live): the run is stuck with only timers left."""

    span: float
    done: int = -1
    since: float = 0.0
    seen: int = 0

    def due(self, now: float, done: int) -> bool:
        """Count a barrier at ``now`` with ``done`` jobs finished; True when the shards must be
        asked for their live jobs (:meth:`ask`)."""
        if done != self.done:
            self.done, self.since, self.seen = done, now, 0
            return False
        return now - self.since >= self.span

    def ask(self, now: float, live: int) -> bool:
        """The shards' live jobs at a barrier where :meth:`due` said so; True: stuck."""
        self.since = now
        self.seen = self.seen + 1 if live == 0 else 0
        return self.seen == 2


def window_after(rule: WindowRule, infos: Sequence[Any], in_min: float, n_jobs: int) -> Window | None:
    """The window after a barrier, from every shard's StepInfo and the earliest delivery of
    the batches in flight (``in_min``); None when the run is over: nothing left before the
    horizon, or, without a horizon, every job finished (periodic protocols set timers
    forever; a job inside a message is not finished, so only reports may still be in flight)."""
    if math.isinf(rule.horizon) and sum(i.done for i in infos) == n_jobs:
        return None
    pending, bound = min(i.next_time for i in infos), min(i.bound for i in infos)
    if rule.answers:
        return next_window(rule, min(pending, in_min), min(bound, in_min))
    # No agent answers a message (WindowRule.answers): one in flight is no send bound; and
    # before the span, where sites wait for their next arrival or timer to handle what they
    # received (WindowRule.waits), no event either: a message within a shard is neither.
    # Unless the run would end there (nothing else before its horizon): one shard handles what
    # it received at the end (SiteEngine._catch_up), a message between shards needs a window.
    waiting = rule.waits and max(i.clock for i in infos) < rule.span and pending < rule.horizon
    return next_window(rule, pending if waiting else min(pending, in_min), bound)


def in_flight_min(infos: Sequence[Any], n_shards: int) -> list[float]:
    """Per destination shard, the earliest delivery among the batches sent to it at the last
    barrier (StepInfo.out_min of every sender)."""
    out = [math.inf] * n_shards
    for info in infos:
        for dest, t in info.out_min.items():
            if t < out[dest]:
                out[dest] = t
    return out


@dataclass(frozen=True)
class ChunkPlan:
    """What every shard of a chunk is told alike."""

    rule: WindowRule
    n_jobs: int
    first: int  # the run's number of the chunk's first window (messages are keyed by it)
    budget: float  # wall seconds on shard 0's clock after which the chunk ends
    stall: Stall | None = None  # a periodic run without horizon: the coordinator's Stall


@dataclass
class ChunkEnd:
    """What a shard returns at the end of a chunk (the same in every shard but ``info`` and
    ``inbox``)."""

    windows: int  # windows run in the chunk
    end: float  # the last window's end (-inf when none ran)
    reason: str  # "end", "stall" or "budget"
    info: Any  # this shard's StepInfo at the last barrier
    inbox: list[Any]  # the batches sent to this shard at the last barrier, in sender order
    stall: Stall | None


#: ``post(window, info, out, cut)``: send every other shard this shard's info, its batch
#: (``out[d]``, or None where ``d`` is not in ``info.out_min``) and the cut flag.
Post = Callable[[int, Any, list[Any], bool], None]
#: ``collect(window)``: every other shard's ``(info, batch or None, cut)`` by sender.
Collect = Callable[[int], dict[int, tuple[Any, Any, bool]]]


def run_chunk(
    shard: Any,
    n_shards: int,
    plan: ChunkPlan,
    infos: list[Any],
    in_min: float,
    inbox: list[Any],
    post: Post,
    collect: Collect,
) -> ChunkEnd:
    """Run windows from a barrier (every shard's ``infos``, the earliest delivery ``in_min``
    in flight to any shard, this shard's ``inbox``) until the chunk ends (module docstring).
    ``shard`` is a :class:`~gridemu.emulator.shard.Shard`."""
    k = shard.shard_id
    stall = replace(plan.stall) if plan.stall is not None else None  # the caller's stays as it was
    start = time.perf_counter()
    n, end = 0, -math.inf
    while True:
        window = window_after(plan.rule, infos, in_min, plan.n_jobs)
        if window is None:
            return ChunkEnd(n, end, "end", infos[k], inbox, stall)
        info, *out = shard.step(window.end, *inbox, span=plan.rule.span)
        cut = k == 0 and time.perf_counter() - start >= plan.budget
        post(plan.first + n, info, out, cut)
        got = collect(plan.first + n)
        n, end = n + 1, window.end
        infos = [info if s == k else got[s][0] for s in range(n_shards)]
        inbox = [got[s][1] for s in range(n_shards) if s != k and got[s][1] is not None]
        in_min = min(in_flight_min(infos, n_shards))
        if stall is not None and stall.due(end, sum(i.done for i in infos)):
            return ChunkEnd(n, end, "stall", info, inbox, stall)
        if cut or (k != 0 and got[0][2]):
            return ChunkEnd(n, end, "budget", info, inbox, stall)
