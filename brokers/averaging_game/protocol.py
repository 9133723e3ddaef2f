"""``averaging_game``: divisible jobs cut into pieces; each period a random coalition averages
its load (thesis 4.5, Alg. 4.1-4.2). Same keys (but ``join``), scores per period and divisible-job agent as ``bilb``
(``brokers/bilb/``); only the strategy and the plan differ (``agent.py`` here)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from gridemu.brokers.averaging_game.agent import AveragingGameAgent
from gridemu.brokers.bilb.divisible import MESSAGES
from gridemu.brokers.bilb.params import DivisibleParams
from gridemu.brokers.bilb.protocol import traffic, work
from gridemu.brokers.bilb.scores import summary
from gridemu.brokers.params import param
from gridemu.brokers.protocol import Protocol, Report, ScenarioFacts
from gridemu.model.errors import ScenarioError


@dataclass(frozen=True)
class AveragingGameParams(DivisibleParams):
    protocol: ClassVar[str] = "averaging_game"

    join: float | tuple[float, ...] | None = param(
        None,
        "the probability p_k of joining the coalition, in [0, 1] (default 1, 0.5 when learning)",
        per_site=True,
        nonneg=True,
    )

    def validate(self, scenario: ScenarioFacts) -> AveragingGameParams:
        params = super().validate(scenario)
        if params.join is None:
            params = replace(params, join=0.5 if params.learn else 1.0)
        bad = [v for v in (params.join if isinstance(params.join, tuple) else (params.join,)) if v > 1]
        if bad:
            raise ScenarioError("protocol.join", f"a probability must be in [0, 1], got {bad[0]}")
        return params


PROTOCOL = Protocol(
    "averaging_game",
    AveragingGameAgent,
    "divisible jobs cut into pieces; each period a random coalition averages its load (thesis 4.5, Alg. 4.1-4.2)",
    params=AveragingGameParams,
    messages=MESSAGES,
    summary=summary,
    traffic=traffic,
    work=work,
    report=Report(level_label="p_k (join coalition)"),
    capabilities=frozenset({"periodic", "topologies", "widths"}),
)
