"""``scheduling_game``: the grid scheduling game (Definition 3.1) on dedicated resources (thesis ch. 3), its checks and
its summary. The agent is ``brokers/scheduling_game/agent.py``; the algorithms are
``brokers/scheduling_game/`` (dedicated, equitable, search, game).

The summary scores every round on its own, from the submitted jobs and the job table, not
from what the agents told each other: the round's instance, MJF, SPT and the proposal σ*
computed centrally; each organization's executed C_k (completion times counted from the
instant S the machines start) and payoff u_k = C_k(MJF) - C_k; which move each machine
played, read from the order its jobs started in; and, for tit-for-tat and grim, the move the
strategy had to play given the promises broken in earlier rounds (again from the job table).
A machine that ran an order its strategy does not allow stops the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gridemu.brokers.params import Params, param
from gridemu.brokers.protocol import (
    Protocol,
    Report,
    RunFacts,
    ScenarioFacts,
    Traffic,
    require_one_site_per_org,
    require_scheduler,
)
from gridemu.brokers.scheduling_game.agent import (
    MESSAGES,
    START_DELAYS,
    DedicatedAgent,
    round_index,
    round_release,
    start_time,
)
from gridemu.brokers.scheduling_game.dedicated import machine_sums, mjf_grid, spt_grid
from gridemu.brokers.scheduling_game.game import (
    MOVES,
    PICKS,
    PROPOSALS,
    STRATEGIES,
    Listing,
    broke_promise,
    instance_of,
    next_move,
    owner_sequence,
    propose,
)
from gridemu.model.checks import check_sequential
from gridemu.model.errors import InvariantError, ScenarioError

#: EW and AEW walks stop after this many steps by default (as docs/results/dedicated_tables.py
#: caps them on the *large* data set): the walk as printed may not end for millions of steps.
MAX_STEPS = 50_000
#: Per-round rows kept in summary.json (rounds × organizations); longer runs keep the totals.
MAX_ROUND_ROWS = 5000


@dataclass(frozen=True)
class SchedulingGameParams(Params):
    """The game's settings; ``period`` and ``rounds`` are the workload's (``check_jobs``)."""

    strategy: tuple[str, ...] = param(
        "follow",
        "per site: follow (the proposal), mjf (My Jobs First), spt, tit-for-tat (MJF the round after one in which a "
        "machine ran its jobs later than promised), grim (MJF for ever after)",
        choices=STRATEGIES,
        per_site=True,
    )
    proposal: str = param(
        "aew",
        "the grid scheduler's set: aew (Adjusted Equitable Walk, u_k >= 0), dyn (DYN's exact acceptable equitable "
        "set), ew (Equitable Walk on C_k, unconstrained), spt",
        choices=PROPOSALS,
    )
    pick: str = param(
        "min-max", "which solution: min-max (largest least gain; least max C_k for ew) or min-sum", choices=PICKS
    )
    max_steps: int = param(MAX_STEPS, "the most steps of an EW or AEW walk", positive=True, most=1e12)
    coordinator: int = param(0, "the site of the grid scheduler", nonneg=True)
    period: float = param(math.inf, "P, the time between rounds: the second release time", derived=True)
    rounds: int = param(0, "rounds in the workload", derived=True)

    def validate(self, scenario: ScenarioFacts) -> SchedulingGameParams:
        n = len(scenario.sites)
        if self.coordinator >= n:
            raise ScenarioError(
                "protocol.coordinator", f"must name a site by its index, 0 to {n - 1}, got {self.coordinator}"
            )
        require_scheduler(
            "scheduling_game", scenario, "planned", "runs each machine's jobs in the order its strategy chooses"
        )
        require_one_site_per_org("scheduling_game", scenario, " (organization k owns machine k)")
        if any(s.procs != 1 or s.speeds[0] != 1.0 for s in scenario.sites):
            raise ScenarioError(
                "sites.procs",
                "the scheduling_game protocol's machines have one "
                "processor of speed 1 (thesis 3.1): sizes are run times",
            )
        kind = scenario.workload.get("kind", "poisson")
        if kind not in ("dedicated", "jobs", "csv"):
            raise ScenarioError(
                "workload.kind",
                'the scheduling_game protocol runs dedicated jobs: kind '
                f'"dedicated", or a job list with a target column, got {kind!r}',
            )
        return self


def check_jobs(params: SchedulingGameParams, jobs: np.ndarray, scenario: ScenarioFacts) -> SchedulingGameParams:
    """Every job names its machine; rounds start at 0, P, 2P, ... (all of a round's jobs
    released together); a round's busiest machine finishes with time to spare for the
    messages before the next round (load + 4 L <= P). Returns the parameters with
    ``period`` and ``rounds``."""
    n = len(scenario.sites)
    check_sequential(jobs, "the scheduling_game protocol")
    bad = np.flatnonzero((jobs["target_site"] < 0) | (jobs["target_site"] >= n))
    if len(bad):
        j = jobs[bad[0]]
        raise ScenarioError(
            "workload",
            f"job {int(j['job_id'])} names no target site: every job "
            "of the scheduling_game protocol must (a target column)",
        )
    releases = np.unique(jobs["release"])
    period = float(releases[1]) if len(releases) > 1 else math.inf
    rounds = round_index(jobs["release"], period)
    on_time = np.array([round_release(r, period) for r in range(int(rounds.max()) + 1)])[rounds]
    off = np.flatnonzero(np.abs(on_time - jobs["release"]) > 1e-9 * np.maximum(1.0, jobs["release"]))
    if releases[0] != 0.0 or len(off):
        j = jobs[off[0]] if len(off) else jobs[np.argmin(jobs["release"])]
        raise ScenarioError(
            "workload",
            f"job {int(j['job_id'])} is released at {float(j['release']):g}: the scheduling_game protocol plays rounds "
            f"released together at 0, P, 2P, ... (P = {period:g}, the second release time)",
        )
    load = np.zeros((int(rounds.max()) + 1, n))
    np.add.at(load, (rounds, jobs["target_site"]), jobs["size"])
    need = load.max() + (START_DELAYS + 1) * scenario.max_latency
    if need > period:
        r, l = np.unravel_index(int(np.argmax(load)), load.shape)
        raise ScenarioError(
            "workload.period",
            f"round {r}'s machine {scenario.sites[l].name} runs {load[r, l]:g} time units of jobs, and the messages "
            f"take {(START_DELAYS + 1) * scenario.max_latency:g} more: "
            f"rounds must be at least {need:g} apart, they are {period:g}",
        )
    return replace(params, period=period, rounds=int(rounds.max()) + 1)


def summary(facts: RunFacts) -> dict[str, Any]:
    params, sites = facts.params, facts.scenario.sites
    n, period, lat = len(sites), params.period, facts.scenario.max_latency
    sub = facts.submitted
    table = facts.jobs.set_index("job_id").loc[sub["job_id"]]
    if (table["exec_site"].to_numpy() != sub["target_site"]).any():
        j = int(sub["job_id"][np.flatnonzero(table["exec_site"].to_numpy() != sub["target_site"])[0]])
        raise InvariantError(f"job {j} ran on site {int(table.loc[j, 'exec_site'])}, not on its target")
    start, end = table["start"].to_numpy(dtype=float), table["end"].to_numpy(dtype=float)
    rounds = round_index(sub["release"], period)
    history: list[list[int]] = [[] for _ in range(n)]
    rows, totals = [], {"mjf": 0.0, "spt": 0.0, "proposal": 0.0, "executed": 0.0}
    played = [{m: 0 for m in MOVES} for _ in range(n)]
    for r in range(params.rounds):
        mask = rounds == r
        if np.isnan(end[mask]).any():
            break  # the horizon cut this round: it is not scored
        ids, owners, targets, sizes = (
            sub["job_id"][mask],
            sub["owner"][mask],
            sub["target_site"][mask],
            sub["size"][mask],
        )
        listings = [
            [Listing(int(i), int(k), float(p)) for i, k, p, t in zip(ids, owners, sizes, targets) if t == l]
            for l in range(n)
        ]
        instance, _ = instance_of(listings)
        grids = {
            "follow": propose(instance, params.proposal, params.pick, params.max_steps),
            "mjf": mjf_grid(instance),
            "spt": spt_grid(instance),
        }
        s0 = start_time(round_release(r, period), lat)
        c_exec = np.zeros((n, n))  # [k, l]
        np.add.at(c_exec, (owners, targets), end[mask] - s0)
        c_prop, c_mjf, c_spt = (
            np.array([machine_sums(instance, l, grids[m][l]) for l in range(n)], dtype=float).T
            for m in ("follow", "mjf", "spt")
        )
        moves = []
        for l in range(n):
            on = targets == l
            ran = owner_sequence(owners[on], start[mask][on])
            allowed = [m for m in MOVES if tuple(grids[m][l]) == ran]
            expected = next_move(params.strategy[l], history[l])
            if expected not in allowed:
                raise InvariantError(
                    f"round {r}: machine {sites[l].name} ran its jobs as {' '.join(map(str, ran))} (owners in start "
                    f"order), not as {params.strategy[l]} plays it ({expected}) "
                    f"after the promises broken before: {history[l]}"
                )
            moves.append(expected)
            played[l][expected] += 1
        broken = [0] * n
        for k in range(n):
            has = [l for l in range(n) if instance.counts(l)[k]]
            if has:
                broken[k] = sum(l != k and broke_promise(c_exec[k, l], c_prop[k, l]) for l in has)
                history[k].append(broken[k])
        for name, c in (("mjf", c_mjf), ("spt", c_spt), ("proposal", c_prop), ("executed", c_exec)):
            totals[name] += float(c.sum())
        u = c_mjf.sum(axis=1) - c_exec.sum(axis=1)
        rows += [
            {
                "round": r,
                "org": k,
                "move": moves[k],
                "C": float(c_exec[k].sum()),
                "C_mjf": float(c_mjf[k].sum()),
                "C_proposal": float(c_prop[k].sum()),
                "u": float(u[k]),
                "u_proposal": float(c_mjf[k].sum() - c_prop[k].sum()),
                "broken": broken[k],
            }
            for k in range(n)
        ]
    scored = len({row["round"] for row in rows})
    per_org = []
    for k in range(n):
        mine = [row for row in rows if row["org"] == k]
        per_org.append(
            {
                "org": k,
                "strategy": params.strategy[k],
                "moves": played[k],
                "payoff_mean": float(np.mean([row["u"] for row in mine])) if mine else None,
                "payoff_if_all_follow": float(np.mean([row["u_proposal"] for row in mine])) if mine else None,
            }
        )
    out = {
        "name": "scheduling_game",
        "rounds": params.rounds,
        "rounds_scored": scored,
        "period": period,
        "start_delay": START_DELAYS * lat,
        "proposal": params.proposal,
        "pick": params.pick,
        "coordinator": params.coordinator,
        "sum_C": totals,
        "per_org": per_org,
        # Section 3.7.1's sum score of what was executed against MJF, over all scored rounds.
        "sum_score_executed": 1.0 - totals["executed"] / totals["mjf"] if totals["mjf"] else None,
        "sum_score_proposal": 1.0 - totals["proposal"] / totals["mjf"] if totals["mjf"] else None,
    }
    # The mean payoff of each organization as a figure of its own (the console table shows them).
    out.update({f"payoff_mean_{sites[k].name}": per_org[k]["payoff_mean"] for k in range(n)})
    if len(rows) <= MAX_ROUND_ROWS:
        out["per_round"] = rows
    return out


def traffic(params: SchedulingGameParams, n: int, degree: float) -> Traffic:
    return Traffic(
        per_job=4.0,
        what="per job a transfer, a listing, an order and a completion note "
        "(fewer for jobs on their own machine), and N² promises a round",
    )


PROTOCOL = Protocol(
    "scheduling_game",
    DedicatedAgent,
    "the scheduling game on dedicated machines (thesis ch. 3): a grid scheduler proposes, each machine's owner decides",
    params=SchedulingGameParams,
    messages=MESSAGES,
    check_jobs=check_jobs,
    summary=summary,
    traffic=traffic,
    report=Report(level_label="payoff u_k = C_k(MJF) - C_k", level_range=None),
    capabilities=frozenset({"starts_jobs", "targets", "widths"}),
)
