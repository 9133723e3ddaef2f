"""``averaging_game``: divisible jobs cut into pieces; each period a random coalition averages
its load (thesis 4.5, Alg. 4.1-4.2). Same keys, checks, scores per period and divisible-job agent as ``bilb``
(``brokers/bilb/``); only the strategy and the plan differ (``agent.py`` here)."""
from __future__ import annotations

from gridemu.brokers.averaging_game.agent import AveragingGameAgent
from gridemu.brokers.bilb.divisible import MESSAGES
from gridemu.brokers.bilb.protocol import KEYS, check, traffic
from gridemu.brokers.bilb.scores import summary
from gridemu.brokers.protocol import Protocol, Report

PROTOCOL = Protocol(
    "averaging_game", AveragingGameAgent,
    "divisible jobs cut into pieces; each period a random coalition averages its load (thesis 4.5, Alg. 4.1-4.2)",
    keys=KEYS + ("join",), messages=MESSAGES, check=check, summary=summary, traffic=traffic,
    report=Report(level_label="p_k (join coalition)"), capabilities=frozenset({"periodic", "topologies"}),
)
