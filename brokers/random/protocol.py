"""``random``: a broker sends each newly submitted job to a uniformly random site."""

from __future__ import annotations

from gridemu.brokers.params import Params
from gridemu.brokers.protocol import Protocol, Traffic
from gridemu.brokers.random.agent import RandomBrokerAgent, random_routes


def traffic(params: Params, n: int, degree: float) -> Traffic:
    return Traffic(per_job=degree / (degree + 1), what="a transfer for each job drawn to another site")


PROTOCOL = Protocol(
    "random",
    RandomBrokerAgent,
    "each new job goes to a uniformly random site, or neighbor in a topology (one transfer)",
    route=random_routes,
    traffic=traffic,
    capabilities=frozenset({"topologies", "faults", "stateless"}),
)
