"""The protocol agent interface (DESIGN.md, "Protocol agent").

An agent is attached to every site. It reacts to the start of the run, local job
arrivals, job completions, timers and received messages, and acts only through its
own site: ``site.send``, ``site.set_timer``, ``site.transfer``, ``site.enqueue``.
It declares the earliest virtual time at which it could next send (``send_bound``);
the kernel's windows are built on those bounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.model.errors import InvariantError
from gridemu.model.messages import MESSAGE_TYPES, MTYPE

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.sites.site import Site

JOB = MTYPE["job"]


@dataclass(frozen=True)
class GridInfo:
    """What every agent may know about the grid without asking: its shape, not its state."""

    n_sites: int
    site_owner: tuple[int, ...]
    seed: int
    lookahead: float
    max_latency: float = 0.0  # the slowest link: how long a round's reports may take


class Agent:
    """Base agent: no cooperation. Subclasses override the hooks they need."""

    name = "local"
    #: When True, the kernel calls on_arrival before queueing a local job.
    intercepts_arrivals = False

    def __init__(self, site: "Site", grid: GridInfo, params: dict[str, Any]):
        self.site = site
        self.grid = grid
        self.params = params
        self.records: list[tuple] = []

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

    def on_message(self, now: float, row: tuple) -> None:
        if row[5] == JOB:
            self.site.receive_job(now, row)
            return
        raise InvariantError(
            f"site {self.site.name} ({self.name} protocol) got a {MESSAGE_TYPES[row[5]]!r} message it cannot handle "
            f"(from site {row[1]}, seq {row[2]})"
        )

    def broadcast(self, now: float, mtype: str, value: float = 0.0, value2: float = 0.0, job: tuple = ()) -> None:
        """Send the same message to every other site."""
        site = self.site
        for dst in range(self.grid.n_sites):
            if dst != site.site_id:
                site.send(now, dst, mtype, value=value, value2=value2, job=job)

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

    def send_bound(self) -> float:
        return math.inf
