"""Power of d choices over messages, with the loads the neighbors reported.

Every ``period`` each site reports its load, the number of jobs it holds (queued and
running), to its neighbors (every other site on the full graph). A job submitted here is
compared with ``d`` neighbors drawn with replacement from the site's own stream
(:func:`~gridemu.brokers.power_of_d.algorithm.power_of_d_samples`) and goes to the least
loaded of this site, counted exactly now, and the samples, each counted as its last report
heard plus the jobs this site sent it since (:func:`power_of_d_choice`: ties stay here). A
job that arrived by transfer is queued and never brokered again.

Mitzenmacher's own setting sets three keys to false (``home``, ``correct``, ``replace``; all
true by default). With ``home = false`` the site only dispatches: its samples are drawn from itself
and its neighbors and the job goes to the least loaded sample (ties: the earliest drawn), the
site judged like the others, by its own last report (posted on the board at once, where its
neighbors hear it one latency later); ``correct = false`` judges a sample by its report alone;
``replace = false`` draws d distinct sites (all of them where there are fewer: the shortest
reported queue of all).

Before a neighbor's first report is heard its load counts as 0 (the grid starts empty);
reports go out at 0, ``period``, 2 ``period``... (none with ``d = 0`` or a single site).
The site's own count is kept by the hooks (a job kept or received: +1, a completion: -1);
a crash that loses its running jobs (``[faults] on_crash = "lose"``) tells no hook, so each
report counts the site's queue and running jobs again.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.power_of_d.algorithm import power_of_d_choice, power_of_d_samples
from gridemu.model.messages import message

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.power_of_d.protocol import PowerOfDParams

#: A site's load: the jobs it holds, queued and running.
REPORT = message("report", load=int)


class PowerOfDAgent(Agent):
    name = "power_of_d"
    intercepts_arrivals = True
    sends_only_on_arrival_and_timer = True  # transfers at arrivals, reports on the timer

    def __init__(self, site, grid: GridInfo, params: PowerOfDParams):
        super().__init__(site, grid, params)
        self.d = params.d
        self.period = params.period
        me = site.site_id
        nb = None if grid.neighbors is None else grid.neighbors[me]
        # The samples of every local job, drawn at once: a slot is its job's submission position.
        self.samples = power_of_d_samples(
            grid.seed, me, nb, grid.n_sites, site.n_local, self.d, closed=not params.home, replace=params.replace
        )
        self.home, self.correct, self.me = params.home, params.correct, me
        self.reports = self.d > 0 and grid.n_sites > 1
        self.known: dict[int, float] = {}  # neighbor -> last report heard + jobs sent to it since
        self.jobs = 0  # jobs held here, queued and running
        self.next_report = 0.0 if self.reports else math.inf
        self.unheard = (0.0,) * self.d  # a sample's load before its first report (see on_arrival)
        self.next_release = site.next_release

    def on_start(self, now: float) -> None:
        if self.reports:
            self.site.set_timer(0.0)

    def on_timer(self, now: float, tag: Any) -> None:
        site = self.site
        self.jobs = len(site.queued()) + len(site.running_slots())
        self.broadcast(now, "report", load=self.jobs)
        if not self.home:  # its own line on the board: one of the samples
            self.known[self.me] = self.jobs
        # From the firing time: a timer a crash held fires late, and the next one follows it.
        self.next_report = now + self.period
        site.set_timer(self.next_report)

    def on_report(self, now: float, msg) -> None:
        self.known[msg.src] = msg.load

    def on_arrival(self, now: float, slot: int) -> bool:
        sample = self.samples[slot]
        known = self.known
        # Each sample's known load, 0.0 before its first report: known.get(k, 0.0) for each k
        # (read as the choice goes: no list made).
        i = power_of_d_choice(self.jobs if self.home else math.inf, map(known.get, sample, self.unheard))
        dst = self.me if i < 0 else sample[i]
        if self.correct and i >= 0:
            known[dst] = known.get(dst, 0.0) + 1.0
        if dst == self.me:
            self.jobs += 1
            return False
        self.site.transfer(now, slot, dst)
        return True

    def on_job(self, now: float, msg) -> None:
        self.jobs += 1
        self.site.receive_job(now, msg)

    def on_complete(self, now: float, slot: int) -> None:
        self.jobs -= 1

    def send_bound(self) -> float:
        # Reports go out on the timer and transfers at local arrivals: received messages
        # and completions make this agent send nothing.
        release, report = self.next_release(), self.next_report
        return report if report < release else release  # min(release, report) without the call
