"""Talking sites: gridemu against a bare heapq loop and a SimPy model, general path first.

gridemu runs a protocol one of two ways. The *general path* (``SiteEngine``): every site
an event loop with its view and agent, decisions made on the messages it received; every
protocol whose decisions depend on what it hears runs there. The *route path* (the
stateless shortcut, ``ColumnEngine``): a protocol that declares a precomputed route
(``random``) needs no site object at all, and FCFS runs as a vectorized recurrence. The
headline is the general path (issue 40): ``pod1000`` (power of d choices on stale load
reports) and ``random`` with ``recurrence = false`` (engine ``general``); the random
broker's route path is the row labelled "route path (stateless shortcut)".

The power-of-d model (``pod1000``) is the shipped ``power-of-d`` scenario, documented in
bench/power_of_d.py, whose engines this benchmark runs: its bare heapq loop (one event per
report message) and its lazy SimPy model, with the same jobs and samples, so the schedule
is compared job by job.

The model (issue 13, "random broker"): N sites of 10 identical processors (speed 1), FCFS,
single-processor jobs, Poisson arrivals, gamma(shape 2, scale 2) sizes, link latency 1.0
everywhere, ``protocol = "random"``: each newly submitted job goes to a uniformly random
site, the submitting site included (then it stays, with no message); a transferred job
arrives one latency later, is queued there FCFS and is never brokered again.

Arrival rates. The issue says "a quarter of the sites at 3.0/N x R, the rest at 1.4/N x R,
total R/2 x 1.8". The two halves of that sentence disagree by a factor of 2 (N/4 x 3.0/N x R
+ 3N/4 x 1.4/N x R = 1.8 R, not 0.9 R). This benchmark follows the total: sites
0..N/4-1 at 3.0/N x R/2 and the others at 1.4/N x R/2, 0.9 R in all. That reading gives
739 windows at 1,000 sites x 100,000 jobs, close to the issue's 736; the literal per-site
rates give 376 windows, and at 10,000 sites they would load every site to 144 % under
random brokering, which never settles (``--rates literal`` runs that reading anyway). With
R/2, at 10,000 sites and R = 20,000 the per-site rates are 3.0 and 1.4 (mean 1.8), and
every site runs at 72 % load once the broker spreads the jobs.

Models (``--models``, comma-separated):

* ``pod1000``        the shipped ``power-of-d`` scenario: 1,000 single-processor sites of
  random:8, load 0.9, ~100,000 jobs, d = 2, a load report every 10 time units, latency
  0.1. ``heapq`` and ``simpy`` are bench/power_of_d.py's bare loop and lazy SimPy model.
* ``pod100``         (not in the default list) the same at 100 sites, 10,000 jobs: a smoke test.
* ``pod10000``       (not in the default list) the same at 10,000 sites, 1,000,000 jobs:
  issue 40's Ray targets (call CPU of all processes against in-process, 2 and 16 shards).
* ``1000x100k``      1,000 sites, 100,000 jobs, R = 200, random broker
* ``10000x1M``       10,000 sites, 1,000,000 jobs, R = 20,000, random broker
* ``averaging1000``  1,000 sites, 10,000 jobs, R = 200 (the 1000x100k rates), the
  ``averaging`` protocol (thesis Alg. 4.1) with a report every 20 time units (``--period``):
  every site broadcasts its load to all 999 others each round, about a million messages a
  round, so 10,000 jobs (a release span of about 56 time units, some 6 rounds) already make
  about 6 million messages. gridemu engines only (the heapq loop and SimPy model the random
  broker).
* ``neighbors10000`` (not in the default list) the 10000x1M sites and jobs with the
  ``averaging`` protocol over a random graph of degree 8 (``network.topology = "random:8"``):
  each site reports its load to its 8 neighbors every 20 time units (``--period``) and
  balances its closed neighborhood. A decentralized protocol at scale, run by the sites'
  own event loops (the routing columns serve only the random broker). gridemu engines only.
* ``10000x100k``     (not in the default list) 10,000 sites, 100,000 jobs, R = 200: the
  1000x100k model's total rate over ten times the sites, so about the same events, messages
  and windows, and some 9,600 of the 10,000 sites without an event in a given window: does
  a window cost what its busy sites cost, or what all sites cost (an issue target)?
* ``100x10k``        (not in the default list) 100 sites, 10,000 jobs, R = 20: a smoke test.
* ``10000x10M``      (not in the default list) 10,000 sites, 10,000,000 jobs, R = 20,000:
  the 10000x1M model ten times longer (the issue's target: under 5 minutes and 6 GiB).

Engines (``--engines``; every run is a fresh subprocess, so its peak memory is its own):

* ``heapq``  a bare event loop of this model: one global ``heapq`` of (time, kind, site,
  key, job) events, a ``deque`` FCFS queue and a free count per site. At equal times a
  site handles completions, then received jobs (keyed by source site and the source's
  message sequence number), then its own arrivals (keyed by job id), as gridemu does
  (docs/kernel.md, "Determinism"). Arrivals are pushed lazily (one pending per site). The
  destinations are gridemu's own draws: each site's stream (``site_rngs``: seeded in bulk,
  as the shards seed theirs), ``.integers(N)`` once per local arrival, in release order per
  site (``brokers/random/agent.py``); they are drawn per site in one vectorized call,
  which numpy makes equal, value for value, to one call per arrival. The draws are part of
  the timed setup.
* ``recurrence``  (random broker only) the route path's like-for-like baseline, bare: the
  destinations (the same draws) and arrival times are known up front, so each site is
  strict FCFS over its arrivals (received jobs before local ones at one instant, as above),
  ``heapq`` over its processors' free times.
* ``simpy``  SimPy 4: a ``simpy.Resource(capacity=10)`` per site and one process per job,
  all created at t=0: the process waits until the release, for a transfer waits one
  latency more, then requests a processor at its destination and holds it for its size.
  ``simpy_lazy`` (only on request): a source process per site creates each job's process
  at its release.
* ``inprocess``  ``emulator.run(scenario, backend="inprocess", shards=1)``: for the random
  broker the route path (stateless shortcut), for every other protocol the general path.
* ``general``  (random broker only) the same with ``recurrence=False``: the random broker
  on the general path (a site object, view and agent per site, the event loop), the bare
  heapq loop its like-for-like baseline.
* ``ray2``  ``emulator.run(..., backend="ray", shards=2)`` on a private local Ray
  instance started with ``ensure_ray(num_cpus=2)``; ``rayN`` (any N, e.g. ``ray16`` on a
  16-core machine) the same with N shards and num_cpus = max(2, min(N, CPUs)).

All engines simulate the same jobs: release, size and submitting site come from gridemu's
own generator (``scenarios.workload.generate_jobs`` on the loaded scenario).

Columns. "wall s": gridemu: ``summary["global"]["wall_seconds"]`` (shards built ->
results gathered); heapq and SimPy: their setup (structures, destination draws), loop
and gather (start/end arrays). Workload generation is outside "wall s" everywhere. jobs/s,
events/s, msgs/s are over "wall s"; events are local arrivals + received jobs +
completions (gridemu: its event count; for SimPy the model's events, not SimPy's own);
messages are transfers (gridemu: ``messages_total``, load reports included). "setup s":
gridemu's ``setup_seconds`` (shards built; Ray: actors started and shards built in them);
"loop s": the window loop; "gather s": ``Shard.results`` for every shard; "call s": the
whole ``emulator.run`` call (also workload generation, result tables, checks, summary;
``ray.init`` is not in it: see ``ray_init_s`` in the JSON; nor are the imports that the
first use of ``emulator.run`` in a process makes, pandas and every protocol's module). "call cpu s": the machine's busy
CPU seconds during that call (every process: the driver, Ray's actors and its own
processes, and any other load, which "other CPU" shows): on C cores no call can be shorter
than call cpu s / C. "sys cpu s": the kernel's part of call cpu s; "faults k": page faults
of every process during the call, in thousands (``/proc/vmstat``), most of them memory a
process touches for the first time, which on a virtual machine can cost several
microseconds each. "ms/win": loop s per window.
"site cpu s": the summed CPU time of the sites' own event loops (``site_cpu_seconds``; where
sites run as numpy columns, the CPU time of the windows' array work; elapsed time before
6423060, which counted a shard waiting for a core); the
rest of the loop is the kernel's per-window work (delivering batches, send bounds,
next-event scans, batching messages, the coordinator). "peak MiB": in-process engines
the run's process's own peak resident memory (VmHWM: ``harness.peak_rss_mib``); Ray: the
driver and every process under it, PSS (shared pages split among the processes sharing
them) summed every 250 ms
(bench/harness.py's TreeSampler; the JSON keeps the summed RSS too, which overstates).

Agreement (part of every run): every engine must finish every job (conservation), and its
mean flow time must lie within 3 standard errors of the reference's (the first gridemu
engine, else heapq). Start times, end times and executing sites are compared job by job
with the reference; "same schedule" means they are equal bit for bit.

    python bench/protocols.py [--models 1000x100k,10000x1M,averaging1000]
                              [--engines heapq,simpy,inprocess,ray2] [--repeat 1]
                              [--timeout 600] [--period 20] [--rates half|literal]
                              [--quiet-wait S] [--json PATH] [--markdown]

The figures are informational: the exit status is 0 whatever they are.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

import harness
import numpy as np
import power_of_d
from harness import (
    aggregate,
    busy_cpu_seconds,
    fmt,
    imported_run,
    instrument,
    projected_too_slow,
    run_worker,
    wait_quiet,
)

PROCS, ALPHA, BETA, LATENCY, SEED = 10, 2.0, 2.0, 1.0, 1
HOT_RATE, COLD_RATE = 3.0, 1.4  # x R / (2 N): a quarter of the sites hot, the rest cold
DEFAULT_PERIOD = 20.0

MODELS: dict[str, dict[str, Any]] = {
    # The general path's headline (issue 40): the shipped power-of-d scenario.
    "pod1000": {"sites": 1_000, "jobs": 100_000, "protocol": "power_of_d", "d": 2, "period": 10.0},
    "pod100": {"sites": 100, "jobs": 10_000, "protocol": "power_of_d", "d": 2, "period": 10.0},  # a smoke test
    # Issue 40's Ray targets (not in the default list): 10,000 sites x 1M jobs.
    "pod10000": {"sites": 10_000, "jobs": 1_000_000, "protocol": "power_of_d", "d": 2, "period": 10.0},
    "1000x100k": {"sites": 1_000, "jobs": 100_000, "R": 200.0, "protocol": "random"},
    "10000x1M": {"sites": 10_000, "jobs": 1_000_000, "R": 20_000.0, "protocol": "random"},
    "averaging1000": {"sites": 1_000, "jobs": 10_000, "R": 200.0, "protocol": "averaging"},
    # Not in the default list: the 1000x100k jobs' rate over ten times the sites (the same
    # events and windows, 90 % of the sites idle in any window), and a smoke test.
    "10000x100k": {"sites": 10_000, "jobs": 100_000, "R": 200.0, "protocol": "random"},
    "100x10k": {"sites": 100, "jobs": 10_000, "R": 20.0, "protocol": "random"},
    # The issue's 10-million-job target (not in the default list: minutes, gigabytes).
    "10000x10M": {"sites": 10_000, "jobs": 10_000_000, "R": 20_000.0, "protocol": "random"},
    # A decentralized talking protocol at scale: each site hears its 8 neighbors.
    "neighbors10000": {
        "sites": 10_000,
        "jobs": 1_000_000,
        "R": 20_000.0,
        "protocol": "averaging",
        "topology": "random:8",
    },
}
DEFAULT_MODELS = ("pod1000", "1000x100k", "10000x1M", "averaging1000")
DEFAULT_ENGINES = ("heapq", "simpy", "inprocess", "general", "ray2")
REFERENCE_ENGINES = ("heapq", "simpy", "simpy_lazy", "recurrence")  # models of the random broker and power_of_d only
MODELLED = ("random", "power_of_d")  # the protocols the reference engines model

# The issue's targets (ratios in one run, informational).
TARGET_VS_HEAPQ = 0.5
TARGET_VS_SIMPY = 4.0
TARGET_RAY2_CALL = 1.3  # issue 13's, on 10000x1M (the route path): withdrawn by issue 40, shown for history
TARGET_RAY16_CALL = 8.0
TARGET_10M_CALL_S = 300.0  # 10000x10M: under 5 minutes ...
TARGET_10M_PEAK_MIB = 6 * 1024  # ... and 6 GiB, all processes
# Issue 40's targets for the general path.
TARGET_POD_VS_HEAPQ = 0.5  # pod1000 in-process against its bare heapq loop ...
TARGET_POD_VS_SIMPY = 3.0  # ... and against its lazy SimPy model
TARGET_GENERAL_VS_HEAPQ = 0.25  # random with recurrence = false against the bare loop
# Issue 40's Ray targets, whole call against in-process, by (model, shards): 2 shards on the
# 2-core machine, 16 on a 16-core one; and a Ray call's CPU (every process) against the
# in-process call's, on pod10000.
TARGET_RAY_CALL_40 = {("pod10000", 2): 1.5, ("pod10000", 16): 8.0, ("neighbors10000", 16): 8.0}
TARGET_RAY_CPU_40 = {"pod10000": 1.5}


def ray_target(model: str, shards: int) -> tuple[float | None, str]:
    """The whole-call speed-up over in-process a target asks of ``shards`` Ray shards on
    ``model``, and the issue that set it (issue 13's, on the route path, was withdrawn)."""
    target = TARGET_RAY_CALL_40.get((model, shards))
    if target is not None:
        return target, "issue 40"
    if model == "10000x1M" and shards in (2, 16):
        return (TARGET_RAY2_CALL if shards == 2 else TARGET_RAY16_CALL), "issue 13, withdrawn"
    return None, ""


def ray_shards(engine: str) -> int | None:
    m = re.fullmatch(r"ray(\d+)", engine)
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


def label(engine: str, model: str | None = None) -> str:
    """The row's name; for gridemu, which path it runs (module doc)."""
    protocol = MODELS[model]["protocol"] if model else None
    if engine == "heapq":
        return "bare heapq loop"
    if engine == "simpy":
        # power_of_d's SimPy model is lazy (bench/power_of_d.py).
        return "SimPy, lazy arrivals" if protocol == "power_of_d" else "SimPy model"
    if engine == "simpy_lazy":
        return "SimPy, lazy arrivals"
    if engine == "recurrence":
        return "bare FCFS recurrence"
    if engine == "general":
        return "gridemu in-process, general path (recurrence = false)"
    path = (
        "" if protocol is None else (", route path (stateless shortcut)" if protocol == "random" else ", general path")
    )
    if engine == "inprocess":
        return f"gridemu in-process, 1 shard{path}"
    k = ray_shards(engine)
    return f"gridemu ray, {k} shard{'s' if k != 1 else ''}{path}"


def known_engine(engine: str) -> bool:
    return (
        engine in ("heapq", "simpy", "simpy_lazy", "recurrence", "inprocess", "general")
        or ray_shards(engine) is not None
    )


def runs_on(engine: str, model: str) -> bool:
    """Whether ``engine`` applies to ``model``: the reference engines model the random broker
    and power_of_d only; ``general`` differs from ``inprocess`` only where a route exists."""
    protocol = MODELS[model]["protocol"]
    if engine == "recurrence":
        return protocol == "random"  # the route path's like-for-like baseline
    if engine in REFERENCE_ENGINES:
        return protocol in MODELLED
    if engine == "general":
        return protocol == "random"
    return True


#: --rates: "half" (the default) follows the issue's total, R/2 x 1.8; "literal" its per-site
#: rates 3.0/N x R and 1.4/N x R, 1.8 R in all (see the module docstring).
RATE_FACTORS = {"half": 0.5, "literal": 1.0}


def site_rates(n_sites: int, r_total: float, rates: str = "half") -> list[float]:
    hot, f = n_sites // 4, RATE_FACTORS[rates]
    return [(HOT_RATE if s < hot else COLD_RATE) / n_sites * r_total * f for s in range(n_sites)]


def scenario_dict(model: str, period: float, rates: str = "half") -> dict[str, Any]:
    spec = MODELS[model]
    if spec["protocol"] == "power_of_d":
        return pod_model(model).scenario
    protocol: dict[str, Any] = {"name": spec["protocol"]}
    if spec["protocol"] == "averaging":
        protocol["period"] = period
    network: dict[str, Any] = {"latency": LATENCY}
    if "topology" in spec:
        network["topology"] = spec["topology"]
    return {
        "run": {"seed": SEED},
        "sites": {"count": spec["sites"], "procs": PROCS},
        "network": network,
        "scheduler": {"name": "fcfs"},
        "workload": {
            "kind": "poisson",
            "rate": site_rates(spec["sites"], spec["R"], rates),
            "alpha": ALPHA,
            "beta": BETA,
            "jobs": spec["jobs"],
        },
        "protocol": protocol,
        "metrics": {"counterfactual": "none"},
    }


def pod_model(model: str) -> "power_of_d.Model":
    """The power-of-d model (bench/power_of_d.py) at the size of ``model``, its jobs drawn."""
    spec = MODELS[model]
    return power_of_d.model(spec["sites"], spec["jobs"], spec["d"], spec["period"])


# ---------------------------------------------------------------------------- reference engines

COMPLETE, MESSAGE, ARRIVAL = 0, 1, 2  # gridemu's kind ranks at equal times (no timers here)


def broker_draws(per_site: list[list[int]], n_jobs: int, n_sites: int, seed: int) -> list[int]:
    """The random broker's destination of every job: gridemu's stream of each site, one
    draw per local arrival in release order (``brokers/random/agent.py``)."""
    from gridemu.model.rng import PURPOSE_BROKER, site_rngs

    dest = np.empty(n_jobs, dtype=np.int64)
    busy = [s for s, ids in enumerate(per_site) if ids]
    for s, rng in zip(busy, site_rngs(seed, busy, PURPOSE_BROKER)):  # seeded in bulk, as gridemu's shards do
        dest[per_site[s]] = rng.integers(n_sites, size=len(per_site[s]))
    return dest.tolist()


def heapq_random(
    release: np.ndarray, size: np.ndarray, site: np.ndarray, n_sites: int, m: int, latency: float, seed: int
) -> dict[str, Any]:
    """The random-broker model as one global heapq event loop; returns arrays and phase times."""
    t0 = time.perf_counter()
    n = len(release)
    per_site = harness.jobs_by_site(site, n_sites)
    dest = broker_draws(per_site, n, n_sites, seed)
    rel = release.tolist()
    sz = size.tolist()
    start = [math.nan] * n
    end = [math.nan] * n
    exec_site = [-1] * n
    free = [m] * n_sites
    queues = [deque() for _ in range(n_sites)]
    nxt = [0] * n_sites
    msg_seq = [0] * n_sites
    heap: list[tuple] = []
    for s in range(n_sites):
        if per_site[s]:
            j = per_site[s][0]
            heap.append((rel[j], ARRIVAL, s, j, j))
    heapq.heapify(heap)
    push, pop = heapq.heappush, heapq.heappop
    seq = 0
    events = messages = 0
    t1 = time.perf_counter()
    # Queueing and starting a job are written out inline on purpose: this is the bare
    # baseline, and a helper call per job would slow exactly what it is meant to measure.
    while heap:
        t, kind, s, _, j = pop(heap)
        events += 1
        if kind == COMPLETE:
            q = queues[s]
            if q:
                j2 = q.popleft()
                e = t + sz[j2]
                start[j2] = t
                end[j2] = e
                seq += 1
                push(heap, (e, COMPLETE, s, seq, j2))
            else:
                free[s] += 1
            continue
        if kind == ARRIVAL:
            jobs_s = per_site[s]
            k = nxt[s] + 1
            nxt[s] = k
            if k < len(jobs_s):
                j2 = jobs_s[k]
                push(heap, (rel[j2], ARRIVAL, s, j2, j2))
            d = dest[j]
            if d != s:  # transferred: delivered one latency later, keyed by (source, its sequence)
                c = msg_seq[s] + 1
                msg_seq[s] = c
                messages += 1
                push(heap, (t + latency, MESSAGE, d, (s << 32) | c, j))
                continue
        # A local job that stays, or a received one (kind == MESSAGE): queue it at s.
        exec_site[j] = s
        if free[s] and not queues[s]:
            free[s] -= 1
            e = t + sz[j]
            start[j] = t
            end[j] = e
            seq += 1
            push(heap, (e, COMPLETE, s, seq, j))
        else:
            queues[s].append(j)
    t2 = time.perf_counter()
    out = {"start": np.array(start), "end": np.array(end), "exec_site": np.array(exec_site)}
    t3 = time.perf_counter()
    return {**out, "events": events, "messages": messages, "setup_s": t1 - t0, "loop_s": t2 - t1, "gather_s": t3 - t2}


def recurrence_random(
    release: np.ndarray, size: np.ndarray, site: np.ndarray, n_sites: int, m: int, latency: float, seed: int
) -> dict[str, Any]:
    """The random-broker model as the route path computes it, bare: every job's destination
    and arrival there are known up front (a transferred job arrives one latency after its
    release), so each site is strict FCFS over its arrivals in order, a job starting at
    max(arrival, the previous job's start, the earliest free processor)."""
    t0 = time.perf_counter()
    n = len(release)
    per_site = harness.jobs_by_site(site, n_sites)
    dest = np.asarray(broker_draws(per_site, n, n_sites, seed), dtype=np.int64)
    moved = dest != site
    arrive = np.where(moved, release + latency, release)
    # Each transfer's message key, as gridemu's: (source << 32) | the source's send count.
    order = np.argsort(site, kind="stable")  # by site, in job-id (= release) order within one
    so, c = site[order], np.cumsum(moved[order])
    sent = np.empty(n, dtype=np.int64)
    sent[order] = c - np.concatenate(([0], c))[np.searchsorted(so, so)]  # less the earlier sites' transfers
    key = np.where(moved, (site << 32) | sent, np.arange(n))
    # At one instant a site takes received jobs (kind 1) before its own arrivals (kind 2).
    by = np.lexsort((key, np.where(moved, 1, 2), arrive, dest))
    bounds = np.searchsorted(dest[by], np.arange(n_sites + 1)).tolist()
    by_l, arr, sz = by.tolist(), arrive.tolist(), size.tolist()
    start = [math.nan] * n
    end = [math.nan] * n
    t1 = time.perf_counter()
    for s in range(n_sites):
        free = [-math.inf] * m  # processor free times, a heap
        prev = -math.inf
        for j in by_l[bounds[s] : bounds[s + 1]]:
            t = arr[j]
            f = free[0]
            st = t if t > f else f
            if st < prev:
                st = prev
            e = st + sz[j]
            heapq.heapreplace(free, e)
            start[j], end[j], prev = st, e, st
    t2 = time.perf_counter()
    out = {"start": np.array(start), "end": np.array(end), "exec_site": dest}
    t3 = time.perf_counter()
    messages = int(moved.sum())
    return {
        **out,
        "events": 2 * n + messages,
        "messages": messages,
        "setup_s": t1 - t0,
        "loop_s": t2 - t1,
        "gather_s": t3 - t2,
    }


def simpy_random(
    release: np.ndarray,
    size: np.ndarray,
    site: np.ndarray,
    n_sites: int,
    m: int,
    latency: float,
    seed: int,
    lazy: bool = False,
) -> dict[str, Any]:
    """The same model in SimPy 4: a Resource(capacity=m) per site; a transfer is a timeout of
    one latency, then a request at the destination. ``lazy``: job processes are created at
    their release by one source process per site instead of all at t=0."""
    import simpy

    t0 = time.perf_counter()
    n = len(release)
    per_site = harness.jobs_by_site(site, n_sites)
    dest = broker_draws(per_site, n, n_sites, seed)
    rel = release.tolist()
    sz = size.tolist()
    env = simpy.Environment()
    resources = [simpy.Resource(env, capacity=m) for _ in range(n_sites)]
    start = [math.nan] * n
    end = [math.nan] * n
    messages = 0

    def run_job(j: int, d: int):
        with resources[d].request() as req:
            yield req
            start[j] = env.now
            yield env.timeout(sz[j])
            end[j] = env.now

    def job(j: int, s: int):
        nonlocal messages
        yield env.timeout(rel[j])  # from t=0: lands exactly on the release
        d = dest[j]
        if d != s:
            messages += 1
            yield env.timeout(latency)  # now + latency, as gridemu's delivery time
        yield from run_job(j, d)

    def transfer(j: int, d: int):
        yield env.timeout(latency)
        yield from run_job(j, d)

    def source(s: int, ids: list[int]):
        nonlocal messages
        for j in ids:
            # Relative delays only: now + (r - now) is r exactly when r <= 2 now (Sterbenz) or
            # now = 0, else within an ulp (the schedule check shows whether it ever differed).
            yield env.timeout(rel[j] - env.now)
            d = dest[j]
            if d != s:
                messages += 1
                env.process(transfer(j, d))
            else:
                env.process(run_job(j, d))

    if lazy:
        for s in range(n_sites):
            env.process(source(s, per_site[s]))
    else:
        for j, s in enumerate(site.tolist()):
            env.process(job(j, s))
    t1 = time.perf_counter()
    env.run()
    t2 = time.perf_counter()
    d_arr = np.array(dest)
    out = {"start": np.array(start), "end": np.array(end), "exec_site": d_arr}
    t3 = time.perf_counter()
    # Model events: arrivals, received jobs, completions (not SimPy's internal events).
    return {
        **out,
        "events": 2 * n + messages,
        "messages": messages,
        "setup_s": t1 - t0,
        "loop_s": t2 - t1,
        "gather_s": t3 - t2,
    }


# ---------------------------------------------------------------------------- worker side


def pod_worker(engine: str, model: str, rec: dict[str, Any], out_dir: Path, tag: str) -> None:
    """bench/power_of_d.py's bare loop or lazy SimPy model on ``model``, recorded as ``worker`` does."""
    mdl = pod_model(model)
    run_pod = power_of_d.heapq_power_of_d if engine == "heapq" else power_of_d.simpy_power_of_d
    cpu0, t = time.process_time(), time.perf_counter()
    out = run_pod(mdl)
    rec["wall_s"] = time.perf_counter() - t
    rec["call_s"], rec["cpu_s"] = rec["wall_s"], time.process_time() - cpu0
    for k in ("events", "messages", "setup_s", "loop_s", "gather_s"):
        rec[k] = out[k]
    job_ids, release = np.arange(len(mdl.release)), mdl.release
    start, end, exec_site = out["start"], out["end"], out["exec_site"]
    rec["finished"] = int(np.isfinite(end).sum())
    _save(rec, job_ids, release, start, end, exec_site, out_dir, tag)


def worker(engine: str, model: str, period: float, rates: str, out_dir: Path, tag: str) -> None:
    rec: dict[str, Any] = {
        "engine": engine,
        "label": label(engine, model),
        "model": model,
        "jobs": MODELS[model]["jobs"],
        "sites": MODELS[model]["sites"],
    }
    if engine in REFERENCE_ENGINES and MODELS[model]["protocol"] == "power_of_d":
        pod_worker(engine, model, rec, out_dir, tag)
        return
    scenario = scenario_dict(model, period, rates)
    if engine in REFERENCE_ENGINES:
        from gridemu.emulator.scenario import load_scenario
        from gridemu.scenarios.workload import generate_jobs

        loaded = load_scenario(scenario)
        jobs, _ = generate_jobs(loaded)
        args = (
            jobs["release"],
            jobs["size"],
            jobs["submit_site"].astype(np.int64),
            len(loaded.sites),
            PROCS,
            LATENCY,
            loaded.seed,
        )
        cpu0, t = time.process_time(), time.perf_counter()
        bare = {"heapq": heapq_random, "recurrence": recurrence_random}.get(engine)
        out = bare(*args) if bare else simpy_random(*args, lazy=engine == "simpy_lazy")
        rec["wall_s"] = time.perf_counter() - t
        rec["call_s"], rec["cpu_s"] = rec["wall_s"], time.process_time() - cpu0
        for k in ("events", "messages", "setup_s", "loop_s", "gather_s"):
            rec[k] = out[k]
        job_ids, release = jobs["job_id"], jobs["release"]
        start, end, exec_site = out["start"], out["end"], out["exec_site"]
        rec["finished"] = int(np.isfinite(end).sum())
    else:
        shards = ray_shards(engine) or 1
        backend = "ray" if ray_shards(engine) else "inprocess"
        if backend == "ray":
            from gridemu.emulator.backends import ensure_ray

            t = time.perf_counter()
            ensure_ray(num_cpus=max(2, min(shards, os.cpu_count() or 1)))
            rec["ray_init_s"] = time.perf_counter() - t
        marks: dict[str, Any] = {}
        instrument(marks, backend)
        import psutil

        run = imported_run()
        cpu0, faults0 = psutil.cpu_times(), _page_faults()
        busy0, t, main0, own0 = busy_cpu_seconds(cpu0), time.perf_counter(), time.thread_time(), time.process_time()
        result = run(scenario, backend=backend, shards=shards, recurrence=engine != "general")
        rec["call_s"] = time.perf_counter() - t
        # This process's CPU over the whole call (in-process: the run's own CPU, whatever else
        # loads the machine; Ray: the driver only).
        rec["cpu_s"] = time.process_time() - own0
        # The calling thread's own CPU: on Ray, the driver's work (scenario, specs, barriers,
        # joining the shards' results, tables, checks, summary), which no shard count shares.
        rec["driver_cpu_s"] = time.thread_time() - main0
        # Every process's CPU during the call (the machine's busy time: Ray's actors and its
        # own processes included, and any other load; "other CPU" shows that).
        cpu1 = psutil.cpu_times()
        rec["call_cpu_s"] = busy_cpu_seconds(cpu1) - busy0
        # The kernel's part of it, and the page faults behind most of that: memory a process
        # touches for the first time (each Ray actor is a fresh process; its columns, the
        # batches it sends and receives and the objects it stores are all new pages).
        rec["call_sys_s"] = cpu1.system - cpu0.system
        faults1 = _page_faults()
        if faults0 is not None and faults1 is not None:
            rec["page_faults"] = faults1 - faults0
        g = result.summary["global"]
        rec.update(
            wall_s=float(g["wall_seconds"]),
            events=int(g["events"]),
            windows=int(g["windows"]),
            messages=int(g.get("messages_total", 0)),
            messages_by_kind=g.get("messages", {}),
        )
        if g.get("site_cpu_seconds") is not None:
            rec["site_cpu_s"] = float(g["site_cpu_seconds"])
        if "setup_seconds" in g:
            rec["setup_s"] = float(g["setup_seconds"])
        elif "ready" in marks and "specs_start" in marks:
            rec["setup_s"] = marks["ready"] - marks["specs_start"]
        if "instrument_error" in marks:
            rec["instrument_error"] = marks["instrument_error"]
        if "results_start" in marks and "results_end" in marks:
            rec["gather_s"] = marks["results_end"] - marks["results_start"]
            if "ready" in marks:
                rec["loop_s"] = marks["results_start"] - marks["ready"]
        if "loop_s" not in rec and "setup_s" in rec:  # no marks: the loop and the gathering together
            rec["loop_s"] = rec["wall_s"] - rec["setup_s"]
            rec["loop_includes_gather"] = True
        rec["jobs_by_state"] = g.get("jobs_by_state")
        table = result.jobs
        job_ids = table["job_id"].to_numpy()
        release = table["release"].to_numpy(dtype=float)
        start = table["start"].to_numpy(dtype=float)
        end = table["end"].to_numpy(dtype=float)
        exec_site = table["exec_site"].to_numpy()
        rec["finished"] = int((g.get("jobs_by_state") or {}).get("done", 0))
        if backend == "ray":
            import ray

            ray.shutdown()
    _save(rec, job_ids, release, start, end, exec_site, out_dir, tag)


def _save(
    rec: dict[str, Any], job_ids: Any, release: Any, start: Any, end: Any, exec_site: Any, out_dir: Path, tag: str
) -> None:
    """A worker's record (flow statistics, its process's memory and CPU) and its schedule by job id."""
    import resource

    flow = end - release
    done = np.isfinite(flow)
    rec["mean_flow"] = float(flow[done].mean()) if done.any() else None
    rec["flow_se"] = float(flow[done].std(ddof=1) / math.sqrt(done.sum())) if done.sum() > 1 else None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rec["maxrss_mib"] = harness.peak_rss_mib()  # the worker's own peak (not its driver's)
    rec["self_cpu_s"] = usage.ru_utime + usage.ru_stime
    order = np.argsort(job_ids, kind="stable")
    np.save(
        out_dir / f"{tag}.npy",
        np.stack(
            [
                np.asarray(job_ids, dtype=float)[order],
                start[order],
                end[order],
                np.asarray(exec_site, dtype=float)[order],
            ]
        ),
    )
    (out_dir / f"{tag}.json").write_text(json.dumps(rec))


def _page_faults() -> int | None:
    """Page faults of every process on the machine since boot (Linux ``/proc/vmstat``), or None."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("pgfault "):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


# ---------------------------------------------------------------------------- parent side


def run_one(
    engine: str, model: str, period: float, rates: str, out_dir: Path, timeout: float, tag: str
) -> dict[str, Any]:
    """One run in a fresh subprocess, its process tree sampled for memory and CPU."""
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--_worker",
        engine,
        "--_model",
        model,
        "--_out",
        str(out_dir),
        "--_tag",
        tag,
        "--period",
        repr(period),
        "--rates",
        rates,
    ]
    base = {
        "engine": engine,
        "label": label(engine, model),
        "model": model,
        "jobs": MODELS[model]["jobs"],
        "sites": MODELS[model]["sites"],
    }
    rec = run_worker(cmd, base, ray_shards(engine) is not None, out_dir, tag, timeout)
    if "error" in rec:
        return rec
    rec["jobs_per_s"] = rec["jobs"] / rec["wall_s"]
    rec["events_per_s"] = rec["events"] / rec["wall_s"]
    rec["messages_per_s"] = rec["messages"] / rec["wall_s"]
    if rec.get("windows"):
        rec["ms_per_window"] = 1000 * rec["loop_s"] / rec["windows"] if rec.get("loop_s") is not None else None
    return rec


def check_agreement(group: list[dict[str, Any]], out_dir: Path) -> None:
    """Conservation, mean flow within noise, and the schedule job by job, against a reference run."""
    ok = [r for r in group if "tags" in r]
    ref_row = next((r for r in ok if r["engine"] not in REFERENCE_ENGINES), None) or next(
        (r for r in ok if r["engine"] == "heapq"), None
    )
    if ref_row is None and ok:
        ref_row = ok[0]
    if ref_row is None:
        return
    ref = np.load(out_dir / f"{ref_row['tags'][0]}.npy")
    for r in ok:
        r["agree_ref"] = ref_row["engine"]
        r["conserved"] = r["finished"] == r["jobs"]
        tol = 3 * (ref_row.get("flow_se") or 0.0)
        if r.get("mean_flow") is not None and ref_row.get("mean_flow") is not None:
            r["flow_diff"] = r["mean_flow"] - ref_row["mean_flow"]
            r["flow_within_noise"] = abs(r["flow_diff"]) <= tol
        problems = []
        for tag in r["tags"]:
            d = np.load(out_dir / f"{tag}.npy")
            if d.shape != ref.shape or not np.array_equal(d[0], ref[0]):
                problems.append("different job ids")
                continue
            n_start = int((~((d[1] == ref[1]) | (np.isnan(d[1]) & np.isnan(ref[1])))).sum())
            n_end = int((~((d[2] == ref[2]) | (np.isnan(d[2]) & np.isnan(ref[2])))).sum())
            n_site = int((d[3] != ref[3]).sum())
            if n_start or n_end or n_site:
                diff = np.abs(d[1] - ref[1])
                problems.append(
                    f"{n_start} starts, {n_end} ends, {n_site} sites differ (max |start diff| {np.nanmax(diff):.3g})"
                )
        r["same_schedule"] = not problems
        if problems:
            r["schedule_diff"] = problems[0]


COLUMNS = [
    "model",
    "engine",
    "wall s",
    "jobs/s",
    "events/s",
    "msgs/s",
    "windows",
    "ms/win",
    "setup s",
    "loop s",
    "gather s",
    "call s",
    "call cpu s",
    "sys cpu s",
    "faults k",
    "site cpu s",
    "peak MiB",
    "mem",
    "done",
    "mean flow",
    "agree",
    "other CPU",
]


def table_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        if "error" in r or "skipped" in r:
            note = "FAILED (below)" if "error" in r else "not run (below)"
            out.append([r["model"], r["label"], note] + ["-"] * (len(COLUMNS) - 3))
            continue
        if r.get("same_schedule"):
            agree = "same schedule"
        elif "same_schedule" in r:
            agree = ("flow ok" if r.get("flow_within_noise") else "FLOW DIFFERS") + (
                "" if r.get("conserved") else ", LOST JOBS"
            )
        else:
            agree = "-"
        wall = r["wall_s"]
        out.append(
            [
                r["model"],
                r["label"] + (f" (x{r['repeats']})" if r.get("repeats", 1) > 1 else ""),
                fmt(wall, ".3f"),
                fmt(r["jobs_per_s"], ",.0f"),
                fmt(r["events_per_s"], ",.0f"),
                fmt(r["messages_per_s"], ",.0f"),
                fmt(r.get("windows"), ",d"),
                fmt(r.get("ms_per_window"), ".2f"),
                fmt(r.get("setup_s"), ".3f"),
                fmt(r.get("loop_s"), ".3f") + ("*" if r.get("loop_includes_gather") else ""),
                fmt(r.get("gather_s"), ".3f"),
                fmt(r.get("call_s"), ".3f"),
                fmt(r.get("call_cpu_s"), ".2f"),
                fmt(r.get("call_sys_s"), ".2f"),
                fmt(r["page_faults"] / 1000 if r.get("page_faults") is not None else None, ",.0f"),
                fmt(r.get("site_cpu_s"), ".3f"),
                fmt(r["peak_mib"], ",.0f"),
                r["mem_method"],
                f"{r['finished']:,}/{r['jobs']:,}",
                fmt(r.get("mean_flow"), ".6f"),
                agree,
                fmt(r.get("other_cores"), ".2f"),
            ]
        )
    return out


def print_table(rows: list[dict[str, Any]], markdown: bool) -> None:
    body = table_rows(rows)
    if markdown:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "|".join("---" if i < 2 or c in ("mem", "agree") else "---:" for i, c in enumerate(COLUMNS)) + "|")
        for b in body:
            print("| " + " | ".join(b) + " |")
        return
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(COLUMNS)]
    print("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)))
    print("  ".join("-" * w for w in widths))
    for b in body:
        print(
            "  ".join(
                v.ljust(w) if i < 2 or COLUMNS[i] in ("mem", "agree") else v.rjust(w)
                for i, (v, w) in enumerate(zip(b, widths))
            )
        )


def find(rows: list[dict[str, Any]], engine: str, model: str) -> dict[str, Any] | None:
    for r in rows:
        if r["engine"] == engine and r["model"] == model and "error" not in r and "skipped" not in r:
            return r
    return None


def general_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue 40's targets, the general path's speed over the bare loop's and SimPy's, in this run."""
    out: list[dict[str, Any]] = []

    def general(engine: str, ref_engine: str, model: str, target: float) -> None:
        g, ref = find(rows, engine, model), find(rows, ref_engine, model)
        if not (g and ref):
            return
        v = ref["wall_s"] / g["wall_s"]  # the same jobs: the ratio of jobs/s
        by_cpu = (
            f"; by CPU seconds {ref['cpu_s'] / g['cpu_s']:.2f}x ({g['cpu_s']:.2f} s, gridemu's whole emulator.run "
            f"call, against {ref['cpu_s']:.2f} s)"
            if ref.get("cpu_s") and g.get("cpu_s")
            else ""
        )
        out.append(
            {
                "ratio": f"{model}: {g['label']} / {ref['label']}, jobs/s (issue 40)",
                "value": v,
                "target": f">= {target:g}x",
                "verdict": "PASS" if v >= target else "MISS",
                "note": f"wall {g['wall_s']:.2f} s against {ref['wall_s']:.2f} s{by_cpu}; "
                f"whole call {ref['wall_s'] / g['call_s']:.2f}x",
            }
        )

    models = list(dict.fromkeys(r["model"] for r in rows))
    for model in [m for m in models if MODELS[m]["protocol"] == "power_of_d"]:
        general("inprocess", "heapq", model, TARGET_POD_VS_HEAPQ)
        general("inprocess", "simpy" if find(rows, "simpy", model) else "simpy_lazy", model, TARGET_POD_VS_SIMPY)
    for model in [m for m in models if MODELS[m]["protocol"] == "random"]:
        general("general", "heapq", model, TARGET_GENERAL_VS_HEAPQ)
    return out


def ray_ratios(rows: list[dict[str, Any]], model: str, inproc: dict[str, Any], add: Callable[..., None]) -> None:
    """The Ray rows of ``model`` against its in-process row: speed-up, CPU, and the bounds on both."""
    for r in rows:
        k = ray_shards(r["engine"])
        if k is None or r is not find(rows, r["engine"], model):
            continue
        v = inproc["call_s"] / r["call_s"]
        target, issue = ray_target(model, k)
        # A verdict only where the machine has the cores the target was set for.
        ok = (v >= target) if (target and issue == "issue 40" and (os.cpu_count() or 1) >= k) else None
        note = (
            f"kernel wall: {inproc['wall_s'] / r['wall_s']:.2f}x; after setup: "
            f"{(inproc['wall_s'] - inproc.get('setup_s', 0)) / max(1e-9, r['wall_s'] - r.get('setup_s', 0)):.2f}x; "
            f"call {r['call_s']:.2f} s vs {inproc['call_s']:.2f} s"
        )
        add(
            f"{model}: ray {k} shards faster than in-process, whole call" + (f" ({issue})" if target else ""),
            v,
            f">= {target:g}x" if target else "(no target)",
            ok,
            note,
        )
        cpu_target = TARGET_RAY_CPU_40.get(model)
        if cpu_target and r.get("call_cpu_s") and inproc.get("call_cpu_s"):
            share = r["call_cpu_s"] / inproc["call_cpu_s"]
            add(
                f"{model}: ray {k} shards' call CPU (every process) / in-process call CPU (issue 40)",
                share,
                f"<= {cpu_target:g}x",
                share <= cpu_target,
                f"{r['call_cpu_s']:.2f} CPU s against {inproc['call_cpu_s']:.2f}",
            )
        if r.get("call_cpu_s") and inproc.get("call_cpu_s"):
            # On C cores no call is shorter than the CPU it keeps busy over C: Ray's own
            # costs (actor processes, their first-touch memory, the object store, its
            # daemons) count there, whatever the shards' split of the work.
            cores = os.cpu_count() or 1
            least = r["call_cpu_s"] / cores
            faults = ""
            if r.get("page_faults") is not None and inproc.get("page_faults") is not None:
                faults = (
                    f"; page faults {r['page_faults']:,} vs {inproc['page_faults']:,}, kernel CPU "
                    f"{r.get('call_sys_s', 0):.2f} s vs {inproc.get('call_sys_s', 0):.2f} s"
                )
            add(
                f"{model}: the most ray {k} shards could give on this machine's {cores} cores, whole call",
                inproc["call_s"] / least,
                "(in-process call / (Ray call's CPU / cores))",
                None,
                f"the Ray call kept {r['call_cpu_s']:.2f} CPU s busy "
                f"against {inproc['call_cpu_s']:.2f} in-process{faults}",
            )
        if r.get("driver_cpu_s"):
            # A single thread cannot finish before its own CPU time is spent: the driver's
            # CPU in this call bounds every shard count's call from below (an optimistic
            # bound: more shards add barrier and join work to the driver).
            bound = inproc["call_s"] / r["driver_cpu_s"]
            add(
                f"{model}: the most any number of Ray shards could give with this driver, whole call",
                bound,
                "(in-process call / the Ray driver's own CPU)",
                None,
                f"the driver's calling thread used {r['driver_cpu_s']:.2f} "
                f"s of CPU in the {r['call_s']:.2f} s call on {k} shards"
                + (
                    f" (below the {TARGET_RAY16_CALL:g}x target)"
                    if model == "10000x1M" and bound < TARGET_RAY16_CALL
                    else ""
                ),
            )


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's targets as ratios of this run, with PASS/MISS (informational)."""
    out: list[dict[str, Any]] = []

    def add(name: str, value: float | None, target: str, ok: bool | None, note: str = "") -> None:
        out.append(
            {
                "ratio": name,
                "value": value,
                "target": target,
                "verdict": None if ok is None else ("PASS" if ok else "MISS"),
                "note": note,
            }
        )

    out.extend(general_ratios(rows))
    pods = [m for m in dict.fromkeys(r["model"] for r in rows) if MODELS[m]["protocol"] == "power_of_d"]
    for model in dict.fromkeys(r["model"] for r in rows):
        inproc = find(rows, "inprocess", model)
        primary = model == "1000x100k"
        for ref_engine, target in (
            ("heapq", TARGET_VS_HEAPQ),
            ("simpy", TARGET_VS_SIMPY),
            ("simpy_lazy", None),
            ("recurrence", None),
        ):
            ref = find(rows, ref_engine, model)
            if not (inproc and ref) or model in pods:  # pods: issue 40's rows above
                continue
            v = inproc["jobs_per_s"] / ref["jobs_per_s"]
            note = f"whole emulator.run call against {ref['label']}: {ref['wall_s'] / inproc['call_s']:.2f}x"
            tgt = f">= {target:g}x" if target else "(no target)"
            add(
                f"{model}: {inproc['label']} / {ref['label']}, jobs/s (issue 13)",
                v,
                tgt,
                (v >= target) if (primary and target) else None,
                note,
            )
        if inproc:
            ray_ratios(rows, model, inproc, add)
        if inproc and inproc.get("call_s") and inproc.get("wall_s") is not None and inproc["call_s"] > inproc["wall_s"]:
            # The driver's part of the call (scenario facts, job and site tables, checks,
            # summary) runs once whatever the shards: Amdahl's bound on any backend's speed-up.
            serial = inproc["call_s"] - inproc["wall_s"]
            bound = inproc["call_s"] / serial
            add(
                f"{model}: the most any shard count could give, whole call",
                bound,
                "(Amdahl: call / driver's serial part)",
                None,
                f"{serial:.2f} s of the {inproc['call_s']:.2f} s in-process call is the driver's alone; even with "
                f"shards that take no time and no Ray start-up, no shard count beats {bound:.2f}x"
                + (
                    f" (below the {TARGET_RAY16_CALL:g}x target)"
                    if model == "10000x1M" and bound < TARGET_RAY16_CALL
                    else ""
                ),
            )
        if model == "10000x10M":
            for r in rows:
                if r["model"] != model or r is not find(rows, r["engine"], model) or r.get("call_s") is None:
                    continue
                peak = r.get("peak_mib")
                ok = (
                    r["call_s"] < TARGET_10M_CALL_S
                    and peak is not None
                    and peak < TARGET_10M_PEAK_MIB
                    and r.get("finished") == r["jobs"]
                )
                add(
                    f"{model}: {r['label']}, peak memory and whole call (s)",
                    r["call_s"],
                    f"< {TARGET_10M_CALL_S:g} s and < {TARGET_10M_PEAK_MIB:,} MiB, every job done",
                    ok,
                    f"peak {peak:,.0f} MiB ({r.get('mem_method', '')}); "
                    f"{r.get('finished', 0):,} of {r['jobs']:,} jobs done"
                    if peak is not None
                    else "",
                )
        if inproc and inproc.get("site_cpu_s") is not None and inproc.get("loop_s") and inproc.get("windows"):
            outside = inproc["loop_s"] - inproc["site_cpu_s"]
            pairs = inproc["windows"] * inproc["sites"]  # not visits: a window visits only its busy sites
            add(
                f"{model}: in-process window loop outside the sites' event loops (s)",
                outside,
                "(window cost should follow busy sites)",
                None,
                f"{outside / inproc['loop_s']:.0%} of the loop; {1e6 * outside / pairs:.2f} us per window per hosted "
                f"site ({inproc['windows']:,} windows x {inproc['sites']:,} "
                f"sites = {pairs:,} window-site pairs for {inproc['events']:,} events)",
            )
    return out


def print_ratios(rs: list[dict[str, Any]]) -> None:
    print("\nTargets (issue 40, the general path, first; issue 13, the route path; informational, exit status 0):")
    if not rs:
        print("  (no figures: the engines the targets compare did not run)")
    for r in rs:
        v = r["value"]
        val = "-" if v is None else (f"{v:.3f}" if r["ratio"].endswith("(s)") else f"{v:.2f}x")
        print(f"  [{r['verdict'] or 'info':>4}] {r['ratio']}: {val}  (target {r['target']})")
        if r["note"]:
            print(f"         {r['note']}")


def environment() -> dict[str, Any]:
    """bench/harness.py's environment, with the commit of the gridemu actually imported
    (which may be a clean clone on PYTHONPATH rather than this checkout)."""
    info = harness.environment()
    try:
        import importlib.util

        spec = importlib.util.find_spec("gridemu.emulator")
        where = os.path.realpath(os.path.dirname(spec.origin)) if spec and spec.origin else None
    except ImportError:
        where = None
    if where:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=where)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=where
        )
        if rev.returncode == 0:
            info["git"] = rev.stdout.strip() + (" (uncommitted changes)" if dirty.stdout.strip() else "")
        info["gridemu_path"] = os.path.dirname(where)
    info["summary"] = (
        f"{info['cpus']} CPUs, {info['memory_gib']} GiB, Python {info['python']}, numpy {info['numpy']}, ray "
        f"{info['ray']}, simpy {info['simpy']}, gridemu at {info.get('git')} ({info.get('gridemu_path')}), load "
        f"average {info['load_before'][0]:.2f}"
    )
    return info


def main(argv: list[str] | None = None) -> int:  # noqa: C901
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS), help=f"comma-separated, from {','.join(MODELS)}")
    ap.add_argument(
        "--engines",
        default=",".join(DEFAULT_ENGINES),
        help="comma-separated, from heapq,recurrence,simpy,simpy_lazy,inprocess,general,rayN (N shards: ray2, ray16)",
    )
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs per (model, engine), each in a fresh process; the median is shown"
    )
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per run (default 600)")
    ap.add_argument(
        "--rates",
        choices=tuple(RATE_FACTORS),
        default="half",
        help="half (default): per-site rates 3.0/N x R/2 and 1.4/N x R/2, the issue's total 0.9 R; "
        "literal: 3.0/N x R and 1.4/N x R (1.8 R)",
    )
    ap.add_argument(
        "--period", type=float, default=DEFAULT_PERIOD, help="averaging1000: time between load reports (default 20)"
    )
    ap.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        metavar="S",
        help="before each run, wait up to S seconds for other processes to use < 0.25 cores (shared machines)",
    )
    ap.add_argument("--json", metavar="PATH", help="write the rows and ratios as JSON")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_model", help=argparse.SUPPRESS)
    ap.add_argument("--_out", help=argparse.SUPPRESS)
    ap.add_argument("--_tag", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._worker:
        worker(args._worker, args._model, args.period, args.rates, Path(args._out), args._tag)
        return 0

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    bad = [m for m in models if m not in MODELS] + [e for e in engines if not known_engine(e)]
    if bad:
        ap.error(
            f"unknown model(s) or engine(s) {bad}; models: {', '.join(MODELS)}; "
            "engines: heapq, recurrence, simpy, simpy_lazy, inprocess, general, rayN"
        )
    repeat = max(1, args.repeat)
    env = environment()
    print(
        f"gridemu talking sites: {PROCS} processors per site, FCFS, gamma({ALPHA:g}, {BETA:g}) sizes, latency "
        f"{LATENCY:g}, seed {SEED}; a quarter of the sites at {HOT_RATE:g}/N x R x {RATE_FACTORS[args.rates]:g}, the "
        f"rest at {COLD_RATE:g}/N x R x {RATE_FACTORS[args.rates]:g} (--rates {args.rates}); averaging period "
        f"{args.period:g}; {repeat} run(s) per model and engine, each in a fresh process\n"
        f"{env['summary']}",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gridemu-protocols-") as tmp:
        out_dir = Path(tmp)
        for model in models:
            spec = MODELS[model]
            active = [e for e in engines if runs_on(e, model)]
            if len(active) < len(engines):
                print(
                    f"  {model}: {', '.join(e for e in engines if e not in active)} not run (the reference engines "
                    "model random and power_of_d only; general is for routing protocols: here inprocess is the "
                    "general path)",
                    flush=True,
                )
            same_protocol = [r for r in rows if MODELS[r["model"]]["protocol"] == spec["protocol"]]
            skipped: dict[str, dict[str, Any]] = {}
            for e in active:
                skip = projected_too_slow(same_protocol, e, spec["jobs"], args.timeout)
                if skip:
                    skipped[e] = {
                        "engine": e,
                        "label": label(e, model),
                        "model": model,
                        "jobs": spec["jobs"],
                        "sites": spec["sites"],
                        "skipped": skip,
                    }
                    print(f"  {model:<14} {label(e, model):<30} {skip}", flush=True)
            active = [e for e in active if e not in skipped]
            runs: dict[str, list[dict[str, Any]]] = {e: [] for e in active}
            failed: set[str] = set()
            retries = {e: 1 for e in active}  # one more try after a crash (Ray not starting on a busy machine)
            for k in range(repeat):
                for e in active:
                    while e not in failed:
                        if args.quiet_wait > 0:
                            busy = wait_quiet(args.quiet_wait)
                            if busy >= 0.25:
                                print(
                                    f"  (machine still busy after {args.quiet_wait:.0f} "
                                    f"s: {busy:.2f} cores used by others)",
                                    flush=True,
                                )
                        r = run_one(e, model, args.period, args.rates, out_dir, args.timeout, f"{e}-{model}-{k}")
                        msg = r.get("error") or (
                            f"wall {r['wall_s']:.3f} s, call {r['call_s']:.3f} s, {r['jobs_per_s']:,.0f} jobs/s, "
                            f"peak {r['peak_mib']:,.0f} MiB, mean flow {r['mean_flow']:.6f}"
                        )
                        print(f"  {model:<14} {label(e, model):<30} run {k + 1}/{repeat}: {msg}", flush=True)
                        if "error" not in r:
                            runs[e].append(r)
                            break
                        if retries[e] and not r.get("timed_out"):
                            retries[e] -= 1
                            continue
                        runs[e].append(r)
                        failed.add(e)
            group = [skipped[e] if e in skipped else aggregate(runs[e]) for e in engines if e in skipped or e in runs]
            check_agreement(group, out_dir)
            for f in out_dir.glob("*.npy"):
                f.unlink()
            rows.extend(group)
    total = time.perf_counter() - t_all
    env["load_after"] = os.getloadavg()
    print(f"\nTalking sites on {env['cpus']} CPUs (benchmark took {total:.0f} s)")
    print_table(rows, args.markdown)
    print(
        "wall s: gridemu summary wall_seconds (shards built -> results "
        "gathered); heapq/SimPy: setup + loop + gather from the job arrays.\n"
        "jobs/s, events/s, msgs/s over wall s. call s: whole emulator.run call (workload generation, tables, checks, "
        "summary; not ray.init, nor the first use's imports).\n"
        "call cpu s: the machine's busy CPU seconds during that call (every "
        "process; on C cores the call takes at least call cpu s / C).\n"
        "sys cpu s: the kernel's part of it; faults k: page faults of every process in the call, thousands "
        "(first-touch memory, mostly).\n"
        "setup s: shards built (Ray: actors started, shards built in them); loop s: the window loop (* loop and "
        "gathering); gather s: results.\n"
        "site cpu s: the sites' own event loops' CPU time (columns path: the windows' array work), summed over "
        "shards. peak MiB: maxrss of the run's process; tree pss = driver + every Ray process, PSS summed.\n"
        "agree: same schedule = start, end and executing site of every job "
        "equal bit for bit to the reference's; else whether the mean flow\n"
        "time is within 3 standard errors of the reference's and every "
        "job finished. other CPU: cores used by other processes (noise)."
    )
    for r in rows:
        if "error" in r or "skipped" in r:
            print(f"{r['model']}, {r['label']}: {r.get('error') or r.get('skipped')}")
        elif r.get("failed_repeats"):
            print(f"{r['model']}, {r['label']}: {len(r['failed_repeats'])} run(s) failed: {r['failed_repeats'][0]}")
    for model in models:
        group = [r for r in rows if r["model"] == model and "same_schedule" in r]
        if group:
            ref = label(group[0]["agree_ref"], model)
            same = all(r["same_schedule"] for r in group)
            conserved = all(r["conserved"] for r in group)
            flows = "; ".join(f"{r['label']} {r['mean_flow']:.9f}" for r in group)
            details = "; ".join(f"{r['label']}: {r['schedule_diff']}" for r in group if not r["same_schedule"])
            print(
                f"{model}: every job finished in every engine: {'yes' if conserved else 'NO'}; mean flow time: "
                f"{flows}; same schedule as {ref}: {'yes, every engine' if same else 'no (' + details + ')'}"
            )
    rs = ratios(rows)
    print_ratios(rs)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "environment": env,
                    "models": models,
                    "engines": engines,
                    "period": args.period,
                    "rates": args.rates,
                    "rows": rows,
                    "ratios": rs,
                    "total_s": total,
                },
                indent=2,
                default=str,
            )
            + "\n"
        )
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
