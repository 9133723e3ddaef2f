"""Centralized, sequential reference simulator of divisible-load balancing (thesis ch. 4).

This is a *test oracle*: a plain event loop over one global state that the
decentralized implementation must reproduce piece by piece. It runs either
Algorithm 4.1 (averaging load balancing, within a coalition drawn every period, the
"averaging game") or Algorithm 4.3 (BILB, bounded iterative load balancing) over
divisible jobs with announced finish times (deadlines). Both plans are written from the
thesis's text apart from the agents': Algorithm 4.1 is the averaging reference's
``averaging_by_the_text`` (``brokers/averaging/reference.py``; the agents' is
``averaging_plan``) and Algorithm 4.3 this module's :func:`thesis_bilb` (the agents' is
``bilb_plan``, ``brokers/bilb/algorithm.py``), so that a fault in either shows as a
difference between the decentralized run and this oracle. The tie rule is the
contract both follow (values within ``TIE`` of the first of their run are equal, by site
id): the tolerance is shared, the ordering is written here again (:func:`_tie_ordered`).

Model (every rule here is part of the contract with the decentralized version):

* ``n_sites`` sites, each one processor of speed 1, with a FIFO queue of pieces and at
  most one running piece; no preemption.
* ``Q_k(t)`` = end of k's running piece (or ``t`` if idle) + sizes of its queued pieces.
* A job arriving at site k at time r gets the deadline ``D = Q_k(r) + size`` and is
  queued whole.
* At equal times: completions, then the load-balancing round, then arrivals (by job id);
  a discrete round comes after its time unit's arrivals unless ``round_order`` is
  ``"before_releases"``. "Equal" is within ``SAME_INSTANT`` of a round: a completion just
  after it comes before it, and (continuous time) a release just before it after it; which
  came first is float rounding. The agents take the round's instant ``TIE`` wide, as their
  pieces start and their rounds run a few latencies off these times.
* Ties (``thesis_bilb``): loads and spaces within ``TIE`` are equal (by site id), and a
  surplus or amount within ``TIE`` of zero is none; a cut within ``TIE`` of a piece's end
  takes the whole piece, and one with less than ``TIE`` left stops. The agents' offers carry
  latency noise; without these, it would decide which sites get which pieces.
* A piece that started at the round's instant and that a head cut takes whole (``starting =
  "queued"``) leaves an empty piece where it started: the agents leave a sliver there of a
  few latencies (it has started, and the answers take that long), which this is the limit of.
* A round: loads ``L_k = Q_k(t) - t`` and movable loads m_k (the queued pieces, and the
  unprocessed part of the running piece where phase 1 may cut it); a plan; phase 1 cuts each transfer's amount, in
  plan order, from the end of its sender's queue, and once the queue is used up from the
  unprocessed part of the running piece (divisible load: that piece then ends earlier,
  nothing is stopped and resumed), or with ``send = "head"`` from the front: the running
  piece's unprocessed part first, then the queue from its head; phase 2 lets receivers, least loaded first, accept or
  refuse each incoming piece in plan order (the thesis's iteration order: pieces of an
  earlier, less loaded iteration have the earlier deadlines), then cut order: accepted iff
  it still meets its deadline and the receiver's queue stays within its participation
  level. Refused pieces stay where they were at the sender.
* Averaging game: each site joins the coalition of a period with probability ``p[k]``,
  one draw per site per period from ``site_rng(seed, k, PURPOSE_COALITION)``.

Because pieces are only ever appended at the end of a queue and accepted only if they
finish by their deadline, every job finishes by its announced deadline.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from gridemu.brokers.averaging.reference import averaging_by_the_text
from gridemu.brokers.bilb.algorithm import CUT_EPS, SAME_INSTANT, TIE
from gridemu.model.rng import PURPOSE_COALITION, site_rng

#: Spawn-key purpose of the coalition draws (averaging game); part of the determinism
#: contract next to scenarios.workload's purposes, never renumber.

PROTOCOLS = ("bilb", "averaging_game")

#: Slack on the acceptance tests (deadline and participation level).
ACCEPT_EPS = 1e-9

# Event kinds, in the order they are handled at equal times (a discrete round comes after
# its time unit's arrivals).
_COMPLETION, _ROUND, _ARRIVAL, _DISCRETE_ROUND = 0, 1, 2, 3

Transfer = tuple[int, int, float]
#: ``on_round(t, loads_before, plan, queue_lengths_after)``: called after every round with
#: the loads L_k the plan was computed from, the plan in site ids (what was *planned*, not
#: what was accepted), and every site's ``Q_k(t) - t`` once the round is over.
RoundHook = Callable[[float, list[float], list[Transfer], list[float]], None]


@dataclass(eq=False)  # identity equality: two pieces of the same job are still distinct
class Piece:
    """A part of a divisible job; ``site`` is where it is queued, runs or ran."""

    job_id: int
    size: float
    deadline: float
    site: int
    cut: bool = False  # taken by phase 1 of the current round, awaiting its receiver
    start: float = math.nan
    end: float = math.nan


@dataclass
class Site:
    """One speed-1 processor with a FIFO queue of pieces."""

    site_id: int
    queue: list[Piece] = field(default_factory=list)
    running: Piece | None = None
    busy_until: float = math.nan  # end of the running piece

    def finish_time(self, now: float) -> float:
        """Q_k(now): when this site would finish everything it holds (placeholders included)."""
        base = self.busy_until if self.running is not None else now
        return base + sum(piece.size for piece in self.queue)


@dataclass
class _Events:
    """A heap of ``(time, kind, key, seq, payload)``; seq keeps payloads out of comparisons."""

    heap: list[tuple[float, int, int, int, Any]] = field(default_factory=list)
    seq: itertools.count = field(default_factory=itertools.count)

    def push(self, time: float, kind: int, key: int, payload: Any = None) -> None:
        heapq.heappush(self.heap, (time, kind, key, next(self.seq), payload))

    def pop(self) -> tuple[float, int, int, int, Any]:
        return heapq.heappop(self.heap)


@dataclass
class _Coalition:
    """Membership of the averaging game: one draw per site per period, in period order.

    Draws are made for every period up to the current one, including periods in which no
    round happened, so a site's membership in period q depends only on (seed, site, q).
    """

    p: list[float]
    start: float
    period: float
    seed: int
    members: list[bool] = field(default_factory=list)
    last_period: int = -1
    rngs: list[np.random.Generator] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rngs = [site_rng(self.seed, k, PURPOSE_COALITION) for k in range(len(self.p))]

    def at(self, t: float) -> list[int]:
        """Sites in the coalition at round time t, ascending."""
        q = math.floor((t - self.start) / self.period)
        while self.last_period < q:
            self.last_period += 1
            self.members = [rng.random() < pk for rng, pk in zip(self.rngs, self.p)]
        return [k for k, member in enumerate(self.members) if member]


def thesis_space(mean: float, queue: float, level: float, received: float, movable_queue: float) -> float:
    """M_l's space in Algorithm 4.3: min(L̄_k − queue, l_l − queue), queue = L_l + Φ_l − Ψ_l
    (``received`` is Φ_l, ``movable_queue`` m_l + Φ_l − Ψ_l: what other readings bound)."""
    return min(mean - queue, level - queue)


def _tie_ordered(ids: Iterable[int], value: Callable[[int], float]) -> list[int]:
    """Site ids by increasing ``value``, where a run of values within ``TIE`` of the run's
    first counts as equal and goes by id (the module doc's tie rule; the agents' own is
    ``tie_sorted``)."""
    ranked = sorted(ids, key=lambda i: (value(i), i))
    out: list[int] = []
    lo = 0
    while lo < len(ranked):
        anchor, hi = value(ranked[lo]), lo + 1
        while hi < len(ranked) and value(ranked[hi]) - anchor <= TIE:
            hi += 1
        out += sorted(ranked[lo:hi])
        lo = hi
    return out


def thesis_bilb(
    loads: Sequence[float],
    limits: Sequence[float],
    movable: Sequence[float],
    space_of: Callable[[float, float, float, float, float], float] = thesis_space,
) -> tuple[list[Transfer], float]:
    """Algorithm 4.3 (thesis 4.7.1) as its text reads, in site ids: the transfers and min_k(L_k + Φ_k − Ψ_k).

    The resources are renumbered M_1..M_N by increasing L (ties by site id). For k = 2..N:
    L̄_k = ((k−1)L̄_{k−1} + L_k)/k; M_k sends at most surplus_k = min(L_k − L̄_k, l_k, m_k)
    ("bounded by the average [...] and M_k's announced participation", and by m_k, what it
    can move); M_l's space (l < k) is min(L̄_k − (L_l + Φ_l − Ψ_l), l_l − L_l − Φ_l + Ψ_l),
    never below 0 (the k−1 first resources "have their load already balanced": their current
    queue is L_l + Φ_l − Ψ_l in both terms); receivers by increasing space (ties by site id),
    the i-th of them gets Φ_{l,k} = min(surplus_k/(k−i), space). The next iteration comes
    after min_k(L_k + Φ_k − Ψ_k).

    Ties, which the text leaves open: loads (and spaces) within ``TIE`` of each other are equal,
    and a surplus or amount within ``TIE`` of zero is none. The agents' offers carry a few
    latencies of drift that exact arithmetic here does not; without the tolerance that noise
    would pick which of two balanced sites comes first, and so which pieces each gets.

    ``space_of(mean, queue, level, received, movable_queue)`` is a receiver's space before the
    floor at 0: :func:`thesis_space` as the text reads; docs/results/bilb_n2.py measures others.
    """
    n = len(loads)
    by_load = _tie_ordered(range(n), lambda site: loads[site])
    L = [0.0] + [float(loads[site]) for site in by_load]  # L[1..N], the thesis's 1-based order
    lvl = [0.0] + [float(limits[site]) for site in by_load]
    m = [0.0] + [float(movable[site]) for site in by_load]
    phi = [0.0] * (n + 1)  # Φ: received so far
    psi = [0.0] * (n + 1)  # Ψ: sent so far
    transfers: list[Transfer] = []
    mean = L[1] if n else 0.0
    for k in range(2, n + 1):
        mean = ((k - 1) * mean + L[k]) / k
        surplus = min(L[k] - mean, lvl[k], m[k])
        if surplus <= TIE:
            continue
        space = {}  # by site id
        for i in range(1, k):
            queue = L[i] + phi[i] - psi[i]
            space[by_load[i - 1]] = max(0.0, space_of(mean, queue, lvl[i], phi[i], m[i] + phi[i] - psi[i]))
        place = {site: i for i, site in enumerate(by_load, start=1)}  # site id -> i of M_i
        receivers = [place[site] for site in _tie_ordered(space, space.__getitem__)]
        for pos, i in enumerate(receivers, start=1):
            amount = min(surplus / (k - pos), space[by_load[i - 1]])
            if amount <= TIE:
                continue
            transfers.append((by_load[k - 1], by_load[i - 1], amount))
            phi[i] += amount
            psi[k] += amount
            surplus -= amount
    after = min((L[i] + phi[i] - psi[i] for i in range(1, n + 1)), default=0.0)
    return transfers, after


def _movable(site: Site, t: float, cut_running: bool, starting_queued: bool) -> float:
    """m_k: what phase 1 could take from ``site`` at round time t (see ``_cut_from_end``)."""
    queued = sum(piece.size for piece in site.queue)
    run = site.running
    if run is not None and (cut_running or (starting_queued and run.start >= t - SAME_INSTANT)):
        queued += max(0.0, site.busy_until - t)
    return queued


def _start_next(site: Site, now: float, events: _Events) -> None:
    """If the processor is free, run the head of the queue (no preemption)."""
    if site.running is None and site.queue:
        piece = site.queue.pop(0)
        piece.start = now
        site.running = piece
        site.busy_until = now + piece.size
        events.push(site.busy_until, _COMPLETION, site.site_id)


def _complete(site: Site, events: _Events) -> None:
    """The running piece ends (at ``busy_until``) and the head of the queue starts then."""
    end = site.busy_until
    site.running.end = end
    site.running = None
    _start_next(site, end, events)


def _complete_at(t: float, sites: list[Site], events: _Events) -> None:
    """Completions come before a round at one instant, and one within SAME_INSTANT after it is
    at that instant (which came first is float rounding): what starts then has started at the
    round's instant (``starting``)."""
    for site in sites:
        while site.running is not None and site.busy_until <= t + SAME_INSTANT:
            _complete(site, events)


def _cut_from_end(
    site: Site,
    amount: float,
    created: list[Piece],
    t: float,
    events: _Events,
    cut_running: bool,
    starting_queued: bool = True,
) -> list[Piece]:
    """Phase 1 for one transfer: take ``amount`` from the end of the queue.

    Pieces already cut in this round are skipped (they belong to an earlier transfer of
    the same sender). The last piece needed is split: the queued part keeps its place and
    the cut part is inserted right after it, so a refused cut part falls back exactly
    where its work was. Taken pieces stay in the queue as placeholders until phase 2.
    Once the queue is used up, the unprocessed part of the running piece is cut (unless
    ``cut_running`` is false): the running piece ends earlier and the cut part heads the queue.
    """
    taken: list[Piece] = []
    remaining = amount
    i = len(site.queue) - 1
    while remaining > TIE and i >= 0:
        remaining = _take_piece(site, i, remaining, created, taken)
        i -= 1
    return taken + _cut_running(site, remaining, created, t, events, cut_running, starting_queued)


def _take_piece(site: Site, i: int, remaining: float, created: list[Piece], taken: list[Piece]) -> float:
    """Phase 1's step on queued piece ``i`` (skipped if this round already cut it): the whole
    piece when ``remaining`` covers it (within TIE), else ``remaining`` of it, the cut part
    (its last) inserted right after it. Returns what is still to take."""
    piece = site.queue[i]
    if piece.cut:
        return remaining
    if piece.size <= remaining + TIE:
        piece.cut = True
        taken.append(piece)
        return remaining - piece.size
    part = Piece(piece.job_id, remaining, piece.deadline, site.site_id, cut=True)
    piece.size -= remaining
    site.queue.insert(i + 1, part)
    created.append(part)
    taken.append(part)
    return 0.0


def _cut_running(
    site: Site,
    remaining: float,
    created: list[Piece],
    t: float,
    events: _Events,
    cut_running: bool,
    starting_queued: bool,
) -> list[Piece]:
    """The rest of a transfer once the queue is used up: off the unprocessed part of the running piece."""
    taken: list[Piece] = []
    # A running piece that started at the round's instant counts as queued (its start and
    # the round are simultaneous; which came first is float rounding), unless ``starting``
    # says such a piece has started.
    started_now = site.running is not None and site.running.start >= t - SAME_INSTANT
    cuttable = site.running is not None and (cut_running or (starting_queued and started_now))
    if cuttable and remaining > TIE and site.busy_until - t > CUT_EPS:
        run = site.running
        take = min(remaining, site.busy_until - t)
        part = Piece(run.job_id, take, run.deadline, site.site_id, cut=True)
        run.size -= take
        site.busy_until -= take
        events.push(site.busy_until, _COMPLETION, site.site_id)  # the old completion is void
        site.queue.insert(0, part)
        created.append(part)
        taken.append(part)
    return taken


def _cut_from_head(
    site: Site,
    amount: float,
    created: list[Piece],
    t: float,
    events: _Events,
    cut_running: bool,
    starting_queued: bool = True,
) -> list[Piece]:
    """Phase 1 for one transfer with ``send = "head"``: take ``amount`` from the head of the queue.

    Pieces already cut in this round are skipped. A piece needed only in part keeps its place
    and its first part; the cut part, its last, is inserted right after it, as in
    ``_cut_from_end``, so a refused part falls back where its work was. Once the queue is used
    up, the running piece is cut as ``_cut_from_end`` cuts it; one that started at the round's
    instant (with ``starting = "queued"``) is the queue's head, cut first.
    """
    taken: list[Piece] = []
    remaining = amount
    if site.running is not None and starting_queued and site.running.start >= t - SAME_INSTANT:
        # It started at the round's instant: still the queue's head (see ``_cut_from_end``).
        taken = _cut_running(site, remaining, created, t, events, cut_running, starting_queued)
        remaining -= sum(piece.size for piece in taken)
    i = 0
    while remaining > TIE and i < len(site.queue):
        remaining = _take_piece(site, i, remaining, created, taken)
        i += 1
    return taken + _cut_running(site, remaining, created, t, events, cut_running, starting_queued)


def _carry_out(
    t: float,
    sites: list[Site],
    loads: list[float],
    plan: list[Transfer],
    limits: list[float],
    events: _Events,
    created: list[Piece],
    cut_running: bool = True,
    starting_queued: bool = True,
    head: bool = False,
) -> None:
    """Phases 1 and 2 of a round: cut what the plan says, then let receivers judge."""
    # Phase 1: transfers in plan order (a cut touches its sender's queue only).
    cuts: list[tuple[Piece, int, int]] = []  # (piece, sender, receiver), in plan then cut order
    cut = _cut_from_head if head else _cut_from_end
    for k, receiver, amount in plan:
        cuts.extend(
            (piece, k, receiver) for piece in cut(sites[k], amount, created, t, events, cut_running, starting_queued)
        )

    # Phase 2: least loaded first. Both plans only send to less loaded sites (earlier in
    # this order), so a receiver's own outgoing pieces are settled before it judges what it
    # receives, and its Q below is final apart from what it accepts now.
    for l in sorted(range(len(sites)), key=lambda i: (loads[i], i)):
        receiver = sites[l]
        for piece, k, dest in cuts:  # already in plan, then cut, order
            if dest != l:
                continue
            q = receiver.finish_time(t)
            x = piece.size
            if q + x <= piece.deadline + ACCEPT_EPS and q + x - t <= limits[l] + ACCEPT_EPS:
                sites[k].queue.remove(piece)
                piece.site = l
                receiver.queue.append(piece)
                _start_next(receiver, t, events)
            # accepted or refused (then an ordinary queued piece again, where it was)
            piece.cut = False


def _check_args(  # noqa: C901
    jobs: np.ndarray,
    n_sites: int,
    protocol: str,
    limits: Sequence[float] | None,
    p: Sequence[float] | None,
    start: float,
    min_gap: float,
    period: float,
    horizon: float,
) -> tuple[list[float], list[float]]:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    if int(n_sites) != n_sites or n_sites < 1:
        raise ValueError(f"n_sites must be a positive integer, got {n_sites!r}")
    if not min_gap > 0:
        raise ValueError(f"min_gap must be > 0, got {min_gap!r}")
    if not period > 0:
        raise ValueError(f"period must be > 0, got {period!r}")
    if not math.isfinite(start):
        raise ValueError(f"start must be finite, got {start!r}")
    if math.isnan(horizon):
        raise ValueError("horizon must be a number, got NaN")
    if limits is None:
        lim = [math.inf] * n_sites
    else:
        lim = [float(x) for x in limits]
        if len(lim) != n_sites:
            raise ValueError(f"limits: {n_sites} sites but {len(lim)} participation levels")
        bad = [x for x in lim if not x >= 0]
        if bad:
            raise ValueError(f"limits must be >= 0 (inf allowed), got {bad[0]!r}")
    if p is None:
        prob = [1.0] * n_sites
    else:
        prob = [float(x) for x in p]
        if len(prob) != n_sites:
            raise ValueError(f"p: {n_sites} sites but {len(prob)} probabilities")
        bad = [x for x in prob if not 0.0 <= x <= 1.0]
        if bad:
            raise ValueError(f"p must lie in [0, 1], got {bad[0]!r}")
    for name in ("job_id", "release", "size", "submit_site"):
        if jobs.dtype.names is None or name not in jobs.dtype.names:
            raise ValueError(f"jobs must be a structured array with a {name!r} field (see model.jobs.JOB_DTYPE)")
    if len(jobs):
        if not np.all(np.isfinite(jobs["release"])):
            raise ValueError("jobs: every release must be finite")
        if not np.all(np.isfinite(jobs["size"]) & (jobs["size"] > 0)):
            raise ValueError("jobs: every size must be finite and > 0")
        if jobs["submit_site"].min() < 0 or jobs["submit_site"].max() >= n_sites:
            raise ValueError(f"jobs: submit_site must lie in [0, {n_sites})")
        if len(np.unique(jobs["job_id"])) != len(jobs):
            raise ValueError("jobs: job ids must be unique")
    return lim, prob


def _check_readings(starting: str, round_timing: str, round_order: str, send: str, discrete: bool) -> None:
    if starting not in ("queued", "running"):
        raise ValueError(f"starting must be 'queued' or 'running', got {starting!r}")
    if round_timing not in ("plan", "unbounded"):
        raise ValueError(f"round_timing must be 'plan' or 'unbounded', got {round_timing!r}")
    if round_order not in ("after_releases", "before_releases"):
        raise ValueError(f"round_order must be 'after_releases' or 'before_releases', got {round_order!r}")
    if send not in ("tail", "head"):
        raise ValueError(f"send must be 'tail' or 'head', got {send!r}")
    if round_order == "before_releases" and not discrete:
        raise ValueError("round_order 'before_releases' needs discrete rounds")


def _round_plan(
    t: float,
    sites: list[Site],
    loads: list[float],
    limits: list[float],
    coalition: "_Coalition | None",
    cut_running: bool,
    starting: str,
    round_timing: str,
    min_gap: float,
) -> tuple[list[tuple[int, int, float]], float]:
    """A round's plan and the next round's time: BILB's (Algorithm 4.3, each surplus capped at
    what its sender can move) or, with a ``coalition``, the averaging game's among its members."""
    if coalition is None:
        movable = [_movable(site, t, cut_running, starting == "queued") for site in sites]
        plan, after = thesis_bilb(loads, limits, movable)
        if round_timing == "unbounded":
            after = thesis_bilb(loads, [math.inf] * len(sites), movable)[1]
        return plan, max(t + after, t + min_gap)
    members = coalition.at(t)
    plan = []
    if len(members) >= 2:
        sub = averaging_by_the_text([loads[k] for k in members])
        plan = [(members[i], members[j], amount) for i, j, amount in sub]
    mean = sum(loads[k] for k in members) / len(members) if members else 0.0
    return plan, t + max(min_gap, mean)


def reference_run(
    jobs: np.ndarray,
    n_sites: int,
    *,
    protocol: str,
    limits: Sequence[float] | None = None,
    p: Sequence[float] | None = None,
    start: float = 0.0,
    min_gap: float = 1.0,
    period: float = 1000.0,
    seed: int = 0,
    horizon: float = math.inf,
    on_round: RoundHook | None = None,
    cut_running: bool = True,
    round_timing: str = "plan",
    discrete: bool = False,
    starting: str = "queued",
    round_order: str = "after_releases",
    send: str = "tail",
    round_at_releases: bool = False,
) -> dict[str, np.ndarray]:
    """Run divisible-load balancing centrally; return every piece that existed.

    ``protocol`` is ``"bilb"`` (Algorithm 4.3 with participation levels ``limits``,
    default unbounded, each surplus capped at what its sender can move; ``p`` is ignored)
    or ``"averaging_game"`` (Algorithm 4.1 among the sites that joined this period's
    coalition, each with probability ``p[k]``, default 1; ``limits`` is ignored, receivers
    are unbounded). Rounds start at ``start``; BILB's next
    round is at ``t + max(min_k(L_k + Φ_k − Ψ_k), min_gap)``, the averaging game's at
    ``t + max(min_gap, mean load of the members)``. Rounds stop once every job has arrived
    and every queue is empty; events at or after ``horizon`` are not handled.

    Returns columns ``job_id``, ``exec_site``, ``size``, ``start``, ``end``, ``deadline``,
    one entry per piece, sorted by (job_id, exec_site, start). A piece that never started
    (horizon) has ``start`` NaN and ``exec_site`` the site that held it; one that did not
    finish has ``end`` NaN. Jobs that never arrived have no piece.

    ``cut_running = False`` never cuts the running piece (a strict reading of "no
    preemption"; see brokers/bilb/divisible.py). ``round_timing = "unbounded"`` (BILB) times
    the next round from the plan with every level unbounded. ``discrete`` runs rounds at whole
    time units only (the next one at or after the time above), after that unit's arrivals.
    ``starting = "running"`` never cuts (with ``cut_running`` false) a piece that started at
    the round's instant. ``round_order = "before_releases"`` (with ``discrete``) runs a
    round before its time unit's arrivals. ``send = "head"`` cuts what a sender owes from
    the front of its work (``_cut_from_head``) instead of its end.
    ``round_at_releases`` also runs a round at every release (after that instant's releases),
    in place of the one due later: a diagnostic reading of docs/results/bilb_n2.py, which no
    agent runs. ``on_round``, if given, is called after each round as
    ``on_round(t, loads_before, plan, queue_lengths_after)`` (see :data:`RoundHook`).
    """
    limits_, p_ = _check_args(jobs, n_sites, protocol, limits, p, start, min_gap, period, horizon)
    _check_readings(starting, round_timing, round_order, send, discrete)
    round_kind = _DISCRETE_ROUND if discrete and round_order == "after_releases" else _ROUND
    start, min_gap, period = float(start), float(min_gap), float(period)
    if protocol == "averaging_game":
        limits_ = [math.inf] * n_sites  # receivers of Algorithm 4.1 are unbounded
    coalition = _Coalition(p_, start, period, seed) if protocol == "averaging_game" else None

    sites = [Site(k) for k in range(n_sites)]
    created: list[Piece] = []
    events = _Events()
    for row in jobs:
        events.push(float(row["release"]), _ARRIVAL, int(row["job_id"]), row)
    not_arrived = len(jobs)
    due = math.ceil(start) if discrete else start  # the next round's time
    events.push(due, round_kind, 0)

    while events.heap and events.heap[0][0] < horizon:
        t, kind, key, _, payload = events.pop()
        if kind == _COMPLETION:
            site = sites[key]
            if site.running is None or t != site.busy_until:
                continue  # the running piece was cut, or completed with a round (below)
            _complete(site, events)
        elif kind == _ARRIVAL and not discrete and 0 < due - t <= SAME_INSTANT:
            # A release within SAME_INSTANT before a round is at the round's instant (which came
            # first is float rounding), and so comes after it.
            events.push(due, _ARRIVAL, key, payload)
        elif kind == _ARRIVAL:
            site = sites[int(payload["submit_site"])]
            size = float(payload["size"])
            piece = Piece(key, size, site.finish_time(t) + size, site.site_id)
            created.append(piece)
            site.queue.append(piece)
            _start_next(site, t, events)
            not_arrived -= 1
            if round_at_releases and due > t:
                due = t
                events.push(t, round_kind, 0)
        else:
            if round_at_releases and t != due:
                continue  # replaced by a round at a release
            _complete_at(t, sites, events)
            loads = [site.finish_time(t) - t for site in sites]
            plan, next_t = _round_plan(
                t, sites, loads, limits_, coalition, cut_running, starting, round_timing, min_gap
            )
            _carry_out(
                t, sites, loads, plan, limits_, events, created, cut_running, starting == "queued", send == "head"
            )
            if on_round is not None:
                on_round(t, loads, plan, [site.finish_time(t) - t for site in sites])
            # Rounds alone never keep the run going: with nothing held and nothing left
            # to arrive, no later round could move anything.
            if discrete:
                next_t = math.ceil(next_t - SAME_INSTANT)
            if not_arrived > 0 or any(site.queue or site.running is not None for site in sites):
                due = next_t
                events.push(next_t, round_kind, 0)

    out = {
        "job_id": np.array([piece.job_id for piece in created], dtype=np.int64),
        "exec_site": np.array([piece.site for piece in created], dtype=np.int64),
        "size": np.array([piece.size for piece in created], dtype=np.float64),
        "start": np.array([piece.start for piece in created], dtype=np.float64),
        "end": np.array([piece.end for piece in created], dtype=np.float64),
        "deadline": np.array([piece.deadline for piece in created], dtype=np.float64),
    }
    order = np.lexsort((out["start"], out["exec_site"], out["job_id"]))
    return {name: column[order] for name, column in out.items()}


def job_ends(pieces: dict[str, np.ndarray]) -> dict[int, float]:
    """When each job completes: its last piece's end (NaN if a piece did not finish)."""
    return {int(j): float(np.max(pieces["end"][pieces["job_id"] == j])) for j in np.unique(pieces["job_id"])}
