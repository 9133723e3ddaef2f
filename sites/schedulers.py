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

from gridemu.model.jobs import OFFERED

if TYPE_CHECKING:  # pragma: no cover
    from typing import Iterable, Mapping

    from gridemu.sites.fairshare_runtime import RuntimePolicy
    from gridemu.sites.site import Site


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


class EasyBackfilling(FCFS):
    """EASY backfilling (Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995; Mu'alem and
    Feitelson, IEEE TPDS 12(6), 2001): FCFS, and while the head of the queue does not fit, a
    later job starts now if it fits and does not delay the head's reservation: by its
    estimate it ends by the *shadow time* (when, by the running jobs' estimates, enough
    processors are free for the head), or it takes only *extra* processors, those the head
    will not need then. Jobs are tried in queue order, each once per pass.

    A job's estimate is its requested time (``walltime``: an SWF trace's field 9, a job
    list's column) where the workload gives one, else its size (exact estimates), at the
    site's speed; a running job past its estimate counts as ending now. Identical
    processors only (a job's speed on others depends on which are free when it starts)."""

    name = "easy"

    def dispatch(self, site: "Site", now: float) -> None:
        super().dispatch(site, now)  # the heads that fit, in order
        queue, state = self.queue, site.r_state
        if len(queue) < 2 or site.free_count == 0 or state[queue[0]] == OFFERED:
            return
        procs = site.c_procs
        shadow, extra = self._reservation(site, now, procs[queue[0]])
        free = site.free_count
        for slot in list(queue)[1:]:
            q = procs[slot]
            if q > free or state[slot] == OFFERED:
                continue
            by_shadow = now + self._estimate(site, slot) <= shadow
            if by_shadow or q <= extra:
                queue.remove(slot)
                site.start(slot, now)
                free -= q
                extra -= 0 if by_shadow else q
                if not free:
                    return

    @staticmethod
    def _estimate(site: "Site", slot: int) -> float:
        wall = site.c_walltime[slot]
        return (wall if wall == wall else site.c_size[slot]) / site.speed

    def _reservation(self, site: "Site", now: float, need: int) -> tuple[float, int]:
        """(shadow time, extra processors) of a head job that needs ``need`` processors: the
        running pieces by estimated end (a piece without a requested time ends at its own end;
        ties by slot), freeing their processors until ``need`` are free, with every piece that
        ends at that same time."""
        start, setup, wall, procs = site.r_start, site.setup, site.c_walltime, site.c_procs
        ends = sorted(
            (
                max(
                    now, start[s] + setup.get(s, 0.0) + self._estimate(site, s) if wall[s] == wall[s] else site.r_end[s]
                ),
                s,
            )
            for s in site.running_slots()
        )
        free, shadow = site.free_count, math.inf
        for end, s in ends:
            if end > shadow:
                break
            free += procs[s]
            if free >= need and shadow == math.inf:
                shadow = end
        return shadow, (free - need if shadow < math.inf else 0)


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
        self.ids = site.c_id
        self.queue: dict[int, None] = {}  # queued slots in arrival order (a dict: O(1) removal)
        self.due: dict[int, float] = {}
        self.slot_of: dict[int, int] = {}  # job id -> its queued slot
        # (due, job id, slot) of planned queued jobs; stale entries (started, removed,
        # re-planned) are dropped when met. A heap keeps dispatch at O(due jobs), not O(queue):
        # a trace window queues tens of thousands of jobs that are not yet due.
        self.ready: list[tuple[float, int, int]] = []

    def push(self, slot: int) -> None:
        self.queue[slot] = None
        job_id = self.ids[slot]
        self.slot_of[job_id] = slot
        if job_id in self.due:
            heapq.heappush(self.ready, (self.due[job_id], job_id, slot))

    def remove(self, slot: int) -> None:
        del self.queue[slot]
        self.slot_of.pop(self.ids[slot], None)

    def push_front(self, slot: int) -> None:
        raise TypeError("the planned scheduler runs whole jobs at their due time: no cut pieces")

    insert_after = push_front

    def plan(self, job_id: int, due: float) -> None:
        self.due[job_id] = due
        if job_id in self.slot_of:
            heapq.heappush(self.ready, (due, job_id, self.slot_of[job_id]))

    def dispatch(self, site: "Site", now: float) -> None:
        if not self.queue or site.free_count == 0:
            return
        ready, queue, due, procs, kept = self.ready, self.queue, self.due, site.c_procs, []
        while ready and ready[0][0] <= now:
            entry = heapq.heappop(ready)
            d, job_id, slot = entry
            if slot not in queue or due.get(job_id) != d or (kept and kept[-1] == entry):
                continue  # stale or a duplicate
            if procs[slot] <= site.free_count:
                self.remove(slot)
                del due[job_id]  # started: never queued here again (no cut pieces), so never due again
                site.start(slot, now)
            else:
                kept.append(entry)
        for entry in kept:
            heapq.heappush(ready, entry)


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


class FairshareScheduler:
    """Hierarchical fairshare (the grid-wide fairshare paper, section 4): whenever processors
    are free, start the queued job with the highest priority, where priority = w_fs × the
    base-200 number of the job's target deviation tuple + w_qt × its queue time.

    Jobs of one policy entry wait in FIFO order, so the oldest job of each entry is the only
    candidate of that entry: a pass costs O(entries), not O(queued jobs). Deviations come
    from this site's own usage (always fresh) for entries whose parent has local scope, and
    from the grid-wide view for global scope: the other sites' reports, as last received
    (``remote``, filled by the ``fairshare`` protocol; empty without it), plus this site's
    own fresh usage. Configured once by the shard (:meth:`configure`).
    """

    name = "fairshare"

    def __init__(self, site: "Site") -> None:
        self.site = site
        self.conf: "RuntimePolicy | None" = None
        self.queues: dict[str, deque[int]] = {}
        self.entry_of: dict[int, str] = {}  # queued or running slot -> the entry its job maps to
        self.running: dict[int, tuple[str, float, int, float]] = {}  # slot -> (entry, start, procs, walltime)
        self.done: dict[str, float] = {}  # entry -> processor-seconds of finished jobs (one infinite window)
        self.records: dict[
            str, list[tuple[float, float, int]]
        ] = {}  # entry -> finished (start, end, procs), windowed usage
        self.remote: dict[int, dict[str, float]] = {}  # site -> its last usage report, per entry
        self.unmapped = 0  # jobs that went to the default entry
        self.unmounted: set[str] = set()  # mount points whose subpolicy has not reached this site

    def configure(self, conf: "RuntimePolicy") -> None:
        """Given the ``[policy]`` section's shared state (sites/sections.py)."""
        self.conf = conf
        for path in conf.entries:
            self.queues[path] = deque()

    def site_columns(self) -> dict[str, int]:
        """Its columns of sites.parquet."""
        return {"jobs_to_default_entry": self.unmapped}

    # queue ---------------------------------------------------------------------------
    def push(self, slot: int) -> None:
        conf, site = self.conf, self.site
        entry = conf.entry_of_group[site.c_group[slot]]
        if entry == conf.default and conf.group_unmapped[site.c_group[slot]]:
            self.unmapped += 1
        if self.unmounted:
            entry = conf.mount_point(entry, self.unmounted)
        self.entry_of[slot] = entry
        self.queues[entry].append(slot)

    def remove(self, slot: int) -> None:
        self.queues[self.entry_of.pop(slot)].remove(slot)

    def queued(self) -> list[int]:
        return sorted(
            (s for q in self.queues.values() for s in q), key=lambda s: (self.site.c_release[s], self.site.c_id[s])
        )

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def mount(self, point: str) -> None:
        """The subpolicy under ``point`` arrived: its jobs move to their own entries' queues."""
        self.unmounted.discard(point)
        site, conf = self.site, self.conf
        stay, moved = deque(), []
        for slot in self.queues[point]:
            entry = conf.mount_point(conf.entry_of_group[site.c_group[slot]], self.unmounted)
            (stay.append(slot) if entry == point else moved.append((entry, slot)))
        self.queues[point] = stay
        for entry, slot in moved:
            self.entry_of[slot] = entry
            self.queues[entry].append(slot)
        order = lambda s: (site.c_release[s], site.c_id[s])  # noqa: E731
        for entry in {e for e, _ in moved}:
            self.queues[entry] = deque(sorted(self.queues[entry], key=order))

    def finished(self, slot: int) -> None:
        entry, start, procs, _ = self.running.pop(slot)
        end = self.site.r_end[slot]
        if math.isfinite(self.conf.windows.length):
            self.records.setdefault(entry, []).append((start, end, procs))
        else:
            self.done[entry] = self.done.get(entry, 0.0) + (end - start) * procs

    # what the fairshare protocol serves (through the site view: sites/view.py) --------------
    def policy_entries(self) -> tuple[str, ...]:
        """The runtime policy's entry paths, in policy order (usage messages name them by index)."""
        return tuple(self.conf.entries)

    def mount_points(self) -> dict[str, int]:
        """Each entry that mounts a remote subpolicy -> the site that serves it."""
        return dict(self.conf.served)

    def subpolicy(self, point: str) -> dict[str, float]:
        """The subpolicy below a mount point as the run's policy has it: entry -> target share, percent."""
        targets = self.conf.targets
        return {e: 100 * targets[e] for e in self.conf.entries if e.startswith(point + "/")}

    def await_subpolicies(self, points: Iterable[str]) -> None:
        """Until :meth:`mount`, the jobs below each of these mount points count at the mount
        point itself (its subpolicy has not reached this site)."""
        self.unmounted = set(points)

    def mount_subpolicy(self, point: str) -> None:
        """:meth:`mount`, unless it is mounted already (later refreshes bring the same subpolicy)."""
        if point in self.unmounted:
            self.mount(point)

    def usage_report(self, now: float) -> dict[str, float]:
        """This site's usage per entry as the policy's global approach counts it: what it reports."""
        return self.usage(now, self.conf.approach)

    def cache_usage(self, source: int, usage: Mapping[str, float]) -> None:
        """Update the cached global usage data: ``usage``'s figures replace those of the same
        entries under ``source``, a key the protocol chooses (a site, a usage service, the
        grid's total); priorities add every source's figures to this site's own usage."""
        self.remote.setdefault(source, {}).update(usage)

    def replace_usage(self, source: int, usage: Mapping[str, float]) -> None:
        """Replace everything cached under ``source`` by ``usage`` (see :meth:`cache_usage`)."""
        self.remote[source] = dict(usage)

    def cached_usage(self, source: int) -> dict[str, float]:
        """A copy of what is cached under ``source`` (empty if nothing)."""
        return dict(self.remote.get(source, {}))

    # usage and priorities -----------------------------------------------------------------
    def usage(self, now: float, approach: str) -> dict[str, float]:
        """This site's usage per entry jobs map to, as ``approach`` sees it at ``now``."""
        from gridemu.sites.fairshare import UsageRecord, usage_of

        conf = self.conf
        if math.isfinite(conf.windows.length):
            horizon = now - conf.windows.length * conf.windows.count
            recs: dict[str, list] = {}
            for entry, rows in self.records.items():
                rows[:] = [r for r in rows if r[1] > horizon]  # older usage no longer counts
                recs[entry] = [UsageRecord(entry, s, e, p, math.nan) for s, e, p in rows]
            for e, s, p, w in self.running.values():
                recs.setdefault(e, []).append(UsageRecord(e, s, math.inf, p, w))
            # usage_of also sums descendants into ancestors: ask it one entry at a time
            return {e: usage_of(r, now, approach, conf.windows).get(e, 0.0) for e, r in recs.items()}
        out = dict(self.done)
        if approach != "historical":
            for entry, start, procs, wall in self.running.values():
                extra = (now - start) * procs if approach == "active" else wall * procs
                out[entry] = out.get(entry, 0.0) + extra
        return out

    def priorities(self, now: float) -> dict[str, float]:
        """Base-200 priority of every entry that has a job waiting."""
        conf = self.conf
        local = self.usage(now, conf.local_approach)
        own = local if conf.approach == conf.local_approach else self.usage(now, conf.approach)
        grid = dict(own)
        for report in self.remote.values():
            for entry, u in report.items():
                grid[entry] = grid.get(entry, 0.0) + u
        return conf.priorities([e for e, q in self.queues.items() if q], local, grid)

    def dispatch(self, site: "Site", now: float) -> None:
        conf = self.conf
        while site.free_count > 0:
            prio = self.priorities(now)
            best, best_key = None, None
            for entry, p in prio.items():
                head = self.queues[entry][0]
                if site.c_procs[head] > site.free_count:
                    continue
                key = (
                    conf.w_fs * p + conf.w_qt * (now - site.c_release[head]),
                    -site.c_release[head],
                    -site.c_id[head],
                )
                if best_key is None or key > best_key:
                    best, best_key = entry, key
            if best is None:
                return
            slot = self.queues[best].popleft()
            wall = site.c_walltime[slot]
            speed = site.speed if site.uniform else min(site.speeds)
            self.running[slot] = (best, now, site.c_procs[slot], wall if wall == wall else site.c_size[slot] / speed)
            del self.entry_of[slot]
            site.start(slot, now)


SCHEDULERS = {
    cls.name: cls
    for cls in (FCFS, SPT, ListScheduling, Planned, FcfsAny, PreemptNoMigration, FairshareScheduler, EasyBackfilling)
}


def make_scheduler(name: str, site: "Site") -> "FCFS | SPT | FairshareScheduler":
    return SCHEDULERS[name](site)
