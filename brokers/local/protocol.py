"""``local``: every organization runs its own jobs; nothing is ever sent (the baseline)."""

from __future__ import annotations

from gridemu.brokers.agent import LocalAgent
from gridemu.brokers.protocol import Protocol

PROTOCOL = Protocol(
    "local",
    LocalAgent,
    "no cooperation: every organization runs its own jobs",
    capabilities=frozenset({"topologies", "faults"}),
)
