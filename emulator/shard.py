"""A shard hosts many sites and advances them, window by window.

The same class runs in the in-process backend (a plain object) and in the Ray
backend (wrapped as an actor). Its whole state is plain data (sites, queues, heaps,
generator states), so it can be pickled at a barrier.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gridemu.brokers import registry
from gridemu.brokers.agents.base import GridInfo
from gridemu.model.errors import InvariantError
from gridemu.model.messages import MessageKinds, empty_batch, to_batch
from gridemu.sites.site import Site
from gridemu.sites.spec import SiteSpec
from gridemu.sites.view import SiteView


@dataclass
class ShardSpec:
    shard_id: int
    n_shards: int
    sites: list[SiteSpec]
    jobs: list[np.ndarray]  # one JOB_DTYPE array per hosted site
    latency: float | np.ndarray  # one for every link, or rows: hosted sites, columns: all sites
    owners: list[int]  # organization index of each hosted site
    site_to_shard: np.ndarray
    protocol: dict[str, Any]
    grid: GridInfo
    recurrence: bool = True  # allow the FCFS recurrence where no agent can act
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepInfo:
    """What a shard tells the coordinator at a barrier (small; batches travel apart)."""

    next_time: float
    bound: float
    out_min: dict[int, float]  # destination shard -> earliest delivery in its batch
    events: int
    done: int


class Shard:
    def __init__(self, spec: ShardSpec):
        self.shard_id = spec.shard_id
        self.n_shards = spec.n_shards
        self.site_to_shard = spec.site_to_shard
        protocol = registry.get(spec.protocol["name"])
        self.kinds = MessageKinds(protocol.messages)
        params = dict(spec.protocol)
        params.update(spec.extra)
        self.sites: list[Site] = []
        self.index: dict[int, int] = {}
        for i, (s, jobs) in enumerate(zip(spec.sites, spec.jobs)):
            site = Site(s, jobs, spec.latency if isinstance(spec.latency, float) else spec.latency[i], spec.owners[i], self.kinds)
            if site.scheduler.name == "fairshare":
                site.scheduler.configure(spec.extra["policy"])
            site.agent = protocol.agent(SiteView(site), spec.grid, params)
            self.index[s.site_id] = i
            self.sites.append(site)
        for site in self.sites:
            site.agent.on_start(0.0)
            if site.outbox:  # windows are built on send bounds, which only timers and messages set
                raise InvariantError(
                    f"site {site.name}: the {site.agent.name} agent sent a message from on_start; set a timer at 0 and send from it"
                )
            if spec.recurrence and site.agent.silent and site.scheduler.name == "fcfs" and site.uniform:
                site.enable_recurrence()
        self.clock = -math.inf  # every event before this time has been handled

    def status(self) -> StepInfo:
        return StepInfo(self._next_time(), self._bound(), {}, self._events(), self._done())

    def step(self, until: float, *batches: np.ndarray) -> tuple:
        """Deliver ``batches``, handle every event with time < until, return outgoing batches.

        Returns ``(info, batch_for_shard_0, ..., batch_for_shard_{S-1})``.
        """
        for batch in batches:
            for row in batch.tolist():
                if row[0] < self.clock:
                    raise InvariantError(
                        f"causality: message {self.kinds.names[row[5]]!r} from site {row[1]} (seq {row[2]}) to site {row[3]} "
                        f"due at t={row[0]} arrived after the window that ended at t={self.clock}"
                    )
                self.sites[self.index[row[3]]].deliver(row)
        for site in self.sites:
            site.bound = site.agent.send_bound()
        rows: list[tuple] = []
        clock = time.perf_counter
        for site in self.sites:
            t0 = clock()
            site.advance(until)
            site.cpu_seconds += clock() - t0
            if site.outbox:
                rows.extend(site.outbox)
                site.outbox = []
        self.clock = until
        out = [empty_batch()] * self.n_shards
        out_min: dict[int, float] = {}
        if rows:
            batch = to_batch(rows)
            dest = self.site_to_shard[batch["dst"]]
            for d in np.unique(dest):
                part = batch[dest == d]
                out[int(d)] = part
                out_min[int(d)] = float(part["deliver"].min())
        info = StepInfo(self._next_time(), self._bound(), out_min, self._events(), self._done())
        return (info, *out)

    def _next_time(self) -> float:
        return min((s.next_event_time() for s in self.sites), default=math.inf)

    def _bound(self) -> float:
        return min((s.agent.send_bound() for s in self.sites), default=math.inf)

    def _events(self) -> int:
        return sum(s.events for s in self.sites)

    def _done(self) -> int:
        # Finished pieces less the pieces split off jobs: equals the job count once all are done.
        return sum(s.done - s.pieces if not s.fast else s.cursor for s in self.sites)

    def results(self, horizon: float) -> dict[str, Any]:
        """Job columns, per-site rows and agent time series, once the run is over."""
        jobs, sites, series, usage = [], [], [], []
        for site in self.sites:
            site.finish(horizon)
            jobs.append(site.results(horizon))
            sites.append(
                {
                    "site_id": site.site_id,
                    "name": site.name,
                    "owner": site.owner,
                    "procs": site.m,
                    "speed_mean": float(np.mean(site.speeds)),
                    "events": site.events,
                    "cpu_seconds": site.cpu_seconds,
                    "messages_received": site.received,
                    "messages_sent": sum(site.sent),
                    **{f"sent_{name}": n for name, n in zip(self.kinds.names, site.sent)},
                    **({"jobs_to_default_entry": site.scheduler.unmapped} if site.scheduler.name == "fairshare" else {}),
                }
            )
            usage.extend((site.site_id, g, u) for g, u in sorted(site.usage_group.items()))
            ts = site.agent.timeseries()
            if ts:
                series.append(ts)
        cols = {k: np.concatenate([j[k] for j in jobs]) for k in jobs[0]} if jobs else {}
        ts_cols = {k: np.concatenate([t[k] for t in series]) for k in series[0]} if series else {}
        return {"jobs": cols, "sites": sites, "timeseries": ts_cols, "usage": usage}
