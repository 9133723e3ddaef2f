"""The power of d choices (Mitzenmacher), as pure functions: the choice and the samples.

The agent that runs them over messages is ``brokers/power_of_d/agent.py``; the centralized
simulator that runs them on the whole state is ``brokers/power_of_d/reference.py``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from gridemu.model.rng import named_rng


def power_of_d_choice(own_load: float, sampled_loads: Iterable[float]) -> int:
    """Mitzenmacher's "power of d choices" (supermarket model; stale loads: "How useful is
    old information?", IEEE TPDS 11(1), 2000): a new job goes to the least loaded of its
    own site and the d sampled ones. Returns the position of the chosen sample in
    ``sampled_loads``, or -1 for the site itself. Ties go to the site itself (a job moves
    only to a strictly smaller load), then to the earliest sample."""
    best, choice = own_load, -1
    for i, load in enumerate(sampled_loads):
        if load < best:
            best, choice = load, i
    return choice


def power_of_d_samples(
    seed: int,
    site_id: int,
    neighbors: "Sequence[int] | None",
    n_sites: int,
    n_jobs: int,
    d: int,
    closed: bool = False,
    replace: bool = True,
) -> list[list[int]]:
    """The d sites each of a site's ``n_jobs`` submitted jobs is compared with, in
    submission order: among its ``neighbors``, or every other site when ``neighbors`` is
    None (the full graph); ``closed``: the site itself is a candidate too (the paper's
    customers, who have no home, pick among all servers). One vectorized draw from the
    site's own stream with replacement (numpy's bounded integers keep their buffer in the
    bit generator, so row k holds what the k-th of ``n_jobs`` calls of
    ``Agent.random_neighbors(rng, d)`` would draw); without replacement (``replace``
    false), d distinct candidates a job in random order, or all of them where there are
    fewer than d (d >= the candidates: the shortest posted queue of all)."""
    if d == 0 or n_jobs == 0 or n_sites < 2 or (neighbors is not None and not len(neighbors)):
        return [[] for _ in range(n_jobs)]
    rng = named_rng(seed, site_id, "power_of_d", "samples")  # the agent's site.rng("samples")
    if neighbors is None:
        # The full graph: candidate k is site k (closed) or the k-th site but this one, so no
        # list of every site is built for each site (quadratic in the sites at setup).
        n_cand = n_sites if closed else n_sites - 1

        def pick(k: np.ndarray) -> np.ndarray:
            return k if closed else k + (k >= site_id)
    else:
        candidates = np.asarray(sorted({*neighbors, site_id}) if closed else neighbors, dtype=np.int64)
        n_cand, pick = len(candidates), candidates.__getitem__
    if replace:
        return pick(rng.integers(n_cand, size=(n_jobs, d))).tolist()
    size = min(d, n_cand)
    return [pick(rng.choice(n_cand, size=size, replace=False)).tolist() for _ in range(n_jobs)]
