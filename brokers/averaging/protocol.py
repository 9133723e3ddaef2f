"""``averaging``: averaging load balancing with whole jobs (thesis Algorithm 4.1)."""
from __future__ import annotations

from typing import Any

from gridemu.brokers.averaging.agent import EXCHANGES, GOSSIP, GOSSIP_REPLY, LOAD, AveragingAgent
from gridemu.brokers.protocol import Protocol, ScenarioFacts, Traffic
from gridemu.model.checks import check_number, choice


def check(params: dict[str, Any], scenario: ScenarioFacts) -> None:
    """``period``: time between load reports; ``start``: the first report (default: one period);
    ``exchange``: ``neighbors`` (every site reports to its neighbors, each balances its
    neighborhood: all sites on the full graph) or ``gossip`` (pairwise push-pull)."""
    params["period"] = float(check_number("protocol.period", params.get("period", 100.0), positive=True, finite=True))
    params["start"] = float(check_number("protocol.start", params.get("start", params["period"]), nonneg=True, finite=True))
    params["exchange"] = choice("protocol.exchange", params.get("exchange", "neighbors"), EXCHANGES)


def traffic(params: dict[str, Any], n: int, degree: float) -> Traffic:
    per_round = 2 * n if params["exchange"] == "gossip" else n * degree
    return Traffic(per_time=per_round / params["period"], round_every=params["period"], what="load reports, not the transfers they decide")


def grid_info(scenario: ScenarioFacts) -> dict[str, Any]:
    # A receiver's share of a job is its size over the receiver's total speed.
    return {"capacities": [float(sum(s.speeds)) for s in scenario.sites]}


PROTOCOL = Protocol(
    "averaging", AveragingAgent,
    "periodic load reports to neighbors (or gossip); senders move whole queued jobs to sites below the mean (Alg. 4.1)",
    keys=("period", "start", "exchange"), messages=(LOAD, GOSSIP, GOSSIP_REPLY), check=check, grid_info=grid_info,
    traffic=traffic, capabilities=frozenset({"periodic", "topologies", "faults"}),
)
