"""Global FCFS on identical processors, replayed over a trace: what a window of the trace finds
at its start when it starts warm (``workload.warm_start = "fcfs"``; the Shapley papers' windows,
docs/results/shapley.md, "Warm-start windows").

Sequential jobs in the order given (release, then id), each on the processor that frees first,
never before its release: organizations play no part, so one replay serves every window of a
trace. A job's start depends only on the jobs before it, so the replay of a prefix is the
prefix of the replay.
"""

from __future__ import annotations

import heapq

import numpy as np


def fcfs_starts(release: np.ndarray, size: np.ndarray, machines: int) -> np.ndarray:
    """Start times of global FCFS on ``machines`` identical processors: jobs in the given order
    (release order, ties by id), each on the processor that frees first, never before its release."""
    if machines < 1:
        raise ValueError(f"machines: must be >= 1, got {machines!r}")
    release = np.asarray(release, dtype=np.int64)
    size = np.asarray(size, dtype=np.int64)
    if len(release) != len(size):
        raise ValueError(f"release and size: {len(release)} and {len(size)} values")
    if len(release) > 1 and (np.diff(release) < 0).any():
        raise ValueError(f"release: not sorted (job {int(np.flatnonzero(np.diff(release) < 0)[0]) + 1})")
    free = [0] * machines  # the time each processor frees, as a heap
    out = np.empty(len(release), dtype=np.int64)
    for i, (r, p) in enumerate(zip(release.tolist(), size.tolist())):
        s = max(r, free[0])
        heapq.heapreplace(free, s + p)
        out[i] = s
    return out


def fcfs_backlog(release: np.ndarray, size: np.ndarray, machines: int, t_start: float) -> tuple[np.ndarray, np.ndarray]:
    """The jobs present at ``t_start`` under :func:`fcfs_starts`: released before it and queued
    (starting at ``t_start`` or later) or running (s < t_start < s + p). Returns their
    positions and the work each has left (a queued job: its size; a running one: s + p - t_start)."""
    release = np.asarray(release, dtype=np.int64)
    size = np.asarray(size, dtype=np.int64)
    before = int(np.searchsorted(release, t_start, side="left"))
    start = fcfs_starts(release[:before], size[:before], machines)
    end = start + size[:before]
    present = np.flatnonzero(end > t_start)
    left = np.where(start[present] >= t_start, size[present], end[present] - t_start)
    return present, left.astype(np.int64)
