"""Averaging load balancing (thesis ch. 4, Algorithm 4.1), over messages.

Every ``period`` each site sends a load report ``L_k`` (the time at which it would finish
all work it knows of) to its neighbors: every other site on the full graph (the thesis's
setting), the sites it is linked to in a network topology. A site that holds the reports
of its whole closed neighborhood (itself and its neighbors) for a round computes
:func:`averaging_plan` over those loads, in site-id order, and, where it is a sender,
transfers whole queued jobs. On the full graph every site computes the same plan from the
same reports (the thesis's coalition is the grid); in a topology the coalition of a site is
its neighborhood, so neighboring plans overlap and a receiver may get more than its share
from two senders (diffusion load balancing).

``exchange = "gossip"``: pairwise push-pull averaging instead. Every period each site sends
its load to one neighbor drawn from its own stream; the receiver, if more loaded, sends half
the difference (the plan of the pair) and answers with its load; the initiator, if more
loaded than that answer, sends half the difference. Two messages a site a round, whatever
the number of sites.

Choices the thesis leaves open for whole (non-divisible) jobs, documented here:
  * a sender moves queued jobs, latest-queued first (they are the ones whose local
    wait is longest), and sends a job to receiver l only if its work (size times
    processors), at l's total speed, fits in the amount Φ_{l,k} still owed to l; jobs that
    do not fit are skipped;
  * loads are in time units; with heterogeneous sites the plan still treats them as
    times, and a job's share of the amount is its work over the receiver's total speed:
    what it adds to the receiver's load L_l (until 2026-11-27 its size alone, so a job on
    q processors counted 1/q of what it adds, receivers ended above the mean and jobs went
    back and forth);
  * a job wider than the receiver's processors is never sent to it (it could never start
    there, and an FCFS queue would wait behind it for ever);
  * a receiver accepts every job (bounds on what a receiver takes come with BILB).
The divisible-load version (thesis 4.5, pieces of jobs, announced finish times) is the
``averaging_game`` protocol (``brokers/averaging_game/agent.py``).
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING, Any

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.averaging.algorithm import averaging_plan
from gridemu.model.messages import message
from gridemu.model.rng import PURPOSE_GOSSIP, site_rng

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.averaging.protocol import AveragingParams

#: A site's load report for one round: L_k and the round number.
LOAD = message("load", load=float, round=int)
#: Gossip: the initiator's load, and the answer of the neighbor it drew.
GOSSIP = message("gossip", load=float, round=int)
GOSSIP_REPLY = message("gossip_reply", load=float, round=int)
EXCHANGES = ("neighbors", "gossip")


class AveragingAgent(Agent):
    name = "averaging"
    record_columns = ("time", "site", "round", "load", "mean_load", "jobs_sent", "work_sent")

    def __init__(self, site, grid: GridInfo, params: AveragingParams):
        super().__init__(site, grid, params)
        self.period = params.period
        self.first = params.start
        self.reports: dict[int, dict[int, float]] = {}
        # The rounds ``reports`` holds, oldest first: stale ones are dropped from the front, so a
        # timer costs the rounds it drops, not every round pending (with a latency of many periods
        # the scan of all of them made a run quadratic in latency / period).
        self.pending: list[int] = []
        self.gossip = params.exchange == "gossip"
        # The closed neighborhood, in id order: whose reports a round's plan waits for (a
        # range on the full graph: no list of every site kept at every site).
        nb = grid.neighbors
        self.members = range(grid.n_sites) if nb is None else sorted((site.site_id, *nb[site.site_id]))
        self.rng = site_rng(grid.seed, site.site_id, PURPOSE_GOSSIP) if self.gossip else None
        # Rounds whose reports can no longer all come (one was lost, a site was down: [faults])
        # are dropped once every report of them would have arrived.
        self.keep_rounds = math.ceil(grid.max_latency / self.period) + 2

    def on_start(self, now: float) -> None:
        if self.grid.n_sites > 1:
            self.site.set_timer(self.first, 0)

    def on_timer(self, now: float, tag: Any) -> None:
        site = self.site
        round_no = int(tag)
        if now - (self.first + round_no * self.period) > self.period / 2:
            # The timer fired late (the site was down: [faults]): join the grid's current round.
            round_no = int((now - self.first) // self.period)
        pending, oldest = self.pending, round_no - self.keep_rounds
        while pending and pending[0] < oldest:
            self.reports.pop(heapq.heappop(pending), None)  # None: that round completed
        load = site.load(now)
        if self.gossip:
            site.send(now, self.random_neighbor(self.rng), "gossip", load=load, round=round_no)
        else:
            self.broadcast(now, "load", load=load, round=round_no)
            self._report(now, round_no, site.site_id, load)
        site.set_timer(now + self.period, round_no + 1)

    def on_load(self, now: float, msg) -> None:
        self._report(now, int(msg.round), msg.src, msg.load)

    def on_gossip(self, now: float, msg) -> None:
        load = self.site.load(now)
        self._pair(now, int(msg.round), msg.src, msg.load, load)
        self.site.send(now, msg.src, "gossip_reply", load=load, round=msg.round)

    def on_gossip_reply(self, now: float, msg) -> None:
        self._pair(now, int(msg.round), msg.src, msg.load, self.site.load(now))

    def _pair(self, now: float, round_no: int, other: int, other_load: float, load: float) -> None:
        """Push-pull: the pair's plan, carried out where this site is the sender."""
        members = sorted((self.site.site_id, other))
        loads = [load if k == self.site.site_id else other_load for k in members]
        self._balance(now, round_no, members, loads)

    def _report(self, now: float, round_no: int, src: int, load: float) -> None:
        got = self.reports.get(round_no)
        if got is None:
            got = self.reports[round_no] = {}
            heapq.heappush(self.pending, round_no)
        got[src] = load
        if len(got) == len(self.members):
            del self.reports[round_no]
            self._balance(now, round_no, self.members, [got[k] for k in self.members])

    def _balance(self, now: float, round_no: int, members: "range | list[int]", loads: list[float]) -> None:
        """Algorithm 4.1 over ``members`` (site ids, in order) and their loads: this site's part."""
        site = self.site
        me = site.site_id
        mine = [(members[l], amount) for k, l, amount in averaging_plan(loads) if members[k] == me]
        queue = site.queued()[::-1]  # latest first
        sent_jobs, sent_work = 0, 0.0
        for dst, amount in mine:
            capacity, width = self.grid_capacity(dst), self.grid.info["procs"][dst]
            keep = []
            for slot in queue:
                work = site.size(slot) * site.procs(slot)
                share = work / capacity
                if site.procs(slot) <= width and share <= amount:  # one wider than dst could never start there
                    site.transfer(now, slot, dst)
                    amount -= share
                    sent_jobs += 1
                    sent_work += work
                else:
                    keep.append(slot)
            queue = keep
        mean = sum(loads) / len(loads)
        self.records.append((now, me, round_no, loads[members.index(me)], mean, sent_jobs, sent_work))

    def grid_capacity(self, site_id: int) -> float:
        return self.grid.info["capacities"][site_id]

    def send_bound(self) -> float:
        # Reports go out on timers and jobs on received reports: nothing else sends.
        return self.site.next_agent_event_time()
