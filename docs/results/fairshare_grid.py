"""The fairshare paper's two-VO policy and its streams workload, as a scenario: what
tests/test_fairshare.py checks the fairshare scheduler on and what
decentralization_fairshare.py runs at scale."""

from __future__ import annotations

TREE = {
    "name": "Resource",
    "type": "resource",
    "scope": "local",
    "children": [
        {
            "name": "VO-A",
            "type": "VO",
            "share": 30,
            "scope": "global",
            "children": [
                {"name": "P-A1", "type": "project", "share": 50},
                {"name": "P-A2", "type": "project", "share": 30},
                {"name": "P-A3", "type": "project", "share": 20},
            ],
        },
        {
            "name": "VO-B",
            "type": "VO",
            "share": 70,
            "scope": "global",
            "children": [
                {"name": "P-B1", "type": "project", "share": 60},
                {"name": "P-B2", "type": "project", "share": 40},
            ],
        },
    ],
}
LEAVES = ["VO-A/P-A1", "VO-A/P-A2", "VO-A/P-A3", "VO-B/P-B1", "VO-B/P-B2"]


def grid(
    hours=8.0, sites=3, procs=10, exchange="all", approach="predictive", refresh=60.0, streams=None, **policy
) -> dict:
    until = hours * 3600.0
    return {
        "run": {"seed": 5, "horizon": until, "time_unit": "s"},
        "network": {"latency": 0.05},
        "sites": {"count": sites, "procs": procs},
        "scheduler": {"name": "fairshare"},
        "protocol": {"name": "fairshare", "exchange": exchange, "refresh": refresh},
        "policy": {"tree": TREE, "approach": approach, **policy},
        "workload": {
            "kind": "streams",
            "until": until,
            "streams": streams
            or [
                {"group": g, "interval": 20.0, "size": 600.0, "spread": 0.4, "overestimate": [0.2, 0.4]} for g in LEAVES
            ],
        },
    }
