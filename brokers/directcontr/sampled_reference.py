"""Decentralized DIRECTCONTR (``directcontr``, ``mode = "sampled"``) on the whole grid at once:
one event heap for every site, written apart from the agent (the tests' oracle).

DIRECTCONTR gives a free processor to the organization with the largest φ − ψ among those
with a waiting job ([S] Algorithm 1 line 19, papers/shapley-fair-directcontr.txt and
shapley-nonmonetary-fair-scheduling.txt). ψ_sp of an organization at t sums, over the unit
parts of its jobs started by t, the time since each started (t − τ); φ sums the same over
the unit parts run on its processors. Each site is one organization and decides for its own
processors from what it knows, by the rules of the sampled protocol (``brokers/directcontr/
sampled.py``'s module doc), re-implemented here from that text:

* **The key** of a site is 2(φ − ψ) computed here from its records, exactly (``Fraction``):
  a job that started at s adds, while it runs, (t − s)(t − s + 1) (the unit parts started at
  s, s + 1, … each counting t − τ: x(x + 1)/2 for x = t − s, the same expression between
  integers, as the protocol states), and once its p units ran, 2p(t − s) − p(p − 1) for
  good; + for a job of another organization run on this site's processors, − for a job of
  this organization run elsewhere. Its own jobs on its own processors add to both and are
  left out. A job sent away counts from the instant it left (the ask's arrival) until the
  runner's ``finished`` report gives its real start and end.
* **Pull.** A free processor (a completion, a local release) starts a probing round (none
  while one is under way): ``probe`` to d sites drawn with replacement from the site's own
  stream (``site_rng(seed, site, PURPOSE_DC_SAMPLE)``) among the other sites (or its
  neighbors in a topology). Each answers (``report``) with its key as it stands when it
  sends (carried here as the records themselves, evaluated at the decision instant: the
  report's key, slope and curvature extrapolated) and how many of its jobs wait. When the
  last answer is in, the processors free and not held go to the largest keys among the
  reports with a waiting job and the site's own (if it has one), ties to the lowest site id,
  each organization at most as many as it has waiting: its own jobs start at once (first
  waiting first), the others are asked (``ask``, count), their processors held.
* **Push.** A release that leaves more jobs waiting than processors free (not held) sends
  ``need`` (the report's fields) to d sampled sites. A site in a probing round counts it
  with the round's answers (a report from that site replaces it, it does not replace a
  report); a site with no round and a free processor decides at once from it and its own
  key; otherwise it is dropped.
* **Grants.** An asked site sends its first waiting jobs in submission order, one ``job``
  transfer each, and refuses the rest (``refuse``, count): the asker frees those
  processors and probes again. A received job starts at once on a held processor; at its
  completion the runner sends ``finished`` (start, end) to the owner.
* ``choices = 0`` (or one site): each site decides alone at a timer set when a processor
  frees, after the instant's messages: its own jobs in submission order.

Each message is one heap event delivered one latency later. The order at one instant at a
site is gridemu's (docs/kernel.md, "Determinism"): completions (in the order they were set),
messages by (source, source's sequence number, one counter for every kind a site sends),
timers, arrivals (release, then job-id order). Events at or after the horizon are not run.
Processors have speed 1 (identical processors, end = start + size). No code of
``brokers/directcontr`` is used here.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

import numpy as np

from gridemu.model.rng import PURPOSE_DC_SAMPLE, site_rng

COMPLETE, MESSAGE, TIMER, ARRIVAL = 0, 2, 3, 4  # gridemu's kind ranks at one instant


def twice_psi_sp(start: float, units: float | None, t: float) -> Fraction:
    """2 × the sum over a job's unit parts started by t of (t − τ): running since ``start``
    (``units`` None), or done after ``units`` unit parts."""
    x = Fraction(t) - Fraction(start)
    if units is None:
        return x * (x + 1)
    p = Fraction(units)
    return 2 * p * x - p * (p - 1)


def key_of(records, t: float) -> Fraction:
    """2(φ − ψ) at t from (sign, start, units or None) records."""
    return sum((sign * twice_psi_sp(s, p, t) for sign, s, p in records), Fraction(0))


@dataclass
class Schedule:
    """Per job id: where it ran and its start (started ones), its end (done ones, before the
    horizon); messages by kind."""

    exec_site: dict[int, int]
    start: dict[int, float]
    end: dict[int, float]
    messages: dict[str, int]
    moved: int = 0  # jobs run at another organization's site
    pushed: int = 0  # decisions taken at once on a need
    refused: int = 0  # refuse messages
    ties: int = 0  # decisions between equal keys (the lowest site id first)


@dataclass
class _Site:
    m: int
    busy: int = 0
    held: int = 0
    due: int = 0
    waiting: deque = field(default_factory=deque)
    heard: dict = field(default_factory=dict)
    records: dict = field(default_factory=dict)  # job -> (sign, start, units or None)


class _Grid:
    """The whole grid's state while it runs: the event heap, each site's state, the counters;
    one method per event kind (``simulate`` pops the events and dispatches to them)."""

    def __init__(
        self,
        jobs: dict[int, tuple[float, float, int]],
        procs: Sequence[int],
        choices: int,
        latency: float,
        seed: int,
        neighbors: "Sequence[Sequence[int]] | None",
    ) -> None:
        n = len(procs)
        self.n = n
        self.d = choices if n > 1 else 0
        self.latency = latency
        self.neighbors = neighbors
        self.jobs = jobs
        self.sites = [_Site(int(k)) for k in procs]
        self.rngs = [site_rng(seed, s, PURPOSE_DC_SAMPLE) for s in range(n)]
        self.seq = [0] * n
        self.messages = {k: 0 for k in ("probe", "report", "need", "ask", "refuse", "job", "finished")}
        self.start: dict[int, float] = {}
        self.end: dict[int, float] = {}
        self.where: dict[int, int] = {}
        self.moved = 0
        self.pushed = 0
        self.ties = 0
        self.heap: list[tuple] = []
        self.counter = 0
        self.on_message = {
            "probe": self.on_probe,
            "report": self.on_report,
            "need": self.on_need,
            "ask": self.on_ask,
            "refuse": self.on_refuse,
            "job": self.on_job,
            "finished": self.on_finished,
        }

        per_site: list[list[int]] = [[] for _ in range(n)]
        for j in sorted(jobs, key=lambda j: (jobs[j][0], j)):
            per_site[jobs[j][2]].append(j)
        for s in range(n):
            for i, j in enumerate(per_site[s]):
                self.heap.append((jobs[j][0], ARRIVAL, s, i, 0, j))
        heapq.heapify(self.heap)

    def schedule(self) -> Schedule:
        return Schedule(
            self.where,
            self.start,
            self.end,
            self.messages,
            self.moved,
            self.pushed,
            self.messages["refuse"],
            self.ties,
        )

    # -- helpers ------------------------------------------------------------------------------

    def draw(self, s: int) -> list[int]:
        if self.neighbors is None:
            others = [k for k in range(self.n) if k != s]
        else:
            others = list(self.neighbors[s])
        return [others[i] for i in self.rngs[s].integers(len(others), size=self.d).tolist()]

    def send(self, t: float, src: int, dst: int, kind: str, *payload) -> None:
        self.seq[src] += 1
        self.messages[kind] += 1
        heapq.heappush(self.heap, (t + self.latency, MESSAGE, dst, src, self.seq[src], (kind,) + payload))

    def free(self, s: int) -> int:
        st = self.sites[s]
        return st.m - st.busy - st.held

    def state(self, s: int) -> tuple:
        st = self.sites[s]
        return (tuple(st.records.values()), len(st.waiting))

    def run(self, t: float, s: int, j: int) -> None:
        st = self.sites[s]
        st.busy += 1
        self.start[j], self.where[j] = t, s
        self.counter += 1
        heapq.heappush(self.heap, (t + self.jobs[j][1], COMPLETE, s, self.counter, 0, j))

    def probe(self, t: float, s: int) -> None:
        st = self.sites[s]
        if st.due:
            return
        if not self.d:
            st.due = 1
            self.counter += 1
            heapq.heappush(self.heap, (t, TIMER, s, self.counter, 0, None))
            return
        st.heard = {}
        targets = self.draw(s)
        st.due = len(targets)
        for k in targets:
            self.send(t, s, k, "probe")

    def decide(self, t: float, s: int) -> None:
        st = self.sites[s]
        left = self.free(s)
        ranked = [(-key_of(st.records.values(), t), s, len(st.waiting))] if st.waiting else []
        for u, (records, waiting) in st.heard.items():
            if waiting > 0:
                ranked.append((-key_of(records, t), u, waiting))
        st.heard = {}
        ranked.sort()
        if left < sum(w for _, _, w in ranked):  # not all served: the order matters
            self.ties += any(a[0] == b[0] for a, b in zip(ranked, ranked[1:]))
        for _, u, waiting in ranked:
            if left <= 0:
                break
            k = min(left, waiting)
            left -= k
            if u == s:
                for _ in range(k):
                    self.run(t, s, st.waiting.popleft())
            else:
                st.held += k
                self.send(t, s, u, "ask", k)

    # -- events -------------------------------------------------------------------------------

    def on_arrival(self, t: float, s: int, j: int) -> None:
        st = self.sites[s]
        st.waiting.append(j)
        if self.free(s) > 0:
            self.probe(t, s)
        if len(st.waiting) > self.free(s) and self.d:
            snap = self.state(s)
            for k in self.draw(s):
                self.send(t, s, k, "need", snap)

    def on_complete(self, t: float, s: int, j: int) -> None:
        st = self.sites[s]
        self.end[j] = t
        st.busy -= 1
        owner = self.jobs[j][2]
        if owner != s:
            st.records[j] = (1, self.start[j], self.jobs[j][1])
            self.send(t, s, owner, "finished", j, self.start[j], t)
        self.probe(t, s)

    def on_timer(self, t: float, s: int) -> None:
        self.sites[s].due = 0
        self.decide(t, s)

    def on_probe(self, t: float, s: int, src: int) -> None:
        self.send(t, s, src, "report", self.state(s))

    def on_report(self, t: float, s: int, src: int, report: tuple) -> None:
        st = self.sites[s]
        st.heard[src] = report
        st.due -= 1
        if not st.due:
            self.decide(t, s)

    def on_need(self, t: float, s: int, src: int, report: tuple) -> None:
        st = self.sites[s]
        if st.due:
            st.heard.setdefault(src, report)
        elif self.free(s) > 0:
            st.heard = {src: report}
            self.pushed += 1
            self.decide(t, s)

    def on_ask(self, t: float, s: int, src: int, asked: int) -> None:
        st = self.sites[s]
        give = min(asked, len(st.waiting))
        for _ in range(give):
            j = st.waiting.popleft()
            st.records[j] = (-1, t, None)  # counted from the instant it leaves
            self.send(t, s, src, "job", j)
        if give < asked:
            self.send(t, s, src, "refuse", asked - give)

    def on_refuse(self, t: float, s: int, src: int, count: int) -> None:
        self.sites[s].held -= count
        self.probe(t, s)

    def on_job(self, t: float, s: int, src: int, j: int) -> None:
        st = self.sites[s]
        st.held -= 1
        self.run(t, s, j)
        self.moved += 1
        st.records[j] = (1, t, None)

    def on_finished(self, t: float, s: int, src: int, j: int, s0: float, _end: float) -> None:
        # finished: the job's real start and end replace the instant it left
        self.sites[s].records[j] = (-1, s0, self.jobs[j][1])


def simulate(
    job_id: Sequence[int],
    release: Sequence[float],
    size: Sequence[float],
    site: Sequence[int],
    procs: Sequence[int],
    choices: int,
    latency: float,
    seed: int,
    horizon: float,
    neighbors: "Sequence[Sequence[int]] | None" = None,
) -> Schedule:
    """Run the grid to the horizon (module doc). ``procs``: each site's processor count;
    ``neighbors``: each site's neighbors, None for the full graph."""
    if latency <= 0:
        raise ValueError("the latency must be > 0")
    jobs = {int(j): (float(r), float(p), int(s)) for j, r, p, s in zip(job_id, release, size, site)}
    grid = _Grid(jobs, procs, choices, latency, seed, neighbors)
    heap = grid.heap
    while heap:
        t, kind, s, key, _, payload = heapq.heappop(heap)
        if t >= horizon:
            break
        if kind == ARRIVAL:
            grid.on_arrival(t, s, payload)
        elif kind == COMPLETE:
            grid.on_complete(t, s, payload)
        elif kind == TIMER:
            grid.on_timer(t, s)
        else:
            what, *rest = payload
            grid.on_message[what](t, s, key, *rest)  # key: the source site
    return grid.schedule()


def as_arrays(schedule: Schedule, job_ids: Sequence[int]) -> dict[str, np.ndarray]:
    """exec_site, start, end in the order of ``job_ids`` (-1 and NaN: not started, not done)."""
    ids = list(job_ids)
    return {
        "exec_site": np.array([schedule.exec_site.get(j, -1) for j in ids]),
        "start": np.array([schedule.start.get(j, np.nan) for j in ids]),
        "end": np.array([schedule.end.get(j, np.nan) for j in ids]),
    }
