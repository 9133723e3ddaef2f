"""``fairshare``: usage reports for grid-wide hierarchical fairshare (fairshare paper)."""
from __future__ import annotations

from typing import Any

from gridemu.brokers.agents.fairshare import MESSAGES, FairshareAgent
from gridemu.brokers.protocol import Protocol, ScenarioFacts, require_scheduler
from gridemu.model.checks import check_number, choice
from gridemu.model.errors import ScenarioError


def check(params: dict[str, Any], scenario: ScenarioFacts) -> None:
    """Usage exchange for grid-wide fairshare: ``refresh`` (seconds between usage reports),
    ``exchange`` ("all" | "service" | "none"), ``services`` ({VO = site index}: where each
    top-level entry's usage service runs, for exchange = "service") and ``policy_refresh``
    (how often sites fetch the mounted subpolicies from their providers)."""
    n = len(scenario.sites)
    params["refresh"] = check_number("protocol.refresh", params.get("refresh", 60.0), positive=True)
    params["exchange"] = choice("protocol.exchange", params.get("exchange", "all"), ("all", "service", "none"))
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
    "fairshare", FairshareAgent, "usage reports (all-to-all or per-VO services) for grid-wide hierarchical fairshare",
    keys=("refresh", "exchange", "services", "policy_refresh"), messages=MESSAGES, check=check, periodic=True,
)
