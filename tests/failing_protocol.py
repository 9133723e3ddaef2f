"""A test protocol whose site 3 fails at t = 5 with a GridemuError, while every site
sends a report to the others each time unit: on Ray the failing shard's error must end the
run at once, as itself, while the other shards wait for its messages.

A module of its own, not a test file: a shard's process (a Ray actor) must be able to import
it to find the protocol.
"""

from __future__ import annotations

from typing import Any

from gridemu.brokers.agent import Agent
from gridemu.brokers.protocol import Protocol
from gridemu.model.errors import GridemuError
from gridemu.model.messages import message

TICK = message("tick", n=int)


class FailingAgent(Agent):
    name = "failing"

    def on_start(self, now: float) -> None:
        self.site.set_timer(1.0)

    def on_timer(self, now: float, tag: Any) -> None:
        if now >= 5.0 and self.site.site_id == 3:
            raise GridemuError(f"failing: site {self.site.site_id} fails at t={now:g}, as the test asks")
        self.broadcast(now, "tick", n=1)
        self.site.set_timer(now + 1.0)

    def on_tick(self, now: float, msg: Any) -> None:
        pass


PROTOCOL = Protocol("failing", FailingAgent, "test: site 3 raises at t = 5", messages=(TICK,))
