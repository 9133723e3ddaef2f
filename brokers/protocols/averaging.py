"""``averaging``: averaging load balancing with whole jobs (thesis Algorithm 4.1)."""
from __future__ import annotations

from typing import Any

from gridemu.brokers.agents.averaging import LOAD, AveragingAgent
from gridemu.brokers.protocol import Protocol, ScenarioFacts
from gridemu.model.checks import check_number


def check(params: dict[str, Any], scenario: ScenarioFacts) -> None:
    """``period``: time between load reports; ``start``: the first report (default: one period)."""
    params["period"] = float(check_number("protocol.period", params.get("period", 100.0), positive=True))
    params["start"] = float(check_number("protocol.start", params.get("start", params["period"]), nonneg=True))


def grid_info(scenario: ScenarioFacts) -> dict[str, Any]:
    # A receiver's share of a job is its size over the receiver's total speed.
    return {"capacities": [float(sum(s.speeds)) for s in scenario.sites]}


PROTOCOL = Protocol(
    "averaging", AveragingAgent, "periodic load reports; senders move whole queued jobs to sites below the mean (Alg. 4.1)",
    keys=("period", "start"), messages=(LOAD,), check=check, grid_info=grid_info, periodic=True,
)
