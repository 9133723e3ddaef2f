"""``molba``: MOLBA and ILBA planned over messages (thesis ch. 5), and its summary."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.brokers.agent import GridInfo
from gridemu.brokers.molba.agent import MESSAGES, MolbaAgent, plan_time
from gridemu.brokers.molba.aggregates import MESSAGES as AGGREGATE_MESSAGES
from gridemu.brokers.molba.aggregates import MolbaAggregatesAgent
from gridemu.brokers.molba.algorithm import (
    MACHINES,
    guarantee_violations,
    instance_for,
    later_than_alone,
    local_schedule,
    lower_bound,
    molba_plan,
    org_makespans,
)
from gridemu.brokers.molba.list_scheduling import Job, Placement, makespan
from gridemu.brokers.molba.negotiated import MESSAGES as NEGOTIATED_MESSAGES
from gridemu.brokers.molba.negotiated import MolbaNegotiatedAgent, negotiated_time
from gridemu.brokers.params import Params, param
from gridemu.brokers.protocol import (
    GanttCompare,
    Protocol,
    Report,
    RunFacts,
    RunSize,
    ScenarioFacts,
    Traffic,
    Work,
    require_identical_processors,
    require_one_site_per_org,
    require_scheduler,
)
from gridemu.model.checks import check_number
from gridemu.model.errors import InvariantError, ScenarioError

MODES = ("replicated", "aggregates", "negotiated")


def check_alpha(key: str, alpha: Any, scenario: ScenarioFacts) -> str | float:
    if alpha == "meta":
        return alpha
    alpha = check_number(key, alpha)
    if not 1 <= alpha < math.inf:
        raise ScenarioError(key, f'must be "meta" or a number >= 1 (MOLBA(α), thesis 5.5.2), got {alpha!r}')
    return alpha


@dataclass(frozen=True)
class MolbaParams(Params):
    """Settings of the thesis ch. 5 protocol."""

    alpha: str | float = param(
        "meta",
        '"meta": MOLBA(2), else MOLBA(3), as section 5.6.1; or a number >= 1 for MOLBA(α)',
        check=check_alpha,
        kind='"meta" or number',
    )
    ilba: bool = param(True, "balance MOLBA's schedule with ILBA (Algorithm 5.4)")
    retries: int = param(1, "other hosts a refused request tries before the job runs at home", nonneg=True)
    mode: str = param(
        "replicated",
        "replicated: every site broadcasts its jobs and computes the same central plan; aggregates: sites publish "
        "four numbers each to an aggregator, which shares the hosts among the overloaded sites, and hosts grant "
        "requested slots on their own books (brokers/molba/aggregates.py); negotiated: sites offer their loads, "
        "overloaded sites request hosts for their late jobs and hosts grant or refuse on their own books, then ILBA "
        "the same way on the machines' makespans; no site computes the global plan (brokers/molba/negotiated.py)",
        choices=MODES,
    )
    machines: str = param(
        "all",
        "which organizations bring their machine: all (section 5.1's model) or owners (only those that own a job: the "
        "reading of Tables 5.1 and 5.2); a site that owns no job then "
        "stays in the run but hosts nothing and counts in no bound",
        choices=MACHINES,
    )

    def validate(self, scenario: ScenarioFacts) -> MolbaParams:
        require_scheduler("molba", scenario, "planned", "runs the schedule it plans")
        require_identical_processors("molba", scenario, " everywhere (thesis 5.1)")
        require_one_site_per_org("molba", scenario, " (organization k owns machine k)")
        wl = scenario.workload
        kind = wl.get("kind", "poisson")
        if kind not in ("rigid", "jobs"):
            raise ScenarioError(
                "workload.kind",
                f"the molba protocol schedules off-line instances: rigid or jobs (all released at 0), got {kind!r}",
            )
        for i, row in enumerate(wl.get("list", []) if kind == "jobs" else []):
            if isinstance(row, dict) and row.get("release", 0) != 0:
                raise ScenarioError(
                    f"workload.list[{i}].release",
                    "the molba protocol's model has no release dates (thesis 5.1): give 0",
                )
        return self


def instance(jobs: pd.DataFrame | np.ndarray, site_procs: list[int], speed: float = 1.0) -> list[Job]:
    """The chapter-5 instance of a run's submitted jobs (a job array or table, e.g. what the
    rigid workloads of ``scenarios.rigid`` draw): organization k owns machine k, a job's
    length is its size over the processors' ``speed``. ``site_procs`` is not read."""
    return [
        Job(int(i), int(s), float(size) / speed, int(q))
        for i, s, size, q in zip(jobs["job_id"], jobs["submit_site"], jobs["size"], jobs["procs"])
    ]


def molba_summary(
    submitted: np.ndarray, table: pd.DataFrame, site_procs: list[int], speed: float, params: MolbaParams, t0: float
) -> dict[str, Any]:
    """The ``protocol`` section of a molba run's summary, and its guarantee checks.

    The reference (``brokers.molba.algorithm``) runs on the whole instance, with the
    machines ``protocol.machines`` gives it (``instance_for``): ``lower_bound``
    max(W̄, p_max), the makespans and scores s = makespan / lower bound (section 5.6.1) of
    local, MOLBA and MOLBA+ILBA, α and O'. ``makespan`` and ``score`` are the executed
    schedule's (end times minus ``plan_time`` T0). Raises InvariantError, naming the
    organization or job, if the executed schedule breaks a guarantee or runs a job on a site
    that brought no machine.
    """
    reading = params.machines
    jobs, machines, orgs = instance_for(reading, instance(submitted, site_procs, speed), list(site_procs))
    index = {k: i for i, k in enumerate(orgs)}  # site id -> machine of the instance
    alpha = params.alpha
    # The reference, computed here on the whole instance: never the agents' own plans.
    plan = molba_plan(
        tuple(sorted(jobs, key=lambda j: j.id)), tuple(machines), None if alpha == "meta" else float(alpha), params.ilba
    )
    lb = lower_bound(jobs, machines)
    out: dict[str, Any] = {
        "name": "molba",
        "plan_time": t0,
        "machines": reading,
        "machines_in_plan": len(machines),
        "alpha": plan.alpha,
        "overloaded": len(plan.run.overloaded),
        "jobs_moved_by_molba": len(plan.run.moved),
        "lower_bound": lb,
        "makespan_local": makespan(plan.local, jobs),
        "makespan_molba": makespan(plan.molba, jobs),
        "makespan_molba_ilba": makespan(plan.final, jobs) if plan.balanced else None,
        "makespan_reference": makespan(plan.final, jobs),
    }
    for name in ("local", "molba", "molba_ilba", "reference"):
        c = out[f"makespan_{name}"]
        out[f"score_{name}"] = c / lb if c is not None and lb > 0 else None
    finished = table["end"].notna().all()
    out["makespan"] = float(table["end"].max() - t0) if finished else None
    out["score"] = out["makespan"] / lb if finished and lb > 0 else None
    out["jobs_migrated"] = int((table["exec_site"] != table["submit_site"]).sum())
    if finished:
        stray = table[~table["exec_site"].isin(list(orgs))]
        if len(stray):
            r = stray.iloc[0]
            raise InvariantError(
                f"job {int(r.job_id)}: ran on site {int(r.exec_site)}, which owns no job and so brings no machine "
                f"(protocol.machines = {reading!r})"
            )
        executed = [
            Placement(int(r.job_id), index[int(r.exec_site)], float(r.start) - t0, ())
            for r in table[["job_id", "exec_site", "start"]].itertuples()
        ]
        if params.mode == "replicated":
            problems = guarantee_violations(plan, jobs, machines, executed)
        else:
            # The decentralized mode promises only that no organization ends later than alone;
            # its makespan against MOLBA's bound is a figure, not a guarantee.
            problems = later_than_alone(plan, jobs, machines, executed)
            bound = (plan.alpha + 1) * lb
            out["within_molba_bound"] = bool(out["makespan"] <= bound * (1 + 1e-9))
            ref = out["makespan_reference"]
            out["gap_to_reference"] = out["makespan"] / ref - 1 if ref > 0 else 0.0
        if problems:
            raise InvariantError(f"guarantee: {problems[0]} ({len(problems)} broken)")
        local = [0.0] * len(site_procs)  # by site: one that owns no job ends at 0 alone
        for i, c in enumerate(org_makespans(plan.local, jobs, machines)):
            local[orgs[i]] = c
        out["org_makespans_local"] = local
    return out


def local_table(jobs: pd.DataFrame, machines: list[int], t0: float) -> pd.DataFrame:
    """A molba run's jobs as the local schedule runs them (at home, from T0): the left half
    of ``gridemu report --gantt``. Lengths are read back from the executed times. The
    processors the executed run recorded (``proc``, ``proc_set``) are not the local
    schedule's: left out, so the chart places each job on the lowest free ones, as the
    local schedule's list scheduling does."""
    length = (jobs["end"] - jobs["start"]).to_numpy()
    inst = [
        Job(int(i), int(s), float(p), int(q))
        for i, s, p, q in zip(jobs["job_id"], jobs["submit_site"], length, jobs["procs"])
    ]
    start = {pl.job: pl.start for pl in local_schedule(inst, machines)}
    out = jobs.drop(columns=["proc", "proc_set"], errors="ignore")
    out["exec_site"] = out["submit_site"]
    out["start"] = t0 + out["job_id"].map(start)
    out["end"] = out["start"] + length
    return out


def start_time(params: MolbaParams, max_latency: float) -> float:
    """T0, when the schedule starts: after the negotiation of the run's mode."""
    if params.mode == "negotiated":
        return negotiated_time(max_latency, params.retries, params.ilba)
    return plan_time(max_latency, params.retries)


def summary(facts: RunFacts) -> dict[str, Any]:
    sites = facts.scenario.sites
    t0 = start_time(facts.params, facts.scenario.max_latency)
    return molba_summary(facts.submitted, facts.jobs, [s.procs for s in sites], sites[0].speeds[0], facts.params, t0)


def gantt_compare(jobs: pd.DataFrame, sites: pd.DataFrame, proto: dict[str, Any]) -> GanttCompare:
    """The local schedule (every job at home, from T0) beside the executed MOLBA(+ILBA) one."""
    local = local_table(jobs, sites.sort_values("site_id")["procs"].tolist(), proto["plan_time"])
    name = "MOLBA+ILBA" if proto["makespan_molba_ilba"] is not None else "MOLBA"
    return GanttCompare(
        f"local (makespan {proto['makespan_local']:g})", local, f"{name}, executed (makespan {proto['makespan']:g})"
    )


AGENTS = {"replicated": MolbaAgent, "aggregates": MolbaAggregatesAgent, "negotiated": MolbaNegotiatedAgent}


def agent(site, grid: GridInfo, params: MolbaParams) -> MolbaAgent:
    return AGENTS[params.mode](site, grid, params)


def traffic(params: MolbaParams, n: int, degree: float) -> Traffic:
    if params.mode == "aggregates":
        return Traffic(
            per_job=0.0, what=f"{2 * (n - 1):,} to aggregate the loads, then 3 per job an overloaded site offers"
        )
    if params.mode == "negotiated":
        return Traffic(
            per_job=3.0 + 2 * params.retries,
            what=f"{(2 if params.ilba else 1) * n * (n - 1):,} offers (loads, spans), then at most an ask, an "
            "answer and a transfer per job a site offers, two more per retry",
        )
    return Traffic(per_job=n - 1, what="each job offered to every other site, not requests and grants")


def work(params: MolbaParams, size: RunSize) -> Work:
    """MOLBA's and ILBA's plans: ILBA gives each job in turn to a backfill list scheduling
    over the machines, which lists every job already placed and every machine's events, so a
    plan costs about n(n + N) for n jobs on N machines (measured: twice the jobs, 4.5 times
    the time). In mode replicated every site plans, and the summary plans once more (the
    reference); in the other modes only the summary does."""
    n, sites = size.jobs, size.sites
    plans = sites + 1 if params.mode == "replicated" else 1
    return Work(plans * n * (n + sites), f"{plans:,} plans of {n:,.0f} jobs on {sites:,} machines")


PROTOCOL = Protocol(
    "molba",
    agent,
    "MOLBA(α) and ILBA planned over messages: replicated at every site, from published aggregates, or negotiated "
    "by requests that hosts grant or refuse (mode)",
    params=MolbaParams,
    messages=MESSAGES + AGGREGATE_MESSAGES + NEGOTIATED_MESSAGES,
    summary=summary,
    traffic=traffic,
    work=work,
    report=Report(gantt_compare=gantt_compare),
    capabilities=frozenset({"starts_jobs", "widths"}),
)

if TYPE_CHECKING:  # pandas only for annotations: shard actors start without it
    import pandas as pd
