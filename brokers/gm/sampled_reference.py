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


def simulate(
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
    jobs = {
        int(j): (float(r), float(t), float(v), int(s)) for j, r, t, v, s in zip(job_id, release, size, priority, site)
    }
    sim = _Grid(jobs, speeds, samples, latency, seed, neighbors, migration_cost, remote_cost)
    sim.run()
    return sim.schedule()


class _Grid:
    """The whole grid's state: the event heap, each site's GM state and the tallies."""

    def __init__(
        self,
        jobs: dict[int, tuple[float, float, float, int]],
        speeds: Sequence[Sequence[float]],
        samples: int,
        latency: float,
        seed: int,
        neighbors: "Sequence[Sequence[int]] | None",
        migration_cost: float,
        remote_cost: float,
    ) -> None:
        self.jobs = jobs  # job -> (release, size, v0, submit site)
        self.samples = samples
        self.latency = latency
        self.neighbors = neighbors
        self.migration_cost = migration_cost
        self.remote_cost = remote_cost
        n_sites = self.n_sites = len(speeds)
        spd = self.spd = [[float(v) for v in sp] for sp in speeds]
        m = self.m = [len(sp) for sp in spd]
        # Step 2: processors by descending speed, ties by index.
        self.order = [sorted(range(len(sp)), key=lambda p, sp=sp: (-sp[p], p)) for sp in spd]
        self.rngs = [site_rng(seed, s, PURPOSE_GM_SAMPLE) for s in range(n_sites)]
        # Per site: the ranked keys of the jobs it holds (waiting or running), what waits
        # (job -> piece [size, ran before]), the agent's running jobs (job -> processor, in
        # start order), processor occupancy, where each job last ran here and setup it owes.
        self.ranked: list[list[tuple]] = [[] for _ in range(n_sites)]
        self.waiting: list[dict[int, list]] = [{} for _ in range(n_sites)]
        self.running: list[dict[int, int]] = [{} for _ in range(n_sites)]
        self.busy: list[list[int | None]] = [[None] * k for k in m]
        self.last_proc: list[dict[int, int]] = [{} for _ in range(n_sites)]
        self.owed: list[dict[int, float]] = [{} for _ in range(n_sites)]
        self.timer_at: list[float | None] = [None] * n_sites
        self.bids: list[dict[int, list]] = [{} for _ in range(n_sites)]
        self.sent_seq = [0] * n_sites
        # Physically running pieces: job -> [site, proc, start, setup, size, speed, end, token].
        self.live: dict[int, list] = {}
        self.pieces: dict[int, list] = {j: [] for j in jobs}
        self.moves = {j: 0 for j in jobs}
        self.messages = {"probe": 0, "bid": 0, "steal": 0, "job": 0}
        self.placed = self.stolen = 0

        self.heap: list[tuple] = []
        self.counter = 0  # completions and timers at a site: in the order they were set
        per_site: list[list[int]] = [[] for _ in range(n_sites)]
        for j in sorted(jobs, key=lambda j: (jobs[j][0], j)):
            per_site[jobs[j][3]].append(j)
        for s in range(n_sites):
            for i, j in enumerate(per_site[s]):
                self.heap.append((jobs[j][0], ARRIVAL, s, i, 0, j))
        heapq.heapify(self.heap)

    # -- helpers ---------------------------------------------------------------------------

    def rank_key(self, j: int) -> tuple:  # step 1: descending v0, earlier release, lower id
        r, _, v0, _ = self.jobs[j]
        return (-v0, r, j)

    def draw(self, s: int) -> list[int]:
        """d sites among the others (or the neighbors), uniformly, with replacement."""
        if self.neighbors is None:
            others = [k for k in range(self.n_sites) if k != s]
        else:
            others = list(self.neighbors[s])
        return [others[i] for i in self.rngs[s].integers(len(others), size=self.samples).tolist()]

    def samples_others(self) -> bool:
        """Whether a site draws sites at all (other sites exist and d > 0)."""
        return self.n_sites > 1 and bool(self.samples)

    def send(self, t: float, src: int, dst: int, kind: str, *payload) -> None:
        self.sent_seq[src] += 1
        self.messages[kind] += 1
        heapq.heappush(self.heap, (t + self.latency, MESSAGE, dst, src, self.sent_seq[src], (kind,) + payload))

    def position(self, s: int, j: int) -> int:
        return bisect.bisect_left(self.ranked[s], self.rank_key(j))

    def processor_of(self, s: int, j: int) -> int | None:
        k = self.position(s, j)
        return self.order[s][k] if k < self.m[s] else None

    def hold(self, s: int, j: int, piece: list) -> None:
        bisect.insort(self.ranked[s], self.rank_key(j))
        self.waiting[s][j] = piece

    def unrank(self, s: int, j: int) -> None:
        del self.ranked[s][self.position(s, j)]

    def decide(self, t: float, s: int) -> None:
        if self.timer_at[s] != t:
            self.timer_at[s] = t
            self.counter += 1
            heapq.heappush(self.heap, (t, TIMER, s, self.counter, 0, None))

    def move_away(self, t: float, s: int, j: int, dst: int) -> None:
        piece = self.waiting[s].pop(j)
        self.last_proc[s].pop(j, None)
        self.owed[s].pop(j, None)
        self.unrank(s, j)
        self.moves[j] += 1
        self.send(t, s, dst, "job", j, piece)

    # -- acting (the decision timer) -------------------------------------------------------

    def act(self, t: float, s: int) -> None:
        self.stop_moved(t, s)
        self.start_waiting(t, s)

    def stop_moved(self, t: float, s: int) -> None:
        """Stop every running job whose processor changed: the rest waits here."""
        running = self.running[s]
        for j, p in list(running.items()):
            if self.processor_of(s, j) == p:
                continue
            _, _, start, setup, sz, speed, end, _ = self.live[j]
            rest = sz - max(0.0, t - (start + setup)) * speed
            del running[j]
            if rest <= 1e-12 * max(1.0, sz) or end <= t:
                continue  # it completes now anyway: left to run out
            self.pieces[j].append((start, t, s, p, sz - rest))
            del self.live[j]
            self.busy[s][p] = None
            self.waiting[s][j] = [rest, True]
            self.owed[s][j] = max(0.0, start + setup - t)

    def setup_for(self, s: int, j: int, p: int, ran: bool) -> float:
        """The setup a job pays to start on processor ``p`` (counts a move between
        processors of the site)."""
        if not ran:
            return 0.0
        prev = self.last_proc[s].get(j)
        if prev is None:
            return self.migration_cost + self.remote_cost
        if prev != p:
            self.moves[j] += 1
            return self.migration_cost
        return self.owed[s].get(j, 0.0)

    def start_waiting(self, t: float, s: int) -> None:
        """Start each waiting job that has a free processor, in job-id order."""
        for j in sorted(self.waiting[s]):
            p = self.processor_of(s, j)
            if p is None or self.busy[s][p] is not None:
                continue
            sz, ran = self.waiting[s].pop(j)
            setup = self.setup_for(s, j, p, ran)
            speed = self.spd[s][p]
            end = t + setup + sz / speed
            self.counter += 1
            self.live[j] = [s, p, t, setup, sz, speed, end, self.counter]
            heapq.heappush(self.heap, (end, COMPLETE, s, self.counter, 0, j))
            self.busy[s][p] = j
            self.running[s][j] = p
            self.last_proc[s][j] = p

    # -- events ----------------------------------------------------------------------------

    def run(self) -> None:
        heap = self.heap
        while heap:
            t, kind, s, key, _, payload = heapq.heappop(heap)
            if kind == COMPLETE:
                self.on_complete(t, s, key, payload)
            elif kind == TIMER:
                self.on_timer(t, s)
            elif kind == ARRIVAL:
                self.on_arrival(t, s, payload)
            else:  # a message from site ``key``
                self.on_message(t, s, key, payload)

    def on_complete(self, t: float, s: int, token: int, j: int) -> None:
        if j not in self.live or self.live[j][7] != token:
            return  # a piece stopped before its end
        _, p, start, _, sz, _, _, _ = self.live.pop(j)
        self.pieces[j].append((start, t, s, p, sz))
        self.busy[s][p] = None
        self.unrank(s, j)
        self.running[s].pop(j, None)
        if len(self.ranked[s]) < self.m[s] and self.samples_others():
            for k in self.draw(s):
                self.send(t, s, k, "steal")
        self.decide(t, s)

    def on_timer(self, t: float, s: int) -> None:
        self.timer_at[s] = None
        self.act(t, s)

    def on_arrival(self, t: float, s: int, j: int) -> None:
        self.hold(s, j, [self.jobs[j][1], False])
        if self.processor_of(s, j) is None and self.samples_others():
            targets = self.draw(s)
            self.bids[s][j] = [len(targets), []]
            for k in targets:
                self.send(t, s, k, "probe", j)
        self.decide(t, s)

    def on_message(self, t: float, s: int, src: int, payload: tuple) -> None:
        what, *rest = payload
        if what == "probe":
            self.on_probe(t, s, src, *rest)
        elif what == "bid":
            self.on_bid(t, s, src, *rest)
        elif what == "steal":
            self.on_steal(t, s, src)
        else:  # a job
            self.on_job(t, s, *rest)

    def on_probe(self, t: float, s: int, src: int, j: int) -> None:
        k = bisect.bisect_left(self.ranked[s], self.rank_key(j))  # where the job would rank here
        self.send(t, s, src, "bid", self.spd[s][self.order[s][k]] if k < self.m[s] else 0.0, j)

    def on_bid(self, t: float, s: int, src: int, speed: float, j: int) -> None:
        entry = self.bids[s][j]
        entry[0] -= 1
        entry[1].append((speed, src))
        if entry[0] != 0:
            return
        del self.bids[s][j]
        best = max(entry[1], key=lambda b: (b[0], -b[1]))
        if best[0] > 0 and j in self.waiting[s] and self.processor_of(s, j) is None:
            self.move_away(t, s, j, best[1])
            self.placed += 1

    def on_steal(self, t: float, s: int, src: int) -> None:
        for key_ in self.ranked[s][self.m[s] :]:
            if key_[2] in self.waiting[s]:
                self.move_away(t, s, key_[2], src)
                self.stolen += 1
                self.decide(t, s)
                break

    def on_job(self, t: float, s: int, j: int, piece: list) -> None:
        self.hold(s, j, piece)
        self.decide(t, s)

    # -- result ----------------------------------------------------------------------------

    def schedule(self) -> Schedule:
        starts, ends, execs = {}, {}, {}
        for j, ps in self.pieces.items():
            ps.sort(key=lambda x: (x[0], x[1]))
            starts[j] = min(x[0] for x in ps)
            ends[j] = max(x[1] for x in ps)
            share: dict[int, float] = {}
            for x in ps:
                share[x[2]] = share.get(x[2], 0.0) + x[4]
            execs[j] = min(share, key=lambda k: (-share[k], k))
        return Schedule(self.pieces, starts, ends, execs, self.moves, self.messages, self.placed, self.stolen)


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
