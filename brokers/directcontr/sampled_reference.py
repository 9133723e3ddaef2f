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


def simulate(  # noqa: C901
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
    n = len(procs)
    d = choices if n > 1 else 0
    jobs = {int(j): (float(r), float(p), int(s)) for j, r, p, s in zip(job_id, release, size, site)}
    sites = [_Site(int(k)) for k in procs]
    rngs = [site_rng(seed, s, PURPOSE_DC_SAMPLE) for s in range(n)]
    seq = [0] * n
    messages = {k: 0 for k in ("probe", "report", "need", "ask", "refuse", "job", "finished")}
    start: dict[int, float] = {}
    end: dict[int, float] = {}
    where: dict[int, int] = {}
    stats = {"moved": 0, "pushed": 0, "ties": 0}
    heap: list[tuple] = []
    counter = 0

    per_site: list[list[int]] = [[] for _ in range(n)]
    for j in sorted(jobs, key=lambda j: (jobs[j][0], j)):
        per_site[jobs[j][2]].append(j)
    for s in range(n):
        for i, j in enumerate(per_site[s]):
            heap.append((jobs[j][0], ARRIVAL, s, i, 0, j))
    heapq.heapify(heap)

    def draw(s: int) -> list[int]:
        if neighbors is None:
            others = [k for k in range(n) if k != s]
        else:
            others = list(neighbors[s])
        return [others[i] for i in rngs[s].integers(len(others), size=d).tolist()]

    def send(t: float, src: int, dst: int, kind: str, *payload) -> None:
        seq[src] += 1
        messages[kind] += 1
        heapq.heappush(heap, (t + latency, MESSAGE, dst, src, seq[src], (kind,) + payload))

    def free(s: int) -> int:
        st = sites[s]
        return st.m - st.busy - st.held

    def state(s: int) -> tuple:
        st = sites[s]
        return (tuple(st.records.values()), len(st.waiting))

    def run(t: float, s: int, j: int) -> None:
        nonlocal counter
        st = sites[s]
        st.busy += 1
        start[j], where[j] = t, s
        counter += 1
        heapq.heappush(heap, (t + jobs[j][1], COMPLETE, s, counter, 0, j))

    def probe(t: float, s: int) -> None:
        nonlocal counter
        st = sites[s]
        if st.due:
            return
        if not d:
            st.due = 1
            counter += 1
            heapq.heappush(heap, (t, TIMER, s, counter, 0, None))
            return
        st.heard = {}
        targets = draw(s)
        st.due = len(targets)
        for k in targets:
            send(t, s, k, "probe")

    def decide(t: float, s: int) -> None:
        st = sites[s]
        left = free(s)
        ranked = [(-key_of(st.records.values(), t), s, len(st.waiting))] if st.waiting else []
        for u, (records, waiting) in st.heard.items():
            if waiting > 0:
                ranked.append((-key_of(records, t), u, waiting))
        st.heard = {}
        ranked.sort()
        if left < sum(w for _, _, w in ranked):  # not all served: the order matters
            stats["ties"] += any(a[0] == b[0] for a, b in zip(ranked, ranked[1:]))
        for _, u, waiting in ranked:
            if left <= 0:
                break
            k = min(left, waiting)
            left -= k
            if u == s:
                for _ in range(k):
                    run(t, s, st.waiting.popleft())
            else:
                st.held += k
                send(t, s, u, "ask", k)

    while heap:
        t, kind, s, key, _, payload = heapq.heappop(heap)
        if t >= horizon:
            break
        st = sites[s]
        if kind == ARRIVAL:
            st.waiting.append(payload)
            if free(s) > 0:
                probe(t, s)
            if len(st.waiting) > free(s) and d:
                snap = state(s)
                for k in draw(s):
                    send(t, s, k, "need", snap)
        elif kind == COMPLETE:
            j = payload
            end[j] = t
            st.busy -= 1
            owner = jobs[j][2]
            if owner != s:
                st.records[j] = (1, start[j], jobs[j][1])
                send(t, s, owner, "finished", j, start[j], t)
            probe(t, s)
        elif kind == TIMER:
            st.due = 0
            decide(t, s)
        else:
            what, *rest = payload
            src = key
            if what == "probe":
                send(t, s, src, "report", state(s))
            elif what == "report":
                st.heard[src] = rest[0]
                st.due -= 1
                if not st.due:
                    decide(t, s)
            elif what == "need":
                if st.due:
                    st.heard.setdefault(src, rest[0])
                elif free(s) > 0:
                    st.heard = {src: rest[0]}
                    stats["pushed"] += 1
                    decide(t, s)
            elif what == "ask":
                asked = rest[0]
                give = min(asked, len(st.waiting))
                for _ in range(give):
                    j = st.waiting.popleft()
                    st.records[j] = (-1, t, None)  # counted from the instant it leaves
                    send(t, s, src, "job", j)
                if give < asked:
                    send(t, s, src, "refuse", asked - give)
            elif what == "refuse":
                st.held -= rest[0]
                probe(t, s)
            elif what == "job":
                st.held -= 1
                j = rest[0]
                run(t, s, j)
                stats["moved"] += 1
                st.records[j] = (1, t, None)
            else:  # finished: the job's real start and end replace the instant it left
                j, s0, _ = rest
                st.records[j] = (-1, s0, jobs[j][1])
    return Schedule(where, start, end, messages, stats["moved"], stats["pushed"], messages["refuse"], stats["ties"])


def as_arrays(schedule: Schedule, job_ids: Sequence[int]) -> dict[str, np.ndarray]:
    """exec_site, start, end in the order of ``job_ids`` (-1 and NaN: not started, not done)."""
    ids = list(job_ids)
    return {
        "exec_site": np.array([schedule.exec_site.get(j, -1) for j in ids]),
        "start": np.array([schedule.start.get(j, np.nan) for j in ids]),
        "end": np.array([schedule.end.get(j, np.nan) for j in ids]),
    }
