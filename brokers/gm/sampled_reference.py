"""Decentralized greedy migration (``gm``, ``mode = "sampled"``) on the whole grid at once:
one event heap for every site, written apart from the agent (the tests' oracle).

Algorithm 1 ("GM") of the migration-fairness paper (Amar, Mu'alem, Stößer, AAMAS 2008), run
by each site over the jobs it holds and its own processors, at every event: 1. rank the
jobs by descending priority v0, ties by earlier release, then lower id; 2. sort the
processors by descending speed (ties by index); 3. the k-th ranked job gets the k-th
processor, the others wait. Around it, the rules of the sampled protocol
(``brokers/gm/sampled.py``'s module doc), re-implemented here from that text:

* **Placement (push).** A job submitted at a site and left without a processor there asks
  d sites (``probe``), drawn with replacement among the other sites (or the site's
  neighbors in a topology) from the site's own stream (``site_rng(seed, site,
  PURPOSE_GM_SAMPLE)``, the declared stream; every draw, placement or stealing, from it in
  the site's event order). A probed site answers (``bid``) with the speed of the processor
  its GM would give the job among the jobs it holds (0: none). When the last answer is in,
  the job moves (one ``job`` transfer) to the fastest bid, lowest site id among equals, if
  some bid is > 0 and the job still waits at the site unassigned.
* **Stealing (pull).** A completion that leaves fewer jobs than processors at its site
  sends ``steal`` to d sampled sites; each that holds a waiting job (ranked past its
  processors, not running) sends the highest ranked of them.
* **Acting** (the replicated agent's, ``brokers/gm/agent.py``): once per instant, after
  the instant's completions and messages (a timer), a site first stops every running job
  whose processor changed (the work not done becomes a piece that waits there), then starts
  each waiting job that has a processor, in job-id order, if that processor is free. A job
  that ran before pays ``migration_cost + remote_cost`` when it last ran at another site,
  ``migration_cost`` when it last ran here on another processor (a migration), and the
  setup it had left when stopped if it comes back to the same processor.
  ``migrations`` counts moves between sites and between processors of a site.

Each message is one heap event delivered one latency later. The event order at one
instant is gridemu's (docs/kernel.md, "Determinism"): at a site, completions, then
messages by (source, source's sequence number), then timers, then arrivals (release, then
job-id order); completions and timers among themselves in the order they were set. Times
are computed with the kernel's formulas (end = start + setup + size / speed; a stopped
piece has done max(0, now - start - setup) * speed), so the schedules agree bit for bit.
No ranking, machine order or helper of ``brokers/gm`` is used here.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gridemu.model.rng import PURPOSE_GM_SAMPLE, site_rng

COMPLETE, MESSAGE, TIMER, ARRIVAL = 0, 2, 3, 4  # gridemu's kind ranks at one instant


@dataclass
class Schedule:
    """Per job id: its pieces ``(start, end, site, processor, size)`` in time order, first
    start, last end, the site that ran the largest share (lowest id on a tie), moves; and
    the messages sent, by kind."""

    pieces: dict[int, list[tuple[float, float, int, int, float]]]
    start: dict[int, float]
    end: dict[int, float]
    exec_site: dict[int, int]
    migrations: dict[int, int]
    messages: dict[str, int]
    placed: int = 0  # job transfers after a round of probes
    stolen: int = 0  # job transfers that answered a steal


def simulate(  # noqa: C901
    job_id: Sequence[int],
    release: Sequence[float],
    size: Sequence[float],
    priority: Sequence[float],
    site: Sequence[int],
    speeds: Sequence[Sequence[float]],
    samples: int,
    latency: float,
    seed: int,
    neighbors: "Sequence[Sequence[int]] | None" = None,
    migration_cost: float = 0.0,
    remote_cost: float = 0.0,
) -> Schedule:
    """Run every job to its end. ``speeds``: each site's processors; ``neighbors``: each
    site's sorted neighbors, None for the full graph (module doc)."""
    if latency <= 0:
        raise ValueError("the latency must be > 0")
    n_sites = len(speeds)
    spd = [[float(v) for v in sp] for sp in speeds]
    m = [len(sp) for sp in spd]
    # Step 2: processors by descending speed, ties by index.
    order = [sorted(range(len(sp)), key=lambda p, sp=sp: (-sp[p], p)) for sp in spd]
    jobs = {
        int(j): (float(r), float(t), float(v), int(s)) for j, r, t, v, s in zip(job_id, release, size, priority, site)
    }

    def rank_key(j: int) -> tuple:  # step 1: descending v0, earlier release, lower id
        r, _, v0, _ = jobs[j]
        return (-v0, r, j)

    rngs = [site_rng(seed, s, PURPOSE_GM_SAMPLE) for s in range(n_sites)]

    def draw(s: int) -> list[int]:
        """d sites among the others (or the neighbors), uniformly, with replacement."""
        if neighbors is None:
            others = [k for k in range(n_sites) if k != s]
        else:
            others = list(neighbors[s])
        return [others[i] for i in rngs[s].integers(len(others), size=samples).tolist()]

    # Per site: the ranked keys of the jobs it holds (waiting or running), what waits
    # (job -> piece [size, ran before]), the agent's running jobs (job -> processor, in
    # start order), processor occupancy, where each job last ran here and setup it owes.
    ranked: list[list[tuple]] = [[] for _ in range(n_sites)]
    waiting: list[dict[int, list]] = [{} for _ in range(n_sites)]
    running: list[dict[int, int]] = [{} for _ in range(n_sites)]
    busy: list[list[int | None]] = [[None] * k for k in m]
    last_proc: list[dict[int, int]] = [{} for _ in range(n_sites)]
    owed: list[dict[int, float]] = [{} for _ in range(n_sites)]
    timer_at: list[float | None] = [None] * n_sites
    bids: list[dict[int, list]] = [{} for _ in range(n_sites)]
    sent_seq = [0] * n_sites
    # Physically running pieces: job -> [site, proc, start, setup, size, speed, end, token].
    live: dict[int, list] = {}
    pieces: dict[int, list] = {j: [] for j in jobs}
    moves = {j: 0 for j in jobs}
    messages = {"probe": 0, "bid": 0, "steal": 0, "job": 0}
    placed = stolen = 0

    heap: list[tuple] = []
    counter = 0  # completions and timers at a site: in the order they were set
    per_site: list[list[int]] = [[] for _ in range(n_sites)]
    for j in sorted(jobs, key=lambda j: (jobs[j][0], j)):
        per_site[jobs[j][3]].append(j)
    for s in range(n_sites):
        for i, j in enumerate(per_site[s]):
            heap.append((jobs[j][0], ARRIVAL, s, i, 0, j))
    heapq.heapify(heap)

    def send(t: float, src: int, dst: int, kind: str, *payload) -> None:
        sent_seq[src] += 1
        messages[kind] += 1
        heapq.heappush(heap, (t + latency, MESSAGE, dst, src, sent_seq[src], (kind,) + payload))

    def position(s: int, j: int) -> int:
        return bisect.bisect_left(ranked[s], rank_key(j))

    def processor_of(s: int, j: int) -> int | None:
        k = position(s, j)
        return order[s][k] if k < m[s] else None

    def hold(s: int, j: int, piece: list) -> None:
        bisect.insort(ranked[s], rank_key(j))
        waiting[s][j] = piece

    def unrank(s: int, j: int) -> None:
        del ranked[s][position(s, j)]

    def decide(t: float, s: int) -> None:
        nonlocal counter
        if timer_at[s] != t:
            timer_at[s] = t
            counter += 1
            heapq.heappush(heap, (t, TIMER, s, counter, 0, None))

    def move_away(t: float, s: int, j: int, dst: int) -> None:
        piece = waiting[s].pop(j)
        last_proc[s].pop(j, None)
        owed[s].pop(j, None)
        unrank(s, j)
        moves[j] += 1
        send(t, s, dst, "job", j, piece)

    def act(t: float, s: int) -> None:
        nonlocal counter
        for j, p in list(running[s].items()):
            if processor_of(s, j) == p:
                continue
            _, _, start, setup, sz, speed, end, _ = live[j]
            rest = sz - max(0.0, t - (start + setup)) * speed
            del running[s][j]
            if rest <= 1e-12 * max(1.0, sz) or end <= t:
                continue  # it completes now anyway: left to run out
            pieces[j].append((start, t, s, p, sz - rest))
            del live[j]
            busy[s][p] = None
            waiting[s][j] = [rest, True]
            owed[s][j] = max(0.0, start + setup - t)
        for j in sorted(waiting[s]):
            p = processor_of(s, j)
            if p is None or busy[s][p] is not None:
                continue
            sz, ran = waiting[s].pop(j)
            setup = 0.0
            if ran:
                prev = last_proc[s].get(j)
                if prev is None:
                    setup = migration_cost + remote_cost
                elif prev != p:
                    setup = migration_cost
                    moves[j] += 1
                else:
                    setup = owed[s].get(j, 0.0)
            speed = spd[s][p]
            end = t + setup + sz / speed
            counter += 1
            live[j] = [s, p, t, setup, sz, speed, end, counter]
            heapq.heappush(heap, (end, COMPLETE, s, counter, 0, j))
            busy[s][p] = j
            running[s][j] = p
            last_proc[s][j] = p

    while heap:
        t, kind, s, key, _, payload = heapq.heappop(heap)
        if kind == COMPLETE:
            j = payload
            if j not in live or live[j][7] != key:
                continue  # a piece stopped before its end
            _, p, start, _, sz, _, _, _ = live.pop(j)
            pieces[j].append((start, t, s, p, sz))
            busy[s][p] = None
            unrank(s, j)
            running[s].pop(j, None)
            if len(ranked[s]) < m[s] and n_sites > 1 and samples:
                for k in draw(s):
                    send(t, s, k, "steal")
            decide(t, s)
        elif kind == TIMER:
            timer_at[s] = None
            act(t, s)
        elif kind == ARRIVAL:
            j = payload
            hold(s, j, [jobs[j][1], False])
            if processor_of(s, j) is None and n_sites > 1 and samples:
                targets = draw(s)
                bids[s][j] = [len(targets), []]
                for k in targets:
                    send(t, s, k, "probe", j)
            decide(t, s)
        else:  # a message from site ``key``
            what, *rest = payload
            src = key
            if what == "probe":
                (j,) = rest
                k = bisect.bisect_left(ranked[s], rank_key(j))  # where the job would rank here
                send(t, s, src, "bid", spd[s][order[s][k]] if k < m[s] else 0.0, j)
            elif what == "bid":
                speed, j = rest
                entry = bids[s][j]
                entry[0] -= 1
                entry[1].append((speed, src))
                if entry[0] == 0:
                    del bids[s][j]
                    best = max(entry[1], key=lambda b: (b[0], -b[1]))
                    if best[0] > 0 and j in waiting[s] and processor_of(s, j) is None:
                        move_away(t, s, j, best[1])
                        placed += 1
            elif what == "steal":
                for key_ in ranked[s][m[s] :]:
                    if key_[2] in waiting[s]:
                        move_away(t, s, key_[2], src)
                        stolen += 1
                        decide(t, s)
                        break
            else:  # a job
                j, piece = rest
                hold(s, j, piece)
                decide(t, s)

    starts, ends, execs = {}, {}, {}
    for j, ps in pieces.items():
        ps.sort(key=lambda x: (x[0], x[1]))
        starts[j] = min(x[0] for x in ps)
        ends[j] = max(x[1] for x in ps)
        share: dict[int, float] = {}
        for x in ps:
            share[x[2]] = share.get(x[2], 0.0) + x[4]
        execs[j] = min(share, key=lambda k: (-share[k], k))
    return Schedule(pieces, starts, ends, execs, moves, messages, placed, stolen)


def as_arrays(schedule: Schedule) -> dict[str, np.ndarray]:
    """The job-level columns in job-id order."""
    ids = sorted(schedule.end)
    return {
        "job_id": np.array(ids),
        "start": np.array([schedule.start[j] for j in ids]),
        "end": np.array([schedule.end[j] for j in ids]),
        "exec_site": np.array([schedule.exec_site[j] for j in ids]),
        "migrations": np.array([schedule.migrations[j] for j in ids]),
    }
