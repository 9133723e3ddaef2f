"""``local``: every organization runs its own jobs; nothing is ever sent (the baseline)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from gridemu.brokers.agent import GridInfo, LocalAgent
from gridemu.brokers.params import Params
from gridemu.brokers.protocol import Protocol


def local_routes(
    grid: GridInfo, site_ids: Sequence[int], n_jobs: Sequence[int], params: Params | None = None
) -> list[np.ndarray]:
    """Every job stays at the site that submitted it: the route that lets FCFS sites with
    identical processors run as columns (emulator/shard.py: ColumnEngine), as the random
    broker's does; the same schedule as the sites' own event loops (a local site's FCFS
    queue is the same recurrence either way)."""
    return [np.full(n, site_id, dtype=np.int64) for site_id, n in zip(site_ids, n_jobs)]


PROTOCOL = Protocol(
    "local",
    LocalAgent,
    "no cooperation: every organization runs its own jobs",
    route=local_routes,
    capabilities=frozenset({"topologies", "faults", "stateless", "widths"}),
)
