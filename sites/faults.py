"""Faults as part of a scenario (``[faults]``): site crashes, cut links, lost and late messages.

The fault model, chosen where SimGrid, Batsim and GridSim leave it to the user:

* **A crash** stops a whole site (processors and broker) from ``at`` until ``at +
  duration``. Jobs running there are killed: with ``on_crash = "requeue"`` (the default)
  each goes back to the head of the queue, in the order they started, and starts again from
  scratch after the repair; with ``"lose"`` it ends in the ``lost`` state at the crash.
  While a site is down its agent is frozen: jobs its users submit and jobs other sites send
  it wait at the front door and are handled, in order, at the repair; timers due meanwhile
  fire at the repair; messages that carry no job are lost. A site that is down sends nothing.
  Random crashes: ``mtbf`` and ``mttr`` give each site exponential times to failure and to
  repair, drawn from the site's own stream (the seed decides them, not the shard layout).
* **A cut link** (``link``: two sites; ``partition``: groups of sites, the sites listed in no
  group forming one more) holds during ``[at, at + duration)``. It is judged when a message
  is sent: a message that carries no job is lost; a job is held by the sender's transport
  and delivered one link latency after the cut ends (transfers are retransmitted, as TCP
  would, so no job vanishes in the network). A message already on its way is delivered.
* **Lost and late messages**: every message that carries no job is lost with probability
  ``message_loss``; every message is late with probability ``message_delay``, by an extra
  time drawn uniformly from ``[0, delay_max)``. The sender draws both, in the order it
  sends, from its own stream.

Faults only ever delay what a site does or sends, never advance it, so a site's send bound
stays a lower bound and the windows stay valid.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gridemu.model.checks import check_number, choice
from gridemu.model.errors import ScenarioError
from gridemu.model.jobs import STATE_CODE
from gridemu.model.messages import N_ROUTING
from gridemu.model.rng import PURPOSE_CRASHES, PURPOSE_MESSAGE_FAULTS, site_rng

ON_CRASH = ("requeue", "lose")
#: sites.parquet columns of a run with faults (summary.json sums them under global.faults).
FAULT_COLUMNS = (
    "crashes",
    "downtime",
    "down_at_end",
    "jobs_killed",
    "jobs_lost",
    "work_lost",
    "messages_lost",
    "messages_late",
    "messages_dropped_down",
)
KEYS = {"on_crash", "mtbf", "mttr", "message_loss", "message_delay", "delay_max", "crash", "link", "partition"}


@dataclass(frozen=True)
class Cut:
    """Messages sent during ``[at, until)`` over a cut link: between the two sites of
    ``pair`` (a link), or between sites of different groups (a partition: ``group`` gives
    each site's group)."""

    at: float
    until: float
    group: tuple[int, ...] | None = None  # a partition: each site's group
    pair: tuple[int, int] | None = None  # a link between two sites

    def cuts(self, src: int, dst: int) -> bool:
        if self.pair is not None:
            return (src, dst) == self.pair or (dst, src) == self.pair
        return self.group[src] != self.group[dst]


@dataclass(frozen=True)
class FaultPlan:
    """The ``[faults]`` table, checked: what every site needs to play its own faults."""

    on_crash: str = "requeue"
    mtbf: float = math.inf
    mttr: float = 0.0
    message_loss: float = 0.0
    message_delay: float = 0.0
    delay_max: float = 0.0
    crashes: tuple[tuple[int, float, float], ...] = ()  # (site, at, until), sorted by site then time
    cuts: tuple[Cut, ...] = ()

    def describe(self) -> str:
        """One line for ``gridemu validate``."""
        parts = [f"{len(self.crashes)} crashes listed"] if self.crashes else []
        if math.isfinite(self.mtbf):
            parts.append(f"random crashes (mtbf {self.mtbf:g}, mttr {self.mttr:g})")
        if self.crashes or math.isfinite(self.mtbf):
            parts.append(f"running jobs {'requeued' if self.on_crash == 'requeue' else 'lost'}")
        if self.cuts:
            parts.append(f"{len(self.cuts)} cut links or partitions")
        if self.message_loss:
            parts.append(f"{self.message_loss:.0%} of messages without a job lost")
        if self.message_delay:
            parts.append(f"{self.message_delay:.0%} of messages late by up to {self.delay_max:g}")
        return ", ".join(parts) or "none"

    def for_site(self, site_id: int, seed: int) -> "SiteFaults":
        return SiteFaults(self, site_id, seed)


@dataclass
class SiteFaults:
    """One site's faults while it runs: its crash times and the fate of what it sends."""

    plan: FaultPlan
    site_id: int
    seed: int
    crashes: list[tuple[float, float]] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)
    # What the site counts (sites.parquet).
    lost: int = 0  # messages without a job it sent that were lost (drawn or over a cut link)
    late: int = 0  # messages it sent that were delayed (drawn) or held over a cut link
    dropped: int = 0  # messages without a job that reached it while it was down
    downtime: float = 0.0  # time down, repairs done (site_counts adds a stretch still going)
    jobs_killed: int = 0  # running jobs killed by a crash and requeued
    jobs_lost: int = 0  # running jobs killed by a crash and lost (on_crash = "lose")
    work_lost: float = 0.0  # processor-time the killed jobs had done
    #: Each crash's (down, up) times, up its repair (inf: none): outages.parquet, and the
    #: site's count of crashes (site_counts).
    outages: list[tuple[float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Listed crashes are sorted by site: this site's are found by bisection, not by a scan
        # of every site's (a per-site cost that would grow with the grid).
        listed = self.plan.crashes
        lo, hi = bisect.bisect_left(listed, (self.site_id,)), bisect.bisect_left(listed, (self.site_id + 1,))
        self.crashes = [(at, until) for _, at, until in listed[lo:hi]]
        self.cuts = [c for c in self.plan.cuts if c.pair is None or self.site_id in c.pair]
        self._crash_rng = site_rng(self.seed, self.site_id, PURPOSE_CRASHES) if math.isfinite(self.plan.mtbf) else None
        self._msg_rng = site_rng(self.seed, self.site_id, PURPOSE_MESSAGE_FAULTS)
        self._random_next = self._draw_failure(0.0)

    def _draw_failure(self, after: float) -> tuple[float, float] | None:
        if self._crash_rng is None:
            return None
        at = after + float(self._crash_rng.exponential(self.plan.mtbf))
        return at, at + float(self._crash_rng.exponential(self.plan.mttr))

    def next_crash(self, after: float) -> tuple[float, float] | None:
        """The next crash (at, until) starting at or after ``after`` (a repair time), or None.
        A random crash drawn to start while the site is down is skipped (the next one is
        drawn from the repair); a listed crash that began while the site was down starts at
        the repair and keeps its end (one that has ended is dropped)."""
        while self.crashes and self.crashes[0][1] <= after:
            self.crashes.pop(0)
        while self._random_next is not None and self._random_next[0] < after:
            self._random_next = self._draw_failure(max(after, self._random_next[1]))
        listed = self.crashes[0] if self.crashes else None
        drawn = self._random_next
        if drawn is None or (listed is not None and listed[0] <= drawn[0]):
            if listed is None:
                return None
            self.crashes.pop(0)
            return max(listed[0], after), listed[1]
        self._random_next = self._draw_failure(drawn[1])
        return drawn

    def fate(self, now: float, src: int, dst: int, deliver: float, lat: float, job: bool) -> float | None:
        """When a message sent now arrives (``deliver`` without faults), or None if it is lost."""
        plan = self.plan
        for cut in self.cuts:
            if cut.at <= now < cut.until and cut.cuts(src, dst):
                if not job:
                    self.lost += 1
                    return None
                self.late += 1
                deliver = max(deliver, cut.until + lat)
        if plan.message_loss and not job and self._msg_rng.random() < plan.message_loss:
            self.lost += 1
            return None
        if plan.message_delay and self._msg_rng.random() < plan.message_delay:
            self.late += 1
            deliver += float(self._msg_rng.uniform(0.0, plan.delay_max))
        return deliver


def parse_faults(raw: Any, site_names: list[str]) -> FaultPlan:  # noqa: C901
    """The ``[faults]`` table checked against the grid's sites; every error names its key."""
    if not isinstance(raw, dict):
        raise ScenarioError("faults", f"must be a table, got {type(raw).__name__}")
    for key in raw:
        if key not in KEYS:
            raise ScenarioError(f"faults.{key}", f"unknown key (allowed: {', '.join(sorted(KEYS))})")
    n = len(site_names)
    index = {name: i for i, name in enumerate(site_names)}
    out: dict[str, Any] = {"on_crash": choice("faults.on_crash", raw.get("on_crash", "requeue"), ON_CRASH)}
    if "mtbf" in raw or "mttr" in raw:
        if "mtbf" not in raw or "mttr" not in raw:
            missing = "mttr" if "mtbf" in raw else "mtbf"
            raise ScenarioError(
                f"faults.{missing}",
                "missing: random crashes need both mtbf (mean time to failure) and mttr (mean time to repair)",
            )
        out["mtbf"] = check_number("faults.mtbf", raw["mtbf"], positive=True)
        out["mttr"] = check_number("faults.mttr", raw["mttr"], positive=True, finite=True)
    for key in ("message_loss", "message_delay"):
        if key in raw:
            p = check_number(f"faults.{key}", raw[key], nonneg=True)
            if p > 1:
                raise ScenarioError(f"faults.{key}", f"a probability must be at most 1, got {raw[key]!r}")
            out[key] = p
    if out.get("message_delay"):
        if "delay_max" not in raw:
            raise ScenarioError("faults.delay_max", "missing: message_delay > 0 needs the largest extra delay")
        out["delay_max"] = check_number("faults.delay_max", raw["delay_max"], positive=True, finite=True)
    elif "delay_max" in raw:
        check_number("faults.delay_max", raw["delay_max"], positive=True, finite=True)

    def site_of(key: str, ref: Any) -> int:
        if isinstance(ref, str) and ref in index:
            return index[ref]
        if isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < n:
            return ref
        raise ScenarioError(key, f"must be a site index 0..{n - 1} or a site name, got {ref!r}")

    def interval(key: str, entry: dict[str, Any], allowed: set[str]) -> tuple[float, float]:
        for k in entry:
            if k not in allowed:
                raise ScenarioError(f"{key}.{k}", f"unknown key (allowed: {', '.join(sorted(allowed))})")
        for k in ("at", "duration"):
            if k not in entry:
                raise ScenarioError(f"{key}.{k}", "missing")
        at = check_number(f"{key}.at", entry["at"], nonneg=True, finite=True)
        return at, at + check_number(f"{key}.duration", entry["duration"], positive=True)

    def entries(name: str) -> list[tuple[str, dict[str, Any]]]:
        value = raw.get(name, [])
        if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
            raise ScenarioError(f"faults.{name}", f"must be a list of tables ([[faults.{name}]]), got {value!r}")
        return [(f"faults.{name}[{i}]", e) for i, e in enumerate(value)]

    crashes = []
    for key, entry in entries("crash"):
        if "site" not in entry:
            raise ScenarioError(f"{key}.site", "missing")
        at, until = interval(key, entry, {"site", "at", "duration"})
        crashes.append((site_of(f"{key}.site", entry["site"]), at, until, key))
    crashes.sort()
    for (s0, _, u0, k0), (s1, a1, _, k1) in zip(crashes, crashes[1:]):
        if s0 == s1 and a1 < u0:
            raise ScenarioError(k1, f"overlaps {k0}: site {site_names[s0]} is still down at t={a1:g}")
    out["crashes"] = tuple((s, at, until) for s, at, until, _ in crashes)
    cuts = []
    for key, entry in entries("link"):
        pair = entry.get("sites")
        if not isinstance(pair, list) or len(pair) != 2:
            raise ScenarioError(f"{key}.sites", f"must be a list of two sites, got {pair!r}")
        a, b = (site_of(f"{key}.sites[{i}]", ref) for i, ref in enumerate(pair))
        if a == b:
            raise ScenarioError(f"{key}.sites", f"a link joins two different sites, got {pair!r}")
        at, until = interval(key, entry, {"sites", "at", "duration"})
        cuts.append(Cut(at, until, pair=(a, b)))
    for key, entry in entries("partition"):
        groups = entry.get("groups")
        if not isinstance(groups, list) or not groups or not all(isinstance(g, list) and g for g in groups):
            raise ScenarioError(f"{key}.groups", f"must be a list of non-empty lists of sites, got {groups!r}")
        group = np.full(n, len(groups), dtype=np.int64)  # sites in no group: one more group
        for g, members in enumerate(groups):
            for j, ref in enumerate(members):
                s = site_of(f"{key}.groups[{g}][{j}]", ref)
                if group[s] != len(groups):
                    raise ScenarioError(f"{key}.groups[{g}][{j}]", f"site {site_names[s]} is in two groups")
                group[s] = g
        at, until = interval(key, entry, {"groups", "at", "duration"})
        cuts.append(Cut(at, until, group=tuple(group.tolist())))
    out["cuts"] = tuple(cuts)
    return FaultPlan(**out)


# ----------------------------------------------------------------------------- a site's crashes
# These act on a Site (sites/site.py) at its FAULT events; the site's event loop calls them.

_QUEUED, _RUNNING, _LOST = STATE_CODE["queued"], STATE_CODE["running"], STATE_CODE["lost"]
_FAULT = 1  # the kind rank of a crash or a repair in a site's heap (sites/site.py: FAULT)


def arm(site: Any, faults: SiteFaults) -> None:
    """Give a site its faults and put its first crash in its heap."""
    site.faults = faults
    _next_crash(site, 0.0)


def _next_crash(site: Any, after: float) -> None:
    nxt = site.faults.next_crash(after)
    if nxt is not None:
        site.seq += 1
        heapq.heappush(site.heap, (nxt[0], _FAULT, site.seq, 0, nxt[1]))


def crash(site: Any, now: float, until: float) -> None:
    """The site goes down until ``until``: its running jobs are killed (requeued at the head of
    its queue in the order they started, or lost), its processors stop."""
    f = site.faults
    f.outages.append((now, until))
    running = sorted(site.running_slots(), key=lambda slot: (site.r_start[slot], slot))
    requeue = f.plan.on_crash == "requeue"
    for slot in running:
        f.work_lost += (now - site.r_start[slot]) * site.c_procs[slot]
        site.free_count += site.c_procs[slot]
        site.release_processors(slot)
        site.setup.pop(slot, None)
        if requeue:
            site.r_state[slot] = _QUEUED
            site.r_start[slot] = math.nan
            site.r_end[slot] = math.nan  # its completion in the heap is void
            site.r_proc[slot] = -1
            site.proc_sets.pop(slot, None)
            f.jobs_killed += 1
        else:
            site.r_state[slot] = _LOST
            site.r_end[slot] = now
            site.tally.done += 1  # settled: a run without a horizon ends once every job is done or lost
            f.jobs_lost += 1
    if requeue:
        push_front = getattr(site.scheduler, "push_front", site.scheduler.push)
        for slot in reversed(running):
            push_front(slot)
    site.free_count = 0  # nothing starts while down
    site.down = True
    site.up_at = until
    if until < math.inf:
        site.seq += 1
        heapq.heappush(site.heap, (until, _FAULT, site.seq, 0, None))


def recover(site: Any, now: float) -> None:
    """The site is repaired: it handles what it held while down, in order, at this instant."""
    f = site.faults
    f.downtime += now - f.outages[-1][0]
    site.down = False
    site.up_at = -math.inf
    site.free_count = site.m
    held, site.held = sorted(site.held), []
    agent, sched = site.agent, site.scheduler
    for _, is_arrival, _, _, item in held:
        if is_arrival:
            if agent.intercepts_arrivals and agent.on_arrival(now, item):
                continue
            site.r_state[item] = _QUEUED
            sched.push(item)
        else:
            site.received += 1
            code = item[5]
            agent.handlers[code](now, tuple.__new__(site.kinds.views[code], item))
        sched.dispatch(site, now)
    sched.dispatch(site, now)
    _next_crash(site, now)


def hold_arrival(site: Any, now: float, slot: int) -> None:
    """A job its users submit while the site is down waits at the front door."""
    site.held.append((now, 1, slot, 0, slot))


def hold_message(site: Any, now: float, row: tuple) -> None:
    """A message reaching a site that is down: a job waits for the repair, anything else is lost."""
    if site.kinds.kinds[row[5]].job:
        site.held.append((now, 0, row[1], row[2], row))
    else:
        site.faults.dropped += 1


def settle_held(site: Any) -> None:
    """At the end of a run, what a site still down holds is queued there (never started)."""
    for _, is_arrival, _, _, item in site.held:
        if is_arrival:
            site.r_state[item] = _QUEUED
        else:
            site._add_slot(item[N_ROUTING:])
    site.held = []


def outage_columns(sites: list[Any]) -> dict[str, np.ndarray]:
    """Every crash of ``sites`` (those with faults), in site order then time: ``site_id``,
    ``down`` (the crash) and ``up`` (its repair, inf where none comes)."""
    rows = [(site.site_id, down, up) for site in sites if site.faults is not None for down, up in site.faults.outages]
    site_id, down, up = zip(*rows) if rows else ((), (), ())
    return {
        "site_id": np.array(site_id, dtype=np.int64),
        "down": np.array(down, dtype=float),
        "up": np.array(up, dtype=float),
    }


def site_counts(site: Any, horizon: float) -> dict[str, Any]:
    """The site's fault figures (sites.parquet columns), downtime counted up to the horizon."""
    f = site.faults
    downtime = f.downtime
    end = min(site.up_at, horizon)
    if site.down and end < math.inf:  # down for good with no horizon: down_at_end says so
        downtime += max(0.0, end - f.outages[-1][0])
    values = (len(f.outages), downtime, site.down, f.jobs_killed, f.jobs_lost, f.work_lost, f.lost, f.late, f.dropped)
    return dict(zip(FAULT_COLUMNS, values))
