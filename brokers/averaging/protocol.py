"""``averaging``: averaging load balancing with whole jobs (thesis Algorithm 4.1)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gridemu.brokers.averaging.agent import EXCHANGES, GOSSIP, GOSSIP_REPLY, LOAD, AveragingAgent
from gridemu.brokers.params import Params, param
from gridemu.brokers.protocol import Protocol, ScenarioFacts, Traffic


@dataclass(frozen=True)
class AveragingParams(Params):
    period: float = param(100.0, "time between load reports", positive=True, finite=True)
    start: float | None = param(None, "time of the first report (default: one period)", nonneg=True, finite=True)
    exchange: str = param(
        "neighbors",
        "neighbors: every site reports to its neighbors, each balances its neighborhood (all sites on the "
        "full graph); gossip: each round, push-pull with one random neighbor",
        choices=EXCHANGES,
    )

    def validate(self, scenario: ScenarioFacts) -> AveragingParams:
        return replace(self, start=self.period) if self.start is None else self


def traffic(params: AveragingParams, n: int, degree: float) -> Traffic:
    per_round = 2 * n if params.exchange == "gossip" else n * degree
    return Traffic(
        per_time=per_round / params.period,
        round_every=params.period,
        first_round=params.start,  # one period in unless set (validate fills it)
        what="load reports, not the transfers they decide",
    )


def grid_info(scenario: ScenarioFacts) -> dict[str, Any]:
    # A receiver's share of a job is its size over the receiver's total speed; a job wider
    # than a receiver's processors is not sent to it.
    return {
        "capacities": tuple(float(sum(s.speeds)) for s in scenario.sites),
        "procs": tuple(len(s.speeds) for s in scenario.sites),
    }


PROTOCOL = Protocol(
    "averaging",
    AveragingAgent,
    "periodic load reports to neighbors (or gossip); senders move whole queued jobs to sites below the mean (Alg. 4.1)",
    params=AveragingParams,
    messages=(LOAD, GOSSIP, GOSSIP_REPLY),
    grid_info=grid_info,
    traffic=traffic,
    capabilities=frozenset({"periodic", "topologies", "faults", "widths"}),
)
