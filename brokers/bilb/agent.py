"""``bilb``: Bounded, Iterative Load Balancing (thesis Algorithm 4.3) on divisible jobs.

Each organization declares a participation level l_k: it sends at most l_k and accepts
foreign pieces only while its queue stays within l_k; with ``learn`` the level follows
section 4.7.3. The rounds, pieces and answers are the shared divisible-load agent's
(``brokers/bilb/divisible.py``); here only the strategy and the plan.
"""

from __future__ import annotations

import math

from gridemu.brokers.agent import GridInfo
from gridemu.brokers.bilb.algorithm import bilb_plan, next_round_time, tie_sorted
from gridemu.brokers.bilb.divisible import DivisibleAgent, Plan
from gridemu.brokers.bilb.params import BilbParams
from gridemu.brokers.bilb.strategies import adjust_limit
from gridemu.brokers.params import for_site


class BilbAgent(DivisibleAgent):
    """``bilb``: Bounded, Iterative Load Balancing (thesis Algorithm 4.3) with declared levels l_k."""

    name = "bilb"
    plans_movable = True

    def __init__(self, site, grid: GridInfo, params: BilbParams):
        super().__init__(site, grid, params)
        self.limit = for_site(params.limit, site.site_id)

    def level(self) -> float:
        return self.limit

    def accept_limit(self) -> float:
        return self.limit

    def plan(self, loads: list[float], levels: list[float], movable: list[float]) -> tuple[Plan, float]:
        # Every site computes the plan from the same offers, each on its own.
        plan = bilb_plan(loads, levels, movable)
        timing = plan if self.round_timing == "plan" else bilb_plan(loads, [math.inf] * len(loads), movable)
        return plan, next_round_time(0.0, loads, timing)

    def plan_order(self, loads: dict[int, float]) -> list[int]:
        return tie_sorted(loads, loads.__getitem__)  # bilb_plan's order, loads within TIE tied

    def adjust(self, ratio: float) -> None:
        self.limit = adjust_limit(self.limit, ratio, self.eta)
