"""Bounded, iterative load balancing (thesis ch. 4, section 4.7, Algorithm 4.3): the plan.

This module holds the reference algorithm as a pure function; the agent that runs it
over messages, with divisible jobs and announced finish times, is ``brokers/bilb/agent.py``.
``brokers/bilb/reference.py``, the test oracle, has its own implementation of the same plan.
Loads here are queue lengths L_k in time units, as are the declared participation levels l_k
and the movable loads m_k.

Reading of Algorithm 4.3 where the pseudo-code and the text disagree:
  * line 4 prints ``surplus_k = max(L_k - L̄_k, l_k)``, but the text says the load a
    site sends is *bounded* by l_k ("an overloaded resource will not be able to send
    more than l_k", "Ψ_k ≤ l_k"), so we use ``min``;
  * line 6 measures a receiver's distance to the mean as L̄_k - (L_l + Φ_l), leaving out
    what l already sent (Ψ_l), while its distance to l_l does count Ψ_l. The text says the
    k-1 first sites "have their load already balanced, with mean queue length L̄_{k-1}",
    which holds only if both terms use the current queue L_l + Φ_l - Ψ_l; we use it in both
    (so loads 0, 4, 8 end at 4, 4, 4 rather than 4, 2, 6);
  * a space below zero (a receiver already past L̄_k or its l_l) is zero;
  * the thesis's L_k counts all of a queue, but only part of it can move: what runs (when
    running work is not cut) or is otherwise pinned stays. A site also offers m_k, the part of
    L_k it could send, and line 4 caps the surplus at it: ``min(L_k - L̄_k, l_k, m_k)``.
    Without the cap a plan sends load that cannot leave, its receivers wait for it, and the
    next round (timed by the plan) comes when the plan's queues, not the real ones, empty.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

# Tolerances of the divisible-load rules, shared by the agent (brokers/bilb/divisible.py) and
# its test oracle (brokers/bilb/reference.py) so both follow one rule set.
#: Amounts at or below this are "nothing left to cut"; no piece this small is created.
CUT_EPS = 1e-12
#: Two times closer than this are the same instant.
SAME_INSTANT = 1e-9
#: Loads, spaces and amounts of a plan closer than this are equal. The agents' offers carry a
#: few latencies of drift (a piece sent in a round starts latencies late), the reference's none:
#: a tie of two balanced sites broken by that noise would send other pieces to other sites, and
#: a noise-sized space would send a sliver. Far above the drift at negligible latency, far
#: below any amount worth sending.
TIE = 1e-6


def tie_sorted(ids: Iterable[int], value: Callable[[int], float]) -> list[int]:
    """Site ids by increasing ``value``; values within ``TIE`` of the smallest of their run are
    equal, and equal ones come by id (each run anchored at its first value, so the order does
    not drift along a chain of near-equal values)."""
    out: list[int] = []
    run: list[int] = []
    for i in sorted(ids, key=lambda i: (value(i), i)):
        if run and value(i) - value(run[0]) > TIE:
            out.extend(sorted(run))
            run = []
        run.append(i)
    return out + sorted(run)


def on_tie_grid(load: float) -> float:
    """``load`` rounded to a multiple of 2 x ``TIE``. :func:`tie_sorted` ties a run of
    near-equal values from its first, so how it orders two sites can depend on which other
    sites are sorted with them; overlapping neighborhoods then disagree on who is less loaded,
    and a site waits for a transfer its neighbor thinks goes the other way (bilb over a
    topology: ten sites at loads within 7e-6 of each other). Loads on this grid are equal or
    more than ``TIE`` apart, so tie_sorted orders them by (load, id) in any company."""
    return round(load / (2 * TIE)) * (2 * TIE)


def bilb_plan(
    loads: Sequence[float], limits: Sequence[float], movable: Sequence[float] | None = None
) -> list[tuple[int, int, float]]:
    """Algorithm 4.3 (BILB): transfers ``(k, l, Φ_{l,k})`` from site k to site l.

    Sites are taken in order of increasing load L_k (ties within ``TIE`` by index; ``TIE`` also
    sets which surplus, space or amount is none). Site k balances with the
    k-1 less loaded ones against their running mean L̄_k: it sends at most
    ``surplus_k = min(L_k - L̄_k, l_k, m_k)``, with m_k (``movable``, default L_k) the part of
    its queue it can send, split over the receivers in order of increasing space, each
    receiving at most an equal share of what is left and at most its space
    ``min(L̄_k, l_l) - (L_l + Φ_l - Ψ_l)``. So a receiver's queue never passes its declared
    l_l, and a sender never sends more than its l_k or than it can move (Ψ_k ≤ min(l_k, m_k)).
    """
    n = len(loads)
    if len(limits) != n:
        raise ValueError(f"bilb_plan: {n} loads but {len(limits)} participation levels")
    if movable is None:
        movable = loads
    elif len(movable) != n:
        raise ValueError(f"bilb_plan: {n} loads but {len(movable)} movable loads")
    order = tie_sorted(range(n), loads.__getitem__)
    received = [0.0] * n  # Φ
    sent = [0.0] * n  # Ψ
    plan: list[tuple[int, int, float]] = []
    mean = 0.0
    for pos, k in enumerate(order):
        mean = (pos * mean + loads[k]) / (pos + 1)
        if pos == 0:
            continue
        surplus = min(loads[k] - mean, limits[k], movable[k])
        if surplus <= TIE:
            continue
        before = order[:pos]
        space = {l: max(0.0, min(mean, limits[l]) - (loads[l] + received[l] - sent[l])) for l in before}
        receivers = tie_sorted(before, space.__getitem__)
        for i, l in enumerate(receivers):
            amount = min(surplus / (len(receivers) - i), space[l])
            if amount > TIE:
                plan.append((k, l, amount))
                received[l] += amount
                sent[k] += amount
                surplus -= amount
    return plan


def next_round_time(now: float, loads: Sequence[float], plan: list[tuple[int, int, float]]) -> float:
    """When BILB runs next: at min_k(L_k + Φ_k - Ψ_k), as an absolute time."""
    after = [float(x) for x in loads]
    for k, l, amount in plan:
        after[k] -= amount
        after[l] += amount
    return now + min(after)
