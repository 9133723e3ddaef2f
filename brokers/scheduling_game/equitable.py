"""Pareto and equitable dominance (thesis ch. 1.3.1-1.3.2), as pure functions on outcome vectors.

Source: ``shared/papers/multi-organization-grid-thesis.txt`` (Rzadca, "Scheduling in
multi-organization grids"), cited by definition number.

Every function minimizes: a point ``y`` is an outcome vector ``[y_1, ..., y_N]`` of costs
(sums of completion times C_k). A caller maximizing payoffs ``u`` passes ``-u``.

* Definition 1.3 (Pareto dominance): y' ≺_P y'' iff y'_i ≤ y''_i for every i and
  y'_j < y''_j for some j (:func:`pareto_dominates`). Equal vectors do not dominate each
  other, so a subset of non-dominated points keeps every copy of a tied point.
* Definition 1.8 (equitable dominance ≺_e: anonymity, monotony, the principle of
  transfers) is computed through Theorem 1.1 (Kostreva et al. 2004): y' ≺_e y'' iff
  θ̄(y') ≺_P θ̄(y''), where θ̄ is the cumulative ordered map (:func:`cumulative_ordered`):
  sort non-increasing, then take prefix sums (θ̄_1 the largest outcome, θ̄_N the total).
* Corollary 1.1: the equitably-optimal (equitably efficient) points are the Pareto-optimal
  points of θ̄ (:func:`equitably_optimal_subset`).

:func:`pareto_optimal_subset` is a sort-based sweep for N = 2 (10^6 points in well under a
second) and a sort-by-sum, blockwise numpy filter for N ≥ 3: a point can only be
dominated by a point with a strictly smaller sum, so the points are taken in order of
their sums and each block is compared with the non-dominated points already found
(transitivity: a point dominated by a dominated point is dominated by a kept one too).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: Elements (front × block × N) one numpy comparison may touch; keeps memory bounded.
_CHUNK = 1 << 21


def cumulative_ordered(y: Sequence[float] | np.ndarray) -> np.ndarray:
    """θ̄(y) of Kostreva et al. (thesis ch. 1.3.2, before Theorem 1.1): y sorted
    non-increasing, then cumulated, so θ̄_k is the total of the k largest outcomes.

    Works on one vector or on the rows of an (m × N) array."""
    a = np.asarray(y)
    return np.cumsum(-np.sort(-a, axis=-1), axis=-1)


def pareto_dominates(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> bool:
    """Definition 1.3: a ≺_P b (a is no worse everywhere and better somewhere)."""
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.all(a <= b) and np.any(a < b))


def equitably_dominates(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> bool:
    """Definition 1.8 (a ≺_e b), computed by Theorem 1.1: θ̄(a) ≺_P θ̄(b)."""
    return pareto_dominates(cumulative_ordered(a), cumulative_ordered(b))


def pareto_optimal_subset(points: np.ndarray) -> np.ndarray:
    """Indices (increasing) of the rows of ``points`` (m × N) that no other row Pareto-dominates
    (Definition 1.5); rows equal to each other are all kept."""
    pts = np.asarray(points)
    if pts.ndim != 2:
        raise ValueError(f"points must be an (m x N) array, got shape {pts.shape}")
    m, n = pts.shape
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if n == 1:
        return np.flatnonzero(pts[:, 0] == pts[:, 0].min())
    if n == 2:
        return _pareto_2d(pts)
    return _pareto_blockwise(pts)


def equitably_optimal_subset(points: np.ndarray) -> np.ndarray:
    """Indices of the equitably-optimal rows (Definition 1.10; Corollary 1.1: the
    Pareto-optimal rows of θ̄)."""
    pts = np.asarray(points)
    if pts.ndim != 2:
        raise ValueError(f"points must be an (m x N) array, got shape {pts.shape}")
    return pareto_optimal_subset(cumulative_ordered(pts))


def _pareto_2d(pts: np.ndarray) -> np.ndarray:
    """The two-criteria sweep: sort by (x, y); a point is dominated iff an earlier x group
    reaches a y no higher than its own, or its own x group has a lower y."""
    x, y = pts[:, 0], pts[:, 1]
    order = np.lexsort((y, x))
    xs, ys = x[order], y[order]
    start = np.ones(len(xs), dtype=bool)
    start[1:] = xs[1:] != xs[:-1]
    group_start = np.maximum.accumulate(np.where(start, np.arange(len(xs)), 0))
    # the lowest y among all points of strictly smaller x: the running minimum before the group
    running = np.minimum.accumulate(ys)
    before = np.full(len(xs), np.inf)
    has_before = group_start > 0
    before[has_before] = running[group_start[has_before] - 1]
    dominated = (ys > ys[group_start]) | (before <= ys)
    return np.sort(order[~dominated])


def _dominated_by(front: np.ndarray, fsum: np.ndarray, block: np.ndarray, bsum: np.ndarray) -> np.ndarray:
    """Mask over the rows of ``block``: dominated by some row of ``front`` (Definition 1.3).
    Rows are given column-major (N × rows) with their sums: q ≤ p everywhere and a smaller sum
    is q ≺_P p (q ≤ p with an equal sum means q = p), one 2-d comparison per criterion."""
    out = np.zeros(block.shape[1], dtype=bool)
    if front.shape[1] == 0 or block.shape[1] == 0:
        return out
    step = max(1, _CHUNK // block.shape[1])
    for s in range(0, front.shape[1], step):
        dom = fsum[s : s + step, None] < bsum[None, :]
        for f, b in zip(front[:, s : s + step], block):
            dom &= f[:, None] <= b[None, :]
        out |= dom.any(axis=0)
    return out


def _pareto_blockwise(pts: np.ndarray) -> np.ndarray:
    """N ≥ 3: blocks in order of the row sums, each filtered by the front found so far, then
    within itself (only points of a strictly smaller sum can dominate)."""
    m, n = pts.shape
    sums = pts.sum(axis=1)
    order = np.argsort(sums, kind="stable")
    cols, sums = np.ascontiguousarray(pts[order].T), sums[order]
    block = max(256, min(4096, _CHUNK // 256))
    kept: list[np.ndarray] = []
    front = np.zeros(0, dtype=np.int64)
    for s in range(0, m, block):
        idx = np.arange(s, min(m, s + block))
        idx = idx[~_dominated_by(cols[:, front], sums[front], cols[:, idx], sums[idx])]
        if len(idx) > 1:
            idx = idx[~_dominated_by(cols[:, idx], sums[idx], cols[:, idx], sums[idx])]
        if len(idx):
            kept.append(idx)
            front = np.concatenate(kept)
    if not kept:
        return np.zeros(0, dtype=np.int64)
    return np.sort(order[np.concatenate(kept)])
