"""``bilb``: bounded iterative load balancing on divisible jobs (thesis ch. 4, Alg. 4.3, 4.7.3).

Its keys (``params.py``) are shared with ``averaging_game`` (``brokers/averaging_game/``),
which runs the same divisible-job agent (``brokers/bilb/divisible.py``) with another plan."""

from __future__ import annotations

from gridemu.brokers.bilb.agent import BilbAgent
from gridemu.brokers.bilb.divisible import MESSAGES
from gridemu.brokers.bilb.params import BilbParams, DivisibleParams
from gridemu.brokers.bilb.scores import summary
from gridemu.brokers.protocol import Protocol, Report, RunSize, Traffic, Work


def traffic(params: DivisibleParams, n: int, degree: float) -> Traffic:
    per_round = 4 * n if params.exchange == "gossip" else n * degree
    # A round settles every strategy period since the last one (a record per site and
    # period): periods shorter than min_gap cost as rounds do (period = 1e-9 used to pass
    # the gate and fill memory with 10^11 records a site).
    return Traffic(
        per_time=per_round / params.min_gap,
        round_every=min(params.min_gap, params.period),
        first_round=params.start,
        what="offers and answers, if a round runs every min_gap while work is left"
        + (
            "; rounds counted by the strategy's periods, shorter than min_gap" if params.period < params.min_gap else ""
        ),
    )


def work(params: DivisibleParams, size: RunSize) -> Work:
    """Each site's round plans over its neighbors' offers (sorts them, cuts queued jobs into
    pieces and judges each answer): about a unit per site, round and neighbor, beyond the
    messages themselves."""
    per_round = 4.0 if params.exchange == "gossip" else size.mean_degree
    return Work(size.sites * size.rounds * (per_round + 1), "site-rounds times the neighbors planned over")


PROTOCOL = Protocol(
    "bilb",
    BilbAgent,
    "bounded iterative load balancing on divisible jobs with declared levels l_k (thesis Alg. 4.3, 4.7.3)",
    params=BilbParams,
    messages=MESSAGES,
    summary=summary,
    traffic=traffic,
    work=work,
    report=Report(level_label="declared level l_k", level_log=True),
    capabilities=frozenset({"periodic", "topologies", "widths"}),
)
