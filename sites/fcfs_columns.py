"""FCFS sites whose agents only route new jobs, run as numpy columns (one object per shard).

Some protocols decide one thing only: where each newly submitted job goes, drawn from the
submitting site's own stream whatever the state of any site (``random``: a uniform site).
Such a decision needs no hook inside a window, so a shard may hold all its sites' jobs in
numpy columns and handle each window as arrays: the window's local arrivals are routed with
the destinations the agents drew, the transfers leave as one message batch, and every
site's strict FCFS schedule (identical processors) is extended over the jobs queued there
in the window, by the recurrence of :mod:`sites.fcfs_recurrence`:

    start_i = max(arrival_i, start_{i-1}, the q_i-th earliest processor free time)

with arrivals in the event loop's order at each site (time, then received messages by
source and sequence number before local arrivals by release and job id). It gives the job
table the event loop gives (``tests/test_fcfs_columns.py`` compares them, shard counts,
horizons, rigid jobs and latency matrices included), at a fraction of the cost: no Python
object per job or message, and a window costs what its arrivals cost.

Each site's costs stay its own: events, messages sent and received are counted per site;
the CPU time of a window (the only cost that is not per site here, since no site has its
own loop) is shared among the sites by the events each handled in it. A job that needs more
processors than its site has blocks that site's queue for ever, as in the event loop.
"""

from __future__ import annotations

import bisect
import math
import time
from dataclasses import dataclass

import numpy as np

from gridemu.model.errors import InvariantError
from gridemu.model.jobs import JOB_DTYPE, STATE_CODE, concat, radix_ids, take
from gridemu.model.messages import MSG_DTYPE, empty_batch, job_block, jobs_in, to_batch
from gridemu.sites.results import settle
from gridemu.sites.site import too_wide

PENDING, QUEUED, TRANSFERRED = STATE_CODE["pending"], STATE_CODE["queued"], STATE_CODE["transferred"]
# Below this many queue arrivals per lockstep round, a plain loop over the arrivals is cheaper
# than a round of array operations (a few sites with long queues in one window).
LOCKSTEP_MIN_ROWS = 12


def arrival_order(site: np.ndarray, when: np.ndarray, src: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The event loop's order of a window's queue arrivals: by site, then time; at one time,
    messages (by source, then sequence number) before local arrivals.

    Rows are the received messages (``src``, ``seq`` theirs), then the local arrivals in
    (release, job id) order, as the columns hold them. The same order as a lexsort of
    (site, time, kind rank, source or submission position, sequence number), without its
    five passes: the messages are put in (time, source, sequence) order (a lexsort of these
    rows only, skipped when one latency left them ordered), one stable sort by time merges
    them with the local arrivals (two sorted runs: timsort merges them in one pass; at
    equal times the messages, first in the rows, stay first), and a stable radix sort by site
    keeps that order within each site (16,000 rows: 0.14 ms against 3.2 ms)."""
    n_got = len(src)
    runs = np.arange(len(site))
    deliver = when[:n_got]
    if n_got > 1 and not (deliver[1:] > deliver[:-1]).all():
        runs[:n_got] = np.lexsort((seq, src, deliver))
    by_time = runs[np.argsort(when[runs], kind="stable")]
    return by_time[np.argsort(radix_ids(site[by_time]), kind="stable")]


@dataclass
class RoutedSites:
    """What the columns need of a shard's sites: ids, processors, speeds, latency, jobs, routes."""

    site_ids: np.ndarray  # global id of each hosted site
    procs: np.ndarray  # processors of each hosted site
    speeds: np.ndarray  # the (identical) processor speed of each hosted site
    latency: "float | np.ndarray"  # one for every link, or rows: hosted sites, columns: all sites
    jobs: np.ndarray  # the hosted sites' submitted jobs (JOB_DTYPE), best in job id order
    routes: list[np.ndarray]  # each hosted site's destination of each of its jobs, in (release, job id) order
    job_code: int  # the kind code of a job transfer
    names: tuple[str, ...] = ()  # each hosted site's name (errors)
    protocol: str = ""  # the routing protocol's name (errors)


class FcfsColumns:
    """A shard's FCFS sites with routing agents: job state in numpy columns, windows as arrays."""

    def __init__(self, spec: RoutedSites):
        n = len(spec.site_ids)
        self.n = n
        self.site_ids = np.asarray(spec.site_ids, dtype=np.int64)
        self.procs = np.asarray(spec.procs, dtype=np.int64)
        self.speeds = np.asarray(spec.speeds, dtype=float)
        self.job_code = spec.job_code
        self.names, self.protocol = spec.names, spec.protocol
        self.latency = spec.latency
        self.local_index = np.full(int(self.site_ids.max()) + 1 if n else 0, -1, dtype=np.int64)
        self.local_index[self.site_ids] = np.arange(n)
        # Local jobs of every hosted site in one table, in release order (ties: site, then job
        # id), so a window's arrivals are one slice. Generated workloads come in that order.
        jobs = spec.jobs
        home = self.local_index[jobs["submit_site"]]
        release, ids = jobs["release"], jobs["job_id"]
        if not _ordered(release, home, ids):
            order = np.lexsort((ids, home, release))
            jobs, home = take(jobs, order), home[order]
        self.jobs = jobs
        self.home = home
        # Contiguous copies of what every window reads (a field of a structured array is strided).
        self.release = np.ascontiguousarray(jobs["release"])
        self.size = np.ascontiguousarray(jobs["size"])
        self.width = jobs["procs"].astype(np.int64)
        # Each site's jobs in submission order (its agent's order), and what follows from it:
        # the destination and the site's send number of each transfer (Site.send numbers them).
        by_site = np.argsort(radix_ids(home), kind="stable")
        counts = np.bincount(home, minlength=n)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        self.dest = np.empty(len(jobs), dtype=np.int64)
        self.dest[by_site] = np.concatenate(spec.routes) if n else []
        self.leaves = self.dest != self.site_ids[home]
        # Positions of the jobs that leave their site, in release order: the send bound.
        self.leaving = np.flatnonzero(self.leaves)
        sends = np.cumsum(self.leaves[by_site])
        self.seq = np.empty(len(jobs), dtype=np.int64)
        self.seq[by_site] = sends - np.concatenate(([0], sends))[first]
        self.start = np.full(len(jobs), np.nan)
        self.end = np.full(len(jobs), np.nan)
        self.cursor = 0  # local jobs before it have arrived
        # Each site's processors as free times, sorted; columns past its count stay +inf.
        width = int(self.procs.max()) if n else 1
        self.free = np.where(np.arange(width)[None, :] < self.procs[:, None], -math.inf, math.inf)
        self.prev = np.full(n, -math.inf)  # start time of each site's latest job (FCFS order)
        # Received jobs (their records, where they run, their schedule), a block per window.
        self.received: list[np.ndarray] = []
        self.r_site: list[np.ndarray] = []
        self.r_start: list[np.ndarray] = []
        self.r_end: list[np.ndarray] = []
        self.pending = empty_batch()  # messages delivered to the shard, due in a later window
        # Per-site counters (the event loop's): events, messages received, jobs sent.
        self.events = np.zeros(n, dtype=np.int64)
        self.n_received = np.zeros(n, dtype=np.int64)
        self.n_sent = np.zeros(n, dtype=np.int64)
        self.cpu = np.zeros(n)
        self.done = 0
        self.clock = -math.inf

    # ------------------------------------------------------------------ queries

    def next_time(self) -> float:
        t = float(self.release[self.cursor]) if self.cursor < len(self.release) else math.inf
        if len(self.pending):
            t = min(t, float(self.pending["deliver"].min()))
        return t

    def send_bound(self) -> float:
        """Routing agents send only at the local arrival of a job routed elsewhere: its release
        (none: a route that keeps every job home, ``local``'s, never sends)."""
        i = int(np.searchsorted(self.leaving, self.cursor))
        return float(self.release[self.leaving[i]]) if i < len(self.leaving) else math.inf

    # ------------------------------------------------------------------ a window

    def deliver(self, batch: "np.ndarray | list[tuple]") -> None:
        """Take messages for the hosted sites (an array, or rows, packed or not, from an
        event-loop shard)."""
        if not isinstance(batch, np.ndarray):
            batch = to_batch(batch)
        if not len(batch):
            return
        if float(batch["deliver"].min()) < self.clock:
            row = batch[np.argmin(batch["deliver"])]
            raise InvariantError(
                f"causality: message from site {row['src']} (seq {row['seq']}) to site {row['dst']} due at "
                f"t={row['deliver']} arrived after the window that ended at t={self.clock}"
            )
        if np.any(batch["mtype"] != self.job_code):
            raise InvariantError(
                "a routing protocol's site got a message that is no job transfer (kinds "
                f"{set(batch['mtype'].tolist())})"
            )
        at = self.local_index[batch["dst"]]
        wide = batch["job_procs"] > self.procs[at]
        if wide.any():
            k = int(np.argmax(wide))
            row, i = batch[k], int(at[k])
            name = self.names[i] if self.names else str(int(row["dst"]))
            raise too_wide(
                name, int(self.procs[i]), int(row["job_job_id"]), int(row["job_procs"]), self.protocol, row["deliver"]
            )
        self.pending = concat([self.pending, batch]) if len(self.pending) else batch

    def advance(self, until: float) -> np.ndarray:
        """Handle every arrival before ``until``; return the transfers sent, in delivery order."""
        t0 = time.thread_time()  # CPU, not wall: a shard waiting for a core does not charge its sites
        lo = self.cursor
        hi = int(np.searchsorted(self.release, until, side="left"))
        self.cursor = hi
        self.clock = until
        arrived = np.arange(lo, hi)
        home = self.home[lo:hi]
        self._count(self.events, home)
        go = self.leaves[lo:hi]
        out = self._transfers(arrived[go])
        stay = arrived[~go]
        due = self.pending["deliver"] < until if len(self.pending) else np.zeros(0, bool)
        got = take(self.pending, due)
        if len(got):
            self.pending = take(self.pending, ~due)
            self._count(self.n_received, self.local_index[got["dst"]])
            self._count(self.events, self.local_index[got["dst"]])
        self._queue(stay, got)
        # The window's CPU time, shared among the sites by the events each handled in it.
        touched = np.concatenate((home, self.local_index[got["dst"]])) if len(got) else home
        if len(touched):
            np.add.at(self.cpu, touched, (time.thread_time() - t0) / len(touched))
        return out

    @staticmethod
    def _count(counter: np.ndarray, idx: np.ndarray) -> None:
        """One more for each site in ``idx``: work in proportion to ``idx``, not to all sites."""
        np.add.at(counter, idx, 1)

    def _transfers(self, idx: np.ndarray) -> np.ndarray:
        """Message rows for the local jobs ``idx`` sent away at their release (Site.transfer)."""
        if not len(idx):
            return empty_batch()
        home, dest = self.home[idx], self.dest[idx]
        lat = self.latency if isinstance(self.latency, float) else self.latency[home, dest]
        out = np.zeros(len(idx), dtype=MSG_DTYPE)
        release = self.release[idx]
        out["deliver"] = release + lat
        out["src"] = self.site_ids[home]
        out["seq"] = self.seq[idx]
        out["dst"] = dest
        out["sent"] = release
        out["mtype"] = self.job_code
        job_block(out)[:] = take(self.jobs, idx).view(np.uint8).reshape(len(idx), -1)
        out["job_migrations"] += 1
        self._count(self.n_sent, home)
        deliver = out["deliver"]
        if len(out) > 1 and not (deliver[1:] > deliver[:-1]).all():  # one latency: in order already
            out = take(out, np.lexsort((out["seq"], out["src"], deliver)))
        return out

    def _queue(self, stay: np.ndarray, got: np.ndarray) -> None:
        """Extend each site's FCFS schedule over the jobs queued there in this window."""
        n_stay, n_got = len(stay), len(got)
        if not n_stay + n_got:
            return
        # Rows: the received messages, then the local arrivals (both in order of time).
        site = np.concatenate((self.local_index[got["dst"]], self.home[stay]))
        when = np.concatenate((got["deliver"], self.release[stay]))
        size = np.concatenate((got["job_size"], self.size[stay]))
        q = np.concatenate((got["job_procs"].astype(np.int64), self.width[stay]))
        order = arrival_order(site, when, got["src"], got["seq"])
        start, end = self._schedule(site[order], when[order], size[order], q[order])
        s, e = np.empty(len(order)), np.empty(len(order))
        s[order], e[order] = start, end
        self.start[stay], self.end[stay] = s[n_got:], e[n_got:]
        if n_got:
            self.received.append(jobs_in(got))
            self.r_site.append(site[:n_got])
            self.r_start.append(s[:n_got])
            self.r_end.append(e[:n_got])
        self.done += int(np.count_nonzero(np.isfinite(start)))

    def _schedule(
        self, site: np.ndarray, when: np.ndarray, size: np.ndarray, q: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The FCFS recurrence for queue arrivals sorted by site, then event order."""
        n = len(site)
        first = np.flatnonzero(np.concatenate(([True], site[1:] != site[:-1])))
        rank = np.arange(n) - np.repeat(first, np.diff(np.append(first, n)))
        rounds = int(rank.max()) + 1
        if n < LOCKSTEP_MIN_ROWS * rounds:
            return self._schedule_loop(site, when, size, q)
        start, end = np.empty(n), np.empty(n)
        free, prev, procs, width = self.free, self.prev, self.procs, self.free.shape[1]
        cols = np.arange(width)
        by_round = np.argsort(radix_ids(rank), kind="stable")
        bounds = np.searchsorted(rank[by_round], np.arange(rounds + 1))
        for r in range(rounds):
            rows = by_round[bounds[r] : bounds[r + 1]]  # one arrival of each site at most
            i, qi = site[rows], q[rows]
            f = free[i]
            fits = qi <= procs[i]
            kth = f[np.arange(len(rows)), np.minimum(qi, width) - 1]
            s = np.maximum(np.maximum(when[rows], prev[i]), np.where(fits, kth, math.inf))
            e = s + size[rows] / self.speeds[i]
            # The q earliest-free processors run the job until e (a blocked site: +inf for ever).
            f = np.where(cols[None, :] < qi[:, None], e[:, None], f)
            f.sort(axis=1)
            free[i] = f
            prev[i] = s
            start[rows], end[rows] = s, e
        return start, end

    def _schedule_loop(
        self, site: np.ndarray, when: np.ndarray, size: np.ndarray, q: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The same recurrence, one arrival at a time (few sites with many arrivals each)."""
        touched = np.unique(site).tolist()
        rows = dict(zip(touched, self.free[touched].tolist()))
        prev = dict(zip(touched, self.prev[touched].tolist()))
        procs, speeds = self.procs.tolist(), self.speeds.tolist()
        start, end = [], []
        for i, t, z, k in zip(site.tolist(), when.tolist(), size.tolist(), q.tolist()):
            f = rows[i]
            s = max(t, prev[i], f[k - 1] if k <= procs[i] else math.inf)
            e = s + z / speeds[i]
            if s < math.inf:
                del f[:k]
                pos = bisect.bisect_right(f, e)
                f[pos:pos] = [e] * k
            prev[i] = s
            start.append(s)
            end.append(e)
        self.free[touched] = [rows[i] for i in touched]
        self.prev[touched] = [prev[i] for i in touched]
        return np.array(start), np.array(end)

    # ------------------------------------------------------------------ the end

    def finish(self, horizon: float) -> None:
        """Close the books: count the completions before the horizon as events (the event
        loop handles each as one)."""
        self._count(self.events, self.home[: self.cursor][self.end[: self.cursor] < horizon])
        for site, end in zip(self.r_site, self.r_end):
            self._count(self.events, site[end < horizon])
        # What only the windows read: freed before the result columns are built (10M jobs: 0.5 GB).
        del self.release, self.size, self.width, self.dest, self.seq

    def job_columns(self, horizon: float) -> dict[str, np.ndarray]:
        """Columns for jobs.parquet of the jobs these sites hold (as :func:`job_columns`):
        submitted jobs not sent away, received jobs, and jobs due here after the last window."""
        kept = np.flatnonzero(~(self.leaves & (np.arange(len(self.jobs)) < self.cursor)))
        travelling = self.pending  # delivered to the shard, due after the last window: still travelling
        # Contiguous columns (Ray sends those without a copy), filled block by block: each
        # received block is dropped once copied, so the records are never held twice.
        total = len(kept) + sum(len(b) for b in self.received) + len(travelling)
        cols = {name: np.empty(total, dtype=JOB_DTYPE[name]) for name in JOB_DTYPE.names}
        blocks = [take(self.jobs, kept), *self.received, jobs_in(travelling)]
        self.received = []
        lo = 0
        while blocks:
            block = blocks.pop(0)
            for name in JOB_DTYPE.names:
                cols[name][lo : lo + len(block)] = block[name]
            lo += len(block)
        n_flying = len(travelling)
        n_got = total - len(kept) - n_flying
        state = np.concatenate((np.where(kept < self.cursor, QUEUED, PENDING), np.full(n_got, QUEUED)))
        start = np.concatenate([self.start[kept], *self.r_start])
        end = np.concatenate([self.end[kept], *self.r_end])
        state, start, end = settle(state, start, end, horizon)
        state = np.concatenate((state, np.full(n_flying, TRANSFERRED))).astype(np.int8)
        start = np.concatenate((start, np.full(n_flying, np.nan)))
        end = np.concatenate((end, np.full(n_flying, np.nan)))
        exec_site = np.concatenate(
            [self.site_ids[self.home[kept]], *(self.site_ids[s] for s in self.r_site), travelling["dst"]]
        )
        # Processor free times, not processors: placement is not recorded (fcfs_recurrence's doc).
        cols.update(
            offered=np.zeros(len(state), dtype=bool),
            exec_site=exec_site.astype(np.int32),
            start=start,
            end=end,
            state=state,
            proc=np.full(len(state), -1, dtype=np.int32),
            proc_set=np.full(len(state), "", dtype=object),
        )
        return cols

    def site_counts(self) -> dict[str, np.ndarray]:
        """Per hosted site: events, messages received and jobs sent (the event loop's counters),
        and CPU seconds (the windows' time shared by events)."""
        return {"events": self.events, "received": self.n_received, "sent_jobs": self.n_sent, "cpu_seconds": self.cpu}


def _ordered(release: np.ndarray, home: np.ndarray, ids: np.ndarray) -> bool:
    """Whether jobs are sorted by release, then site, then job id."""
    if len(release) < 2:
        return True
    dr = release[1:] - release[:-1]
    tie = dr == 0
    if (dr < 0).any():
        return False
    if not tie.any():
        return True
    dh = home[1:][tie] - home[:-1][tie]
    return bool((dh > 0).all() or ((dh >= 0).all() and (ids[1:][tie][dh == 0] > ids[:-1][tie][dh == 0]).all()))
