"""Test oracle for the decentralized settings of ``bilb`` and ``averaging_game`` (thesis ch. 4).

``brokers/bilb/reference.py`` is the oracle of the full graph, where every site reads the
same offers and one plan is carried out at once. Over a network topology every site plans
its own closed neighborhood (or, with ``exchange = "gossip"``, its partners of a pairwise
round), and the messages' latencies shape what happens; so this oracle is an event
simulation of the whole grid over one heap, each message an event one latency later. It is
written from the thesis's text (Algorithms 4.1 and 4.3, through ``reference.py``'s own
``thesis_bilb`` and ``averaging_by_the_text``) and from the documented rules of the
decentralized rounds (``docs/results/decentralization.md``, "BILB over neighborhoods"),
never through the agents' code.

Rules modelled (speed 1, one processor, FCFS):

* A job released at site k at time r is announced the finish Q_k(r) + size (Q_k counts
  everything k holds, offered pieces included) and queued whole.
* Rounds on a common clock: at ``start``, then every gap = max(min_gap, 3 latencies), or
  4 latencies with gossip.
* At a round time t every site offers (L_k = Q_k(t) - t, its level, m_k): bilb's level is
  l_k; the averaging game's is 1 or 0, in or out of the period's coalition (``_Coalition``).
  m_k is what lies, in the queue from its tail back to the running piece, past
  t + (2|N[k]| + 3) latencies (N[k]: the closed neighborhood), less the pieces still offered
  in the last round (where the gap is four latencies, its answers may come just after t).
* ``neighbors``: offers go to every neighbor; a site holding its closed neighborhood's offers
  (one latency later) plans over it. ``gossip``: each site draws one neighbor from its own
  stream and sends it its offer; the drawn site answers with its own (as of t); a site plans
  over itself, its drawn neighbor and every site that drew it once the drawn one's answer
  is in (two latencies after t).
* The plan uses the loads rounded to a multiple of 2e-6 (overlapping neighborhoods must
  order two sites alike); bilb: Algorithm 4.3, each surplus capped at m_k; averaging game:
  Algorithm 4.1 among the planners' coalition members. Plans send only down the order of
  (rounded load, id).
* A sender cuts each of its transfers, in plan order, off the tail of its work (the running
  piece's unprocessed part last), leaving alone everything that would run before
  now + 3 latencies; a queued piece within 1e-6 of what is owed goes whole, else the owed
  part is split off its end (the split piece is queued right behind). Cut pieces stay in
  place, unstartable, until answered. Each transfer ends with a marker (the last piece or an
  empty marker); every lower-ranked member it sends nothing gets an empty marker.
* A receiver waits for the markers of every higher-ranked member, then judges their pieces,
  the less loaded sender first, each sender's in the order sent: granted (queued at the
  tail) iff Q(now) + size is within the piece's announced finish and, for bilb, within
  now + l_k (slack 1e-9 relative); else refused. A granted piece leaves its sender, a
  refused one becomes startable where it was.
* At one instant a site handles completions, then messages (by source), then timers, then
  releases.

Covered settings (others raise ``NotCovered``): both protocols without learning, a
topology (``neighbors`` or ``gossip`` exchange), ``discrete = false``, ``send = "tail"``,
``cut_running = true``, ``starting = "queued"``, identical speed-1 sites, one constant
latency, no release within 1e-6 of a round time (the agents hold such releases). The
topology (neighbor lists) and the random streams (``site_rng``: gossip draws, coalitions)
come from the caller and ``model/rng.py``. tests/test_bilb_neighborhood_reference.py compares
it with the agents at latencies 1e-3 and 0.3 (where gossip rounds are four latencies apart:
a round's answers come at the next round's instant).
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from gridemu.brokers.averaging.reference import averaging_by_the_text
from gridemu.brokers.bilb.reference import _Coalition, thesis_bilb
from gridemu.model.rng import PURPOSE_GOSSIP, site_rng

#: Loads, amounts and "whole piece" margins closer than this are equal (the contract's TIE).
TIE = 1e-6
#: Nothing smaller than this is left to cut.
CUT_EPS = 1e-12
#: Relative slack of a receiver's tests.
TOL = 1e-9

# Per-site order of events at one instant.
_COMPLETION, _MESSAGE, _TIMER, _RELEASE = 0, 2, 3, 4


class NotCovered(ValueError):
    """A setting or instance this oracle does not model."""


@dataclass(eq=False)
class Piece:
    job_id: int
    size: float
    deadline: float
    site: int
    queued_at: float
    offered: bool = False
    gone: bool = False
    start: float = math.nan
    end: float = math.nan


@dataclass
class Site:
    site_id: int
    queue: list[Piece] = field(default_factory=list)
    running: Piece | None = None
    busy_until: float = math.nan

    def finish(self, now: float) -> float:
        """Q_k(now), summed as now + (queued sizes in queue order + what the running piece has
        left): loads are rounded to a grid of 2e-6 (``Grid.plan``) and averaging plans put them
        on its midpoints, where the last bit decides; the sites sum their work this way."""
        work = sum(p.size for p in self.queue)
        if self.running is not None and self.busy_until > now:
            work += self.busy_until - now
        return now + work


@dataclass
class Round:
    """A site's state within the current round."""

    time: float = math.nan
    offers: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    pick: int = -1
    expect: list[int] | None = None
    inbox: dict[int, list[Piece]] = field(default_factory=dict)
    complete: set[int] = field(default_factory=set)
    offered: dict[int, Piece] = field(default_factory=dict)  # id -> own piece awaiting an answer


class Grid:
    """The whole grid: sites, their rounds and one event heap."""

    def __init__(self, n: int, neighbors: Sequence[Sequence[int]], cfg: dict[str, Any]):
        self.n, self.nb, self.cfg = n, [list(x) for x in neighbors], cfg
        self.lat = cfg["latency"]
        self.sites = [Site(k) for k in range(n)]
        self.rounds = [Round() for _ in range(n)]
        self.heap: list[tuple] = []
        self.seq = itertools.count()
        self.created: list[Piece] = []
        self.gossip = cfg["exchange"] == "gossip"
        self.gap = max(cfg["min_gap"], (4 if self.gossip else 3) * self.lat)
        self.rngs = [site_rng(cfg["seed"], k, PURPOSE_GOSSIP) for k in range(n)]
        averaging = cfg["protocol"] == "averaging_game"
        self.coalition = _Coalition(cfg["p"], cfg["start"], cfg["period"], cfg["seed"]) if averaging else None

    # ------------------------------------------------------------------ events
    def push(self, t: float, rank: int, site: int, sub: float, payload: Any) -> None:
        heapq.heappush(self.heap, (t, rank, site, sub, next(self.seq), payload))

    def send(self, now: float, src: int, dst: int, kind: str, **body: Any) -> None:
        self.push(now + self.lat, _MESSAGE, dst, src, (kind, src, body))

    # ------------------------------------------------------------------ processor
    def dispatch(self, site: Site, now: float) -> None:
        if site.running is None and site.queue and not site.queue[0].offered:
            piece = site.queue.pop(0)
            piece.start = now
            site.running, site.busy_until = piece, now + piece.size
            self.push(site.busy_until, _COMPLETION, site.site_id, 0, piece)

    def complete(self, site: Site, now: float, piece: Piece) -> None:
        if site.running is not piece or now != site.busy_until:
            return  # cut shorter: a later or earlier completion is the real one
        piece.end = now
        site.running = None
        self.dispatch(site, now)

    def release(self, k: int, now: float, row: Any) -> None:
        for t in self.round_times_near(now):
            if abs(now - t) <= TIE:
                raise NotCovered(f"release at {now} within {TIE} of a round time")
        site = self.sites[k]
        size = float(row["size"])
        piece = Piece(int(row["job_id"]), size, site.finish(now) + size, k, now)
        self.created.append(piece)
        site.queue.append(piece)
        self.dispatch(site, now)

    def round_times_near(self, t: float) -> list[float]:
        start, gap = self.cfg["start"], self.gap
        i = math.floor((t - start) / gap)
        return [start + j * gap for j in (i, i + 1) if j >= 0]

    # ------------------------------------------------------------------ offers
    def level(self, k: int, t: float) -> float:
        if self.coalition is None:
            return self.cfg["limits"][k]
        return 1.0 if k in self.coalition.at(t) else 0.0

    def movable(self, k: int, t: float) -> float:
        """m_k: the work past t + (2|N[k]| + 3) latencies, from the queue's tail to the running piece."""
        site = self.sites[k]
        earliest = t + (2 * (len(self.nb[k]) + 1) + 3) * self.lat
        end, total = site.finish(t), 0.0
        for piece in reversed(site.queue):
            if not piece.offered:  # a piece still offered in the last round is not this one's
                total += max(0.0, end - max(end - piece.size, earliest))
            end -= piece.size
        if site.running is not None:
            total += max(0.0, end - max(t, earliest))
        return total

    def on_round(self, k: int, t: float) -> None:
        rnd = self.rounds[k]
        rnd.time, rnd.offers, rnd.inbox, rnd.complete, rnd.expect = t, {}, {}, set(), None
        offer = (self.sites[k].finish(t) - t, self.level(k, t), self.movable(k, t))
        rnd.offers[k] = offer
        self.push(t + self.gap, _TIMER, k, 0, "round")
        if self.gossip:
            rnd.pick = self.nb[k][int(self.rngs[k].integers(len(self.nb[k])))]
            self.send(t, k, rnd.pick, "pair", offer=offer)
            return
        for l in self.nb[k]:
            self.send(t, k, l, "offer", offer=offer)

    def on_offer(self, k: int, now: float, src: int, offer: tuple) -> None:
        rnd = self.rounds[k]
        rnd.offers[src] = offer
        if self.gossip:
            if src == rnd.pick:
                rnd.pick = -1
                self.plan_round(k, now)
        elif len(rnd.offers) == len(self.nb[k]) + 1:
            self.plan_round(k, now)

    def on_pair(self, k: int, now: float, src: int, offer: tuple) -> None:
        rnd = self.rounds[k]
        rnd.offers[src] = offer
        self.send(now, k, src, "offer", offer=rnd.offers[k])

    # ------------------------------------------------------------------ the plan
    def plan(self, members: list[int], offers: dict) -> tuple[list[tuple[int, int, float]], list[int]]:
        """The planner's transfers (site ids) and the members by (rounded load, id)."""
        loads = {k: round(offers[k][0] / (2 * TIE)) * (2 * TIE) for k in members}
        order = sorted(members, key=lambda k: (loads[k], k))
        if self.coalition is None:
            sub, _ = thesis_bilb(
                [loads[k] for k in members], [offers[k][1] for k in members], [offers[k][2] for k in members]
            )
            return [(members[a], members[b], x) for a, b, x in sub], order
        joined = [k for k in members if offers[k][1] > 0.5]
        if len(joined) < 2:
            return [], order
        sub = averaging_by_the_text([loads[k] for k in joined])
        return [(joined[a], joined[b], x) for a, b, x in sub], order

    def plan_round(self, k: int, now: float) -> None:
        rnd = self.rounds[k]
        members = sorted(rnd.offers)
        transfers, order = self.plan(members, rnd.offers)
        rank = {m: i for i, m in enumerate(order)}
        mine = [(l, x) for s, l, x in transfers if s == k]
        if mine:
            self.cut(k, now, mine, now + 3 * self.lat)
        sent = {l for l, _ in mine}
        for l in members:
            if rank[l] < rank[k] and l not in sent:
                self.send(now, k, l, "piece", piece=None, last=True)
        rnd.expect = sorted((m for m in members if rank[m] > rank[k]), key=rank.__getitem__)
        self.settle(k, now)

    # ------------------------------------------------------------------ cutting
    def cut(self, k: int, now: float, transfers: list[tuple[int, float]], earliest: float) -> None:
        """Each transfer's amount off the tail of k's work, in turn (module doc)."""
        site, t0 = self.sites[k], self.rounds[k].time
        work = ([site.running] if site.running is not None else []) + list(site.queue)
        i, end = len(work) - 1, site.finish(now)
        for dst, amount in transfers:
            out: list[Piece] = []
            while amount > TIE and i >= 0:
                piece = work[i]
                running = piece is site.running
                size = site.busy_until - now if running else piece.size
                begin = end - size
                if piece.queued_at > t0 or piece.offered:  # came after the offers: not the round's
                    end, i = begin, i - 1
                    continue
                room = end - max(begin, earliest)
                if room <= CUT_EPS:
                    i = -1
                    break
                take = min(amount, room)
                if not running and size <= take + TIE and begin >= earliest:
                    piece.offered = True
                    out.append(piece)
                    end, i, amount = begin, i - 1, amount - size
                else:
                    out.append(self.split(site, piece, take, now))
                    end, amount = end - take, amount - take
            self.offer(k, now, dst, out)

    def split(self, site: Site, piece: Piece, take: float, now: float) -> Piece:
        new = Piece(piece.job_id, take, piece.deadline, site.site_id, piece.queued_at, offered=True)
        self.created.append(new)
        piece.size -= take
        if piece is site.running:
            site.busy_until -= take
            self.push(site.busy_until, _COMPLETION, site.site_id, 0, piece)
            site.queue.insert(0, new)
        else:
            site.queue.insert(site.queue.index(piece) + 1, new)
        return new

    def offer(self, k: int, now: float, dst: int, pieces: list[Piece]) -> None:
        for piece in pieces:
            self.rounds[k].offered[id(piece)] = piece
            self.send(now, k, dst, "piece", piece=piece, last=piece is pieces[-1])
        if not pieces:
            self.send(now, k, dst, "piece", piece=None, last=True)

    # ------------------------------------------------------------------ receiving
    def on_piece(self, k: int, now: float, src: int, piece: Piece | None, last: bool) -> None:
        rnd = self.rounds[k]
        if piece is not None:
            rnd.inbox.setdefault(src, []).append(piece)
        if last:
            rnd.complete.add(src)
        self.settle(k, now)

    def settle(self, k: int, now: float) -> None:
        rnd = self.rounds[k]
        if rnd.expect is None or len(rnd.complete) < len(rnd.expect):
            return
        for src in rnd.expect:
            for piece in rnd.inbox.get(src, ()):
                self.judge(k, now, src, piece)
        rnd.expect, rnd.inbox, rnd.complete = None, {}, set()

    def judge(self, k: int, now: float, src: int, piece: Piece) -> None:
        site = self.sites[k]
        finish = site.finish(now) + piece.size
        late = finish > piece.deadline + TOL * max(1.0, abs(piece.deadline))
        limit = self.cfg["limits"][k] if self.coalition is None else math.inf
        if late or finish - now > limit + TOL * max(1.0, finish - now):
            self.send(now, k, src, "refuse", piece=piece)
            return
        new = Piece(piece.job_id, piece.size, piece.deadline, k, now)
        self.created.append(new)
        site.queue.append(new)
        self.dispatch(site, now)
        self.send(now, k, src, "grant", piece=piece)

    def on_answer(self, k: int, now: float, kind: str, piece: Piece) -> None:
        site = self.sites[k]
        self.rounds[k].offered.pop(id(piece))
        if kind == "grant":
            site.queue.remove(piece)
            piece.gone = True
        else:
            piece.offered = False
        self.dispatch(site, now)

    # ------------------------------------------------------------------ the loop
    def handle(self, t: float, k: int, rank: int, payload: Any) -> None:
        if rank == _COMPLETION:
            self.complete(self.sites[k], t, payload)
        elif rank == _RELEASE:
            self.release(k, t, payload)
        elif rank == _TIMER:
            self.on_round(k, t)
        else:
            kind, src, body = payload
            if kind == "offer":
                self.on_offer(k, t, src, body["offer"])
            elif kind == "pair":
                self.on_pair(k, t, src, body["offer"])
            elif kind == "piece":
                self.on_piece(k, t, src, body["piece"], body["last"])
            else:
                self.on_answer(k, t, kind, body["piece"])

    def busy(self) -> bool:
        return any(s.running is not None or s.queue for s in self.sites)

    def run(self, jobs: np.ndarray) -> None:
        for row in jobs:
            self.push(float(row["release"]), _RELEASE, int(row["submit_site"]), float(row["job_id"]), row)
        left = len(jobs)
        for k in range(self.n):
            self.push(self.cfg["start"], _TIMER, k, 0, "round")
        stop = math.inf
        while self.heap:
            t, rank, k, _, _, payload = heapq.heappop(self.heap)
            if rank == _TIMER and stop == math.inf and left == 0 and not self.busy():
                stop = t  # nothing to balance any more: the clock stops for every site
            if rank == _TIMER and t >= stop:
                continue
            if rank == _RELEASE:
                left -= 1
            self.handle(t, k, rank, payload)


def _check(cfg: dict[str, Any], speeds: Sequence[float] | None) -> None:
    wanted = {"discrete": False, "send": "tail", "cut_running": True, "starting": "queued", "learn": False}
    for key, value in wanted.items():
        if cfg.get(key, value) != value:
            raise NotCovered(f"{key} = {cfg[key]!r} is not covered (only {value!r})")
    if cfg["exchange"] not in ("neighbors", "gossip"):
        raise NotCovered(f"exchange {cfg['exchange']!r}")
    if speeds is not None and any(s != 1.0 for s in speeds):
        raise NotCovered("sites of speed other than 1")
    if cfg["protocol"] not in ("bilb", "averaging_game"):
        raise NotCovered(f"protocol {cfg['protocol']!r}")


def neighborhood_run(
    jobs: np.ndarray,
    neighbors: Sequence[Sequence[int]],
    *,
    protocol: str,
    latency: float,
    limits: Sequence[float] | None = None,
    p: Sequence[float] | None = None,
    exchange: str = "neighbors",
    start: float = 0.0,
    min_gap: float = 1.0,
    period: float = 1000.0,
    seed: int = 0,
    **readings: Any,
) -> dict[str, np.ndarray]:
    """Run the decentralized rounds over ``neighbors`` (site k's neighbor ids); return every
    piece that ran: columns ``job_id``, ``exec_site``, ``size``, ``start``, ``end``, ``deadline``
    sorted by (job_id, exec_site, start). ``readings`` (discrete, send, cut_running, starting,
    learn, speeds) must be the covered ones (module doc)."""
    n = len(neighbors)
    cfg = dict(protocol=protocol, latency=float(latency), exchange=exchange, start=float(start))
    cfg |= dict(min_gap=float(min_gap), period=float(period), seed=seed)
    cfg["limits"] = [float(x) for x in limits] if limits is not None else [math.inf] * n
    cfg["p"] = [float(x) for x in p] if p is not None else [1.0] * n
    speeds = readings.pop("speeds", None)
    cfg |= readings
    _check(cfg, speeds)
    grid = Grid(n, neighbors, cfg)
    grid.run(jobs)
    done = sorted(
        (x for x in grid.created if not x.gone and x.size > CUT_EPS), key=lambda x: (x.job_id, x.site, x.start)
    )
    return {
        "job_id": np.array([x.job_id for x in done], dtype=np.int64),
        "exec_site": np.array([x.site for x in done], dtype=np.int64),
        "size": np.array([x.size for x in done], dtype=np.float64),
        "start": np.array([x.start for x in done], dtype=np.float64),
        "end": np.array([x.end for x in done], dtype=np.float64),
        "deadline": np.array([x.deadline for x in done], dtype=np.float64),
    }
