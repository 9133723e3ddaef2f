"""``fairshare``: usage reports for grid-wide hierarchical fairshare (fairshare paper)."""
from __future__ import annotations

import math
from typing import Any

from gridemu.brokers.fairshare.agent import MESSAGES, FairshareAgent
from gridemu.brokers.protocol import Protocol, ScenarioFacts, Traffic, require_scheduler
from gridemu.model.checks import check_number, choice
from gridemu.model.errors import ScenarioError


def check(params: dict[str, Any], scenario: ScenarioFacts) -> None:
    """Usage exchange for grid-wide fairshare: ``refresh`` (seconds between usage reports),
    ``exchange`` ("all" | "service" | "tree" | "gossip" | "none"), ``fanout`` (of the
    aggregation tree for "tree"; a ``tree:F`` network topology sets it to F),
    ``gossip_rounds`` (push-sum steps per refresh for "gossip", default 2⌈log2 N⌉, at least 4), ``services`` ({VO = site index}: where each
    top-level entry's usage service runs, for exchange = "service") and ``policy_refresh``
    (how often sites fetch the mounted subpolicies from their providers)."""
    n = len(scenario.sites)
    params["refresh"] = check_number("protocol.refresh", params.get("refresh", 60.0), positive=True, finite=True)
    params["exchange"] = choice("protocol.exchange", params.get("exchange", "all"), ("all", "service", "tree", "gossip", "none"))
    default_rounds = max(4, 2 * math.ceil(math.log2(max(2, n))))
    params["gossip_rounds"] = int(check_number("protocol.gossip_rounds", params.get("gossip_rounds", default_rounds), positive=True, integer=True))
    if params["exchange"] == "gossip" and params["gossip_rounds"] * scenario.max_latency >= params["refresh"]:
        raise ScenarioError(
            "protocol.gossip_rounds",
            f"{params['gossip_rounds']} push-sum steps, one largest link latency ({scenario.max_latency}) apart, "
            f"must end within a refresh period ({params['refresh']}): fewer rounds or a longer refresh",
        )
    given = "fanout" in params
    params["fanout"] = int(check_number("protocol.fanout", params.get("fanout", 4), positive=True, integer=True))
    topology = scenario.data.get("network", {}).get("topology", "full")
    if topology != "full" or "topology_file" in scenario.data.get("network", {}):
        shape, _, f = str(topology).partition(":")
        if not (params["exchange"] in ("gossip", "none") or (params["exchange"] == "tree" and shape == "tree")):
            raise ScenarioError(
                "network.topology",
                f'the fairshare protocol sends usage over a topology by gossip (exchange = "gossip") or along an aggregation '
                f'tree (exchange = "tree" with topology = "tree:F"); got exchange = {params["exchange"]!r}, topology = {topology!r}',
            )
        if params["exchange"] == "tree":
            if given and params["fanout"] != int(f):
                raise ScenarioError("protocol.fanout", f"the aggregation tree is the network's {topology}: leave fanout out or set it to {f}")
            params["fanout"] = int(f)  # the tree of the network
    params["policy_refresh"] = check_number("protocol.policy_refresh", params.get("policy_refresh", 3600.0), positive=True, finite=True)
    services = params.get("services", {})
    if not isinstance(services, dict):
        raise ScenarioError("protocol.services", "must be a table {VO = site index}")
    for vo, k in services.items():
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < n:
            raise ScenarioError(f"protocol.services.{vo}", f"must be a site index 0..{n - 1}, got {k!r}")
    require_scheduler("fairshare", scenario, "fairshare", "serves the fairshare scheduler")
    if "policy" not in scenario.data:
        raise ScenarioError("policy", "the fairshare protocol needs a share policy: add a [policy] section")


def traffic(params: dict[str, Any], n: int, degree: float) -> Traffic:
    per_refresh = {
        "all": n * (n - 1), "service": 2 * n, "tree": 2 * (n - 1), "gossip": n * params["gossip_rounds"], "none": 0,
    }[params["exchange"]]
    return Traffic(per_time=per_refresh / params["refresh"], round_every=params["refresh"], what=f"usage reports, exchange = {params['exchange']}")


PROTOCOL = Protocol(
    "fairshare", FairshareAgent, "usage reports (all-to-all, per-VO services, an aggregation tree or push-sum gossip) for grid-wide hierarchical fairshare",
    keys=("refresh", "exchange", "services", "policy_refresh", "fanout", "gossip_rounds"), messages=MESSAGES, check=check,
    traffic=traffic, capabilities=frozenset({"periodic", "topologies"}),
)
