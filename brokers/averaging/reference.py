"""Averaging load balancing with whole jobs on the whole grid at once: one event heap.

A centralized, sequential simulator of the system the ``averaging`` protocol runs in on the
full graph, written from the thesis and the documented whole-job rules, not through the
agent (it imports nothing of ``brokers/averaging/``): a test compares the two job tables.

* Thesis ch. 4: a site's load ``L_k`` is "the time moment when, on resource M_k, the
  computation of the last currently known [...] job ends" (section 4.1); with ``m`` processors
  of speed ``v``, now + (work queued + work left of the running jobs) / (m v), a job's work
  being its size times its processors. Local scheduling is FCFS (section 4.1), here with
  head-of-line blocking for jobs that need several processors.
* Algorithm 4.1 (section 4.5.1), :func:`averaging_by_the_text`: the mean L̄ over the
  coalition (here the whole grid: every site joins), and every site above it sends
  ``s_k = L_k - L̄``, scanning the receivers below L̄ from the first, each up to the space it
  has left, ``L̄ - L_l`` less what earlier senders gave it ("after LB, the load of all
  resources in the coalition finishes exactly at L̄").
* Whole jobs (the rules ``brokers/averaging/agent.py``'s docstring documents, since the thesis
  moves fractions of divisible load): a sender goes through its receivers in the plan's
  order; for each it scans its queued jobs latest-queued first and sends each job whose work
  (size times processors) over the receiver's total speed, what it adds to the receiver's
  load, fits in what it still owes that receiver (the rest stay
  for the next receiver); a receiver accepts every job and queues it last.
* Messages: every ``period`` from ``start`` each site reports its load to every other site;
  a report takes ``latency``, and so does a job. A site plans when it holds the round's
  reports of all sites, one latency after the round, from its queue then. Equal times follow
  gridemu's order (docs/kernel.md): at one instant a site handles completions, then messages
  (by source), then its timer, then its own arrivals.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Sequence

import numpy as np

COMPLETE, MESSAGE, TIMER, ARRIVAL = 0, 2, 3, 4  # gridemu's kind ranks at one instant


@dataclass
class Schedule:
    """Where and when each job ran (indexed by job id), and the jobs transferred."""

    start: np.ndarray
    end: np.ndarray
    exec_site: np.ndarray
    transfers: int


def averaging_by_the_text(loads: Sequence[float]) -> list[tuple[int, int, float]]:
    """Algorithm 4.1 as the thesis writes it, the transfers ``(k, l, Φ_{l,k})``: each sender,
    in index order, scans the receivers from the first; a receiver's space carries over from
    one sender to the next (its load grows by what it got)."""
    mean = sum(loads) / len(loads)
    space = [max(0.0, mean - x) for x in loads]
    plan = []
    for k, load in enumerate(loads):
        to_send = load - mean
        for l in range(len(loads)):
            if load <= mean or to_send <= 0:
                break
            if space[l] > 0:
                amount = min(space[l], to_send)
                plan.append((k, l, amount))
                space[l] -= amount
                to_send -= amount
    return plan


def simulate(  # noqa: C901
    release: Sequence[float],
    size: Sequence[float],
    procs: Sequence[int],
    site: Sequence[int],
    m: Sequence[int],
    speed: Sequence[float],
    period: float,
    start: float,
    latency: float,
) -> Schedule:
    """Run every job (given in job-id order) to its end on sites of ``m[k]`` processors of
    speed ``speed[k]``, with averaging rounds every ``period`` from ``start`` (module doc)."""
    n, n_sites = len(release), len(m)
    cap = [m[k] * speed[k] for k in range(n_sites)]
    begin, finish, where = [math.nan] * n, [math.nan] * n, [-1] * n
    free, queue = list(m), [deque() for _ in range(n_sites)]
    running: list[set[int]] = [set() for _ in range(n_sites)]
    heap: list[tuple] = [(float(release[j]), ARRIVAL, site[j], j, j) for j in range(n)]
    if n_sites > 1:
        heap.append((start, TIMER, -1, 0, None))  # every site's timer: the round's reports
    heapq.heapify(heap)
    seq, transfers, done = 0, 0, 0

    def dispatch(s: int, t: float) -> None:
        while queue[s] and procs[queue[s][0]] <= free[s]:  # FCFS: the head first, no overtaking
            j = queue[s].popleft()
            free[s] -= procs[j]
            begin[j], finish[j], where[j] = t, t + size[j] / speed[s], s
            running[s].add(j)
            heapq.heappush(heap, (finish[j], COMPLETE, s, j, j))

    while done < n:
        t, kind, s, _, payload = heapq.heappop(heap)
        if kind == COMPLETE:
            done += 1
            free[s] += procs[payload]
            running[s].discard(payload)
            dispatch(s, t)
        elif kind == TIMER:
            loads = [
                t
                + (
                    sum(size[j] * procs[j] for j in queue[k])
                    + sum((finish[j] - t) * speed[k] * procs[j] for j in running[k])
                )
                / cap[k]
                for k in range(n_sites)
            ]
            plan = averaging_by_the_text(loads)
            for k in range(n_sites):  # each sender carries out its part once all reports are in
                mine = [(l, amount) for src, l, amount in plan if src == k]
                if mine:
                    heapq.heappush(heap, (t + latency, MESSAGE, k, (n_sites, 0), mine))
            heapq.heappush(heap, (t + period, TIMER, -1, 0, None))
        elif kind == MESSAGE and isinstance(payload, list):  # a sender's part of the plan
            candidates = list(queue[s])[::-1]  # latest queued first
            for dst, amount in payload:
                keep = []
                for j in candidates:
                    share = size[j] * procs[j] / cap[dst]  # what it adds to the receiver's L_l
                    if share <= amount:
                        amount -= share
                        queue[s].remove(j)
                        seq += 1
                        transfers += 1
                        heapq.heappush(heap, (t + latency, MESSAGE, dst, (s, seq), j))
                    else:
                        keep.append(j)
                candidates = keep
        else:  # a local arrival or a received job: queued last
            queue[s].append(payload)
            dispatch(s, t)
    return Schedule(np.array(begin), np.array(finish), np.array(where), transfers)
