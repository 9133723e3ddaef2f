"""``random``: a broker sends each newly submitted job to a uniformly random site.

The draw includes the submitting site itself (then the job stays, with no message).
A job that arrived by transfer is never brokered again.
"""
from __future__ import annotations

from typing import Any

from gridemu.brokers.agents.base import Agent, GridInfo
from gridemu.model.rng import PURPOSE_BROKER, site_rng



class RandomBrokerAgent(Agent):
    name = "random"
    intercepts_arrivals = True

    def __init__(self, site, grid: GridInfo, params: dict[str, Any]):
        super().__init__(site, grid, params)
        self.rng = site_rng(grid.seed, site.site_id, PURPOSE_BROKER)

    def on_arrival(self, now: float, slot: int) -> bool:
        dst = int(self.rng.integers(self.grid.n_sites))
        if dst == self.site.site_id:
            return False
        self.site.transfer(now, slot, dst)
        return True

    def send_bound(self) -> float:
        # Only a local arrival makes this agent send.
        return self.site.next_release()
