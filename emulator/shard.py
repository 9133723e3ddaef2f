"""A shard hosts many sites and advances them, window by window.

The same class runs in the in-process backend (a plain object) and in the Ray
backend (wrapped as an actor). Its whole state is plain data (sites, queues, heaps,
generator states), so it can be pickled at a barrier.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from operator import eq as _eq
from operator import itemgetter
from typing import Any

import numpy as np

from gridemu.brokers.agent import GridInfo
from gridemu.brokers.params import Params
from gridemu.brokers.protocol import Protocol
from gridemu.emulator.checks import check_causality
from gridemu.emulator.plugins import protocol_of
from gridemu.model.errors import InvariantError
from gridemu.model.jobs import columns_in_piece_order, number_jobs, radix_ids, rank_among, release_keys, take
from gridemu.model.messages import MessageKinds, PackedRows, empty_batch, pack_rows
from gridemu.scenarios.poisson import SiteDraws, draw_sites
from gridemu.sites import faults, fcfs_recurrence
from gridemu.sites.faults import FaultPlan
from gridemu.sites.fcfs_columns import FcfsColumns, RoutedSites
from gridemu.sites.job_columns import split_columns
from gridemu.sites.results import job_columns, usage_ledger
from gridemu.sites.site import Site, Tally
from gridemu.sites.spec import SiteSpec
from gridemu.sites.view import SiteView


@dataclass
class ShardSpec:
    shard_id: int
    n_shards: int
    sites: list[SiteSpec]
    #: The jobs the hosted sites submit (JOB_DTYPE, numbered), in any order; None while the
    #: shard is still to draw them itself from ``draws`` (see ``draw_jobs``).
    jobs: np.ndarray | None
    latency: float | np.ndarray  # one for every link, or rows: hosted sites, columns: all sites
    owners: list[int]  # organization index of each hosted site
    site_to_shard: np.ndarray
    protocol: str  # its name
    params: Params  # its keys, frozen: every agent of the shard gets this one object
    grid: GridInfo
    recurrence: bool = True  # allow the FCFS recurrence where no agent can act
    #: Outgoing messages packed by column (``PackedRows``: they cross processes, Ray) or as
    #: lists of row tuples (shards in one process: packing and unpacking would be pure cost).
    columnar: bool = True
    #: Local scheduler name -> the state its sites share (``configure``d with it; sites/sections.py).
    schedulers: dict[str, Any] = field(default_factory=dict)
    faults: FaultPlan | None = None  # [faults]: each site plays its own
    draws: SiteDraws | None = None  # a workload drawn site by site: the shard draws its sites' jobs
    #: The protocol itself where it is not shipped (registered at run time): a shipped one
    #: travels as its name and the shard imports it (emulator/plugins.py).
    plugin: Protocol | None = None


def draw_jobs(spec: ShardSpec) -> np.ndarray:
    """The jobs of the spec's sites, drawn here from their own streams, in (release, site)
    order; their ids are set by ``numbered`` once every shard's :func:`release_keys` are known."""
    return number_jobs(draw_sites(spec.draws, spec.sites))


def numbered(spec: ShardSpec, drawn: np.ndarray, keys: list[np.ndarray]) -> ShardSpec:
    """The spec with its drawn jobs numbered among every shard's (``keys``: each shard's
    release keys, by shard id): the ids one driver drawing every site would give."""
    rank_among(drawn, keys, spec.shard_id)
    return replace(spec, jobs=drawn)


def with_drawn_jobs(specs: list[ShardSpec]) -> list[ShardSpec]:
    """Specs whose shards draw their own jobs, drawn and numbered in this process."""
    if specs[0].jobs is not None:
        return specs
    drawn = [draw_jobs(spec) for spec in specs]
    keys = [release_keys(jobs) for jobs in drawn]
    return [numbered(spec, jobs, keys) for spec, jobs in zip(specs, drawn)]


@dataclass
class StepInfo:
    """What a shard tells the coordinator at a barrier (small; batches travel apart)."""

    next_time: float
    bound: float
    out_min: dict[int, float]  # destination shard -> earliest delivery in its batch
    events: int
    done: int
    #: Positive while some job can still move without an agent's decision (running, not yet
    #: submitted, travelling in a site's heap, held by a site that will be repaired); counted
    #: by ``status()`` only (the coordinator asks when no job has finished for a while).
    live: int = -1
    #: The jobs the shard's sites submit and the last release among them (``status()`` only:
    #: where shards draw their jobs, the coordinator learns the run's size from them).
    submitted: int = 0
    last_release: float = -math.inf
    #: Whether a message delivered to one of the shard's sites may make it send (``status()``
    #: only): False where every agent sends only at arrivals and timers, without faults
    #: (``SiteEngine``'s waiting sites); the window rule then counts no message in flight as a
    #: send bound (``WindowRule.answers``).
    answers: bool = True
    #: Whether its sites handle a message delivered before the run's span only at their next
    #: arrival or timer (``status()`` only; SiteEngine's waiting sites): then a message in
    #: flight to it is no event there either (``WindowRule.waits``).
    waits: bool = False
    #: The end of the last window the shard ran (``step``): every event before it is handled.
    clock: float = -math.inf


class Shard:
    """A shard's sites behind one :class:`ShardEngine`, and what every engine shares: the
    jobs it submits, the exchange of messages with the other shards, the results' checks."""

    def __init__(self, spec: ShardSpec):
        self.shard_id = spec.shard_id
        self.site_to_shard = spec.site_to_shard
        protocol = protocol_of(spec)
        kinds = MessageKinds(protocol.messages)
        self.specs = spec.sites
        params = spec.params
        local_of = np.full(len(self.site_to_shard), -1, dtype=np.int64)
        local_of[[s.site_id for s in spec.sites]] = np.arange(len(spec.sites))
        self.submitted = spec.jobs if spec.draws is not None else None  # returned with the results
        self.n_submitted = len(spec.jobs)
        self.last_release = float(spec.jobs["release"].max()) if len(spec.jobs) else -math.inf
        engine = ColumnEngine if ColumnEngine.serves(spec, protocol) else SiteEngine
        self.engine: ShardEngine | None = engine(spec, protocol, params, kinds, local_of)

    def status(self) -> StepInfo:
        e = self.engine
        return StepInfo(
            e.next_time(),
            e.send_bound(),
            {},
            e.events,
            e.done,
            e.live(),
            self.n_submitted,
            self.last_release,
            e.answers,
            e.waits,
        )

    def step(self, until: float, *batches: "np.ndarray | list[tuple]", span: float = -math.inf) -> tuple:
        """Deliver ``batches``, handle every event with time < until, return outgoing batches.
        ``span``: the run's last release, cut at its horizon (``WindowRule.span``, the same for
        every shard): before it the run cannot end, which lets sites wait (``SiteEngine``).

        Returns ``(info, batch_for_shard_0, ..., batch_for_shard_{S-1})``.
        """
        e = self.engine
        e.span = span
        for batch in batches:
            e.deliver(batch)
        out, out_min = e.advance(until)
        self._keep_own(out, out_min)
        info = StepInfo(e.next_time(), e.send_bound(), out_min, e.events, e.done, clock=until)
        return (info, *out)

    def _keep_own(self, out: list[Any], out_min: dict[int, float]) -> None:
        """Deliver the messages between the shard's own sites now, at the window's end (none is
        due before it): they never travel through the coordinator (with Ray: not in the object
        the shard sends, no trip through the driver). Delivered, they count in the shard's next event
        time; a routing site's send bound ignores them as it ignores any received job."""
        k = self.shard_id
        if k not in out_min:
            return
        own = out[k]
        out[k] = empty_batch() if isinstance(own, np.ndarray) else []
        self.engine.deliver(own, out_min.pop(k))

    def results(self, horizon: float) -> dict[str, Any]:
        """Job columns, per-site rows and agent time series, once the run is over, and the
        jobs the shard drew (``submitted``) where it drew them."""
        out = self.engine.results(horizon)
        # The run is over: the engine goes before the check adds its temporaries (10M jobs in
        # one shard as columns: peak 5,051 -> 4,774 MiB).
        self.close()
        # Rows sorted by (job, fragment) here, in parallel on Ray: the driver then puts every
        # shard's in place by id instead of sorting all of them alone (piece_table).
        if out["jobs"]:
            out["jobs"] = columns_in_piece_order([out["jobs"]])
        # Each shard checks its own sites' schedules (DESIGN.md's causality invariant): in
        # parallel on Ray, where the driver would check every site alone.
        procs = np.zeros(len(self.site_to_shard), dtype=np.int64)
        procs[[s.site_id for s in self.specs]] = [s.procs for s in self.specs]
        if out["jobs"]:
            check_causality(out["jobs"], procs)
        if self.submitted is not None:
            out["submitted"] = self.submitted
        return out

    def close(self) -> None:
        """Free the sites: in-process shards are closed by the backend, Ray's with their actor."""
        if self.engine is not None:
            self.engine.close()
            self.engine = None


class ShardEngine(ABC):
    """How a shard holds and advances its sites; what :class:`Shard` calls, window by window.

    ``events`` and ``done`` count the events handled and the jobs finished so far; ``span``
    is the run's last release cut at its horizon, as the last step gave it."""

    span = -math.inf
    #: Whether a received message may make a hosted site send (StepInfo.answers), and whether
    #: its sites wait for their next arrival or timer to handle one (StepInfo.waits).
    answers = True
    waits = False

    def __init__(self, spec: ShardSpec, kinds: MessageKinds, local_of: np.ndarray):
        self.shard_id, self.n_shards, self.site_to_shard = spec.shard_id, spec.n_shards, spec.site_to_shard
        self.specs, self.owners, self.kinds, self.local_of = spec.sites, spec.owners, kinds, local_of
        self.events = 0
        self.done = 0

    @abstractmethod
    def next_time(self) -> float:
        """The earliest pending event of any hosted site."""

    @abstractmethod
    def send_bound(self) -> float:
        """The earliest time any hosted site could send."""

    @abstractmethod
    def live(self) -> int:
        """Jobs that can still move without an agent's decision (see StepInfo.live)."""

    @abstractmethod
    def deliver(self, batch: "np.ndarray | list[tuple]", first: float | None = None) -> None:
        """Queue messages at their hosted sites (an array from another process, or rows);
        ``first``: the batch's earliest delivery time where the caller has it."""

    @abstractmethod
    def advance(self, until: float) -> tuple[list[Any], dict[int, float]]:
        """Handle every event with time < until; the messages sent, by destination shard, and
        the earliest delivery time of each non-empty part."""

    @abstractmethod
    def results(self, horizon: float) -> dict[str, Any]:
        """``jobs`` (columns), ``sites`` (sites.parquet rows), ``timeseries``, ``usage``."""

    def close(self) -> None:
        """Drop what the engine holds once its results are gathered."""

    def _site_row(self, i: int, events: int, cpu: float, received: int, sent: list[int]) -> dict[str, Any]:
        """The sites.parquet row of hosted site ``i`` (``sent``: messages by kind code)."""
        s = self.specs[i]
        return {
            "site_id": s.site_id,
            "name": s.name,
            "owner": self.owners[i],
            "procs": s.procs,
            "speed_mean": sum(s.speeds) / s.procs,
            "events": events,
            "cpu_seconds": cpu,
            "messages_received": received,
            "messages_sent": sum(sent),
            **{f"sent_{name}": n for name, n in zip(self.kinds.names, sent)},
        }


class SiteEngine(ShardEngine):
    """The general path: one :class:`Site` per hosted site (its event loop, view and agent),
    visited in turn."""

    def __init__(self, spec: ShardSpec, protocol: Protocol, params: Params, kinds: MessageKinds, local_of: np.ndarray):
        super().__init__(spec, kinds, local_of)
        self.columnar = spec.columnar  # see ShardSpec.columnar
        self.clock = -math.inf  # every event before this time has been handled
        self.sites: list[Site] = []
        self.tally = Tally()  # what the sites have done so far, counted by the sites themselves
        jobs, counts = _by_site(spec.jobs, local_of)
        bounds = np.cumsum(counts) - counts
        columns = split_columns(jobs, counts.tolist())
        for i, (s, first, k) in enumerate(zip(spec.sites, bounds.tolist(), counts.tolist())):
            site = Site(
                s,
                jobs[first : first + k],
                spec.latency if isinstance(spec.latency, float) else spec.latency[i],
                spec.owners[i],
                kinds,
                columns[i],
                self.tally,
            )
            if site.scheduler.name in spec.schedulers:
                site.scheduler.configure(spec.schedulers[site.scheduler.name])
            if spec.grid.neighbors is not None:
                # A send checks its destination is a neighbor: a short tuple is searched as fast
                # as a set and is the topology's own (a set of 8 took 1 KB a site).
                nb = spec.grid.neighbors[s.site_id]
                site.links = nb if len(nb) <= _SHORT else frozenset(nb)
            site.agent = protocol.agent(SiteView(site, spec.grid.seed, protocol.name), spec.grid, params)
            if spec.faults is not None:
                faults.arm(site, spec.faults.for_site(s.site_id, spec.grid.seed))
            self.sites.append(site)
        for site in self.sites:
            site.agent.on_start(0.0)
            if site.outbox:  # windows are built on send bounds, which only timers and messages set
                raise InvariantError(
                    f"site {site.name} at t=0: the {site.agent.name} agent sent a "
                    "message from on_start; set a timer at 0 and send from it"
                )
            if (
                spec.recurrence
                and site.faults is None
                and site.agent.silent
                and site.scheduler.name == "fcfs"
                and site.uniform
            ):
                fcfs_recurrence.enable(site)
        # The shard's calendar: each site's next event time and send bound, refreshed only for
        # the sites a window touched (those it advanced or delivered to), so a window costs
        # in proportion to its busy sites, not to all of them.
        self.local_list: list[int] = local_of.tolist()  # the same, for row-by-row lookups
        self.shard_of: list[int] = self.site_to_shard.tolist()
        # On the full graph no site checks its destinations as it sends (Site._post: with a
        # topology, a destination outside its links is refused there): the window's messages
        # are checked here at once, in C-level passes over the rows (_check_destinations).
        self.full_graph = spec.grid.neighbors is None
        self.n_sites = spec.grid.n_sites
        self.next_t = np.array([s.next_event_time() for s in self.sites], dtype=float)
        # A site keeps the bound it last declared (its sends are checked against it), the shard
        # all of them for the windows' rule: both are set wherever a bound is asked for.
        for site in self.sites:
            site.bound = site.send_bound()
        self.bounds = np.array([s.bound for s in self.sites], dtype=float)
        # Each site's CPU seconds, kept here: one array update a window, not a store per visit.
        self.cpu = np.zeros(len(self.sites))
        # Without faults no site is ever down: its send bound is its agent's (Site.send_bound).
        self.faultless = spec.faults is None
        # Sites whose agents send only at arrivals and timers (a declaration of the agent's) are
        # visited for those alone before the run's span (``wake``: each site's next one); their
        # completions and received messages wait for that visit, handled in the same order at the
        # same virtual times. Before the span a job is still to be released, so no barrier there
        # can end the run; a visit per window with events took 2.5 a job for power_of_d, and a
        # visit per arrival or timer 1.1 (docs/benchmarks.md).
        lazy = self.faultless and all(s.agent.sends_only_on_arrival_and_timer for s in self.sites)
        self.wake = np.array([s.next_arrival_or_timer() for s in self.sites], dtype=float) if lazy else None
        # Nor does a message make such a site send after the span: its bound is its arrivals' and
        # timers' (a send before it fails the causality check).
        self.answers, self.waits = not lazy, lazy
        self.events, self.done = self.tally.events, self.tally.done

    def next_time(self) -> float:
        # Before the span, waiting sites' earliest event is where the next window may start.
        return _min(self.wake if self.wake is not None and self.clock < self.span else self.next_t)

    def send_bound(self) -> float:
        return _min(self.bounds)

    def live(self) -> int:
        return sum(map(_live, self.sites))

    def advance(self, until: float) -> tuple[list[Any], dict[int, float]]:
        sites, next_t, bounds, faultless, wake = self.sites, self.next_t, self.bounds, self.faultless, self.wake
        rows: list[tuple] = []
        clock = time.perf_counter
        if wake is not None and until >= self.span:
            # The run may end at this barrier: every event before it is handled. From here on
            # no window waits (the span is the run's), so wake is not kept up any more.
            wake = None
        active = np.flatnonzero((next_t if wake is None else wake) < until)
        new_next, new_bound, took, new_wake = [], [], [], []
        next_add, bound_add, took_add, wake_add = new_next.append, new_bound.append, took.append, new_wake.append
        # A site's cost is CPU time. The thread's CPU clock costs ten times the wall clock's
        # read (0.4 against 0.04 µs; 10 % of an event-heavy gm run per site visit), so each
        # site is timed on the wall clock and the window's CPU is shared in proportion: with
        # more shards than cores, the time a shard waits for one is nobody's cost.
        wall0, cpu0 = clock(), time.thread_time()
        # The visit is the general path's per-site cost: the sites count their events and
        # finished jobs in the shard's tally, a faultless shard asks the agent for its bound
        # without Site.send_bound's call around it, and one clock read a visit times it (the
        # kernel's few steps after a site's events, its bound and outbox, count as its own).
        t0 = wall0
        for i in active.tolist():
            site = sites[i]
            next_add(site.advance(until))
            if wake is not None:
                # A waiting site's agent sends only at its arrivals and timers (its declaration,
                # and wake's condition): the next one is its send bound, one call for both.
                site.bound = bound = site.next_arrival_or_timer()
                wake_add(bound)
            else:
                site.bound = bound = site.agent.send_bound() if faultless else site.send_bound()
            bound_add(bound)
            if site.outbox:
                rows += site.outbox
                site.outbox = []
            t1 = clock()
            took_add(t1 - t0)
            t0 = t1
        wall = t0 - wall0
        ran = min(1.0, (time.thread_time() - cpu0) / wall) if wall > 0 else 1.0
        if len(took) > _FEW:
            self.cpu[active] += np.fromiter(took, float, len(took)) * ran
            next_t[active] = new_next
            bounds[active] = new_bound
            if wake is not None:
                wake[active] = new_wake
        else:  # a window that visits a few sites: numpy's fancy indexing costs more than items
            cpu = self.cpu
            for i, dt, nt, b in zip(active.tolist(), took, new_next, new_bound):
                cpu[i] += dt * ran
                next_t[i] = nt
                bounds[i] = b
            if wake is not None:
                for i, w in zip(active.tolist(), new_wake):
                    wake[i] = w
        self.events, self.done = self.tally.events, self.tally.done
        self.clock = until
        return self._outgoing(rows)

    def deliver(self, batch: "np.ndarray | list[tuple]", first: float | None = None) -> None:
        """Queue a batch of messages at their sites (an array from another process, or rows);
        ``first``: its earliest delivery time where the caller has it (a window's own messages:
        a scan of an all-to-all round's million rows is 0.15 s)."""
        if not len(batch):
            return
        if isinstance(batch, PackedRows):
            first, rows = batch.first, batch.rows()
        elif isinstance(batch, np.ndarray):  # from a checkpoint
            first = float(batch["deliver"].min())
            rows = batch.tolist()
        else:
            if first is None:
                first = min(map(itemgetter(0), batch))
            rows = batch
        if first < self.clock:
            row = min(rows, key=lambda r: r[0])
            raise InvariantError(
                f"causality: message {self.kinds.names[row[5]]!r} from site {row[1]} (seq {row[2]}) to site "
                f"{row[3]} due at t={row[0]} arrived after the window that ended at t={self.clock}"
            )
        sites, local_of, faultless = self.sites, self.local_list, self.faultless
        per_site: dict[int, list[tuple]] = {}
        for row in rows:
            i = local_of[row[3]]
            if i in per_site:
                per_site[i].append(row)
            else:
                per_site[i] = [row]
        heads, new_bound = [], []
        # A delivered message is an event, and may move the bound, but not the bound of an agent
        # that sends only at arrivals and timers (a waiting shard's: wake).
        moves = self.wake is None
        for i, got in per_site.items():
            site = sites[i]
            site.deliver(got)
            # The site's next event was next_t[i]; now it is that or its inbox's new head
            # (Site.deliver sorts it).
            heads.append(site.inbox[0][0])
            if moves:
                site.bound = bound = site.agent.send_bound() if faultless else site.send_bound()
                new_bound.append(bound)
        idx = list(per_site)
        if len(idx) > _FEW:
            self.next_t[idx] = np.minimum(self.next_t[idx], heads)
            if moves:
                self.bounds[idx] = new_bound
        else:
            next_t, bounds = self.next_t, self.bounds
            for i, h in zip(idx, heads):
                if h < next_t[i]:
                    next_t[i] = h
            for i, b in zip(idx, new_bound):
                bounds[i] = b

    def _catch_up(self, until: float) -> None:
        """Handle what waiting sites left before ``until``: the run ended before the span (at its
        horizon) with completions and messages due before it, which no arrival or timer came to
        handle (none can send: those sites' arrivals and timers come at ``until`` or later)."""
        for i in np.flatnonzero(self.next_t < until).tolist():
            site = self.sites[i]
            self.next_t[i] = site.advance(until)
            if site.outbox:
                raise InvariantError(
                    f"site {site.name}: the {site.agent.name} agent sent from a completion or a message, "
                    "though it declares sends_only_on_arrival_and_timer"
                )
        self.events, self.done = self.tally.events, self.tally.done

    def _check_destinations(self, rows: list[tuple]) -> None:
        """Every message goes to another site of the grid: a destination out of range would be
        lost in a lookup (or, negative, land on the wrong site), and a site is not its own
        neighbor (a topology's links refuse that in Site._post)."""
        dsts = list(map(itemgetter(3), rows))  # about 55 ns a message in all (0.7 % of random's general path)
        if min(dsts) >= 0 and max(dsts) < self.n_sites and not any(map(_eq, map(itemgetter(1), rows), dsts)):
            return
        for row in rows:
            if not 0 <= row[3] < self.n_sites or row[1] == row[3]:
                break
        sender = self.sites[self.local_list[row[1]]].name
        what = (
            "itself"
            if row[1] == row[3]
            else f"site {row[3]!r}, which is not a site of this grid (0-{self.n_sites - 1})"
        )
        raise InvariantError(f"site {sender} sent a {self.kinds.names[row[5]]!r} message at t={row[4]} to {what}")

    def _outgoing(self, rows: list[tuple]) -> tuple[list[Any], dict[int, float]]:
        """Rows grouped by destination shard, and the earliest delivery time of each group."""
        if self.full_graph and rows:
            self._check_destinations(rows)
        out_min: dict[int, float] = {}
        if self.n_shards == 1:
            return [rows], ({0: min(map(itemgetter(0), rows))} if rows else {})
        out: list[Any] = [[] for _ in range(self.n_shards)]
        shard_of = self.shard_of
        for row in rows:
            d = shard_of[row[3]]
            out[d].append(row)
            if row[0] < out_min.get(d, math.inf):
                out_min[d] = row[0]
        if self.columnar:
            # Rows for other processes travel packed by column; the shard's own stay rows, as
            # _keep_own delivers them here (an all-to-all broadcast keeps 1/S of its messages home).
            out = [b if d == self.shard_id or not b else pack_rows(b) for d, b in enumerate(out)]
        return out, out_min

    def close(self) -> None:
        """Drop the sites once their results are gathered. A site, its agent, the agent's view
        and its scheduler refer to each other, and an agent's handlers are its own bound
        methods (brokers/agent.py): with the sites' and agents' attributes cleared, reference
        counting frees them all at once, where a cyclic collection would walk every live
        object of the run (seconds at 100,000 sites). The site's links to its agent and
        scheduler are the cycles' other half."""
        for site in self.sites:
            agent = site.agent
            site.agent = site.scheduler = site._on_finish = site._hot = None  # a site has fixed fields (slots)
            if hasattr(agent, "__dict__"):
                agent.__dict__.clear()
        self.sites = []

    def results(self, horizon: float) -> dict[str, Any]:
        if self.wake is not None:
            self._catch_up(horizon if math.isfinite(horizon) else self.clock)
        sites, series = [], []
        for i, site in enumerate(self.sites):
            site.finish(horizon)
            row = self._site_row(i, site.events, site.cpu_seconds + float(self.cpu[i]), site.received, site.sent)
            if hasattr(site.scheduler, "site_columns"):  # a scheduler's own columns (sites/sections.py)
                row.update(site.scheduler.site_columns())
            if site.faults is not None:
                row.update(faults.site_counts(site, horizon))
            sites.append(row)
            ts = site.agent.timeseries()
            if ts:
                series.append(ts)
        cols = job_columns(self.sites, horizon)
        usage = usage_ledger(cols)
        ts_cols = {k: np.concatenate([t[k] for t in series]) for k in series[0]} if series else {}
        out = {"jobs": cols, "sites": sites, "timeseries": ts_cols, "usage": usage}
        if not self.faultless:
            out["outages"] = faults.outage_columns(self.sites)
        return out


class ColumnEngine(ShardEngine):
    """Routing agents on FCFS sites with identical processors: the whole shard as numpy
    columns (``sites/fcfs_columns.py``), no per-site objects."""

    answers = False  # a routing agent sends at its sites' arrivals only (FcfsColumns.send_bound)

    @staticmethod
    def serves(spec: ShardSpec, protocol: Any) -> bool:
        return (
            spec.recurrence
            and spec.faults is None
            and protocol.route is not None
            and all(s.scheduler == "fcfs" and len(set(s.speeds)) == 1 for s in spec.sites)
        )

    def __init__(self, spec: ShardSpec, protocol: Protocol, params: Params, kinds: MessageKinds, local_of: np.ndarray):
        super().__init__(spec, kinds, local_of)
        counts = np.bincount(local_of[spec.jobs["submit_site"]], minlength=len(spec.sites))
        self.columns = FcfsColumns(
            RoutedSites(
                site_ids=np.array([s.site_id for s in spec.sites], dtype=np.int64),
                procs=np.array([s.procs for s in spec.sites], dtype=np.int64),
                speeds=np.array([s.speeds[0] for s in spec.sites], dtype=float),
                latency=spec.latency if isinstance(spec.latency, float) else np.asarray(spec.latency, dtype=float),
                jobs=spec.jobs,
                routes=protocol.route(spec.grid, [s.site_id for s in spec.sites], counts.tolist(), params),
                job_code=kinds.code["job"],
                names=tuple(s.name for s in spec.sites),
                protocol=protocol.name,
            )
        )

    def next_time(self) -> float:
        return self.columns.next_time()

    def send_bound(self) -> float:
        return self.columns.send_bound()

    def live(self) -> int:
        return len(self.columns.release) - self.columns.done

    def deliver(self, batch: "np.ndarray | list[tuple]", first: float | None = None) -> None:
        self.columns.deliver(batch)  # its own check of the delivery times, on the array

    def advance(self, until: float) -> tuple[list[Any], dict[int, float]]:
        cols = self.columns
        sent = cols.advance(until)
        self.events = int(cols.events.sum())
        self.done = cols.done
        return self._split(sent)  # arrays even in one process: they are made as arrays

    def _split(self, batch: np.ndarray) -> tuple[list[np.ndarray], dict[int, float]]:
        """A batch in delivery order cut by destination shard, and each part's earliest delivery."""
        out, out_min = [empty_batch()] * self.n_shards, {}
        if not len(batch):
            return out, out_min
        if self.n_shards == 1:
            return [batch], {0: float(batch["deliver"][0])}
        dest = self.site_to_shard[batch["dst"]]
        order = np.argsort(radix_ids(dest), kind="stable")  # keeps the delivery order within each part
        counts = np.bincount(dest, minlength=self.n_shards).tolist()
        lo = 0
        for d, k in enumerate(counts):
            if k:
                part = take(batch, order[lo : lo + k])
                out[d] = part
                out_min[d] = float(part["deliver"][0])
                lo += k
        return out, out_min

    def results(self, horizon: float) -> dict[str, Any]:
        cols = self.columns
        cols.finish(horizon)
        counts = cols.site_counts()
        job = self.kinds.code["job"]
        sites = []
        for i in range(len(self.specs)):
            sent = [0] * len(self.kinds)
            sent[job] = int(counts["sent_jobs"][i])
            sites.append(
                self._site_row(
                    i, int(counts["events"][i]), float(counts["cpu_seconds"][i]), int(counts["received"][i]), sent
                )
            )
        job_cols = cols.job_columns(horizon)
        return {"jobs": job_cols, "sites": sites, "timeseries": {}, "usage": usage_ledger(job_cols)}


#: Up to this many sites a window's updates of the calendar go item by item: numpy's fancy
#: indexing has a fixed cost of microseconds, which small scenarios pay at every window.
_FEW = 16
#: Neighbors a site checks its sends against as a tuple; more, as a set.
_SHORT = 32


def _min(values: np.ndarray) -> float:
    return float(values.min()) if len(values) else math.inf


def _by_site(jobs: np.ndarray, local_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The shard's jobs by hosted site, each site's in submission order (release, job id),
    and how many each site has."""
    ids = jobs["job_id"]
    if len(ids) < 2 or (ids[1:] > ids[:-1]).all():  # in job id order: (release, site) order
        jobs = take(jobs, np.argsort(radix_ids(jobs["submit_site"]), kind="stable"))
    else:
        jobs = take(jobs, np.lexsort((ids, jobs["release"], jobs["submit_site"])))
    counts = np.bincount(local_of[jobs["submit_site"]], minlength=int((local_of >= 0).sum()))
    return jobs, counts


def _live(site: Site) -> int:
    """Jobs of a site that can still move without an agent's decision (see StepInfo.live)."""
    if site.fast:
        return site.n_local  # silent sites under a periodic protocol: never judged stalled
    busy = 0 if site.down else site.m - site.free_count
    job_kinds = site.kinds.kinds
    travelling = sum(1 for row in site.pending_messages() if job_kinds[row[5]].job)
    held = len(site.held) if site.down and site.up_at < math.inf else 0
    return busy + (site.n_local - site.cursor) + travelling + held
