"""``power_of_d``: each new job goes to the least loaded of its site and d sampled neighbors,
by the loads the neighbors report every period (Mitzenmacher's power of d choices with
stale information)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gridemu.brokers.params import Params, param
from gridemu.brokers.power_of_d.agent import REPORT, PowerOfDAgent
from gridemu.brokers.protocol import Protocol, RunFacts, Traffic

#: Each site draws d samples for each of its jobs at the start: d is capped.
MAX_D = 1000


@dataclass(frozen=True)
class PowerOfDParams(Params):
    d: int = param(
        2,
        "how many neighbors each new job compares its site with, drawn with replacement (see replace and home): "
        "0 (every job stays) to 1000",
        nonneg=True,
        most=MAX_D,
    )
    period: float = param(
        10.0, "time between two load reports to the neighbors, the first at 0", positive=True, finite=True
    )
    home: bool = param(
        True,
        "the submitting site is one of the choices, counted exactly and now, and wins ties; false: it only "
        "dispatches, its samples are drawn from itself and its neighbors, itself judged by its own last report "
        "(Mitzenmacher's customers, who have no home)",
    )
    correct: bool = param(
        True, "judge a sample by its last report plus the jobs this site sent it since; false: the report alone"
    )
    replace: bool = param(
        True,
        "draw the samples with replacement; false: d distinct sites, or every candidate where there are fewer "
        "(d >= the candidates: the shortest reported queue of all)",
    )


def traffic(params: PowerOfDParams, n: int, degree: float) -> Traffic:
    reports = n * degree / params.period if params.d and n > 1 else 0.0
    return Traffic(
        per_job=1.0 if params.d else 0.0,
        per_time=reports,
        round_every=params.period,
        first_round=0.0,
        what="load reports to the neighbors every period, and at most one transfer a job",
    )


def summary(facts: RunFacts) -> dict[str, Any]:
    moved = facts.jobs["exec_site"] != facts.jobs["submit_site"]
    return {"name": "power_of_d", "d": facts.params.d, "period": facts.params.period, "jobs_moved": int(moved.sum())}


PROTOCOL = Protocol(
    "power_of_d",
    PowerOfDAgent,
    "each new job goes to the least loaded of its site and d sampled neighbors, by loads reported every period",
    params=PowerOfDParams,
    messages=(REPORT,),
    summary=summary,
    traffic=traffic,
    capabilities=frozenset({"periodic", "topologies", "faults"}),
)
