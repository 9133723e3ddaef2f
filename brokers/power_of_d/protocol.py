"""``power_of_d``: each new job goes to the least loaded of its site and d sampled neighbors,
by the loads the neighbors report every period (Mitzenmacher's power of d choices with
stale information)."""
from __future__ import annotations

from typing import Any

from gridemu.brokers.power_of_d.agent import REPORT, PowerOfDAgent
from gridemu.brokers.protocol import Protocol, RunFacts, ScenarioFacts, Traffic
from gridemu.model.checks import check_number

MAX_D = 1000


def check(params: dict[str, Any], scenario: ScenarioFacts) -> None:
    """``d``: how many neighbors (drawn with replacement) each new job compares its site
    with, an integer from 0 (every job stays) to 1000 (each site draws d samples for each of
    its jobs at the start); ``period``: time between two load reports."""
    params["d"] = int(check_number("protocol.d", params.get("d", 2), nonneg=True, integer=True, most=MAX_D))
    params["period"] = float(check_number("protocol.period", params.get("period", 10.0), positive=True, finite=True))


def traffic(params: dict[str, Any], n: int, degree: float) -> Traffic:
    reports = n * degree / params["period"] if params["d"] and n > 1 else 0.0
    return Traffic(per_job=1.0 if params["d"] else 0.0, per_time=reports, round_every=params["period"],
                   what="load reports to the neighbors every period, and at most one transfer a job")


def summary(facts: RunFacts) -> dict[str, Any]:
    moved = facts.jobs["exec_site"] != facts.jobs["submit_site"]
    return {"name": "power_of_d", "d": facts.protocol["d"], "period": facts.protocol["period"], "jobs_moved": int(moved.sum())}


PROTOCOL = Protocol(
    "power_of_d", PowerOfDAgent,
    "each new job goes to the least loaded of its site and d sampled neighbors, by loads reported every period",
    keys=("d", "period"), messages=(REPORT,), check=check, summary=summary,
    periodic=True, topologies=True, faults=True, traffic=traffic,
)
