"""What a divisible-load site knows of its own jobs, and its periods (thesis Algorithm 4.2).

A site learns its local jobs' finish times from its own completions, from grants (the
finish time a receiver promised) and from ``moved`` (a receiver that granted a piece onward
passes the new finish on: the next receiver is held to the job's deadline, not to the
earlier promise), and uses the announced time for a piece it has no news of. At the first round of each period it
evaluates the periods since the last one (the flow ratio R_k of the jobs submitted in the
period's ``window``), lets the strategy learn from it, and records one row per period.
Mixed into ``brokers/bilb/divisible.py``'s agent, which supplies ``site``, ``start``,
``period``, ``window``, ``speed``, ``learn``, ``member`` and the strategy hooks, and uses
``init_ledger``, ``local_job``, ``heard``, ``settle_periods`` and ``counts`` (this period's
rounds, work sent, work received and pieces refused, which it adds to).
"""

from __future__ import annotations

import bisect
import math

from gridemu.brokers.bilb.strategies import flow_ratio, local_flow_time


class PeriodLedger:
    """Local jobs' finish times as heard, and the period evaluation (module doc)."""

    def init_ledger(self, site) -> None:
        n = site.n_local
        self.local_slot: dict[int, int] | None = None  # job id -> slot of a local job, built when needed
        self.known_end = [-math.inf] * n  # latest finish time heard of for each local job's pieces
        self.open_pieces = [1] * n  # pieces of each local job with no finish time heard of yet
        self.period_no = -1
        self.member = True
        self.counts = [0, 0.0, 0.0, 0]  # rounds, work sent, work received, pieces refused (this period)

    def local_job(self, slot: int) -> int:
        """Index of the local job a piece belongs to, or -1 for another organization's piece."""
        site = self.site
        if site.is_local(slot):
            return slot
        if site.submit_site(slot) != site.site_id:
            return -1
        return self._local_index(site.job_id(slot))

    def _local_index(self, job_id: int) -> int:
        """Index of local job ``job_id`` among the submitted jobs (the map built when first needed)."""
        if self.local_slot is None:
            self.local_slot = {job: k for k, job in enumerate(self.site.local_jobs["job_id"].tolist())}
        return self.local_slot[job_id]

    def heard(self, job: int, finish: float) -> None:
        if finish > self.known_end[job]:
            self.known_end[job] = finish
        self.open_pieces[job] -= 1

    def moved(self, job_id: int, finish: float) -> None:
        """A piece of local job ``job_id``, heard of before, was granted onward and now
        finishes by ``finish`` (no piece more to hear of)."""
        j = self._local_index(job_id)
        if finish > self.known_end[j]:
            self.known_end[j] = finish

    def settle_periods(self, now: float) -> None:
        current = math.floor((now - self.start) / self.period)
        while self.period_no < current:
            self.period_no += 1
            if self.period_no > 0:
                self._evaluate(self.period_no - 1)
            self.decide()

    def _evaluate(self, period_no: int) -> None:
        """Algorithm 4.2 on the jobs submitted in the window of a finished period."""
        site = self.site
        begin = self.start + period_no * self.period
        releases = site.local_releases()
        lo = bisect.bisect_left(releases, begin + self.window[0] * self.period)
        hi = bisect.bisect_right(releases, begin + self.window[1] * self.period)
        # Where the queue alone starts empty: the window's start, the period's, or the run's.
        first = {"window": lo, "period": bisect.bisect_left(releases, begin), "run": 0}[self.local_from]
        # Whole jobs' sizes: a split local slot's c_size is only what stayed here.
        sizes = (site.local_jobs["size"][first:hi] / self.speed).tolist()
        flow_local = local_flow_time(releases[first:hi], sizes, counted_from=lo - first)
        flow = 0.0
        for j in range(lo, hi):
            end = self.known_end[j] if self.open_pieces[j] <= 0 else site.deadline(j)
            flow += end - releases[j]
        ratio = flow_ratio(flow, flow_local) if flow_local > 0 else math.nan
        if self.learn and self.member and flow_local > 0:
            self.adjust(ratio)
        rounds, sent, received, refused = self.counts
        self.records.append(
            (
                begin + self.period,
                site.site_id,
                period_no,
                self.strategy(),
                self.member,
                ratio,
                flow,
                flow_local,
                rounds,
                sent,
                received,
                refused,
            )
        )
        self.counts = [0, 0.0, 0.0, 0]
