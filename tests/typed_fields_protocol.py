"""A test protocol whose only message carries one field of each declared type: an int, a
float, a bool and a small float array. Each site sends it to every other site at t=0, with
values given in other Python and numpy types than the fields' (the kernel casts them), and
records what it receives as ``repr`` strings: a value that came back as another type (2.0
for 2, 1 for True) shows in the records.

A module of its own, not a test file: a shard's process (a Ray actor) must be able to import
it to find the protocol.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gridemu.brokers.agent import Agent
from gridemu.brokers.protocol import Protocol
from gridemu.model.messages import message

SAMPLE = message("sample", n=int, x=float, flag=bool, loads=(float, 3))


class TypedFieldsAgent(Agent):
    name = "typed_fields"
    record_columns = ("time", "site", "src", "n", "x", "flag", "loads")

    def on_start(self, now: float) -> None:
        self.site.set_timer(0.0)

    def on_timer(self, now: float, tag: Any) -> None:
        k = self.site.site_id
        # An integral float and a numpy int for the int field, an int for the float, 0/1
        # for the bool, a numpy float32 array for the float array.
        self.broadcast(
            now,
            "sample",
            n=float(k * 7) if k % 2 else np.int64(k * 7),
            x=k * 3,
            flag=k % 2,
            loads=np.arange(3, dtype=np.float32) * np.float32(0.1 * k),
        )

    def on_sample(self, now: float, msg: Any) -> None:
        self.records.append(
            (now, self.site.site_id, msg.src, repr(msg.n), repr(msg.x), repr(msg.flag), repr(msg.loads))
        )


PROTOCOL = Protocol("typed_fields", TypedFieldsAgent, "test: one message of every field type", messages=(SAMPLE,))
