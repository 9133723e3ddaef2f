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

The decentralized settings (a network topology, each site balancing its closed neighborhood;
gossip, push-pull with one random neighbor a round) are :class:`Decentralized`
(:func:`simulate_decentralized`), one message at a time; on the full graph it gives
:func:`simulate`'s job table.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gridemu.model.rng import PURPOSE_GOSSIP, site_rng

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
                    if procs[j] <= m[dst] and share <= amount:  # a job too wide for dst stays
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


# Decentralized settings: a topology's neighborhoods, and gossip ------------------------------


def simulate_decentralized(
    release: Sequence[float],
    size: Sequence[float],
    procs: Sequence[int],
    site: Sequence[int],
    m: Sequence[int],
    speed: Sequence[float],
    period: float,
    start: float,
    latency: float,
    neighbors: "Sequence[Sequence[int]] | None" = None,
    exchange: str = "neighbors",
    seed: int = 0,
) -> Schedule:
    """Averaging over a network: ``neighbors[k]`` are site k's neighbors (None: every other
    site); ``exchange`` is ``"neighbors"`` or ``"gossip"`` (:class:`Decentralized`)."""
    grid = Decentralized(release, size, procs, site, m, speed, period, start, latency, neighbors, exchange, seed)
    return grid.run()


class Decentralized:
    """Averaging load balancing where each site sees only its neighbors, one message at a time.

    Written from the thesis (section 4.1's load, Algorithm 4.1) and the protocol's documented
    rules (``brokers/averaging/agent.py``'s docstring), not from the agent's code:

    * Every ``period`` from ``start`` each site computes its load ``L_k`` at its timer.
    * ``exchange = "neighbors"``: it sends ``L_k`` to each neighbor (in id order, one message
      each). A site plans a round once it holds the round's loads of its whole closed
      neighborhood (itself and its neighbors): Algorithm 4.1 over those sites in id order (the
      mean of the closed neighborhood), and it carries out its own part as a sender. With one
      latency on every link, that is when the last neighbor's report arrives.
    * ``exchange = "gossip"``: it sends ``L_i`` to one neighbor drawn uniformly from its own
      stream (``site_rng(seed, i, PURPOSE_GOSSIP)``: one draw a round, index into its sorted
      neighbors). The receiver d takes its load ``L_d`` now, carries out its part of the plan
      of the pair (if it is the more loaded: half the difference), then answers with that
      ``L_d`` (its load before the transfers). The initiator, on the answer, takes its load then
      (jobs that d sent it and that arrive at the same instant were sent before the answer,
      so they are already queued) and carries out its part of the pair's plan with ``L_d``.
    * A sender's part (as in :func:`simulate`): receivers in the plan's order; for each, queued
      jobs latest-queued first, each sent if its work over the receiver's total speed fits in
      what is still owed; a job takes one latency and is queued last where it arrives.
    * Order at one instant at one site (docs/kernel.md): completions, then messages by (source,
      the source's message count), then the timer, then local arrivals.
    """

    def __init__(self, release, size, procs, site, m, speed, period, start, latency, neighbors, exchange, seed):
        if exchange not in ("neighbors", "gossip"):
            raise ValueError(f"unknown exchange {exchange!r}")
        n_sites = len(m)
        self.size, self.procs, self.speed, self.m = size, procs, speed, m
        self.period, self.latency, self.gossip = period, latency, exchange == "gossip"
        self.cap = [m[k] * speed[k] for k in range(n_sites)]
        if neighbors is None:
            neighbors = [[d for d in range(n_sites) if d != k] for k in range(n_sites)]
        self.nb = [sorted(nb) for nb in neighbors]
        self.closed = [sorted((k, *self.nb[k])) for k in range(n_sites)]
        self.rng = [site_rng(seed, k, PURPOSE_GOSSIP) for k in range(n_sites)] if self.gossip else None
        n = len(release)
        self.n = n
        self.begin, self.finish, self.where = [math.nan] * n, [math.nan] * n, [-1] * n
        self.free = list(m)
        self.queue = [deque() for _ in range(n_sites)]
        self.running: list[set[int]] = [set() for _ in range(n_sites)]
        self.reports: list[dict[int, dict[int, float]]] = [{} for _ in range(n_sites)]
        self.sent = [0] * n_sites  # each site's message count: the order of its messages at one instant
        self.heap: list[tuple] = [(float(release[j]), ARRIVAL, site[j], j, ("job", j)) for j in range(n)]
        if n_sites > 1:
            self.heap += [(start, TIMER, k, 0, 0) for k in range(n_sites)]
        heapq.heapify(self.heap)
        self.transfers = 0

    def run(self) -> Schedule:
        done = 0
        while done < self.n:
            t, kind, s, _, payload = heapq.heappop(self.heap)
            if kind == COMPLETE:
                done += 1
                self.free[s] += self.procs[payload]
                self.running[s].discard(payload)
                self.dispatch(s, t)
            elif kind == TIMER:
                self.on_timer(s, t, payload)
            else:
                self.on_message(s, t, payload)
        return Schedule(np.array(self.begin), np.array(self.finish), np.array(self.where), self.transfers)

    def dispatch(self, s: int, t: float) -> None:
        queue, procs = self.queue[s], self.procs
        while queue and procs[queue[0]] <= self.free[s]:  # FCFS: the head first, no overtaking
            j = queue.popleft()
            self.free[s] -= procs[j]
            self.begin[j], self.finish[j], self.where[j] = t, t + self.size[j] / self.speed[s], s
            self.running[s].add(j)
            heapq.heappush(self.heap, (self.finish[j], COMPLETE, s, j, j))

    def load(self, k: int, t: float) -> float:
        """L_k (thesis 4.1): when site k would end all the work it knows of."""
        size, procs = self.size, self.procs
        queued = sum(size[j] * procs[j] for j in self.queue[k])
        left = sum((self.finish[j] - t) * self.speed[k] * procs[j] for j in self.running[k])
        return t + (queued + left) / self.cap[k]

    def send(self, src: int, dst: int, t: float, payload: tuple) -> None:
        self.sent[src] += 1
        heapq.heappush(self.heap, (t + self.latency, MESSAGE, dst, (src, self.sent[src]), payload))

    def on_timer(self, k: int, t: float, round_no: int) -> None:
        load = self.load(k, t)
        if self.gossip:
            nb = self.nb[k]
            partner = nb[int(self.rng[k].integers(len(nb)))]
            self.send(k, partner, t, ("gossip", k, load))
        else:
            for d in self.nb[k]:
                self.send(k, d, t, ("load", k, load, round_no))
            self.report(k, t, round_no, k, load)
        heapq.heappush(self.heap, (t + self.period, TIMER, k, 0, round_no + 1))

    def on_message(self, k: int, t: float, payload: tuple) -> None:
        what = payload[0]
        if what == "job":  # a local arrival or a received job: queued last
            self.queue[k].append(payload[1])
            self.dispatch(k, t)
        elif what == "load":
            _, src, load, round_no = payload
            self.report(k, t, round_no, src, load)
        elif what == "gossip":
            _, src, other = payload
            mine = self.load(k, t)
            self.balance_pair(k, t, src, other, mine)
            self.send(k, src, t, ("reply", k, mine))
        else:  # the answer to this site's gossip
            _, src, other = payload
            self.balance_pair(k, t, src, other, self.load(k, t))

    def report(self, k: int, t: float, round_no: int, src: int, load: float) -> None:
        got = self.reports[k].setdefault(round_no, {})
        got[src] = load
        members = self.closed[k]
        if len(got) == len(members):
            del self.reports[k][round_no]
            self.balance(k, t, members, [got[x] for x in members])

    def balance_pair(self, k: int, t: float, other: int, other_load: float, load: float) -> None:
        pair = sorted((k, other))
        self.balance(k, t, pair, [load if x == k else other_load for x in pair])

    def balance(self, k: int, t: float, members: list[int], loads: list[float]) -> None:
        """Algorithm 4.1 over ``members`` (in id order): site k's part as a sender."""
        me = members.index(k)
        mine = [(members[l], amount) for src, l, amount in averaging_by_the_text(loads) if src == me]
        candidates = list(self.queue[k])[::-1]  # latest queued first
        for dst, amount in mine:
            keep = []
            for j in candidates:
                share = self.size[j] * self.procs[j] / self.cap[dst]  # what it adds to the receiver's L_l
                if self.procs[j] <= self.m[dst] and share <= amount:  # a job too wide for dst stays
                    amount -= share
                    self.queue[k].remove(j)
                    self.transfers += 1
                    self.send(k, dst, t, ("job", j))
                else:
                    keep.append(j)
            candidates = keep
