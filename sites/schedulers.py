"""Local schedulers: which queued jobs a site starts when processors are free.

One small interface: ``push(slot)`` queues a job, ``remove(slot)`` takes a queued job
back (for a transfer), ``queued()`` lists the queue in scheduling order, and
``dispatch(site, now)`` starts every job the policy allows right now.
Slots index the site's job columns (``site.c_size``, ``site.c_procs``, ...).
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from typing import TYPE_CHECKING

from sites.jobs import OFFERED

if TYPE_CHECKING:  # pragma: no cover
    from sites.site import Site


class FCFS:
    """First come, first served with head-of-line blocking: no job overtakes an earlier one."""

    name = "fcfs"

    def __init__(self, site: "Site") -> None:
        self.queue: deque[int] | list[int] = deque()

    def push(self, slot: int) -> None:
        self.queue.append(slot)

    def remove(self, slot: int) -> None:
        self.queue.remove(slot)

    def push_front(self, slot: int) -> None:
        """Queue ``slot`` first (the rest of a running piece that was cut)."""
        self.queue.appendleft(slot)

    def insert_after(self, slot: int, new: int) -> None:
        """Queue ``new`` right behind ``slot`` (a piece split off a queued job keeps its place)."""
        queue = self.queue
        for i in range(len(queue) - 1, -1, -1):  # split pieces come from the tail
            if queue[i] == slot:
                queue.insert(i + 1, new)
                return
        raise ValueError(f"slot {slot} is not queued")

    def queued(self) -> list[int]:
        return list(self.queue)

    def __len__(self) -> int:
        return len(self.queue)

    def dispatch(self, site: "Site", now: float) -> None:
        # An offered piece at the head holds the queue until its receiver answers.
        queue, procs, state = self.queue, site.c_procs, site.r_state
        while queue and procs[queue[0]] <= site.free_count and state[queue[0]] != OFFERED:
            site.start(queue.popleft(), now)


class SPT:
    """Shortest processing time first (ties by job id), head-of-line blocking in that order."""

    name = "spt"

    def __init__(self, site: "Site") -> None:
        self.heap: list[tuple[float, int, int]] = []
        # Removed slots are skipped lazily when they reach the top of the heap.
        self.gone: set[int] = set()
        self.site = site

    def push(self, slot: int) -> None:
        heapq.heappush(self.heap, (self.site.c_size[slot], self.site.c_id[slot], slot))

    def remove(self, slot: int) -> None:
        self.gone.add(slot)

    def queued(self) -> list[int]:
        return [s for _, _, s in sorted(self.heap) if s not in self.gone]

    def __len__(self) -> int:
        return len(self.heap) - len(self.gone)

    def dispatch(self, site: "Site", now: float) -> None:
        heap, procs, gone = self.heap, site.c_procs, self.gone
        while heap:
            slot = heap[0][2]
            if slot in gone:
                heapq.heappop(heap)
                gone.discard(slot)
                continue
            if procs[slot] > site.free_count:
                return
            heapq.heappop(heap)
            site.start(slot, now)


class ListScheduling(FCFS):
    """Graham's list scheduling for rigid jobs: in queue order, start every job that fits."""

    name = "list"

    def __init__(self, site: "Site") -> None:
        self.queue = []

    def dispatch(self, site: "Site", now: float) -> None:
        if not self.queue or site.free_count == 0:
            return
        procs, keep = site.c_procs, []
        for slot in self.queue:
            if procs[slot] <= site.free_count:
                site.start(slot, now)
            else:
                keep.append(slot)
        self.queue = keep


class Planned(FCFS):
    """Runs a schedule a protocol planned: a job starts at its due time and never before.

    The protocol sets ``due[job_id]`` (and a timer then, so ``dispatch`` runs); a queued job
    with no due time waits. Due jobs start in (due, job id) order while they fit. A job
    due at the very instant another ends may find its processors still busy when clock
    offsets round the two times differently; it then starts at that completion.
    """

    name = "planned"

    def __init__(self, site: "Site") -> None:
        self.queue = []
        self.due: dict[int, float] = {}

    def dispatch(self, site: "Site", now: float) -> None:
        if not self.queue or site.free_count == 0:
            return
        ids, procs, due = site.c_id, site.c_procs, self.due
        ready = sorted((due[ids[s]], ids[s], s) for s in self.queue if due.get(ids[s], math.inf) <= now)
        for _, _, slot in ready:
            if procs[slot] <= site.free_count:
                self.queue.remove(slot)
                site.start(slot, now)


class FcfsAny(FCFS):
    """FCFS to any free processor, made deterministic: the lowest-numbered free ones (``fcfs``
    itself gives a job the fastest free processors). A busy scheduler of the migration paper."""

    name = "fcfs_any"

    def dispatch(self, site: "Site", now: float) -> None:
        queue, procs, state = self.queue, site.c_procs, site.r_state
        while queue and procs[queue[0]] <= site.free_count and state[queue[0]] != OFFERED:
            slot = queue.popleft()
            site.start(slot, now, procs=sorted(site.free_procs)[: procs[slot]])


class PreemptNoMigration(FCFS):
    """Priority preemption without migration (the migration paper's "preemption but not
    migration"), for sequential jobs: at every arrival and completion, processors are taken
    fastest first (ties by number); each takes the best job, by (priority v0 descending,
    release, id), among the jobs that never ran and those that last ran on that very
    processor; a running job that loses its processor is preempted and may resume there only.
    """

    name = "preempt"

    def __init__(self, site: "Site") -> None:
        self.queue = deque()
        self.bound: dict[int, int] = {}  # queued rest piece -> the processor it must resume on

    def remove(self, slot: int) -> None:
        self.queue.remove(slot)
        self.bound.pop(slot, None)

    def dispatch(self, site: "Site", now: float) -> None:
        prio, rel, ids = site.c_priority, site.c_release, site.c_id

        def key(slot: int) -> tuple:
            return (-prio[slot], rel[slot], ids[slot])

        on = {ps[0]: slot for slot, ps in site.alloc.items()}
        for p in sorted(range(site.m), key=lambda p: (-site.speeds[p], p)):
            options = [s for s in self.queue if self.bound.get(s, p) == p]
            if p in on:
                options.append(on[p])
            if not options:
                continue
            best = min(options, key=key)
            if on.get(p) == best:
                continue
            if p in on:
                rest = site.preempt(on[p], now)
                if rest >= 0:
                    self.bound[rest] = p
            self.queue.remove(best)
            self.bound.pop(best, None)
            site.start(best, now, procs=[p])


SCHEDULERS = {cls.name: cls for cls in (FCFS, SPT, ListScheduling, Planned, FcfsAny, PreemptNoMigration)}


def make_scheduler(name: str, site: "Site") -> FCFS | SPT:
    return SCHEDULERS[name](site)
