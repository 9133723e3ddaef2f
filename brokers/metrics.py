"""Figures of any run, whatever its protocol, that the kernel and the protocols' summaries
share: the thesis's score S_k (the ``metrics.counterfactual`` score, and the scores per
period of the chapter-4 protocols) and the migration paper's EF figures, the ``fairness``
section of ``summary.json`` (``metrics.fairness``; a ``proposition`` workload and the
``gm`` protocol give it by default). The paper's checkers stay with the protocol they
describe (``brokers/gm/fairness.py``); this module only measures a job table with them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.brokers.gm.fairness import ef_counts, ef_violations
from gridemu.brokers.gm.metrics import instance

if TYPE_CHECKING:  # pandas only for annotations: shard actors start without it
    import pandas as pd


def score(flow: float, flow_local: float) -> float:
    """S_k of thesis section 4.5.2: F~/F - 1 when the protocol helped, -(F/F~ - 1) otherwise."""
    if flow <= 0 or flow_local <= 0:
        return 0.0
    if flow < flow_local:
        return flow_local / flow - 1.0
    return -(flow / flow_local - 1.0)


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
        "jobs_compared": len(jobs),
        "ef_pairs": pairs,
        "ef_violations": bad,
        "ef_per_1000_pairs": 1000.0 * bad / pairs if pairs else 0.0,
        "ef_first": [list(p) for p in first],
    }
