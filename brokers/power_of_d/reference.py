"""The power of d choices on the whole grid at once: one event heap for every site.

A centralized simulator of the system the ``power_of_d`` protocol runs in, written from
the model and not through the agent: sites of ``m`` identical processors (speed ``speed``)
serving single-processor jobs FCFS, links of one latency, and each new job sent to the
least loaded of its site and ``d`` sampled neighbors (drawn from the same streams as the
agents', by this module's own code: :func:`_samples`). Two kinds of information:

* ``period`` (a number): the protocol's. Every ``period`` (from 0) each site posts its
  load (jobs held, queued and running) to each neighbor, one message each, heard one
  latency later; a site judges a neighbor by its last report heard plus the jobs it sent
  it since (0 before the first). The event order is gridemu's (docs/kernel.md,
  "Determinism"): at one instant a site handles completions, then messages by (source,
  source's sequence number), then its timer, then its own arrivals in job-id order; so the
  schedule is the protocol's, bit for bit (``tests/test_power_of_d.py``).
* ``period = None``: full information. A site judges every site, itself included, by its
  exact load now: the jobs it holds plus the jobs on their way to it (Mitzenmacher's
  decisions with fresh information; with a latency, jobs in flight count where they go).

Mitzenmacher's own setting ("How useful is old information?", the periodic update model)
turns three things off. ``home = False``: the submitting site is not a choice of its own;
it draws its samples from itself and its neighbors (a customer of the supermarket model
picks among all servers) and the job goes to the least loaded sample, the earliest drawn
on a tie; with reports, the site reads its own load as it posted it (at once; the others
hear it one latency later). ``correct = False``: a sample is judged by its report alone,
not by what was sent to it since. ``replace = False``: d distinct samples (all candidates
where there are fewer).

Each message and each job is one heap event (a report to 8 neighbors is 8 events), so it
is also the bare event loop ``bench/power_of_d.py`` measures gridemu against.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gridemu.model.rng import named_rng

COMPLETE, MESSAGE, TIMER, ARRIVAL = 0, 1, 2, 3  # gridemu's kind ranks at one instant


@dataclass
class Schedule:
    """Where and when each job ran (indexed by job id), and the event and message counts."""

    start: np.ndarray
    end: np.ndarray
    exec_site: np.ndarray
    events: int
    reports: int
    transfers: int


def simulate(  # noqa: C901
    release: Sequence[float],
    size: Sequence[float],
    site: Sequence[int],
    n_sites: int,
    neighbors: "Sequence[Sequence[int]] | None",
    m: "int | Sequence[int]",
    d: int,
    period: float | None,
    latency: float,
    seed: int,
    speed: "float | Sequence[float]" = 1.0,
    home: bool = True,
    correct: bool = True,
    replace: bool = True,
) -> Schedule:
    """Run every job (given in job-id order: ``release``, ``size``, submitting ``site``) to
    its end. ``neighbors``: each site's
    sorted neighbors, None for the full graph; ``m`` and ``speed``: one for all sites or one
    per site; ``period``: the reports' period, None for full information (module doc)."""
    if latency <= 0:
        raise ValueError("the latency must be > 0")
    n = len(release)
    rel, sz, sub = list(map(float, release)), list(map(float, size)), list(map(int, site))
    procs = [int(m)] * n_sites if np.isscalar(m) else [int(x) for x in m]
    spd = [float(speed)] * n_sites if np.isscalar(speed) else [float(x) for x in speed]
    nb = [None if neighbors is None else list(neighbors[s]) for s in range(n_sites)]
    everyone = list(range(n_sites))
    per_site: list[list[int]] = [[] for _ in range(n_sites)]
    for j in range(n):  # job-id order: release order within a site
        per_site[sub[j]].append(j)
    samples = [_samples(seed, s, nb[s], n_sites, len(per_site[s]), d, home, replace) for s in range(n_sites)]
    start, end, exec_site = [math.nan] * n, [math.nan] * n, [-1] * n
    free, queue = list(procs), [deque() for _ in range(n_sites)]
    held = [0] * n_sites  # jobs queued and running at each site
    coming = [0] * n_sites  # full information: jobs on their way to each site
    known: list[dict[int, float]] = [{} for _ in range(n_sites)]  # reports heard + jobs sent since
    msg_seq = [0] * n_sites
    stale = period is not None
    reporting = stale and d > 0 and n_sites > 1
    heap: list[tuple] = []
    for s in range(n_sites):
        if per_site[s]:
            heap.append((rel[per_site[s][0]], ARRIVAL, s, per_site[s][0], 0))
        if reporting:
            heap.append((0.0, TIMER, s, 0, 0))
    heapq.heapify(heap)
    push, pop = heapq.heappush, heapq.heappop
    events = reports = transfers = done = 0
    while heap and (done < n or not reporting):
        t, kind, s, key, payload = pop(heap)
        events += 1
        if kind == COMPLETE:
            done += 1
            held[s] -= 1
            if queue[s]:
                j = queue[s].popleft()
                start[j], end[j] = t, t + sz[j] / spd[s]
                push(heap, (end[j], COMPLETE, s, j, 0))
            else:
                free[s] += 1
            continue
        if kind == TIMER:
            if not home:
                known[s][s] = float(held[s])  # the site's own posted load, read by itself at once
            for k in nb[s] if nb[s] is not None else everyone:
                if k != s:
                    msg_seq[s] += 1
                    reports += 1
                    push(heap, (t + latency, MESSAGE, k, (s, msg_seq[s]), float(held[s])))
            push(heap, (t + period, TIMER, s, 0, 0))
            continue
        if kind == MESSAGE:
            if payload is not None:  # a report: (source, sequence) is its key
                known[s][key[0]] = payload
                continue
            j = key[2]  # a transfer: queue the job here
            coming[s] -= 1
        else:  # ARRIVAL of the site's k-th job
            j, k = key, payload
            if k + 1 < len(per_site[s]):
                push(heap, (rel[per_site[s][k + 1]], ARRIVAL, s, per_site[s][k + 1], k + 1))
            sample = samples[s][k]
            if stale:
                own = held[s] if home else math.inf
                loads = [known[s].get(x, 0.0) for x in sample]
            else:
                own = held[s] + coming[s] if home else math.inf
                loads = [held[x] + coming[x] for x in sample]
            # The least loaded of the site and its samples: a job leaves only for a strictly
            # smaller load, and among equal samples the earliest drawn wins (this module's own
            # reading of the model, not the agent's power_of_d_choice: a test compares the two).
            i, best = -1, own
            for pos, load in enumerate(loads):
                if load < best:
                    i, best = pos, load
            if i >= 0 and correct:
                known[s][sample[i]] = known[s].get(sample[i], 0.0) + 1.0
            if i >= 0 and sample[i] != s:  # a sample that is the site itself keeps the job
                dst = sample[i]
                coming[dst] += 1
                msg_seq[s] += 1
                transfers += 1
                push(heap, (t + latency, MESSAGE, dst, (s, msg_seq[s], j), None))
                continue
        exec_site[j] = s
        held[s] += 1
        if free[s] and not queue[s]:
            free[s] -= 1
            start[j], end[j] = t, t + sz[j] / spd[s]
            push(heap, (end[j], COMPLETE, s, j, 0))
        else:
            queue[s].append(j)
    return Schedule(np.array(start), np.array(end), np.array(exec_site), events, reports, transfers)


def _samples(
    seed: int, s: int, nb: "list[int] | None", n_sites: int, n_jobs: int, d: int, home: bool, replace: bool
) -> list[list[int]]:
    """The d candidates of each of site ``s``'s ``n_jobs`` jobs, in submission order, drawn
    from the site's own stream (the agents' ``site.rng("samples")``, so the two runs see the
    same draws): uniformly among its neighbors ``nb`` in their order (every other site by
    number on the full graph), the site itself among them when it has no home; with
    replacement, one (n_jobs, d) draw, else d distinct a job (all, where there are fewer)."""
    if d == 0 or n_jobs == 0 or n_sites < 2 or nb == []:
        return [[] for _ in range(n_jobs)]
    rng = named_rng(seed, s, "power_of_d", "samples")
    if nb is None:
        candidates = np.arange(n_sites) if not home else np.delete(np.arange(n_sites), s)
    else:
        candidates = np.array(sorted(set(nb) | {s}) if not home else nb, dtype=np.int64)
    if replace:
        return candidates[rng.integers(len(candidates), size=(n_jobs, d))].tolist()
    size = min(d, len(candidates))
    return [candidates[rng.choice(len(candidates), size=size, replace=False)].tolist() for _ in range(n_jobs)]
