"""How organizations adjust their cooperation strategies (thesis ch. 4): pure functions.

Algorithm 4.2 adjusts the probability p_k of joining the averaging coalition; section
4.7.3 replaces its last lines to adjust BILB's declared participation level l_k. Both
compare the sum of flow times F_k the organization got with F̃_k, what it would have had
computing every job alone (Algorithm 4.2 lines 1-5).
"""

from __future__ import annotations

from typing import Sequence

#: Algorithm 4.2 line 9: a period's ratio counts at most a factor of two either way.
RATIO_BOUNDS = (0.5, 2.0)
#: Section 4.7.3: l_k stays between these.
LIMIT_BOUNDS = (1.0, 1000.0)


def alone_finish_times(releases: Sequence[float], sizes: Sequence[float]) -> list[float]:
    """When each job would finish on the organization's own processor, FCFS from empty
    (Algorithm 4.2 line 4, qEnd). ``releases`` must be non-decreasing."""
    q_end = 0.0
    ends = []
    for r, p in zip(releases, sizes):
        q_end = max(q_end, r) + p
        ends.append(q_end)
    return ends


def local_flow_time(releases: Sequence[float], sizes: Sequence[float], counted_from: int = 0) -> float:
    """F̃_k of Algorithm 4.2 lines 1-5: FCFS on the organization's own processor, from empty.

    ``releases`` must be non-decreasing (the jobs of one period, in release order). The
    first ``counted_from`` jobs run but their flow times are not summed: section 4.5.2 counts
    only the jobs of the window 0.2T-0.8T, while J_k, the queue the loop builds, may hold
    earlier jobs too (``protocol.local_from``, docs/results/bilb.md).
    """
    ends = alone_finish_times(releases, sizes)
    return sum(e - r for e, r in zip(ends[counted_from:], releases[counted_from:]))


def flow_ratio(flow: float, flow_local: float) -> float:
    """R_k = F_k / F̃_k bounded to [½, 2] (Algorithm 4.2 lines 8-9)."""
    lo, hi = RATIO_BOUNDS
    return min(hi, max(lo, flow / flow_local))


def adjust_join(p: float, ratio: float, eta: float) -> float:
    """Algorithm 4.2 lines 10-12: p_k ← (1-η) p_k + η q_k with q_k the period's desire to join.

    ``ratio`` is R_k after bounding: R = 1 gives q = ½, R = 2 gives q = 0, R = ½ gives q = 1.
    """
    q = 1.0 - ratio / 2.0 if ratio > 1.0 else 1.0 / (2.0 * ratio)
    return (1.0 - eta) * p + eta * q


def adjust_limit(limit: float, ratio: float, eta: float) -> float:
    """Section 4.7.3: l_k shrinks by η l_k (R_k - 1) when BILB hurt, grows by η l_k (1/R_k - 1) when it helped."""
    if ratio > 1.0:
        limit = limit - eta * limit * (ratio - 1.0)
    else:
        limit = limit + eta * limit * (1.0 / ratio - 1.0)
    lo, hi = LIMIT_BOUNDS
    return max(lo, min(limit, hi))
