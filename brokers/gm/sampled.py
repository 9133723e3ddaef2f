"""Decentralized greedy migration: ``gm`` with ``mode = "sampled"``.

Replicated GM (``brokers/gm/agent.py``) ranks every job of the grid at every site from
all-to-all broadcasts: 2(N - 1) messages a job, and one decision replayed N times. Here
each site decides from its own jobs and what d sampled sites tell it (the "power of d
choices"), and sends only what a decision needs:

  * **Local GM.** A site runs Algorithm 1 over the jobs it holds and its own processors
    (:class:`~brokers.gm.algorithm.GmRanking`): the k-th ranked held job on its k-th
    fastest processor; a running job that loses its processor is preempted and waits here.
  * **Placement (push).** A job submitted here that gets no processor here asks d sites,
    drawn from the site's own stream among the other sites (or its neighbors in a network
    topology), what it would get there (``probe``: its rank key). Each answers (``bid``)
    with the speed of the processor GM would give it among the jobs it holds, 0 if none.
    Once every answer is in, the job moves to the best bid (fastest; lowest site id among
    equals) if it is still waiting here; otherwise it stays.
  * ``samples = 0``: local GM alone, no message (the baseline of no cooperation).
  * **Stealing (pull).** A completion that leaves a processor idle with no job waiting here
    asks d sampled sites for work (``steal``); each that has a job waiting sends the
    highest ranked of them (one ``job`` transfer), and says nothing otherwise.

Costs and counting are the replicated agent's: a job that resumes on another processor
pays ``migration_cost`` (plus ``remote_cost`` from another site); ``migrations`` counts
moves between sites and between processors of a site. Messages: 2d per job that waits at
its arrival, d per completion that leaves a processor idle, one per move. Decisions are
local, so GM's grid-wide guarantees (EF, WPM, ILV) hold within a site, not between sites;
``docs/results/decentralization.md`` measures how far the grid is from them.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from gridemu.brokers.agent import GridInfo
from gridemu.brokers.gm.agent import GmAgent
from gridemu.brokers.gm.algorithm import GmJob, gm_rank_key
from gridemu.model.messages import message
from gridemu.model.rng import PURPOSE_GM_SAMPLE, site_rng

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.gm.protocol import GmParams

#: What a waiting job would get at the receiver: its rank key (priority, release, id).
PROBE = message("probe", priority=float, release=float, job_id=int)
#: The receiver's answer: the speed of the processor GM would give that job there (0: none).
BID = message("bid", speed=float, job_id=int)
#: A site with an idle processor and no waiting job asks for one.
STEAL = message("steal")
MESSAGES = (PROBE, BID, STEAL)


class GmSampledAgent(GmAgent):
    """One site's decentralized GM (module doc)."""

    name = "gm_sampled"

    def __init__(self, site, grid: GridInfo, params: GmParams):
        super().__init__(site, grid, params)
        me = site.site_id
        self.samples = params.samples
        self.rng = site_rng(grid.seed, me, PURPOSE_GM_SAMPLE)
        self.bids: dict[int, list] = {}  # job id -> [answers still due, best speed, its site]

    def processors(self) -> tuple[list[tuple[int, int]], list[float], int]:
        """Local GM: this site's processors only (no list of the grid's at every site)."""
        me = self.site.site_id
        return [(me, p) for p in range(self.site.m)], [float(v) for v in self.site.speeds], 0

    # events ------------------------------------------------------------------------
    def on_arrival(self, now: float, slot: int) -> bool:
        rec = self.site.job(slot)
        job = GmJob(int(rec.job_id), float(rec.release), float(rec.size), float(rec.priority))
        self.hold(job, slot)
        if job.id not in self.assignment and self.grid.n_sites > 1 and self.samples:
            targets = self.random_neighbors(self.rng, self.samples)
            self.bids[job.id] = [len(targets), 0.0, -1]
            for k in targets:
                self.site.send(now, k, "probe", priority=job.v0, release=job.r, job_id=job.id)
        self.decide(now)
        return False

    def on_complete(self, now: float, slot: int) -> None:
        site = self.site
        self.completed(int(site.job_id(slot)))
        if len(self.ranking) < site.m and self.grid.n_sites > 1 and self.samples:  # a processor will be idle
            for k in self.random_neighbors(self.rng, self.samples):
                site.send(now, k, "steal")
        self.decide(now)

    def on_job(self, now: float, msg) -> None:
        """A job sent here (placed or stolen): ranked with the jobs held here."""
        self.hold(
            GmJob(int(msg.job_id), float(msg.release), float(msg.size), float(msg.priority)),
            self.site.receive_job(now, msg),
        )
        self.decide(now)

    def on_probe(self, now: float, msg) -> None:
        pos = bisect.bisect_left(self.ranking.keys, gm_rank_key(GmJob(int(msg.job_id), msg.release, 1.0, msg.priority)))
        speed = self.speeds[self.ranking.order[pos]] if pos < len(self.ranking.order) else 0.0
        self.site.send(now, msg.src, "bid", speed=speed, job_id=msg.job_id)

    def on_bid(self, now: float, msg) -> None:
        job_id = int(msg.job_id)
        entry = self.bids[job_id]
        entry[0] -= 1
        if msg.speed > entry[1] or (msg.speed == entry[1] and 0 <= msg.src < entry[2]):
            entry[1], entry[2] = msg.speed, msg.src
        if entry[0]:
            return
        del self.bids[job_id]
        if entry[1] > 0 and job_id in self.held and job_id not in self.assignment:
            self._send_away(now, job_id, entry[2])

    def on_steal(self, now: float, msg) -> None:
        m = len(self.ranking.order)
        for _, _, job_id in self.ranking.keys[m:]:  # waiting jobs, highest ranked first
            if job_id in self.held:
                self._send_away(now, job_id, msg.src)
                self.decide(now)
                return

    def _send_away(self, now: float, job_id: int, dst: int) -> None:
        slot = self.let_go(job_id)
        self.forget(job_id)  # local GM ranks the jobs held here only
        self.site.transfer(now, slot, dst)
