"""``fairshare``: usage reports for grid-wide hierarchical fairshare (fairshare paper)."""
from __future__ import annotations

from typing import Any

from gridemu.brokers.agents.fairshare import MESSAGES, FairshareAgent
from gridemu.brokers.protocol import Protocol, ScenarioFacts, require_scheduler
from gridemu.model.checks import check_number, choice
from gridemu.model.errors import ScenarioError


def check(params: dict[str, Any], scenario: ScenarioFacts) -> None:
    """Usage exchange for grid-wide fairshare: ``refresh`` (seconds between usage reports),
    ``exchange`` ("all" | "service" | "tree" | "none"), ``fanout`` (of the aggregation tree
    for "tree"; a ``tree:F`` network topology sets it to F), ``services`` ({VO = site index}: where each
    top-level entry's usage service runs, for exchange = "service") and ``policy_refresh``
    (how often sites fetch the mounted subpolicies from their providers)."""
    n = len(scenario.sites)
    params["refresh"] = check_number("protocol.refresh", params.get("refresh", 60.0), positive=True)
    params["exchange"] = choice("protocol.exchange", params.get("exchange", "all"), ("all", "service", "tree", "none"))
    given = "fanout" in params
    params["fanout"] = int(check_number("protocol.fanout", params.get("fanout", 4), positive=True, integer=True))
    topology = scenario.data.get("network", {}).get("topology", "full")
    if topology != "full" or "topology_file" in scenario.data.get("network", {}):
        shape, _, f = str(topology).partition(":")
        if params["exchange"] != "tree" or shape != "tree":
            raise ScenarioError(
                "network.topology",
                f'the fairshare protocol sends usage along an aggregation tree (exchange = "tree" with topology = "tree:F") '
                f"or over the full graph; got exchange = {params['exchange']!r}, topology = {topology!r}",
            )
        if given and params["fanout"] != int(f):
            raise ScenarioError("protocol.fanout", f"the aggregation tree is the network's {topology}: leave fanout out or set it to {f}")
        params["fanout"] = int(f)  # the tree of the network
        providers = (scenario.data.get("policy") or {}).get("providers") or {}
        served = [name for name, p in providers.items() if isinstance(p, dict) and "site" in p]
        if served:
            raise ScenarioError(
                "network.topology",
                f"every site fetches the subpolicy of policy.providers.{served[0]} from its provider's site directly, "
                f'which a {topology} topology does not link to every site: use topology = "full" with exchange = "tree"',
            )
    params["policy_refresh"] = check_number("protocol.policy_refresh", params.get("policy_refresh", 3600.0), positive=True)
    services = params.get("services", {})
    if not isinstance(services, dict):
        raise ScenarioError("protocol.services", "must be a table {VO = site index}")
    for vo, k in services.items():
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < n:
            raise ScenarioError(f"protocol.services.{vo}", f"must be a site index 0..{n - 1}, got {k!r}")
    require_scheduler("fairshare", scenario, "fairshare", "serves the fairshare scheduler")
    if "policy" not in scenario.data:
        raise ScenarioError("policy", "the fairshare protocol needs a share policy: add a [policy] section")


PROTOCOL = Protocol(
    "fairshare", FairshareAgent, "usage reports (all-to-all, per-VO services or an aggregation tree) for grid-wide hierarchical fairshare",
    keys=("refresh", "exchange", "services", "policy_refresh", "fanout"), messages=MESSAGES, check=check, periodic=True,
    topologies=True,
)
