"""What a protocol plug-in is: one :class:`Protocol` description, registered in
``brokers/registry.py``.

The kernel (``emulator/``) never names a protocol. Everything it needs to know about one
comes from its description: the agent class every site runs, the ``[protocol]`` keys it
reads (one frozen dataclass, ``brokers/params.py``), what it needs of the sites and the jobs,
the shape information (never state) its agents may know without asking, what it adds to
``summary.json``, how ``gridemu report`` draws what it recorded, and what its agents can do
(:data:`CAPABILITIES`).
``docs/adding-a-protocol.md`` walks through a new one.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from gridemu.brokers.params import Params
from gridemu.model.errors import ScenarioError
from gridemu.model.messages import KERNEL_KINDS, MessageKind, MessageKinds
from gridemu.sites.spec import SiteSpec

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from gridemu.brokers.agent import Agent, GridInfo


@dataclass(frozen=True)
class ScenarioFacts:
    """What a protocol's checks see of a scenario: its sites and its resolved sections."""

    sites: list[SiteSpec]
    data: dict[str, Any]  # run, scheduler, network, workload, metrics, policy: as resolved so far
    max_latency: float

    @property
    def workload(self) -> dict[str, Any]:
        return self.data.get("workload", {})

    @property
    def orgs(self) -> list[str]:
        """The organizations in order of first site: their codes in the job table."""
        return list(dict.fromkeys(s.org for s in self.sites))


@dataclass(frozen=True)
class Traffic:
    """About how many messages a protocol sends, for ``gridemu validate``'s estimate of a run:
    ``per_job`` for each job, ``per_time`` each time unit while the run lasts, rounds every
    ``round_every`` time units (periodic protocols), the first at ``first_round`` (default:
    one ``round_every`` in); ``what`` says what is counted. A periodic protocol's
    ``per_time`` is a round's messages over ``round_every``: the estimate counts whole rounds,
    so a run shorter than a period still holds the round at 0 (a million sites reporting to 8
    neighbors: 8 million messages at once)."""

    per_job: float = 0.0
    per_time: float = 0.0
    round_every: float | None = None
    what: str = ""
    first_round: float | None = None


@dataclass(frozen=True)
class RunSize:
    """What ``gridemu validate``'s estimate knows of a run before it runs, for a protocol's
    ``work`` hook: its sites, jobs (expected), the topology's mean degree, the agents' rounds
    over the run (periodic protocols; 0 otherwise) and its messages (``Protocol.traffic``)."""

    sites: int
    jobs: float
    mean_degree: float
    rounds: float = 0.0
    messages: float = 0.0


@dataclass(frozen=True)
class Work:
    """A protocol's own computation, in units of its choosing whose cost grows about linearly
    with them (MOLBA: plans times jobs squared); ``bench/calibrate.py`` fits one
    seconds-per-unit coefficient per protocol (``emulator/costs.json``). ``what`` says what
    is counted."""

    units: float = 0.0
    what: str = ""


@dataclass(frozen=True)
class RunFacts:
    """What a protocol's summary sees once the run is over and its invariants are checked."""

    params: Params  # the resolved [protocol] section
    scenario: ScenarioFacts
    submitted: np.ndarray  # the workload as submitted (JOB_DTYPE)
    jobs: "pd.DataFrame"  # one row per job (codes, not labels): jobs.parquet before labelling
    pieces: "pd.DataFrame"  # one row per piece (divisible or preempted jobs)

    @property
    def horizon(self) -> float:
        return float(self.scenario.data["run"]["horizon"])


@dataclass(frozen=True)
class GanttCompare:
    """A second schedule of the same jobs, drawn beside the executed one (``report --gantt``)."""

    label: str
    jobs: "pd.DataFrame"
    title: str  # the executed schedule's title


@dataclass(frozen=True)
class Summary:
    """What a protocol's summary adds to ``summary.json``. A summary hook may return the
    ``protocol`` section alone (a dict) instead of this."""

    protocol: dict[str, Any] | None = None  # the ``protocol`` section
    #: Figures added to each organization's entry, by organization name (thesis ch. 4: scores per period).
    organizations: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Sections of their own, placed before ``protocol`` (gm: ``fairness``, unless metrics.fairness = false).
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class ResultTable:
    """A table of a run's main result: printed after the run's summary (``caption`` under it)
    and written to ``DIR/<name>.csv`` with the frame's columns."""

    name: str  # the file's stem: a plain word
    title: str
    frame: "pd.DataFrame"
    caption: str = ""
    #: Printed headers of some columns (the CSV keeps the column names).
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    """How ``gridemu report`` draws what a protocol recorded: the ``level`` column the agents
    record, if any (its label, a log axis, its y range: None fits the values, as for a
    payoff), ``gantt_compare(jobs, sites, protocol_section)``, a second schedule to draw
    beside the executed one with ``--gantt`` (None: none), and ``tables(summary)``, the
    tables of the run's main result that ``gridemu run`` and ``gridemu report`` print and
    the result folder holds as CSV (built from ``summary.json`` alone)."""

    level_label: str = "level"
    level_log: bool = False
    level_range: tuple[float, float] | None = (-0.02, 1.02)
    gantt_compare: Callable[["pd.DataFrame", "pd.DataFrame", dict[str, Any]], GanttCompare | None] | None = None
    tables: Callable[[dict[str, Any]], list[ResultTable]] | None = None

    def result_tables(self, summary: dict[str, Any]) -> list[ResultTable]:
        return self.tables(summary) if self.tables is not None else []


#: What a protocol may declare in ``Protocol.capabilities``, each with what its agents do; the
#: kernel refuses a scenario that needs one the protocol lacks (``registry.require``), naming
#: the protocols that have it.
CAPABILITIES: dict[str, str] = {
    # Windows are capped at a fixed slice of the workload's span, so the run ends at the same
    # barrier whatever else bounds them.
    "periodic": "keep timers for ever (rounds, reports)",
    # Otherwise the protocol runs only on the full graph, where every site hears every other.
    "topologies": "run over any topology, sending only to their neighbors",
    # The ``planned`` scheduler serves only such protocols.
    "starts_jobs": "start jobs themselves (the planned scheduler)",
    # ``[faults]``, sites/faults.py: they hold no state about other sites' jobs and wait for no answer.
    "faults": "keep working when sites crash and messages are lost or late",
    # Thesis ch. 3; a workload with such jobs (``target_site``) runs under no other protocol.
    "targets": "run each job on the site its target_site names",
    # Required for ``route``: whatever the state of any site, the same destinations.
    "stateless": "route each new job from its site's own stream alone, whatever any site's state",
    # Otherwise a job wider than some site may be sent there, which stops the run (the site
    # could never start it): a scenario whose jobs are that wide is warned of before it runs.
    "widths": "send a job only to a site with processors enough for it (or never move jobs)",
}


@dataclass(frozen=True)
class Protocol:
    """One protocol: its agent and everything the kernel asks of it.

    ``params`` is the dataclass of its ``[protocol]`` keys (``brokers/params.py``): their
    types, defaults, documentation and checks; ``params.from_table`` runs once the sites
    and the workload section are known, and every agent gets the frozen instance.
    ``check_jobs(params, jobs, scenario)`` sees the generated workload before any work and
    returns None, or the parameters with what the jobs settle (its ``derived`` fields).
    ``grid_info(scenario)`` is the extra shape information every agent finds in
    ``grid.info`` (processor speeds, capacities...), never state. ``summary(facts)`` returns
    the ``protocol`` section of ``summary.json`` or a :class:`Summary` (or None) and may
    raise InvariantError when the run broke one of the paper's guarantees.
    """

    name: str
    agent: "type[Agent]"
    description: str
    params: type[Params] = Params  # its [protocol] keys, besides name
    messages: tuple[MessageKind, ...] = ()  # message kinds its agents send, besides job transfers
    check_jobs: Callable[[Params, np.ndarray, ScenarioFacts], Params | None] | None = None
    grid_info: Callable[[ScenarioFacts], dict[str, Any]] | None = None
    summary: "Callable[[RunFacts], dict[str, Any] | Summary | None] | None" = None
    #: ``traffic(params, n_sites, mean_degree)``: the messages it sends (``gridemu validate``).
    traffic: Callable[[Params, int, float], Traffic] | None = None
    #: ``work(params, size)``: its agents' and summary's own computation where it is not linear
    #: in the sites, jobs, messages and windows the kernel handles (``gridemu validate``).
    work: Callable[[Params, RunSize], Work] | None = None
    #: Agents that decide only where each newly submitted job goes, from their site's own
    #: stream and whatever the state of any site: ``route(grid, site_ids, n_jobs, params)``
    #: gives, for each site of ``site_ids`` (``n_jobs``: how many each submits), the
    #: destination of each of its submitted jobs, in submission order (the agent sends with
    #: the same function, for its site alone). The kernel may then run FCFS sites with
    #: identical processors as numpy columns (``sites/fcfs_columns.py``): same job table.
    #: Only a protocol declaring ``"stateless"`` may give one.
    route: "Callable[[GridInfo, Sequence[int], Sequence[int], Params], list[np.ndarray]] | None" = None
    report: Report = Report()
    #: Names from :data:`CAPABILITIES`.
    capabilities: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        caps = frozenset(self.capabilities)  # a set or tuple given by hand: kept as a frozenset
        object.__setattr__(self, "capabilities", caps)
        unknown = sorted(caps - CAPABILITIES.keys())
        if unknown:
            raise ValueError(
                f"protocol {self.name!r}: unknown capabilities {unknown}; known: {', '.join(CAPABILITIES)}"
            )
        if self.route is not None and "stateless" not in caps:
            raise ValueError(
                f"protocol {self.name!r} gives a route but does not declare the 'stateless' capability: a precomputed "
                "route is taken only from agents whose destinations depend on their own site's stream alone",
            )
        # A subclass without @dataclass inherits Params' fields table and would read no key of its own.
        if not (
            isinstance(self.params, type)
            and issubclass(self.params, Params)
            and "__dataclass_fields__" in vars(self.params)
        ):
            raise ValueError(
                f"protocol {self.name!r}: params must be a @dataclass(frozen=True) subclass of gridemu.plugin.Params, "
                f"got {self.params!r}"
            )
        try:
            self.params.check_declaration()
        except TypeError as exc:
            raise ValueError(f"protocol {self.name!r}: params: {exc}") from None
        if not all(isinstance(kind, MessageKind) for kind in self.messages):
            raise ValueError(
                f"protocol {self.name!r}: messages must be kinds made with message(...), got {self.messages!r}"
            )
        try:
            MessageKinds(self.messages)
        except ValueError as exc:
            raise ValueError(
                f"protocol {self.name!r}: {exc} (job and fragment are the kernel's own kinds, in every run: "
                "a kind of the protocol's needs a name of its own)"
            ) from None
        _check_hooks(self)

    def can(self, capability: str) -> bool:
        if capability not in CAPABILITIES:  # a typo would read as "no" everywhere
            raise KeyError(f"unknown capability {capability!r}; known: {', '.join(CAPABILITIES)}")
        return capability in self.capabilities


#: The kernel's calls of an agent's hooks, after ``self``: (hook, its arguments as named in
#: brokers/agent.py). Every message kind's handler ``on_<kind>`` is called as (now, msg).
_HOOKS = (
    ("on_start", ("now",)),
    ("on_arrival", ("now", "slot")),
    ("on_complete", ("now", "slot")),
    ("on_timer", ("now", "tag")),
    ("send_bound", ()),
)


def _check_hooks(protocol: Protocol) -> None:
    """An agent's hook that cannot take the kernel's call is refused when the protocol is
    made: at run time it is a TypeError deep in a site's event loop (or a RayTaskError)."""
    # A kind of its own that no agent could take: a typo in its handler's name (an agent made
    # by a function, one class per mode, is judged when a message comes).
    for kind in protocol.messages if isinstance(protocol.agent, type) else ():
        if getattr(protocol.agent, f"on_{kind.name}", None) is None:
            raise ValueError(
                f"protocol {protocol.name!r} declares the {kind.name!r} message kind, but "
                f"{protocol.agent.__name__} has no on_{kind.name}(self, now, msg) to handle it"
            )
    kinds = KERNEL_KINDS + tuple(protocol.messages)
    calls = list(_HOOKS) + [(f"on_{k.name}", ("now", "msg")) for k in kinds]
    for hook, args in calls:
        method = getattr(protocol.agent, hook, None)
        if method is None:
            continue
        try:
            signature = inspect.signature(method)
        except (TypeError, ValueError):  # a builtin or an object inspect cannot read: not ours to judge
            continue
        try:
            signature.bind(None, *args)
        except TypeError:
            raise ValueError(
                f"protocol {protocol.name!r}: {protocol.agent.__name__}.{hook}{signature} cannot take the kernel's "
                f"call {hook}({', '.join(args)}); define it as def {hook}({', '.join(('self',) + args)})"
            ) from None


def require_scheduler(protocol: str, scenario: ScenarioFacts, scheduler: str, why: str) -> None:
    """Every site must run ``scheduler``; the error says why the protocol needs it."""
    if any(s.scheduler != scheduler for s in scenario.sites):
        raise ScenarioError("scheduler.name", f'the {protocol} protocol {why}: set scheduler.name = "{scheduler}"')


def require_one_site_per_org(protocol: str, scenario: ScenarioFacts, why: str = "") -> None:
    if len({s.org for s in scenario.sites}) != len(scenario.sites):
        raise ScenarioError("sites", f"the {protocol} protocol needs one site per organization{why}")


def require_identical_processors(protocol: str, scenario: ScenarioFacts, why: str) -> None:
    if len({v for s in scenario.sites for v in s.speeds}) > 1:
        raise ScenarioError("sites.speed", f"the {protocol} protocol needs identical processors{why}")


def require_full_graph_when_replicated(protocol: str, scenario: ScenarioFacts, mode: str) -> None:
    """A protocol whose ``mode = "replicated"`` replays the central algorithm from all-to-all
    broadcasts needs the full graph; its ``sampled`` mode runs over any topology."""
    network = scenario.data.get("network", {})
    if mode == "replicated" and (network.get("topology", "full") != "full" or "topology_file" in network):
        raise ScenarioError(
            "network.topology",
            f"the {protocol} protocol replicated at every site needs every site to hear every other "
            '(topology = "full"); mode = "sampled" runs over any topology',
        )
