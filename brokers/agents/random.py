"""``random``: a broker sends each newly submitted job to a uniformly random site.

The draw includes the submitting site itself (then the job stays, with no message).
A job that arrived by transfer is never brokered again.
"""
from __future__ import annotations

from typing import Any

from gridemu.brokers.agents.base import Agent, GridInfo
from gridemu.model.rng import PURPOSE_BROKER, site_rng

#: Destinations drawn at once: a block of draws is the same sequence as one draw per call
#: (numpy's bounded integers), at a fraction of the cost per job.
BLOCK = 1024


class RandomBrokerAgent(Agent):
    name = "random"
    intercepts_arrivals = True

    def __init__(self, site, grid: GridInfo, params: dict[str, Any]):
        super().__init__(site, grid, params)
        self.rng = site_rng(grid.seed, site.site_id, PURPOSE_BROKER)
        self.drawn: list[int] = []
        self.left = site.n_local  # local arrivals still to broker: never draw more than they need

    def on_arrival(self, now: float, slot: int) -> bool:
        if not self.drawn:
            block = min(BLOCK, self.left)
            self.drawn = self.rng.integers(self.grid.n_sites, size=block).tolist()[::-1]
            self.left -= block
        dst = self.drawn.pop()
        if dst == self.site.site_id:
            return False
        self.site.transfer(now, slot, dst)
        return True

    def send_bound(self) -> float:
        # Only a local arrival makes this agent send.
        return self.site.next_release()
