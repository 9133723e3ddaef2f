"""The scheduling game on dedicated resources (thesis ch. 3, sections 3.4-3.6): the
``scheduling_game`` protocol.

Organization k owns site k, a machine of one processor; each of its jobs must run on a given
machine (``target_site``). Round r's jobs are all released at R = r × period (one off-line
instance per round, the repeated game of section 3.5). L is the slowest link's latency.

  1. At R each organization sends every job meant for another machine there (a transfer);
     its jobs for its own machine stay queued at home. All are in by R + L. An organization
     learns a round's jobs only then, as they arrive: it never reads its later rounds' jobs.
  2. At R + L every machine lists the jobs it holds (one ``listing`` row per job: its id,
     owner and size) to the coordinator, the site ``protocol.coordinator``: the grid
     scheduler of the chapter, which proposes and cannot impose.
  3. With every listing (by R + 2L) the coordinator builds the round's instance and computes
     the proposal σ* (``protocol.proposal``: AEW, DYN, EW or SPT, and which of its
     solutions, ``protocol.pick``), with the pure functions of
     ``brokers.scheduling_game.dedicated*``. It sends each machine its order (``order`` rows) and
     each organization, for every machine that runs its jobs, the sum of completion times the
     proposal gives them there and the one MJF would give (``promise``).
  4. At S = R + 3L every machine runs its queue in the order its owner's strategy chooses for
     the round (``protocol.strategy``, per site): ``follow`` σ*, ``mjf`` (My Jobs First: its
     own jobs first, the foreign ones after, each part in SPT order), ``spt`` (all by size),
     or, for the repeated game, ``tit-for-tat`` (follow, but play MJF in the round after one
     in which a machine ran this organization's jobs later than promised) and ``grim``
     (follow until the first such round, then MJF for ever). The ``planned`` scheduler starts
     each job at S + the sizes before it.
  5. A machine tells the owner of every foreign job it completes when it ended (``done``). An
     organization thus sees, machine by machine, whether its jobs there met the promise: the
     on-line verification of section 3.5, from its own jobs only. At the round's end it
     records its payoff u_k = C_k(MJF) - C_k (Definition 3.1) and how many machines broke
     the promise.

Completion times are counted from S, the instant every machine starts (the thesis's model
starts at 0); the summary computes the same scores on its own from the job table.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.scheduling_game.game import MOVES, Listing, broke_promise, machine_order, next_move, round_plan
from gridemu.model.errors import InvariantError
from gridemu.model.messages import message

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.scheduling_game.protocol import SchedulingGameParams

#: Step 2: one job a machine holds (its record: id, owner, size); ``last`` = 1 on the closing
#: row (a machine with no job sends that row alone, with no job).
LISTING = message("listing", job=True, last=bool, round=int)
#: Step 3: a job's place in the proposed order of its machine (0 first).
ORDER = message("order", position=int, round=int, job_id=int)
#: Step 3: what the proposal and MJF give the addressee's jobs on ``machine`` (sums of
#: completion times from S).
PROMISE = message("promise", machine=int, total=float, mjf=float, round=int)
#: Step 5: a foreign job ended.
DONE = message("done", end=float, round=int, job_id=int)
MESSAGES = (LISTING, ORDER, PROMISE, DONE)
#: Message delays before the machines start: transfers, listings, orders.
START_DELAYS = 3


def round_release(r: int, period: float) -> float:
    """When round r's jobs are released: r × period (one round at 0 when period is infinite)."""
    return 0.0 if r == 0 else r * period


def round_index(release: Any, period: float) -> Any:
    """The round of a release time (or an array of them): the inverse of :func:`round_release`."""
    return (
        np.zeros(np.shape(release), dtype=np.int64)
        if math.isinf(period)
        else np.rint(np.divide(release, period)).astype(np.int64)
    )


def start_time(release: float, lat: float) -> float:
    """S of a round released at ``release``: after transfers, listings and orders. Added one
    delay at a time, as the messages add them, so no order can arrive after S in floats."""
    for _ in range(START_DELAYS):
        release += lat
    return release


class DedicatedAgent(Agent):
    """One organization's part of the game (module doc)."""

    name = "scheduling_game"
    intercepts_arrivals = True
    record_columns = ("time", "period", "site", "level", "move", "broken")

    def __init__(self, site, grid: GridInfo, params: SchedulingGameParams):
        super().__init__(site, grid, params)
        me = site.site_id
        self.period = params.period
        self.rounds = params.rounds
        self.coordinator = params.coordinator
        self.strategy = params.strategy[me]
        self.proposal = params.proposal
        self.pick = params.pick
        self.max_steps = params.max_steps
        self.lat = grid.max_latency
        self.slots: dict[int, list[int]] = {}  # round -> slots of the jobs this machine runs
        self.orders: dict[int, dict[int, int]] = {}  # round -> job id -> proposed position
        self.listings: dict[int, dict[int, list[Listing]]] = {}  # coordinator: round -> machine -> its jobs
        self.closed: dict[int, set[int]] = {}  # coordinator: round -> machines whose listing is complete
        self.promised: dict[int, dict[int, tuple[float, float]]] = {}  # round -> machine -> (proposal, MJF)
        self.ended: dict[int, dict[int, list[float]]] = {}  # round -> machine -> my jobs' ends there
        self.moves: list[str] = []  # what this machine played, round by round
        self.broken: list[int] = []  # per finished round: machines that ran my jobs later than promised
        # My jobs per round and machine, counted as they arrive (the game is on-line: an
        # organization does not know its later rounds' jobs). A round's jobs are all released
        # at R, before any of them can end, so the count is complete when the first one ends.
        self.mine: dict[int, dict[int, int]] = {}

    def round_of(self, t: float) -> int:
        return int(round_index(t, self.period))

    def start_of(self, r: int) -> float:
        return start_time(round_release(r, self.period), self.lat)

    # step 1 ---------------------------------------------------------------------------
    def on_start(self, now: float) -> None:
        self._timers(0)

    def _timers(self, r: int) -> None:
        if r < self.rounds:
            self.site.set_timer(round_release(r, self.period) + self.lat, ("list", r))
            self.site.set_timer(self.start_of(r), ("run", r))

    def on_arrival(self, now: float, slot: int) -> bool:
        target = int(self.site.job(slot).target_site)
        per_machine = self.mine.setdefault(self.round_of(now), {})
        per_machine[target] = per_machine.get(target, 0) + 1
        if target == self.site.site_id:
            self.slots.setdefault(self.round_of(now), []).append(slot)
            return False
        self.site.transfer(now, slot, target)
        return True

    def on_job(self, now: float, msg: Any) -> None:
        slot = self.site.receive_job(now, msg)
        self.slots.setdefault(self.round_of(float(msg.release)), []).append(slot)

    # steps 2 and 4 --------------------------------------------------------------------
    def on_timer(self, now: float, tag: Any) -> None:
        what, r = tag
        if what == "list":
            slots = self.slots.get(r, [])
            if self.site.site_id == self.coordinator:
                self._listed(now, r, self.site.site_id, [self._listing(slot) for slot in slots])
                return
            for i, slot in enumerate(slots):
                self.site.send(
                    now, self.coordinator, "listing", self.site.job(slot), last=float(i == len(slots) - 1), round=r
                )
            if not slots:
                self.site.send(now, self.coordinator, "listing", (), last=1.0, round=r)
        elif what == "due":
            self.site.dispatch(now)
        else:
            self._run(now, r)
            self._timers(r + 1)

    def _listing(self, slot: int) -> Listing:
        job = self.site.job(slot)
        return Listing(int(job.job_id), int(job.owner), float(job.size))

    def _run(self, now: float, r: int) -> None:
        move = next_move(self.strategy, self.broken)
        self.moves.append(move)
        slots = self.slots.pop(r, [])
        jobs = [self._listing(slot) for slot in slots]
        order = self.orders.pop(r, {})
        if move == "follow" and len(order) != len(jobs):
            raise InvariantError(
                f"site {self.site.name}: round {r}'s proposed order names {len(order)} of its {len(jobs)} jobs"
            )
        slot_of = {j.job_id: s for j, s in zip(jobs, slots)}
        due = now
        for job_id in machine_order(jobs, self.site.site_id, move, order):
            slot = slot_of[job_id]
            self.site.plan(job_id, due)
            self.site.set_timer(due, ("due", r))
            due += self.site.size(slot) / self.site.speed

    # step 3 (the coordinator) ----------------------------------------------------------
    def on_listing(self, now: float, msg: Any) -> None:
        r = int(msg.round)
        rows = self.listings.setdefault(r, {}).setdefault(int(msg.src), [])
        if msg.job_id >= 0:
            rows.append(Listing(int(msg.job_id), int(msg.owner), float(msg.size)))
        if msg.last == 1.0:
            self._listed(now, r, int(msg.src), None)

    def _listed(self, now: float, r: int, machine: int, rows: list[Listing] | None) -> None:
        listed = self.listings.setdefault(r, {})
        if rows is not None:
            listed[machine] = rows
        done = self.closed.setdefault(r, set())
        done.add(machine)
        if len(done) < self.grid.n_sites:
            return
        plan = round_plan(
            [listed.get(l, []) for l in range(self.grid.n_sites)], self.proposal, self.pick, self.max_steps
        )
        for l, positions in enumerate(plan.orders):
            for job_id, pos in sorted(positions.items(), key=lambda kv: kv[1]):
                self._to(now, l, "order", job_id=job_id, position=float(pos), round=r)
        for k, per_machine in enumerate(plan.promises):
            for l, (total, mjf) in sorted(per_machine.items()):
                self._to(now, k, "promise", machine=float(l), total=total, mjf=mjf, round=r)
        del self.listings[r], self.closed[r]

    def _to(self, now: float, dst: int, kind: str, **fields: Any) -> None:
        """A message of the grid scheduler: to itself it is handled at once (no link)."""
        if dst == self.site.site_id:
            {"order": self._ordered, "promise": self._promised}[kind](fields)
        else:
            self.site.send(now, dst, kind, **fields)

    # what a site hears -----------------------------------------------------------------
    def on_order(self, now: float, msg: Any) -> None:
        self._ordered({"job_id": msg.job_id, "position": msg.position, "round": msg.round})

    def _ordered(self, fields: dict[str, Any]) -> None:
        self.orders.setdefault(int(fields["round"]), {})[int(fields["job_id"])] = int(fields["position"])

    def on_promise(self, now: float, msg: Any) -> None:
        self._promised({"machine": msg.machine, "total": msg.total, "mjf": msg.mjf, "round": msg.round})

    def _promised(self, fields: dict[str, Any]) -> None:
        self.promised.setdefault(int(fields["round"]), {})[int(fields["machine"])] = (
            float(fields["total"]),
            float(fields["mjf"]),
        )

    # step 5 ---------------------------------------------------------------------------
    def on_complete(self, now: float, slot: int) -> None:
        job = self.site.job(slot)
        if int(job.owner) == self.site.site_id:
            self._ended(now, self.round_of(float(job.release)), self.site.site_id, now)
        else:
            self.site.send(
                now, int(job.owner), "done", end=now, job_id=int(job.job_id), round=self.round_of(float(job.release))
            )

    def on_done(self, now: float, msg: Any) -> None:
        self._ended(now, int(msg.round), int(msg.src), float(msg.end))

    def _ended(self, now: float, r: int, machine: int, end: float) -> None:
        ended = self.ended.setdefault(r, {})
        ended.setdefault(machine, []).append(end - self.start_of(r))
        mine = self.mine[r]
        if any(len(ended.get(l, [])) < n for l, n in mine.items()):
            return
        broken, payoff, promised = 0, 0.0, self.promised.pop(r)
        for l in mine:
            proposal, mjf = promised[l]
            total = sum(ended[l])
            payoff += mjf - total
            broken += l != self.site.site_id and broke_promise(total, proposal)
        self.broken.append(broken)
        self.records.append((now, r, self.site.site_id, payoff, MOVES.index(self.moves[r]), broken))
        del self.ended[r], self.mine[r]
