"""A run's jobs as the migration paper's job types (its summary, ``brokers/metrics.py``'s
``fairness`` section and the result scripts read runs so)."""

from __future__ import annotations

import numpy as np

from gridemu.brokers.gm.algorithm import GmJob


def instance(submitted: np.ndarray) -> list[GmJob]:
    """A run's jobs as the paper's types θ_j = (r_j, t_j, v0_j)."""
    return [
        GmJob(int(i), float(r), float(t), float(v))
        for i, r, t, v in zip(submitted["job_id"], submitted["release"], submitted["size"], submitted["priority"])
    ]
