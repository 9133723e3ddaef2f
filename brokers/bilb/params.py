"""The keys of the thesis ch. 4 protocols on divisible jobs: ``bilb`` and ``averaging_game``
run the same agent (``divisible.py``) and share every key but the strategy's own (``limit``,
``join``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from gridemu.brokers.params import Params, param
from gridemu.brokers.protocol import ScenarioFacts, require_identical_processors
from gridemu.model.checks import check_number
from gridemu.model.errors import ScenarioError

EXCHANGES = ("neighbors", "gossip")
#: ``round_timing``: what sets the next round (docs/results/bilb.md, "Readings").
ROUND_TIMINGS = ("plan", "unbounded")
#: ``local_from``: where the "alone" queue of Algorithm 4.2 starts empty.
LOCAL_FROM = ("window", "period", "run")
#: ``starting``: how a round counts a piece that starts at its very instant.
STARTING = ("queued", "running")
#: ``round_order``: in discrete time, whether a round at a whole time unit comes after or before that unit's releases.
ROUND_ORDERS = ("after_releases", "before_releases")
#: ``send``: which end of its queue a sender cuts what it owes.
SEND_ENDS = ("tail", "head")


def check_window(key: str, window: Any, scenario: ScenarioFacts) -> tuple[float, float]:
    if not isinstance(window, (list, tuple)) or len(window) != 2:
        raise ScenarioError(key, f"must be two fractions of the period [from, to], got {window!r}")
    lo, hi = (check_number(f"{key}[{i}]", w, nonneg=True, finite=True) for i, w in enumerate(window))
    if not lo < hi <= 1:
        raise ScenarioError(key, f"needs 0 <= from < to <= 1, got {window!r}")
    return lo, hi


@dataclass(frozen=True)
class DivisibleParams(Params):
    """Settings of the thesis ch. 4 protocols (averaging game, BILB)."""

    protocol: ClassVar[str] = "bilb"  # the name errors give

    period: float = param(
        1000.0,
        "T, the time between strategy decisions (strategies are evaluated once per period)",
        positive=True,
        finite=True,
    )
    start: float = param(0.0, "time of the first round", nonneg=True, finite=True)
    min_gap: float = param(
        1.0,
        "least time between two rounds (the thesis simulator's time unit; over a network topology, the time between "
        "rounds); also at least (2N+3) x the largest latency",
        positive=True,
        finite=True,
    )
    learn: bool = param(False, "learn the strategy: Algorithm 4.2 (p_k) or section 4.7.3 (l_k), with coefficient eta")
    cut_running: bool = param(True, "also send away the unprocessed part of the running piece")
    discrete: bool = param(
        False,
        "rounds only at whole time units, after that unit's arrivals "
        "(the thesis's discrete simulator; start must be whole)",
    )
    starting: str = param(
        "queued",
        "a piece that starts at a round's very instant counts as queued (may be cut, whole or not) or running (cut "
        "only with cut_running; in discrete time, the unit's new job on an idle processor started before the round)",
        choices=STARTING,
    )
    round_order: str = param(
        "after_releases",
        "with discrete, a round at a whole time unit runs after that unit's releases (after_releases: a job released "
        "then may be sent at once) or before them (before_releases: it waits for the next round); needs discrete "
        "for before_releases, as a continuous round that meets a release already runs before it",
        choices=ROUND_ORDERS,
    )
    send: str = param(
        "tail",
        "which part of its queue a sender cuts what it owes off: the tail (the work that would finish last) or the "
        "head (the work that would start first, after what runs or starts before the answers come); a head piece "
        "may finish later at the receiver than announced, and is then refused",
        choices=SEND_ENDS,
    )
    local_from: str = param(
        "window",
        "F~_k, the flow time alone, queues the window's jobs from an empty processor at the window's start (window), "
        "every job of the period from its start (period: J_k of Algorithm 4.2) or every job since the run began (run)",
        choices=LOCAL_FROM,
    )
    round_timing: str = param(
        "plan",
        "BILB: the next round at min_k(L_k + Phi_k - Psi_k) of the plan carried out (plan), or of the plan with every "
        "l_k unbounded (unbounded); the averaging game's rounds, at L-bar, are the same either way",
        choices=ROUND_TIMINGS,
    )
    exchange: str = param(
        "neighbors",
        "neighbors: each site plans its closed neighborhood (the whole grid on the full graph); gossip: each "
        "round with the neighbor it draws and those that drew it",
        choices=EXCHANGES,
    )
    eta: float = param(0.1, "the learning coefficient, in (0, 1]", positive=True, finite=True)
    window: tuple[float, float] = param(
        (0.2, 0.8),
        "the part [from, to] of a period whose jobs are evaluated (thesis: 0.2T to 0.8T)",
        check=check_window,
        kind="[from, to]",
    )

    def validate(self, scenario: ScenarioFacts) -> DivisibleParams:
        name, sites = self.protocol, scenario.sites
        for site in sites:
            if site.procs != 1:
                raise ScenarioError(
                    "sites.procs",
                    f"the {name} protocol needs one processor per site (thesis 4.1); site {site.name} has {site.procs}",
                )
        require_identical_processors(name, scenario, " (thesis 4.1)")
        if scenario.data["scheduler"]["name"] != "fcfs" or any(s.scheduler != "fcfs" for s in sites):
            raise ScenarioError("scheduler.name", f"the {name} protocol needs FCFS local queues (thesis 4.1)")
        if self.discrete and self.start != int(self.start):
            raise ScenarioError(
                "protocol.start",
                f"with protocol.discrete = true rounds run at whole time units; start must be one, got {self.start:g}",
            )
        if self.round_order == "before_releases" and not self.discrete:
            raise ScenarioError(
                "protocol.round_order",
                "before_releases needs protocol.discrete = true (a continuous round that meets a release "
                "already runs before it)",
            )
        if self.eta > 1:
            raise ScenarioError("protocol.eta", f"the learning coefficient must be in (0, 1], got {self.eta}")
        return self


@dataclass(frozen=True)
class BilbParams(DivisibleParams):
    limit: float | tuple[float, ...] = param(
        1000.0, "the declared participation level l_k (>= 0)", per_site=True, nonneg=True
    )
