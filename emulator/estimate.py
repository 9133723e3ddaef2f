"""How big a run will be, before it runs (``gridemu validate``): jobs, virtual time, messages.

Generated workloads (Poisson, streams) are sized, not drawn; job lists and traces are read
(validate reads them anyway, to report their errors). The run lasts at least as long as
its releases and as its work spread over every processor of the grid; the messages are the
protocol's own count (``Protocol.traffic``) over that time. These are orders of magnitude,
meant to catch a run that would not end in practice, not predictions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gridemu.brokers.protocol import Traffic
from gridemu.emulator.scenario import Scenario
from gridemu.model.checks import per_site_array
from gridemu.scenarios.workload import generate_jobs, poisson_size, streams_extent

#: Past these an estimate is worth a warning: such a run may not end in practice.
WARN_ROUNDS = 1e8
WARN_MESSAGES = 1e10


@dataclass(frozen=True)
class Estimate:
    jobs: float
    span: float  # releases from 0 to about this time
    duration: float  # the run lasts at least this long (virtual time)
    messages: float
    rounds: float | None  # the agents' rounds over that time (periodic protocols)
    traffic: Traffic

    def describe(self) -> str:
        text = (
            f"about {self.jobs:,.0f} jobs released over {self.span:,.4g} time units; the run lasts at least "
            f"{self.duration:,.4g}; about {_count(self.messages)} messages"
        )
        if self.traffic.what:
            text += f" ({self.traffic.what})"
        if self.rounds is not None:
            text += f"; about {_count(self.rounds)} rounds, one every {self.traffic.round_every:g}"
        return text

    def warnings(self) -> list[str]:
        out = []
        if self.rounds is not None and self.rounds > WARN_ROUNDS:
            out.append(
                f"about {_count(self.rounds)} protocol rounds (the run lasts at least {self.duration:.3g} time units, "
                f"a round every {self.traffic.round_every:g}): it may "
                "not end in practice; set run.horizon or shorten the jobs"
            )
        if self.messages > WARN_MESSAGES:
            out.append(
                f"about {_count(self.messages)} messages: it may not end in practice; fewer sites, jobs or rounds"
            )
        return out


def _count(x: float) -> str:
    return f"{x:,.0f}" if x < 1e6 else f"{x:.2g}"


def estimate(sc: Scenario) -> Estimate:
    wl, sites = sc.workload, sc.sites
    capacity = float(sum(sum(s.speeds) for s in sites))
    if wl["kind"] == "poisson":
        jobs = poisson_size(wl, len(sites))
        rates = per_site_array("workload.rate", wl.get("rate", 1.0), len(sites))
        span = float(wl["until"]) if "jobs" not in wl else jobs / float(rates.sum())
        procs = wl.get("procs", 1)
        mean_procs = (procs["low"] + procs.get("high", procs["low"])) / 2 if isinstance(procs, dict) else float(procs)
        size = per_site_array("workload.alpha", wl.get("alpha", 2.0), len(sites)) * per_site_array(
            "workload.beta", wl.get("beta", 2.0), len(sites)
        )
        work = float((rates / rates.sum() * size).sum()) * jobs * mean_procs
    elif wl["kind"] == "streams":
        jobs, span, work = streams_extent(wl, sites)
    else:
        table = generate_jobs(sc)[0]
        jobs = float(len(table))
        span = float(table["release"].max()) if len(table) else 0.0
        work = float((table["size"] * table["procs"]).sum())
    duration = max(span, work / capacity)
    if math.isfinite(sc.horizon):
        duration = min(duration, sc.horizon)
    n = len(sites)
    degree = float(np.mean(sc.topology.degrees(n))) if not sc.topology.full else float(n - 1)
    traffic = sc.plugin.traffic(sc.params, n, degree) if sc.plugin.traffic else Traffic()
    messages = traffic.per_job * jobs + traffic.per_time * duration
    rounds = duration / traffic.round_every if traffic.round_every else None
    return Estimate(jobs, span, duration, messages, rounds, traffic)
