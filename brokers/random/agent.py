"""``random``: a broker sends each newly submitted job to a uniformly random site.

The draw includes the submitting site itself (then the job stays, with no message); in a
network topology it is among the site and its neighbors.
A job that arrived by transfer is never brokered again.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.params import Params
from gridemu.model.rng import PURPOSE_BROKER, site_rngs


def random_routes(
    grid: GridInfo, site_ids: Sequence[int], n_jobs: Sequence[int], params: Params | None = None
) -> list[np.ndarray]:
    """The random broker's decision: each of a site's submitted jobs (``n_jobs`` of them), in
    submission order, goes to a site drawn uniformly from all sites (its own included), or
    in a network topology from the site itself and its neighbors, from the site's own
    broker stream; for each site of ``site_ids``. One vectorized draw gives the values of
    one draw per job (numpy's bounded integers keep their buffer in the bit generator)."""
    routes = []
    for site_id, n, rng in zip(site_ids, n_jobs, site_rngs(grid.seed, site_ids, PURPOSE_BROKER)):
        if grid.neighbors is None:
            routes.append(rng.integers(grid.n_sites, size=n))
        else:
            choices = np.array((site_id, *grid.neighbors[site_id]), dtype=np.int64)
            routes.append(choices[rng.integers(len(choices), size=n)])
    return routes


class RandomBrokerAgent(Agent):
    name = "random"
    intercepts_arrivals = True
    sends_only_on_arrival_and_timer = True  # a transfer at an arrival

    def __init__(self, site, grid: GridInfo, params: Params):
        super().__init__(site, grid, params)
        self.routes = random_routes(grid, [site.site_id], [site.n_local], params)[0].tolist()

    def on_arrival(self, now: float, slot: int) -> bool:
        dst = self.routes[slot]  # a local job's slot is its submission position
        if dst == self.site.site_id:
            return False
        self.site.transfer(now, slot, dst)
        return True

    def send_bound(self) -> float:
        # Only a local arrival makes this agent send.
        return self.site.next_release()
