"""``gm``: online greedy migration (migration-fairness paper), and its summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.brokers.agent import GridInfo
from gridemu.brokers.gm.agent import MESSAGES, GmAgent
from gridemu.brokers.gm.algorithm import simulate
from gridemu.brokers.gm.metrics import instance
from gridemu.brokers.gm.sampled import MESSAGES as SAMPLED_MESSAGES
from gridemu.brokers.gm.sampled import GmSampledAgent
from gridemu.brokers.metrics import fairness_summary
from gridemu.brokers.params import Params, param
from gridemu.brokers.protocol import (
    Protocol,
    RunFacts,
    ScenarioFacts,
    Summary,
    Traffic,
    require_full_graph_when_replicated,
    require_scheduler,
)
from gridemu.model.checks import check_sequential
from gridemu.model.errors import InvariantError, ScenarioError

MODES = ("replicated", "sampled")
#: The centralized reference (simulate) sorts the active jobs at every event and records
#: every migration: past this many jobs x processors it would take longer than the run
#: (256 sites of 4 processors, 33,000 jobs: 103 s and 4.6 GB, against 6 s for the run).
REFERENCE_PAIRS = 5e6


@dataclass(frozen=True)
class GmParams(Params):
    """Settings of greedy migration."""

    migration_cost: float = param(0.0, "time a moved job spends before it progresses again", nonneg=True, finite=True)
    remote_cost: float = param(
        0.0, "added when a job moves between sites (e.g. its memory over the link bandwidth)", nonneg=True, finite=True
    )
    integral: bool = param(
        False, "the paper's assumption that every release and completion happens at an integral time, checked"
    )
    mode: str = param(
        "replicated",
        "replicated: every site ranks every job of the grid from broadcasts (the centralized algorithm, replayed); "
        "sampled: each site runs GM on its own processors and places and "
        "steals jobs by asking `samples` sites (brokers/gm/sampled.py)",
        choices=MODES,
    )
    samples: int = param(2, "sites asked per decision in mode sampled (d)", nonneg=True, most=1000)

    def validate(self, scenario: ScenarioFacts) -> GmParams:
        require_full_graph_when_replicated("gm", scenario, self.mode)
        require_scheduler("gm", scenario, "planned", "starts jobs itself")
        return self


def check_jobs(params: GmParams, jobs: np.ndarray, scenario: ScenarioFacts) -> None:
    """GM runs one-processor jobs (the paper's model), released at integral times if asked."""
    check_sequential(jobs, "the gm protocol")
    if params.integral:
        bad = np.flatnonzero(jobs["release"] != np.round(jobs["release"]))
        if len(bad):
            j = jobs[bad[0]]
            raise ScenarioError(
                "protocol.integral",
                f"job {int(j['job_id'])} is released at t={float(j['release'])}, not an integral time",
            )


def grid_info(scenario: ScenarioFacts) -> dict[str, Any]:
    # Greedy migration ranks every processor of the grid: their speeds are shape, not state.
    return {"site_speeds": tuple(tuple(s.speeds) for s in scenario.sites)}


def gm_summary(
    submitted: np.ndarray, table: pd.DataFrame, pieces: pd.DataFrame, site_speeds: list[list[float]], params: GmParams
) -> dict[str, Any]:
    """The ``protocol`` section of a gm run: moves, and the run against the centralized reference.

    ``reference_max_diff`` is the largest |d_j − d_j(reference)| against
    :func:`brokers.gm.algorithm.simulate` with the same costs (0 up to latency effects);
    ``penalty_mean`` and ``penalty_max`` compare with the zero-cost reference: what
    migration costs (and latency) add to completion times. With ``integral`` on, a
    completion at a non-integral time stops the run naming the job.
    """
    jobs = instance(submitted)
    speeds = [float(v) for sp in site_speeds for v in sp]
    sites = [k for k, sp in enumerate(site_speeds) for _ in sp]
    end = table.set_index("job_id")["end"]
    done = end.notna().all()
    out: dict[str, Any] = {
        "name": "gm",
        "migrations": int(table["migrations"].sum()),
        "preemptions": int((table["fragments"] - 1).sum()) if "fragments" in table else 0,
        "pieces": int(len(pieces)),
    }
    if params.integral and done:
        bad = np.flatnonzero(np.abs(end.to_numpy() - np.round(end.to_numpy())) > 1e-9)
        if len(bad):
            raise InvariantError(f"integral times: job {int(end.index[bad[0]])} completes at t={end.iloc[bad[0]]}")
    if done and len(jobs) * len(speeds) > REFERENCE_PAIRS:
        out["reference_skipped"] = (
            f"{len(jobs):,} jobs x {len(speeds):,} processors is more than {REFERENCE_PAIRS:.0e} pairs"
        )
    elif done:
        costs = {"migration_cost": params.migration_cost, "remote_cost": params.remote_cost}
        ref = simulate(jobs, speeds, "gm", sites=sites, **costs).completion
        d = end.reindex([j.id for j in jobs]).to_numpy()
        out["reference_max_diff"] = float(np.max(np.abs(d - np.array([ref[j.id] for j in jobs])))) if jobs else 0.0
        free = simulate(jobs, speeds, "gm", sites=sites).completion if any(costs.values()) else ref
        penalty = d - np.array([free[j.id] for j in jobs])
        out["penalty_mean"] = float(penalty.mean()) if jobs else 0.0
        out["penalty_max"] = float(penalty.max()) if jobs else 0.0
    return out


def agent(site, grid: GridInfo, params: GmParams) -> GmAgent:
    return (GmSampledAgent if params.mode == "sampled" else GmAgent)(site, grid, params)


def traffic(params: GmParams, n: int, degree: float) -> Traffic:
    if params.mode == "sampled":
        return Traffic(
            per_job=3 * params.samples, what="at most probes, answers and steals, d each per job; not the moves"
        )
    return Traffic(per_job=2 * (n - 1), what="arrival and completion broadcasts, not migrations")


def summary(facts: RunFacts) -> Summary:
    """The protocol section, and the paper's EF figures unless ``metrics.fairness = false``."""
    speeds = [list(s.speeds) for s in facts.scenario.sites]
    section = gm_summary(facts.submitted, facts.jobs, facts.pieces, speeds, facts.params)
    wanted = facts.scenario.data["metrics"].get("fairness") is not False
    return Summary(section, sections={"fairness": fairness_summary(facts.submitted, facts.jobs)} if wanted else {})


PROTOCOL = Protocol(
    "gm",
    agent,
    "online greedy migration: replicated from broadcasts, or each site with its own and d sampled sites' (mode)",
    params=GmParams,
    messages=MESSAGES + SAMPLED_MESSAGES,
    check_jobs=check_jobs,
    grid_info=grid_info,
    summary=summary,
    traffic=traffic,
    capabilities=frozenset({"starts_jobs", "topologies", "widths"}),
)

if TYPE_CHECKING:  # pandas only for annotations: shard actors start without it
    import pandas as pd
