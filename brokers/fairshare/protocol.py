"""``fairshare``: usage reports for grid-wide hierarchical fairshare (fairshare paper)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from gridemu.brokers.fairshare.agent import MESSAGES, FairshareAgent
from gridemu.brokers.params import Params, param
from gridemu.brokers.protocol import Protocol, Report, ResultTable, ScenarioFacts, Traffic, require_scheduler
from gridemu.model.errors import ScenarioError

EXCHANGES = ("all", "service", "tree", "gossip", "none")


def check_services(key: str, services: Any, scenario: ScenarioFacts) -> tuple[tuple[str, int], ...]:
    if not isinstance(services, (dict, tuple)):
        raise ScenarioError(key, "must be a table {VO = site index}")
    n = len(scenario.sites)
    for vo, k in dict(services).items():
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < n:
            raise ScenarioError(f"{key}.{vo}", f"must be a site index 0..{n - 1}, got {k!r}")
    return tuple(dict(services).items())  # pairs: nothing an agent could change for the others


@dataclass(frozen=True)
class FairshareParams(Params):
    """Usage exchange for grid-wide fairshare."""

    refresh: float = param(60.0, "seconds between usage reports", positive=True, finite=True)
    exchange: str = param(
        "all",
        "how usage travels: all (every site to every other), service (to per-VO usage services), tree (up and down "
        "an aggregation tree), gossip (push-sum with random neighbors), none",
        choices=EXCHANGES,
    )
    gossip_rounds: int | None = param(
        None, "push-sum steps per refresh for exchange = gossip (default 2⌈log2 N⌉, at least 4)", positive=True
    )
    fanout: int | None = param(
        None,
        'of the aggregation tree for exchange = "tree" (default 4; a tree:F network topology sets it to F)',
        positive=True,
    )
    policy_refresh: float = param(
        3600.0, "how often sites fetch the mounted subpolicies from their providers", positive=True, finite=True
    )
    services: tuple[tuple[str, int], ...] | None = param(
        None,
        "{VO = site index}: where each top-level entry's usage service runs, for exchange = service (default: VO i at "
        "site i mod N)",
        check=check_services,
        to_table=dict,
        kind="table",
    )

    def validate(self, scenario: ScenarioFacts) -> FairshareParams:
        n = len(scenario.sites)
        params = self
        if self.gossip_rounds is None:
            params = replace(params, gossip_rounds=max(4, 2 * math.ceil(math.log2(max(2, n)))))
        if params.exchange == "gossip" and params.gossip_rounds * scenario.max_latency >= params.refresh:
            raise ScenarioError(
                "protocol.gossip_rounds",
                f"{params.gossip_rounds} push-sum steps, one largest link latency ({scenario.max_latency}) apart, "
                f"must end within a refresh period ({params.refresh}): fewer rounds or a longer refresh",
            )
        topology = scenario.data.get("network", {}).get("topology", "full")
        fanout = 4 if params.fanout is None else params.fanout
        if topology != "full" or "topology_file" in scenario.data.get("network", {}):
            shape, _, f = str(topology).partition(":")
            if not (params.exchange in ("gossip", "none") or (params.exchange == "tree" and shape == "tree")):
                raise ScenarioError(
                    "network.topology",
                    'the fairshare protocol sends usage over a topology by gossip (exchange = "gossip") or along an '
                    'aggregation tree (exchange = "tree" with topology = "tree:F"); got exchange = '
                    f'{params.exchange!r}, topology = {topology!r}',
                )
            if params.exchange == "tree":
                if params.fanout is not None and params.fanout != int(f):
                    raise ScenarioError(
                        "protocol.fanout",
                        f"the aggregation tree is the network's {topology}: leave fanout out or set it to {f}",
                    )
                fanout = int(f)  # the tree of the network
        require_scheduler("fairshare", scenario, "fairshare", "serves the fairshare scheduler")
        if "policy" not in scenario.data:
            raise ScenarioError("policy", "the fairshare protocol needs a share policy: add a [policy] section")
        return replace(params, fanout=fanout)


def traffic(params: FairshareParams, n: int, degree: float) -> Traffic:
    per_refresh = {
        "all": n * (n - 1),
        "service": 2 * n,
        "tree": 2 * (n - 1),
        "gossip": n * params.gossip_rounds,
        "none": 0,
    }[params.exchange]
    return Traffic(
        per_time=per_refresh / params.refresh,
        round_every=params.refresh,
        first_round=0.0,  # the first reports at 0
        what=f"usage reports, exchange = {params.exchange}",
    )


def policy_table(summary: dict[str, Any]) -> list[ResultTable]:
    """The run's policy table (the fairshare paper's result): per policy entry its target and
    final share of its parent (percent), the final deviation and the mean absolute deviation
    over the second half of the run (percentage points), and the time from which its share
    stays within ±2 points of the target (empty: it never settles). From summary.json's
    ``policy`` section."""
    import pandas as pd

    policy = summary.get("policy")
    if not policy or not policy.get("entries"):
        return []
    unit = summary["global"].get("time_unit", "time units")

    def percent(v: float | None) -> float | None:
        return None if v is None else 100 * v

    rows = [
        {
            "entry": entry,
            "target_percent": percent(v["target"]),
            "final_share_percent": percent(v["final_share"]),
            "final_deviation_points": v["final_deviation_points"],
            "mean_abs_deviation_points": v["mean_abs_deviation_points"],
            "settled_from": v["within_2_points_from"],
        }
        for entry, v in policy["entries"].items()
    ]
    caption = (
        "shares of the parent entry's usage, grid-wide, since the start; settled from: the time from which the share "
        "stays within ±2 points of its target (-: never); mean |deviation| over the second half of the run"
    )
    headers = {
        "target_percent": "target %",
        "final_share_percent": "final %",
        "final_deviation_points": "final - target (points)",
        "mean_abs_deviation_points": "mean |deviation| (points)",
        "settled_from": f"settled from ({unit})",
    }
    return [ResultTable("policy", "share policy: target against final share", pd.DataFrame(rows), caption, headers)]


PROTOCOL = Protocol(
    "fairshare",
    FairshareAgent,
    "usage reports (all-to-all, per-VO services, an aggregation "
    "tree or push-sum gossip) for grid-wide hierarchical fairshare",
    params=FairshareParams,
    messages=MESSAGES,
    traffic=traffic,
    report=Report(tables=policy_table),
    capabilities=frozenset({"periodic", "topologies", "widths"}),
)
