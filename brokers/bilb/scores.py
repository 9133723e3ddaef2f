"""The thesis ch. 4 protocols' scores per period (section 4.5.2), added to each
organization's entry of ``summary.json`` by their summary (``bilb`` and ``averaging_game``):
``score_period_mean``, ``score_period_std`` and ``periods_scored``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gridemu.brokers.bilb.strategies import alone_finish_times
from gridemu.brokers.metrics import score
from gridemu.brokers.protocol import RunFacts, Summary
from gridemu.model.jobs import STATE_CODE

if TYPE_CHECKING:  # pandas only for annotations: shard actors start without it
    import pandas as pd


def period_scores(
    table: pd.DataFrame,
    n_orgs: int,
    start: float,
    period: float,
    window: tuple[float, float],
    local_from: str = "window",
) -> np.ndarray:
    """Scores S_k per organization and period, as thesis section 4.5.2 measures them.

    For each period, the jobs an organization submitted between ``window[0]`` and
    ``window[1]`` of it are compared with Algorithm 4.2's F̃: the same jobs alone on the
    organization's processor, FCFS from an empty queue at the window's start
    (``local_from = "window"``), behind the period's earlier jobs from its start
    (``"period"``), or behind every earlier job since the run began (``"run"``). Returns an
    (organizations × periods) array, NaN where a period had no such job or one of them was
    not finished.
    """
    import pandas as pd  # noqa: PLC0415  (the driver's alone: shard actors import this protocol without pandas)

    rel = table["release"].to_numpy()
    phase = (rel - start) / period
    q = np.floor(phase).astype(np.int64)
    inside = (phase - q >= window[0]) & (phase - q <= window[1]) & (q >= 0)
    queued = {"window": inside, "period": (q >= 0) & (phase - q <= window[1]), "run": np.ones(len(rel), bool)}[
        local_from
    ]
    n_periods = int(q.max()) + 1 if len(q) else 0
    out = np.full((n_orgs, n_periods), np.nan)
    sub = (
        table[queued]
        .assign(period=q[queued], counted=inside[queued])
        .sort_values(["owner", "release", "job_id"], kind="stable")
    )
    # Where the queue alone restarts empty: each period (window, period) or never (run).
    restart = ["owner"] if local_from == "run" else ["owner", "period"]
    parts = []
    for _, jobs in sub.groupby(restart, sort=False):
        parts.append(jobs.assign(alone=alone_finish_times(jobs["release"].tolist(), jobs["size"].tolist())))
    if not parts:
        return out
    counted = pd.concat(parts)
    counted = counted[counted["counted"]]
    done = STATE_CODE["done"]
    for (org, k), jobs in counted.groupby(["owner", "period"], sort=False):
        if (jobs["state"] != done).any():
            continue
        r = jobs["release"].to_numpy()
        flow_local = float((jobs["alone"].to_numpy() - r).sum())
        out[int(org), int(k)] = score(float((jobs["end"].to_numpy() - r).sum()), flow_local)
    return out


def summary(facts: RunFacts) -> Summary:
    """Each organization's mean and spread of S_k over the periods scored."""
    params, orgs = facts.params, facts.scenario.orgs
    per_period = period_scores(
        facts.jobs, len(orgs), params.start, params.period, tuple(params.window), params.local_from
    )
    out = {}
    for k, org in enumerate(orgs):
        got = per_period[k][~np.isnan(per_period[k])]
        out[org] = {
            "score_period_mean": float(got.mean()) if len(got) else None,
            "score_period_std": float(got.std()) if len(got) else None,
            "periods_scored": int(len(got)),
        }
    return Summary(organizations=out)
