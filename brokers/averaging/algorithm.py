"""Averaging load balancing (thesis ch. 4, Algorithm 4.1): the pure plan.

The agent that runs it over messages is ``brokers/averaging/agent.py``; the divisible
version (pieces of jobs, announced finish times) is the ``averaging_game`` protocol.
"""

from __future__ import annotations

from typing import Sequence


def averaging_plan(loads: Sequence[float]) -> list[tuple[int, int, float]]:
    """Algorithm 4.1 (Averaging Load Balancing): the transfers ``(k, l, Φ_{l,k})``.

    Every site with load above the mean L̄ sends ``L_k - L̄`` in total, filling the
    sites below the mean in index order, each up to ``L̄ - L_l``. The space a receiver
    has left carries over from one sender to the next, so no receiver ends above L̄.
    """
    n = len(loads)
    if n == 0:
        return []
    mean = sum(loads) / n
    space = [max(0.0, mean - x) for x in loads]
    plan = []
    # Receivers fill in index order and a filled one has exactly 0.0 left (x - x), so each
    # sender starts where the last one stopped: one pass over the receivers in all, O(n)
    # where a scan from 0 per sender is O(n^2), with the same amounts in the same order.
    l = 0
    for k, load in enumerate(loads):
        if load <= mean:
            continue
        to_send = load - mean
        while to_send > 0 and l < n:
            if space[l] > 0:
                amount = min(space[l], to_send)
                plan.append((k, l, amount))
                space[l] -= amount
                to_send -= amount
                if space[l] > 0:
                    break  # this sender is done; the next one goes on filling l
            l += 1
    return plan
