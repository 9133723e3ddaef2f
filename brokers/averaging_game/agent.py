"""``averaging_game``: Algorithm 4.1 (averaging load balancing) on divisible jobs, run per
period by a coalition each organization joins with probability p_k (thesis 4.5), learned
by Algorithm 4.2 with ``learn``.

The rounds, pieces and answers are the shared divisible-load agent's
(``brokers/bilb/divisible.py``); here only the strategy and the plan. A site's offer
declares 1 (in this period's coalition) or 0 (out); receivers are unbounded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gridemu.brokers.agent import GridInfo
from gridemu.brokers.averaging.algorithm import averaging_plan
from gridemu.brokers.bilb.divisible import DivisibleAgent, Plan
from gridemu.brokers.bilb.strategies import adjust_join
from gridemu.brokers.params import for_site
from gridemu.model.rng import PURPOSE_COALITION, site_rng

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.averaging_game.protocol import AveragingGameParams


def coalition_round(loads: list[float], members: list[int]) -> tuple[Plan, float]:
    """Algorithm 4.1 among ``members`` (site ids, ascending): the transfers (k, l, amount) in
    site ids, and the delay to the next round, the members' mean load (0 with no member)."""
    sub = [loads[k] for k in members]
    mean = sum(sub) / len(sub) if sub else 0.0
    if len(members) < 2:
        return [], mean
    return [(members[k], members[l], amount) for k, l, amount in averaging_plan(sub)], mean


class AveragingGameAgent(DivisibleAgent):
    """``averaging_game``: Algorithm 4.1 in a coalition joined per period with probability p_k (Alg. 4.2)."""

    name = "averaging_game"

    def __init__(self, site, grid: GridInfo, params: AveragingGameParams):
        super().__init__(site, grid, params)
        self.p = for_site(params.join, site.site_id)
        self.rng = site_rng(grid.seed, site.site_id, PURPOSE_COALITION)
        self.member = False

    def level(self) -> float:
        return 1.0 if self.member else 0.0

    def strategy(self) -> float:
        return self.p

    def plan(self, loads: list[float], levels: list[float], movable: list[float]) -> tuple[Plan, float]:
        # Every site computes the plan from the same offers, each on its own (Algorithm 4.1
        # averages whole queues: the movable loads are not its input).
        return coalition_round(loads, [k for k, level in enumerate(levels) if level > 0.5])

    def adjust(self, ratio: float) -> None:
        self.p = adjust_join(self.p, ratio, self.eta)

    def decide(self) -> None:
        self.member = bool(self.rng.random() < self.p)
