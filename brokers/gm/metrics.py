"""Fairness figures of any run (migration-fairness paper): the ``fairness`` section of
``summary.json``, computed from the job table with the paper's checkers."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.brokers.gm.fairness import ef_counts, ef_violations
from gridemu.brokers.gm.algorithm import GmJob

if TYPE_CHECKING:  # pandas only for annotations: shard actors start without it
    import pandas as pd


def instance(submitted: np.ndarray) -> list[GmJob]:
    """A run's jobs as the paper's types θ_j = (r_j, t_j, v0_j)."""
    return [
        GmJob(int(i), float(r), float(t), float(v))
        for i, r, t, v in zip(submitted["job_id"], submitted["release"], submitted["size"], submitted["priority"])
    ]


def fairness_summary(submitted: np.ndarray, table: pd.DataFrame) -> dict[str, Any]:
    """The ``fairness`` section of ``summary.json``: EF (Definition 2) over the finished jobs.

    ``ef_pairs`` counts the comparable pairs j ≻ k (Definition 1), ``ef_violations`` those
    with d_j > d_k, ``ef_per_1000_pairs`` their rate, ``ef_first`` up to ten violating
    pairs (job ids). Unfinished jobs are left out.
    """
    end = dict(zip(table["job_id"].to_numpy().tolist(), table["end"].to_numpy().tolist()))
    jobs = [j for j in instance(submitted) if end.get(j.id, math.nan) == end.get(j.id, math.nan)]
    completion = {j.id: end[j.id] for j in jobs}
    bad, pairs = ef_counts(jobs, completion)
    first = ef_violations(jobs, completion)[:10] if bad and len(jobs) <= 20_000 else []
    return {
        "jobs_compared": len(jobs), "ef_pairs": pairs, "ef_violations": bad,
        "ef_per_1000_pairs": 1000.0 * bad / pairs if pairs else 0.0, "ef_first": [list(p) for p in first],
    }
