"""Averaging load balancing (thesis ch. 4, Algorithm 4.1), over messages.

Every ``period`` each site broadcasts a load report ``L_k`` (the time at which it would
finish all work it knows of). A site that holds the reports of every site for a round
computes the same plan with :func:`averaging_plan` (the reports are identical
everywhere, so the plans are too) and, if it is a sender, transfers whole queued jobs.

Choices the thesis leaves open for whole (non-divisible) jobs, documented here:
  * a sender moves queued jobs, latest-queued first (they are the ones whose local
    wait is longest), and sends a job to receiver l only if its size, at l's total
    speed, fits in the amount Φ_{l,k} still owed to l; jobs that do not fit are skipped;
  * loads are in time units; with heterogeneous sites the plan still treats them as
    times, and a job's share of the amount is its size over the receiver's total speed;
  * a receiver accepts every job (bounds on what a receiver takes come with BILB).
The divisible-load version (thesis 4.5, pieces of jobs, announced finish times) is the
``averaging_game`` protocol (``brokers/agents/averaging_game.py``).
"""
from __future__ import annotations

from typing import Any

from gridemu.brokers.algorithms.averaging import averaging_plan
from gridemu.brokers.agents.base import Agent, GridInfo
from gridemu.model.messages import message

#: A site's load report for one round: L_k and the round number.
LOAD = message("load", load="value", round="value2")


class AveragingAgent(Agent):
    name = "averaging"
    record_columns = ("time", "site", "round", "load", "mean_load", "jobs_sent", "work_sent")

    def __init__(self, site, grid: GridInfo, params: dict[str, Any]):
        super().__init__(site, grid, params)
        self.period = float(params["period"])
        self.first = float(params["start"])
        self.reports: dict[int, dict[int, float]] = {}

    def on_start(self, now: float) -> None:
        if self.grid.n_sites > 1:
            self.site.set_timer(self.first, 0)

    def on_timer(self, now: float, tag: Any) -> None:
        site = self.site
        round_no = int(tag)
        load = site.load(now)
        self.broadcast(now, "load", load=load, round=round_no)
        self._report(now, round_no, site.site_id, load)
        site.set_timer(now + self.period, round_no + 1)

    def on_load(self, now: float, msg) -> None:
        self._report(now, int(msg.round), msg.src, msg.load)

    def _report(self, now: float, round_no: int, src: int, load: float) -> None:
        got = self.reports.setdefault(round_no, {})
        got[src] = load
        if len(got) == self.grid.n_sites:
            del self.reports[round_no]
            loads = [got[k] for k in range(self.grid.n_sites)]
            self._balance(now, round_no, loads)

    def _balance(self, now: float, round_no: int, loads: list[float]) -> None:
        site = self.site
        me = site.site_id
        mine = [(l, amount) for k, l, amount in averaging_plan(loads) if k == me]
        queue = site.queued()[::-1]  # latest first
        sent_jobs, sent_work = 0, 0.0
        for dst, amount in mine:
            capacity = self.grid_capacity(dst)
            keep = []
            for slot in queue:
                share = site.size(slot) / capacity
                if share <= amount:
                    site.transfer(now, slot, dst)
                    amount -= share
                    sent_jobs += 1
                    sent_work += site.size(slot)
                else:
                    keep.append(slot)
            queue = keep
        mean = sum(loads) / len(loads)
        self.records.append((now, me, round_no, loads[me], mean, sent_jobs, sent_work))

    def grid_capacity(self, site_id: int) -> float:
        return self.params["capacities"][site_id]

    def send_bound(self) -> float:
        # Reports go out on timers and jobs on received reports: nothing else sends.
        return self.site.next_agent_event_time()
