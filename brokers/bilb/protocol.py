"""``bilb``: bounded iterative load balancing on divisible jobs (thesis ch. 4, Alg. 4.3, 4.7.3).

Its keys and their checks are shared with ``averaging_game`` (``brokers/averaging_game/``),
which runs the same divisible-job agent (``brokers/bilb/divisible.py``) with another plan."""
from __future__ import annotations

from typing import Any

from gridemu.brokers.bilb.agent import BilbAgent
from gridemu.brokers.bilb.divisible import EXCHANGES, MESSAGES
from gridemu.brokers.bilb.scores import summary
from gridemu.brokers.protocol import Protocol, Report, ScenarioFacts, Traffic, flag, require_identical_processors
from gridemu.model.checks import check_number, choice, per_site_values
from gridemu.model.errors import ScenarioError

KEYS = ("period", "start", "min_gap", "learn", "eta", "window", "cut_running", "exchange", "round_timing", "discrete", "local_from", "starting")
#: ``round_timing``: what sets the next round (docs/results/bilb.md, "Readings").
ROUND_TIMINGS = ("plan", "unbounded")
#: ``local_from``: where the "alone" queue of Algorithm 4.2 starts empty.
LOCAL_FROM = ("window", "period", "run")
#: ``starting``: how a round counts a piece that starts at its very instant.
STARTING = ("queued", "running")


def check(params: dict[str, Any], scenario: ScenarioFacts) -> None:
    """Settings of the thesis ch. 4 protocols (averaging game, BILB), defaults filled in.

    ``period`` is T, the time between strategy decisions; ``start`` the first round;
    ``min_gap`` the least time between two rounds (the thesis simulator's time unit; over a
    network topology, the time between rounds);
    ``limit`` the declared participation level l_k (BILB; a number or one per site);
    ``join`` the probability p_k of joining the coalition (averaging game; one per site or
    one for all); ``learn`` turns on Algorithm 4.2 / section 4.7.3 with coefficient ``eta``;
    ``window`` the part of a period whose jobs are evaluated (thesis: 0.2T to 0.8T);
    ``cut_running`` whether the unprocessed part of a running piece may be sent away;
    ``exchange``: ``neighbors`` (each site plans its closed neighborhood: the whole grid on the
    full graph) or ``gossip`` (each round with the neighbor it draws and those that drew it);
    ``round_timing`` (BILB): ``plan`` runs the next round at min_k(L_k + Φ_k - Ψ_k) of the plan
    carried out, ``unbounded`` at that of the plan with every l_k unbounded (the averaging
    game's rounds, at L̄, are the same either way); ``discrete``: rounds only at whole time
    units, after that unit's arrivals (the thesis's discrete simulator); ``local_from``: F̃_k,
    the flow time alone, queues the window's jobs from an empty processor at the window's
    start (``window``) or every job of the period from its start, counting the window's
    (``period``: J_k of Algorithm 4.2 is "the jobs produced during the last time period"), or
    every job since the run began (``run``: the organization "had not joined the coalition"
    at all; the same as ``period`` in a run of one period); ``starting``: a piece that starts
    at the round's very instant counts as ``queued`` (may be cut, whole or not) or ``running``
    (cut only with ``cut_running``; in discrete time, the unit's new job on an idle processor
    started before the round).
    """
    name = params["name"]
    sites = scenario.sites
    for site in sites:
        if site.procs != 1:
            raise ScenarioError("sites.procs", f"the {name} protocol needs one processor per site (thesis 4.1); site {site.name} has {site.procs}")
    require_identical_processors(name, scenario, " (thesis 4.1)")
    if scenario.data["scheduler"]["name"] != "fcfs" or any(s.scheduler != "fcfs" for s in sites):
        raise ScenarioError("scheduler.name", f"the {name} protocol needs FCFS local queues (thesis 4.1)")
    n = len(sites)
    params["period"] = check_number("protocol.period", params.get("period", 1000.0), positive=True, finite=True)
    params["start"] = check_number("protocol.start", params.get("start", 0.0), nonneg=True, finite=True)
    params["min_gap"] = check_number("protocol.min_gap", params.get("min_gap", 1.0), positive=True, finite=True)
    learn = flag(params, "learn", False)
    flag(params, "cut_running", True)
    flag(params, "discrete", False)
    params["starting"] = choice("protocol.starting", params.get("starting", "queued"), STARTING)
    params["local_from"] = choice("protocol.local_from", params.get("local_from", "window"), LOCAL_FROM)
    params["round_timing"] = choice("protocol.round_timing", params.get("round_timing", "plan"), ROUND_TIMINGS)
    if params["discrete"] and params["start"] != int(params["start"]):
        raise ScenarioError("protocol.start", f"with protocol.discrete = true rounds run at whole time units; start must be one, got {params['start']:g}")
    params["exchange"] = choice("protocol.exchange", params.get("exchange", "neighbors"), EXCHANGES)
    params["eta"] = check_number("protocol.eta", params.get("eta", 0.1), positive=True, finite=True)
    if params["eta"] > 1:
        raise ScenarioError("protocol.eta", f"the learning coefficient must be in (0, 1], got {params['eta']}")
    window = params.get("window", [0.2, 0.8])
    if not isinstance(window, list) or len(window) != 2:
        raise ScenarioError("protocol.window", f"must be two fractions of the period [from, to], got {window!r}")
    lo, hi = (check_number(f"protocol.window[{i}]", w, nonneg=True, finite=True) for i, w in enumerate(window))
    if not lo < hi <= 1:
        raise ScenarioError("protocol.window", f"needs 0 <= from < to <= 1, got {window!r}")
    params["window"] = [lo, hi]
    # Keys of the other protocol may stay (a sweep over protocol.name sets both); unused here.
    if name == "bilb":
        limit = params.get("limit", 1000.0)
        values = per_site_values("protocol.limit", limit, n, nonneg=True)
        params["limit"] = values if isinstance(limit, (list, dict)) else values[0]
    else:
        join = params.get("join", 0.5 if learn else 1.0)
        values = per_site_values("protocol.join", join, n, nonneg=True)
        bad = [v for v in values if v > 1]
        if bad:
            raise ScenarioError("protocol.join", f"a probability must be in [0, 1], got {bad[0]}")
        params["join"] = values if isinstance(join, (list, dict)) else values[0]


def traffic(params: dict[str, Any], n: int, degree: float) -> Traffic:
    per_round = 4 * n if params["exchange"] == "gossip" else n * degree
    return Traffic(
        per_time=per_round / params["min_gap"], round_every=params["min_gap"],
        what="offers and answers, if a round runs every min_gap while work is left",
    )


PROTOCOL = Protocol(
    "bilb", BilbAgent,
    "bounded iterative load balancing on divisible jobs with declared levels l_k (thesis Alg. 4.3, 4.7.3)",
    keys=KEYS + ("limit",), messages=MESSAGES, check=check, summary=summary, traffic=traffic,
    report=Report(level_label="declared level l_k", level_log=True), capabilities=frozenset({"periodic", "topologies"}),
)
