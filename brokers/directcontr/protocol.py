"""The ``protocol`` section of a ``directcontr`` run: fairness as the Shapley papers measure it.

Δψ/p_tot ([S] section 5.1): the L1 distance at t_end between the organizations' ψ_sp and
those of REF's ideally fair schedule ψ*, over p_tot, the unit parts REF completes by t_end.
The decentralized run's figure is beside those of the centralized algorithms listed in
``protocol.compare``, run on the same jobs and processors with
``brokers.directcontr.policies.simulate`` (REF's subcoalitions level by level, on Ray
when the run used the Ray backend): a reference computed here from the whole instance, never
through the agents.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.directcontr.agent import MESSAGES, DirectContrAgent
from gridemu.brokers.directcontr.policies import POLICIES as SHAPLEY_POLICIES
from gridemu.brokers.directcontr.policies import READINGS, simulate
from gridemu.brokers.directcontr.sampled import MESSAGES as SAMPLED_MESSAGES
from gridemu.brokers.directcontr.sampled import DirectContrSampledAgent
from gridemu.brokers.directcontr.shapley_value import fairness, psi_sp
from gridemu.brokers.directcontr.simulation import SJob, p_tot
from gridemu.brokers.params import Params, param
from gridemu.brokers.protocol import (
    Protocol,
    RunFacts,
    RunSize,
    ScenarioFacts,
    Traffic,
    Work,
    require_full_graph_when_replicated,
    require_identical_processors,
    require_one_site_per_org,
    require_scheduler,
)
from gridemu.model.checks import check_integral, check_sequential
from gridemu.model.errors import ScenarioError

MODES = ("replicated", "sampled")


def check_compare(key: str, compare: Any, scenario: ScenarioFacts) -> tuple[str, ...]:
    if not isinstance(compare, list) or any(p not in SHAPLEY_POLICIES for p in compare):
        raise ScenarioError(key, f"a list of algorithms among {', '.join(SHAPLEY_POLICIES)}, got {compare!r}")
    if "ref" in compare and len(scenario.sites) > 10:
        raise ScenarioError(
            key,
            "REF is exponential and takes at most 10 organizations, here "
            f"{len(scenario.sites)}: compare rand or directcontr instead",
        )
    return tuple(compare)


@dataclass(frozen=True)
class DirectContrParams(Params):
    """DIRECTCONTR (Shapley-fair scheduling) across sites: one site per organization, the
    ``planned`` scheduler (the protocol starts jobs), a finite horizon (t_end, where fairness
    is measured)."""

    mode: str = param(
        "replicated",
        "replicated: every site takes the centralized step for every instant, from broadcasts (the reference); "
        "sampled: each site gives its free processors to the largest phi - psi among its own and `choices` sampled "
        "sites' (brokers/directcontr/sampled.py)",
        choices=MODES,
    )
    choices: int = param(2, "sites a site samples in mode sampled (d)", nonneg=True, most=1000)
    compare: tuple[str, ...] | None = param(
        None,
        "the centralized algorithms also run on the same jobs for the summary (default: all; ref, the baseline of "
        "Δψ/p_tot, takes at most 10 organizations and is left out above)",
        check=check_compare,
        kind="list of names",
    )
    # RAND(N) simulates N random orders of the coalitions per window: past 10^6 a run would not end.
    samples: int = param(10, "RAND's N: random orders of the coalitions per window", positive=True, most=1_000_000)
    lines_15_16: str = param(
        "prose",
        "DIRECTCONTR's reading of [S] Algorithm 1 lines 15-16, in the sites' steps and the summary's DIRECTCONTR: "
        "prose: ψ[own(J)], φ[own(m)] += ½d(d+1), as the text says (ψ is ψ_sp); literal: as printed, "
        "φ[own(J)], ψ[own(m)] (mode replicated only; docs/results/shapley.md)",
        choices=READINGS,
    )

    def validate(self, scenario: ScenarioFacts) -> DirectContrParams:
        require_full_graph_when_replicated("directcontr", scenario, self.mode)
        require_one_site_per_org("directcontr", scenario)
        require_scheduler("directcontr", scenario, "planned", "starts jobs itself")
        require_identical_processors("directcontr", scenario, " (the papers' model)")
        if self.lines_15_16 == "literal" and self.mode == "sampled":
            # The literal reading's counters depend on the gaps between Algorithm 1's events,
            # which only the replicated step has; the sampled key is ψ_sp on the real clock.
            raise ScenarioError(
                "protocol.lines_15_16",
                'the literal reading is a reading of the replicated step: it needs mode = "replicated", not "sampled"',
            )
        if not math.isfinite(scenario.data["run"]["horizon"]):
            raise ScenarioError("run.horizon", "give t_end, the time at which fairness is measured (Δψ/p_tot)")
        if self.compare is None:
            return replace(self, compare=tuple(p for p in SHAPLEY_POLICIES if p != "ref" or len(scenario.sites) <= 10))
        return self


def check_jobs(params: DirectContrParams, jobs: np.ndarray, scenario: ScenarioFacts) -> None:
    """The papers' jobs: sequential, released and sized in integral time units."""
    check_integral(jobs, ("release", "size"), "workload", "the papers' time is integral")
    check_sequential(jobs, "the directcontr protocol")


def grid_info(scenario: ScenarioFacts) -> dict[str, Any]:
    # Every site maps the grid's processors to organizations: their counts (shape, not state).
    return {"procs": tuple(s.procs for s in scenario.sites)}


def instance(submitted: np.ndarray) -> list[SJob]:
    return [
        SJob(int(i), int(o), int(round(r)), int(round(s)))
        for i, o, r, s in zip(submitted["job_id"], submitted["submit_site"], submitted["release"], submitted["size"])
    ]


def executed_psi(table: pd.DataFrame, k: int, t_end: float) -> list[float]:
    """ψ_sp of every organization at t_end in the run's schedule (jobs by their submit site)."""
    out = [0.0] * k
    started = table[table["start"].notna() & (table["start"] <= t_end)]
    for u, part in started.groupby("submit_site"):
        end = part["end"].to_numpy()
        p = np.where(np.isnan(end), np.nan, end - part["start"].to_numpy())
        out[int(u)] = psi_sp([(s, None if q != q else q) for s, q in zip(part["start"], p)], t_end)
    return out


def summary(facts: RunFacts) -> dict[str, Any]:
    """Δψ/p_tot of the run and of the centralized algorithms of ``protocol.compare``, each run
    here on the whole instance (never through the agents)."""
    proto = facts.params
    run = facts.scenario.data["run"]
    t_end = int(facts.horizon)
    seed = int(run["seed"])
    table = facts.jobs
    procs = [s.procs for s in facts.scenario.sites]
    jobs = instance(facts.submitted)
    k = len(procs)
    level_map = map
    if run["backend"] == "ray" and "ref" in proto.compare:
        from gridemu.brokers.directcontr.parallel import ray_level_map

        level_map = ray_level_map
    reading = proto.lines_15_16
    results = {
        p: simulate(jobs, procs, p, t_end, seed=seed, samples=proto.samples, level_map=level_map, lines_15_16=reading)
        for p in proto.compare
    }
    psi = executed_psi(table, k, t_end)
    out: dict[str, Any] = {"name": "directcontr", "t_end": t_end, "psi": psi}
    # The fair schedule every Δψ/p_tot is measured against: REF (exact Shapley values, up to
    # 10 organizations by default), or RAND(N) (sampled permutations) where REF is out of reach.
    base = "ref" if "ref" in results else ("rand" if "rand" in results else None)
    out["reference"] = base
    if base is not None:
        ref = results[base]
        ptot = p_tot(ref, jobs, t_end)
        out["p_tot"] = ptot
        out["psi_ref"] = list(ref.psi)
        out["fairness"] = float(fairness(psi, ref.psi, ptot)) if ptot else 0.0
        for p, r in results.items():
            out[f"fairness_{p}"] = fairness(r.psi, ref.psi, ptot) if ptot else 0.0
    if proto.mode == "sampled":  # its own decisions: no centralized schedule to match
        if "directcontr" in results:
            out["psi_central_directcontr"] = list(results["directcontr"].psi)
        return out
    central = results.get("directcontr") or simulate(jobs, procs, "directcontr", t_end, seed=seed, lines_15_16=reading)
    out["psi_central_directcontr"] = list(central.psi)
    index = simulate(jobs, procs, "directcontr", t_end, gamma="index", lines_15_16=reading)
    if base is not None and out["p_tot"]:
        out["fairness_directcontr_index"] = fairness(index.psi, results[base].psi, out["p_tot"])
    starts = dict(zip(table["job_id"].tolist(), table["start"].tolist()))
    # The protocol's decisions are the centralized ones with processors taken by number; its
    # starts lag on the real clock (module doc of brokers.directcontr.agent).
    diffs = [abs(starts[j] - s) for j, s in index.start.items() if starts.get(j) == starts.get(j)]
    missing = [j for j in index.start if starts.get(j) != starts.get(j)]
    out["max_start_diff_vs_central_index_order"] = float(max(diffs)) if diffs else 0.0
    out["jobs_started_only_by_central"] = len(missing)
    return out


def agent(site, grid: GridInfo, params: DirectContrParams) -> Agent:
    return (DirectContrSampledAgent if params.mode == "sampled" else DirectContrAgent)(site, grid, params)


def traffic(params: DirectContrParams, n: int, degree: float) -> Traffic:
    if params.mode == "sampled":
        d = params.choices
        return Traffic(
            per_job=3 * d + 3, what="at most a probing round and a need, 2d and d, and ask, transfer and finished"
        )
    return Traffic(per_job=2 * (n - 1), what="release and completion broadcasts, not requests")


def work(params: DirectContrParams, size: RunSize) -> Work:
    """The summary's centralized schedules and, in mode replicated, every site's step. A
    schedule ranks the k organizations at each of its about 2n instants; REF schedules every
    coalition (2^k of them: one organization more, twice the time), the others one each
    (RAND's orders weigh coalitions, they schedule none); in mode replicated each of the k
    sites takes the central step at every instant, and the summary replays it twice."""
    n, k = size.jobs, size.sites
    schedules = sum(2.0**k if p == "ref" else 1.0 for p in params.compare or ())
    if params.mode == "replicated":
        schedules += 2 + k
    return Work(schedules * 2 * n * k, f"{schedules:,.0f} schedules of {n:,.0f} jobs over {k:,} organizations")


PROTOCOL = Protocol(
    "directcontr",
    agent,
    "Shapley-fair scheduling: every site takes DIRECTCONTR's step "
    "from broadcasts, or decides from d sampled sites' keys (mode)",
    params=DirectContrParams,
    messages=MESSAGES + SAMPLED_MESSAGES,
    check_jobs=check_jobs,
    grid_info=grid_info,
    summary=summary,
    traffic=traffic,
    work=work,
    capabilities=frozenset({"starts_jobs", "topologies", "widths"}),
)

if TYPE_CHECKING:  # pandas only for annotations: shard actors start without it
    import pandas as pd
