"""The protocol agent interface (DESIGN.md, "Protocol agent").

An agent is attached to every site. It reacts to the start of the run, local job
arrivals, job completions, timers and received messages, and acts only through its
site's view (``sites/view.py``): ``site.send``, ``site.set_timer``, ``site.transfer``...
A received message is a named view of its kind (``model/messages.py``) and goes to the
agent's ``on_<kind>`` method (``on_load(now, msg)``); a kind with no method stops the run
with an error naming the kind and the sender. An agent declares the earliest virtual time
at which it could next send (``send_bound``); the kernel's windows are built on those bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from gridemu.brokers.params import Params
from gridemu.model.errors import InvariantError
from gridemu.sites.view import SiteView


@dataclass(frozen=True)
class GridInfo:
    """What every agent may know about the grid without asking: its shape, not its state."""

    n_sites: int
    site_owner: tuple[int, ...]
    seed: int
    lookahead: float
    max_latency: float = 0.0  # the slowest link: how long a round's reports may take
    #: Each site's neighbors, sorted (``[network] topology``); None: every site is linked to every other.
    neighbors: tuple[tuple[int, ...], ...] | None = None
    #: The protocol's own shape information (``Protocol.grid_info``: processor speeds,
    #: capacities...), by name; read only: one object serves every agent of a shard.
    info: dict[str, Any] = field(default_factory=dict)


class Agent:
    """Base agent: no cooperation. Subclasses override the hooks they need."""

    name = "local"
    #: When True, the kernel calls on_arrival before queueing a local job.
    intercepts_arrivals = False
    #: An agent that can never act (no hook does anything): the kernel may then run its
    #: site's FCFS schedule as a vectorized recurrence and skip the windows' barriers.
    silent = False
    #: An agent that sends only from ``on_arrival`` and ``on_timer`` (and sets timers only
    #: there), whatever it receives or sees complete, so that its ``send_bound`` depends on its
    #: arrivals and timers alone: the kernel may then handle its site's other events
    #: (completions, received messages) late, at the site's next arrival or timer, in the same
    #: order, and skips asking its bound when messages are delivered (a send from one of those
    #: events would come before the bound the agent declared: the causality check stops it).
    #: Before the run's last release the kernel takes the site's next arrival or timer as the
    #: agent's send bound, which the declaration makes one, and asks ``send_bound`` after it.
    sends_only_on_arrival_and_timer = False

    def __init__(self, site: SiteView, grid: GridInfo, params: Params):
        self.site = site
        self.grid = grid
        self.params = params
        self.records: list[tuple] = []
        #: The handler of each message kind, by code: the kernel calls handlers[code](now, msg).
        self.handlers: list[Callable[[float, Any], None]] = [
            getattr(self, f"on_{kind.name}", None) or self._unhandled for kind in site.kinds.kinds
        ]

    # hooks ------------------------------------------------------------------
    def on_start(self, now: float) -> None:
        pass

    def on_arrival(self, now: float, slot: int) -> bool:
        """Return True if the agent took the job (e.g. transferred it); else it is queued."""
        return False

    def on_complete(self, now: float, slot: int) -> None:
        pass

    def on_timer(self, now: float, tag: Any) -> None:
        pass

    def on_job(self, now: float, msg: Any) -> None:
        """A job transferred here: queue it."""
        self.site.receive_job(now, msg)

    def _unhandled(self, now: float, msg: Any) -> None:
        raise InvariantError(
            f"site {self.site.name} ({self.name} protocol) at t={now}: got a {msg.kind!r} message it cannot handle "
            f"(from site {msg.src}, seq {msg.seq}): its agent has no on_{msg.kind}(self, now, msg)"
        )

    def neighbors(self) -> "range | tuple[int, ...] | list[int]":
        """The sites this one is linked to (every other site on the full graph), in id order."""
        me, grid = self.site.site_id, self.grid
        if grid.neighbors is not None:
            return grid.neighbors[me]
        return [d for d in range(grid.n_sites) if d != me]

    def random_neighbor(self, rng: np.random.Generator) -> int:
        """A neighbor drawn uniformly with the agent's own stream ``rng`` (one draw)."""
        me, nb = self.site.site_id, self.grid.neighbors
        if nb is None:
            d = int(rng.integers(self.grid.n_sites - 1))
            return d + (d >= me)
        return nb[me][int(rng.integers(len(nb[me])))]

    def random_neighbors(self, rng: np.random.Generator, d: int) -> list[int]:
        """``d`` neighbors (every other site on the full graph) drawn uniformly with
        replacement from the agent's own stream ``rng``: the "power of d choices" sample."""
        me, nb = self.site.site_id, self.grid.neighbors
        if nb is None:
            return [k + (k >= me) for k in rng.integers(self.grid.n_sites - 1, size=d).tolist()]
        return [nb[me][i] for i in rng.integers(len(nb[me]), size=d).tolist()]

    def next_hop(self, dst: int) -> int:
        """Where to send a message bound for site ``dst``: ``dst`` itself on the full graph or
        when it is a neighbor, else the neighbor on a shortest path to it (lowest id among
        equals), from the network's shape: a breadth-first search from ``dst`` that stops at
        this site, so a destination a few hops away costs a few neighborhoods. Each hop is
        nearer, so a message forwarded this way arrives."""
        nb, me = self.grid.neighbors, self.site.site_id
        if nb is None or dst == me:
            return dst
        dist, frontier = {dst: 0}, [dst]
        while me not in dist:
            nxt = []
            for k in frontier:
                for m in nb[k]:
                    if m not in dist:
                        dist[m] = dist[k] + 1
                        nxt.append(m)
            frontier = nxt
        return min(m for m in nb[me] if dist.get(m) == dist[me] - 1)

    def broadcast(self, now: float, kind: str, job: tuple = (), **fields: Any) -> None:
        """Send the same message to every neighbor (every other site on the full graph)."""
        self.site.send_all(now, self.neighbors(), kind, job, **fields)

    def send_bound(self) -> float:
        """Earliest time this agent could send: by default its site's next event."""
        return self.site.next_event_time()

    # results ------------------------------------------------------------------
    #: Column names of ``records`` rows, written to timeseries.parquet when non-empty.
    record_columns: tuple[str, ...] = ()

    def timeseries(self) -> dict[str, np.ndarray] | None:
        if not self.records:
            return None
        cols = list(zip(*self.records))
        return {name: np.asarray(col) for name, col in zip(self.record_columns, cols)}


class LocalAgent(Agent):
    """``local``: every organization runs its own jobs; no message is ever sent."""

    name = "local"
    silent = True

    def send_bound(self) -> float:
        return math.inf
