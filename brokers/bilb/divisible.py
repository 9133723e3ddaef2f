"""Divisible load balancing between organizations (thesis ch. 4), run by every site over messages.

Two protocols share this agent: ``averaging_game`` (Algorithm 4.1 run by a coalition that
each organization joins per period with probability p_k, learned by Algorithm 4.2;
``brokers/averaging_game/agent.py``) and ``bilb`` (Algorithm 4.3, each organization
declaring a participation level l_k, learned by section 4.7.3; ``brokers/bilb/agent.py``).
Sites have one processor and an FCFS queue; jobs are divisible.

A round, as every site runs it (no site ever reads another's state):
  1. At the round time t every site broadcasts an ``offer``: its queue length L_k (time
     to finish what it holds), its strategy (l_k, or 1/0 for in/out of the coalition) and
     m_k, the part of L_k it could cut in step 3 (``DivisibleAgent._movable``).
  2. A site that holds all N offers computes the plan with the pure function
     (``bilb_plan`` or ``averaging_plan``): every site gets the same offers, so every
     site computes the same plan and the same next round time. Each site computes it
     itself (nothing is shared between the sites of a process: the cost is each site's).
  3. A sender cuts what it owes each receiver off the tail of its queue (``send = "head"``:
     its head, ``_cut_head``), splitting a piece where needed, and sends each piece as a
     ``fragment`` while it keeps it queued and unstartable (``OFFERED``): "the sender keeps
     what is refused". The last piece of a transfer is marked; a transfer it could cut
     nothing for gets an empty marker.
  4. A receiver waits for every transfer the plan sends it, then judges the pieces in the
     plan's order (the thesis's iteration order: what an earlier, less loaded iteration
     sends is queued first, as its deadlines are earlier). It accepts a piece only if its
     queue, with the piece added, stays within its declared level and the piece still
     finishes by the latest finish time announced to the job's submitter; it answers
     ``grant`` (with the piece's finish time) or ``refuse``. A site that is itself waiting
     for answers on its own pieces of the round judges after they come (the reference
     removes a sender's pieces before it receives: plans only send to less loaded sites,
     so these waits form chains that end at the least loaded site).
  5. On ``grant`` the sender drops its copy; on ``refuse`` its copy runs where it was.

Over a network topology (``[network] topology``, thesis ch. 4's coalition read as the
neighborhood) a site offers to its neighbors only and computes the plan over its closed
neighborhood; neighboring plans overlap, as in diffusion load balancing. Rounds then come on
a common clock, every ``min_gap`` (at least three latencies), since the plan's next round
time is a neighborhood's, not the grid's; how a receiver learns that its transfers are in
is ``DivisibleAgent._local_round``'s docstring. On the full graph nothing of this applies.

``exchange = "gossip"``: pairwise rounds instead, on the same clock. Each site draws one
neighbor from its own stream and sends it its offer (``pair``); the drawn site answers with
its own. A site's partners for the round are the neighbor it drew and every site that drew
it (a symmetric relation, so both ends of a pair see it); one latency after the round time
every ``pair`` to it is in (messages come before timers at one instant), and once its drawn
neighbor's answer is in too it plans over itself and its partners as a neighborhood round
does. About three offers a site and round whatever its degree, and rounds at least four
latencies apart.

Every local job is announced, at submission, the latest finish time max(L_k, r) + p:
FCFS never lets a later piece overtake it, and the receivers' test above keeps what it
sends away on time. ``emulator.checks.check_guarantees`` verifies it at the end.

Choices the thesis leaves open (documented in ``docs/results/bilb.md`` too):
  * The next round is at the plan's time (BILB: min_k(L_k + Φ_k - Ψ_k); averaging: at
    L̄) but at least ``min_gap`` later (the thesis simulator's time unit; otherwise an
    idle site would make the round repeat at once) and at least (2N + 3) × ``max_latency``
    later: a round is settled by then (offers, pieces and answers take one latency each,
    and each site of a chain of senders two more), so rounds never overlap.
  * A sender cuts the unprocessed part of its running piece too, once its queue is used
    up (divisible load: the piece just ends earlier, nothing is stopped and resumed), unless
    ``cut_running = false`` reads "no preemption" strictly.
  * ``round_timing``, ``discrete`` (``_round_at``), ``round_order``, ``starting``, ``send``
    and ``local_from`` are the readings docs/results/bilb.md measures (``brokers/bilb/params.py``
    says each).
  * A sender never cuts a piece that arrived after the round time (it was not in the
    offer), or the part of its queue it would start within ``(3 + 2 × chain depth) ×
    max_latency``: the answer may take that long, and an offered piece at the head of the
    queue holds the processor idle.
  * What a site knows of its jobs' finish times, and when strategies are updated: see
    ``brokers/bilb/ledger.py``.
  * Instants and ties, so that at negligible latency the agents equal the reference
    (``brokers/bilb/reference.py`` says the same rules): a time within ``TIE`` of the round
    time is at the round's instant (a piece that starts there counts as ``starting`` says; a
    local job released there, in continuous time, waits until this site's part of the round
    is settled, as the reference's round comes before its instant's releases); plans take
    loads and spaces within ``TIE`` as equal (``bilb_plan``); a cut within ``TIE`` of a piece's
    end takes it whole unless it starts before the answers come, and one with less left
    stops. A head cut that takes a piece that started at the round's instant leaves a sliver
    of a few latencies where the reference leaves an empty piece.
"""

from __future__ import annotations

import math
from typing import Any

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.bilb.algorithm import CUT_EPS as EPS
from gridemu.brokers.bilb.algorithm import SAME_INSTANT, TIE, on_tie_grid
from gridemu.brokers.bilb.ledger import PeriodLedger
from gridemu.brokers.bilb.params import DivisibleParams
from gridemu.model.errors import InvariantError
from gridemu.model.jobs import STATE_CODE
from gridemu.model.messages import message
from gridemu.model.rng import PURPOSE_GOSSIP, site_rng

#: A site's offer for a round (thesis Alg. 4.3): its load L_k, its level (l_k, or 1/0 in/out of the coalition)
#: and its movable load m_k (what of L_k it could send).
OFFER = message("offer", load=float, level=float, movable=float)
#: The receiver takes an offered piece (named by its slot at the sender) and will finish it by ``finish``.
GRANT = message("grant", slot=int, finish=float)
#: The receiver refuses an offered piece: it stays where it was.
REFUSE = message("refuse", slot=int)
#: Gossip: a site's offer to the neighbor it drew this round, which answers with its own ``offer``.
PAIR = message("pair", load=float, level=float, movable=float)
#: To a job's submitter (``owner``; over a topology hop by hop), from a site that had granted
#: it a piece of the job and has now had it granted onward: the piece now finishes by
#: ``finish`` (which may be later than the finish granted before: the new receiver is held to
#: the job's deadline only).
MOVED = message("moved", job_id=int, owner=int, finish=float)
#: Pieces travel as the kernel's ``fragment`` kind (job, ``slot`` at the sender, ``tag``).
MESSAGES = (OFFER, GRANT, REFUSE, PAIR, MOVED)

QUEUED, RUNNING = STATE_CODE["queued"], STATE_CODE["running"]  # SiteView.state codes (an offered piece is neither)
#: ``tag`` of the last piece (or the empty marker, a fragment with no job) of a transfer.
LAST = 1.0
#: How long after a whole time unit a ``discrete`` round runs (``DivisibleAgent._round_at``).
AFTER_ARRIVALS = SAME_INSTANT / 2
#: Relative slack of a receiver's tests against float rounding.
TOL = 1e-9

Plan = list[tuple[int, int, float]] | tuple[tuple[int, int, float], ...]


def chain_depth(plan: Plan) -> int:
    """Longest chain of senders k → l → ... in a plan (0 when nobody sends).

    A site that sends judges its incoming pieces only after its own were answered, so an
    answer may wait for a whole chain of such sites.
    """
    targets: dict[int, list[int]] = {}
    for k, l, _ in plan:
        targets.setdefault(k, []).append(l)
    depth: dict[int, int] = {}

    def walk(k: int) -> int:
        if k not in targets:
            return 0
        if k not in depth:
            depth[k] = 1 + max(walk(l) for l in targets[k])
        return depth[k]

    return max((walk(k) for k in targets), default=0)


class DivisibleAgent(PeriodLedger, Agent):
    """Rounds of offers, a common plan, pieces offered and granted or refused (module doc)."""

    name = "divisible"
    intercepts_arrivals = True
    #: Whether the plan reads m_k; if not, offers send L_k in its place and skip the queue walk.
    plans_movable = False
    record_columns = (
        "time",
        "site",
        "period",
        "level",
        "member",
        "ratio",
        "flow",
        "flow_local",
        "rounds",
        "work_sent",
        "work_received",
        "refused",
    )

    def __init__(self, site, grid: GridInfo, params: DivisibleParams):
        super().__init__(site, grid, params)
        self.period = params.period
        self.start = params.start
        nb = grid.neighbors
        #: Whose offers a round's plan waits for: every site on the full graph, else the closed
        #: neighborhood (itself and its neighbors), in id order.
        self.members = range(grid.n_sites) if nb is None else sorted((site.site_id, *nb[site.site_id]))
        self.gossip = params.exchange == "gossip"
        self.rng_gossip = site_rng(grid.seed, site.site_id, PURPOSE_GOSSIP) if self.gossip else None
        self.everywhere = nb is None and not self.gossip  # every site computes the same plan (the thesis's setting)
        # Full graph: at least the time a round takes with chains of senders (module doc).
        # Over a topology rounds come on a common clock and nobody waits for a chain: 3
        # latencies; with gossip one more, as the partners' offers take two.
        latencies = 2 * grid.n_sites + 3 if self.everywhere else 4 if self.gossip else 3
        self.gap = max(params.min_gap, latencies * grid.max_latency)
        #: Half-width of "the round's instant" (``starting``, releases at a round): a piece's start
        #: or a round's time drifts from the latency-free reference's by up to a round's latencies,
        #: far below TIE where latency is negligible (where the two must agree); at real latencies
        #: the window stays TIE, so nothing waits for it.
        self.instant = TIE
        self.pick = -1  # gossip: the neighbor drawn this round, until its answer comes
        self.partners_in = False  # gossip: every offer of a site that drew this one is in
        self.learn = params.learn
        self.eta = params.eta
        self.window = params.window
        self.cut_running = params.cut_running
        self.round_timing = params.round_timing
        self.discrete = params.discrete
        self.local_from = params.local_from
        self.starting_queued = params.starting == "queued"
        self.before_releases = params.round_order == "before_releases"
        self.send_head = params.send == "head"
        self.round_open = False  # this site's part of the round is not settled yet (releases at its instant wait)
        self.held: list[int] = []  # local jobs released at a round's instant (before_releases: unit), not queued yet
        self.speed = site.speed
        self.round_time = math.nan
        self.due = math.inf  # when the next round is set to run
        self.offers: dict[int, tuple[float, float, float]] = {}  # site -> (L_k, level, m_k)
        self.waiting: set[int] = set()  # own pieces offered this round, not answered yet
        self.expect: list[int] | None = None  # senders of the round's transfers to this site, in plan order
        self.inbox: dict[int, list[tuple]] = {}  # pieces received this round, by sender
        self.complete: set[int] = set()  # senders whose transfer has fully arrived
        self.queued_at: dict[int, float] = {}  # slot -> when it was queued here (slots past the local jobs)
        # Over a topology, the neighbor on a shortest path to a submitter that is not a neighbor
        # (``moved`` goes hop by hop), by submitter: routing from the network's shape.
        self.hop: dict[int, int] = {}
        # The finish this site granted for a received piece (slot -> time): a piece granted
        # onward that will finish later is the only news its submitter lacks.
        self.promised: dict[int, float] = {}
        self.init_ledger(site)

    # ---------------------------------------------------------------- strategy (subclasses)
    def level(self) -> float:
        """What the offer declares besides the load: l_k, or 1/0 for in/out of the coalition."""
        raise NotImplementedError

    def strategy(self) -> float:
        """The learned variable: l_k, or p_k (what timeseries.parquet records as ``level``)."""
        return self.level()

    def accept_limit(self) -> float:
        """Longest queue (time units) this site accepts to reach with foreign pieces."""
        return math.inf

    def plan(self, loads: list[float], levels: list[float], movable: list[float]) -> tuple[Plan, float]:
        """The round's transfers (k, l, amount) and the delay to the next round (before ``min_gap``)."""
        raise NotImplementedError

    def plan_order(self, loads: dict[int, float]) -> list[int]:
        """Site ids in the order the plan sends down (a site sends only to sites before it)."""
        return sorted(loads, key=lambda k: (loads[k], k))

    def adjust(self, ratio: float) -> None:
        """Update the strategy from a period's bounded flow ratio R_k."""

    def decide(self) -> None:
        """Choose the strategy for the period that begins."""

    # ---------------------------------------------------------------- hooks
    def on_start(self, now: float) -> None:
        if self.grid.n_sites > 1:
            self._next_round(self._round_at(self.start))

    def on_arrival(self, now: float, slot: int) -> bool:
        at_round = not self.discrete and abs(now - (self.round_time if self.round_open else self.due)) <= self.instant
        if at_round or (self.round_open and self.before_releases):
            # A round comes before the releases of its instant (``before_releases``: of its
            # time unit), as in the reference; here it takes a few latencies, so they wait
            # (unannounced, unqueued) until this site's part is settled: announced after the
            # round's cuts and grants, queued behind what it granted, never cut by it. In
            # continuous time the instant is ``instant`` wide: round times drift from the
            # reference's by latencies, and a release just before a drifted round is at it.
            self.held.append(slot)
            return True
        site = self.site
        site.announce(slot, site.load(now) + site.size(slot) / self.speed)
        return False

    def on_complete(self, now: float, slot: int) -> None:
        j = self.local_job(slot)
        if j >= 0:
            self.heard(j, now)

    def on_timer(self, now: float, tag: Any) -> None:
        if tag == "partners":
            self.partners_in = True
            self._pair_round(now)
            return
        self.settle_periods(now)
        self.round_time = now
        self.round_open = True
        load = self.site.load(now) - now
        level = self.level()
        movable = self._movable(now) if self.plans_movable else load
        if not self.everywhere:  # a common clock (module doc)
            self._next_round(self._round_at(now + self.gap))
        if self.gossip:
            self.offers = {self.site.site_id: (load, level, movable)}
            self.pick = self.random_neighbor(self.rng_gossip)
            self.partners_in = False
            self.site.send(now, self.pick, "pair", load=load, level=level, movable=movable)
            # Offers leave at the round time, so every one to this site is in one latency later
            # (messages come before timers at one instant).
            self.site.set_timer(now + self.grid.max_latency, "partners")
            return
        self.broadcast(now, "offer", load=load, level=level, movable=movable)
        self._offer(now, self.site.site_id, (load, level, movable))

    def on_offer(self, now: float, msg) -> None:
        if self.gossip:  # the drawn neighbor's answer
            self.offers[int(msg.src)] = (float(msg.load), float(msg.level), float(msg.movable))
            self.pick = -1
            self._pair_round(now)
            return
        self._offer(now, int(msg.src), (float(msg.load), float(msg.level), float(msg.movable)))

    def on_pair(self, now: float, msg) -> None:
        """Gossip: a neighbor drew this site; both are partners this round. Answer with the own offer."""
        self.offers[int(msg.src)] = (float(msg.load), float(msg.level), float(msg.movable))
        load, level, movable = self.offers[self.site.site_id]
        self.site.send(now, int(msg.src), "offer", load=load, level=level, movable=movable)

    def _pair_round(self, now: float) -> None:
        """Gossip: once the drawn neighbor answered and every site that drew this one is in,
        plan over the partners (partnership is symmetric: k drew l or l drew k)."""
        if self.partners_in and self.pick < 0:
            self.partners_in = False
            self._round(now, sorted(self.offers))

    def on_fragment(self, now: float, msg) -> None:
        src = int(msg.src)
        if msg.job_id >= 0:  # not an empty marker
            self.inbox.setdefault(src, []).append(msg)
        if msg.tag == LAST:
            self.complete.add(src)
        self._settle(now)

    def on_grant(self, now: float, msg) -> None:
        slot = int(msg.slot)
        site = self.site
        site.withdraw(slot)
        j = self.local_job(slot)
        if j >= 0:
            self.heard(j, float(msg.finish))
        elif float(msg.finish) > (promised := self.promised.get(slot, -math.inf)) + TOL * max(1.0, abs(promised)):
            # Another organization's piece, granted onward to finish later than this site had
            # promised: its submitter counts the new finish (hop by hop over a topology, _toward).
            owner = site.submit_site(slot)
            site.send(
                now, self._toward(owner), "moved", job_id=site.job_id(slot), owner=owner, finish=float(msg.finish)
            )
        self._answered(now, slot)

    def on_moved(self, now: float, msg) -> None:
        owner = int(msg.owner)
        if owner == self.site.site_id:
            self.moved(int(msg.job_id), float(msg.finish))
        else:  # a hop on the way to a submitter that is not a neighbor of the sender
            self.site.send(now, self._toward(owner), "moved", job_id=msg.job_id, owner=owner, finish=msg.finish)

    def _toward(self, dst: int) -> int:
        """Where a message bound for ``dst`` goes from here (Agent.next_hop, cached by submitter)."""
        if dst not in self.hop:
            self.hop[dst] = self.next_hop(dst)
        return self.hop[dst]

    def on_refuse(self, now: float, msg) -> None:
        slot = int(msg.slot)
        self.site.keep(slot, now)
        self.counts[3] += 1
        self._answered(now, slot)

    def _answered(self, now: float, slot: int) -> None:
        self.waiting.discard(slot)
        self._settle(now)

    def send_bound(self) -> float:
        # Offers go out on timers; pieces, grants and refusals answer messages.
        return self.site.next_agent_event_time()

    # ---------------------------------------------------------------- rounds
    def _offer(self, now: float, src: int, offer: tuple[float, float, float]) -> None:
        if src in self.offers or self.expect is not None:
            raise InvariantError(
                f"site {self.site.name}: an offer from site {src} came "
                f"before the round of t={self.round_time} was settled"
            )
        self.offers[src] = offer
        if len(self.offers) == len(self.members):
            self._round(now, self.members)

    def _round(self, now: float, members: "range | list[int]") -> None:
        """Plan over ``members`` (site ids, ascending) from their offers; carry out this site's part."""
        offers = self.offers
        self.offers = {}
        if not self.everywhere:
            # Neighborhoods overlap: any two neighbors must be ordered alike in each (on_tie_grid).
            offers = {k: (on_tie_grid(load), level, m) for k, (load, level, m) in offers.items()}
        loads, levels, movable = ([offers[k][i] for k in members] for i in range(3))
        plan, delay = self.plan(loads, levels, movable)
        if not self.everywhere:
            plan = [(members[k], members[l], amount) for k, l, amount in plan]
        self.counts[0] += 1
        me = self.site.site_id
        mine = [(l, amount) for k, l, amount in plan if k == me]
        if self.everywhere:
            self._next_round(self._round_at(self.round_time + max(delay, self.gap)))
            if mine:
                self._cut(now, mine, now + (3 + 2 * chain_depth(plan)) * self.grid.max_latency)
            self.expect = [k for k, l, _ in plan if l == me]
        else:
            self._local_round(now, members, offers, mine)
        self._settle(now)

    def _local_round(
        self,
        now: float,
        members: list[int],
        offers: dict[int, tuple[float, float, float]],
        mine: list[tuple[int, float]],
    ) -> None:
        """A round over a topology (or with gossip partners): this site's part of its own neighborhood's plan.

        Neighboring plans differ, so a receiver cannot know who sends to it; but every plan
        sends only down the order of (load, id), which every site reads alike from the
        offers. So each site ends a transfer (pieces or an empty marker) to every neighbor
        below it, and waits for one from every neighbor above it, judging their pieces in
        that order (the less loaded sender first). It judges without waiting for its own
        pieces' answers: a chain of senders could be as long as the grid, so the queue a
        piece is judged against still holds what this site offered (a receiver may refuse
        what it would have had room for; every guarantee holds, as the queue only shrinks).
        """
        rank = {k: i for i, k in enumerate(self.plan_order({k: offer[0] for k, offer in offers.items()}))}
        me = self.site.site_id
        if mine:
            self._cut(now, mine, now + 3 * self.grid.max_latency)
        sent_to = {l for l, _ in mine}
        for l in members:
            if rank[l] < rank[me] and l not in sent_to:
                self.site.send(now, l, "fragment", slot=-1, tag=LAST)
        self.expect = sorted((k for k in members if rank[k] > rank[me]), key=rank.__getitem__)

    def _next_round(self, t: float) -> None:
        self.due = t
        self.site.set_timer(t, "round")

    def _round_at(self, t: float) -> float:
        """When a round due at ``t`` runs: at ``t``, or with ``discrete`` at the first whole time
        unit from ``t`` on, just after that unit's arrivals (the kernel runs timers before local
        arrivals at one instant, so the round waits AFTER_ARRIVALS, far below SAME_INSTANT:
        for every rule the round is still at that instant; ``starting`` says whether a job
        that started there counts as queued or running). With ``round_order =
        "before_releases"`` it runs at the unit itself, before that unit's releases, which come
        after its offers and are never cut (``_fresh``)."""
        if not self.discrete:
            return t
        unit = math.ceil(t - SAME_INSTANT)
        return unit if self.before_releases else unit + AFTER_ARRIVALS

    def _settle(self, now: float) -> None:
        """Judge the round's pieces once every transfer is in (and, on the full graph, the own
        pieces are answered)."""
        if self.expect is None or (self.everywhere and self.waiting) or len(self.complete) < len(self.expect):
            return
        for k in self.expect:
            for msg in self.inbox.get(k, ()):
                self._judge(now, msg)
        self.expect, self.inbox, self.complete = None, {}, set()
        if self.round_open:
            self.round_open = False
            site = self.site
            for slot in self.held:
                site.announce(slot, site.load(now) + site.size(slot) / self.speed)
                site.enqueue(slot, now)
            self.held = []

    def _cuttable(self) -> list[int]:
        """The slots a cut may reach, in queue order: the running ones it may shorten, then the queue."""
        site = self.site
        # A piece that started at the round's instant is still queued (``starting = "queued"``):
        # before or after the round time is float rounding (a BILB round comes when the least
        # loaded queue empties). ``starting = "running"`` says it has started; the reference agrees.
        running = [
            x
            for x in site.running_slots()
            if self.cut_running or (self.starting_queued and site.start_time(x) >= self.round_time - self.instant)
        ]
        return running + site.queue_order()

    def _movable(self, now: float) -> float:
        """m_k, what the offer says this site could send: the work ``_cut`` may still take.

        The cut comes once the offers are in and leaves alone what would start within
        (3 + 2 × chain depth) latencies; the offer cannot know the plan's chains, so it counts
        nothing that starts within 2 × members + 3 latencies (a round's longest). A queued
        piece that starts by then is pinned whole unless running work may be cut. A sender that
        cut less than it planned would keep a longer queue than the plan assumed, and its
        own receivers' pieces would then overflow its level and be refused."""
        site, speed = self.site, self.speed
        earliest = now + (2 * len(self.members) + 3) * self.grid.max_latency
        end, total = site.load(now), 0.0
        for slot in reversed(self._cuttable()):
            state = site.state(slot)
            size = site.end_time(slot) - now if state == RUNNING else site.size(slot) / speed
            begin = end - size
            if self._pinned(state, begin, earliest):
                break  # it will have started by then, and stays whole (so does all before it)
            if state in (QUEUED, RUNNING) and not self._fresh(slot):
                total += max(0.0, end - max(begin, earliest))
            end = begin
        return total

    def _pinned(self, state: int, begin: float, earliest: float) -> bool:
        """Whether a queued piece that would begin at ``begin`` stays whole: it starts before the
        answers can come (``earliest``) and running work is not cut, unless it starts at the
        round's instant (within ``instant``, as a piece that started just before the round in
        ``_cuttable``) and ``starting = "queued"`` lets such a piece be cut. Its begin is the end
        of what runs, which the latency-free reference has at the round time exactly where this
        site's clock says a few latencies later."""
        if state != QUEUED or begin >= earliest or self.cut_running:
            return False
        return not (self.starting_queued and begin <= self.round_time + self.instant)

    def _cut(self, now: float, transfers: list[tuple[int, float]], earliest: float) -> None:
        """Offer pieces off the tail of the queue: ``amount`` (time units) to each receiver in turn.

        Nothing that would start before ``earliest`` is cut (see the module doc).
        """
        if self.send_head:
            self._cut_head(now, transfers, earliest)
            return
        site, speed = self.site, self.speed
        queue = self._cuttable()
        i = len(queue) - 1
        end = site.load(now)  # when the piece queue[i] ends
        for dst, amount in transfers:
            pieces = []
            while amount > TIE and i >= 0:
                slot = queue[i]
                state = site.state(slot)
                size = site.end_time(slot) - now if state == RUNNING else site.size(slot) / speed
                begin = end - size
                if state not in (QUEUED, RUNNING) or self._fresh(slot):
                    end, i = begin, i - 1
                    continue
                room = end - max(begin, earliest)
                if room <= EPS or self._pinned(state, begin, earliest):
                    i = -1
                    break
                take = min(amount, room)
                if state == QUEUED and size <= take + TIE and begin >= earliest:
                    piece = slot
                    end, i = begin, i - 1
                    amount -= size
                else:
                    piece = self._split(slot, take, now)
                    end -= take
                    amount -= take
                pieces.append(piece)
            self._offer_pieces(now, dst, pieces)

    def _cut_head(self, now: float, transfers: list[tuple[int, float]], earliest: float) -> None:
        """``send = "head"``: offer pieces off the head of the queue, what would start first at or
        after ``earliest`` (a piece that started at the round's instant first, where it may be cut),
        and once the queue is used up the running piece's unprocessed part (as ``send = "tail"``
        does). Offered pieces keep their place until answered, so every slot's
        stretch of time stays where it was; a split takes the last part of the stretch still free."""
        site, speed = self.site, self.speed
        queue = self._cuttable()
        ends, begins, end = [0.0] * len(queue), [0.0] * len(queue), site.load(now)
        for i in range(len(queue) - 1, -1, -1):
            slot = queue[i]
            ends[i] = end
            end -= site.end_time(slot) - now if site.state(slot) == RUNNING else site.size(slot) / speed
            begins[i] = end if site.state(slot) == QUEUED else site.start_time(slot)
        running = range(sum(site.state(slot) == RUNNING for slot in queue))  # _cuttable puts them first
        queued = range(len(running), len(queue))
        # A piece that starts at the round's instant, before or after the round time (float
        # rounding, latency drift; see ``_cuttable`` and ``_pinned``), is queued work with
        # ``starting = "queued"`` and heads the queue; with "running" it is running work, cut
        # last, after the queue, like the reference's.
        at_instant = [i for i in (*running, *queued) if abs(begins[i] - self.round_time) <= self.instant]
        if self.starting_queued:
            first, last = [i for i in running if i in at_instant], [i for i in running if i not in at_instant]
        else:
            first, last = [], [*(i for i in queued if i in at_instant), *running]
        order = [*first, *(i for i in queued if i not in last), *last]
        at = 0
        for dst, amount in transfers:
            pieces = []
            while amount > TIE and at < len(order):
                i = order[at]
                slot = queue[i]
                state = site.state(slot)
                size = site.end_time(slot) - now if state == RUNNING else site.size(slot) / speed
                begin = ends[i] - size
                room = ends[i] - max(begin, earliest)
                if (
                    state not in (QUEUED, RUNNING)
                    or self._fresh(slot)
                    or room <= EPS
                    or self._pinned(state, begin, earliest)
                ):
                    at += 1
                    continue
                take = min(amount, room)
                if state == QUEUED and size <= take + TIE and begin >= earliest:
                    piece = slot
                    at += 1
                    amount -= size
                else:
                    piece = self._split(slot, take, now)
                    ends[i] -= take
                    amount -= take
                pieces.append(piece)
            self._offer_pieces(now, dst, pieces)

    def _split(self, slot: int, take: float, now: float) -> int:
        """Cut the last ``take`` time units off a piece into a new one (``site.split``), kept in the books."""
        piece = self.site.split(slot, take * self.speed, now)
        self.queued_at[piece] = self._queued_at(slot)
        if slot in self.promised:  # the cut-off part ends by the whole piece's promised finish
            self.promised[piece] = self.promised[slot]
        j = self.local_job(slot)
        if j >= 0:
            self.open_pieces[j] += 1
        return piece

    def _offer_pieces(self, now: float, dst: int, pieces: list[int]) -> None:
        """Offer one transfer's pieces to ``dst``, the last marked; an empty transfer sends the marker alone."""
        site = self.site
        for piece in pieces:
            site.offer(now, piece, dst, LAST if piece == pieces[-1] else 0.0)
            self.waiting.add(piece)
            self.counts[1] += site.size(piece) / self.speed
        if not pieces:
            site.send(now, dst, "fragment", slot=-1, tag=LAST)

    def _judge(self, now: float, msg) -> None:
        """Accept an offered piece (a ``fragment`` message) if it fits the declared level and keeps
        its job's deadline."""
        site = self.site
        size = float(msg.size) / self.speed
        deadline = float(msg.deadline)
        finish = site.load(now) + size
        late = finish > deadline + TOL * max(1.0, abs(deadline))
        if late or finish - now > self.accept_limit() + TOL * max(1.0, finish - now):
            site.send(now, int(msg.src), "refuse", slot=msg.slot)
            return
        slot = site.receive_job(now, msg)
        self.queued_at[slot] = now
        self.promised[slot] = finish
        self.counts[2] += size
        site.send(now, int(msg.src), "grant", slot=msg.slot, finish=finish)

    def _fresh(self, slot: int) -> bool:
        """Whether a piece came after this round's offers, so is not the round's to cut: queued
        after the round time, or (``before_releases``) released at its very instant."""
        queued = self._queued_at(slot)
        return queued > self.round_time or (self.before_releases and queued >= self.round_time)

    def _queued_at(self, slot: int) -> float:
        site = self.site
        return site.release(slot) if site.is_local(slot) else self.queued_at[slot]
