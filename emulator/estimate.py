"""How big a run will be, before it runs (``gridemu validate``, and ``run`` and ``sweep``
before any work): jobs, virtual time, messages, windows, and from them peak memory and wall
time with the costs ``bench/calibrate.py`` measured (``emulator/costs.json``).

Generated workloads (Poisson, streams) are sized, not drawn; job lists and traces are read
(validate reads them anyway, to report their errors). The run lasts at least as long as
its releases, as its work spread over every processor of the grid and as its longest job on
the fastest processor (a Poisson workload's: the largest of its gamma draws, expected),
longer when random crashes restart its jobs; the messages are the protocol's own count
(``Protocol.traffic``) over that time. These are orders of magnitude, meant to refuse a run that would not end or
fit in practice, not predictions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from gridemu.brokers.protocol import RunSize, Traffic, Work
from gridemu.emulator.limits import Limits, costs
from gridemu.emulator.scenario import Scenario
from gridemu.model.checks import per_site_array
from gridemu.model.errors import ScenarioError
from gridemu.model.inputs import gib
from gridemu.model.messages import MessageKinds
from gridemu.scenarios.workload import generate_jobs, poisson_size, streams_extent

#: Past this many sites a full graph's all-to-all reports are what a refusal of the
#: protocol's traffic names (network.topology), not the protocol.
FULL_GRAPH_BLAME = 1000
#: How a refusal says it can be overridden.
FORCE_HINT = "--force (force=True in Python) runs it anyway"
#: Past these a run is refused (``--force`` goes on): it would not end in practice.
MAX_ROUNDS = 1e8
MAX_MESSAGES = 1e10

#: The key each cost term of the estimate follows from: a refusal names the largest term's.
TERM_KEYS = {
    "site": "sites.count",
    "proc": "sites.procs",
    "job": "workload",
    "message": "protocol",
    "window": "run.lookahead",
    "link": "network",
    "in_flight": "protocol",
    "job_message": "protocol",
    "site_round": "protocol",
    "work": "protocol",
}
#: Bytes a message row takes while it waits for its window's end (a tuple of 27 fields and
#: the floats it holds; measured with tracemalloc, 2026-11-26: 416 B).
IN_FLIGHT_BYTES = 420.0


@dataclass(frozen=True)
class Estimate:
    jobs: float
    span: float  # releases from 0 to about this time
    duration: float  # the run lasts at least this long (virtual time)
    messages: float
    rounds: float | None  # the agents' rounds over that time (periodic protocols)
    traffic: Traffic
    sites: int = 0
    procs: float = 0.0
    windows: float = 1.0
    crashes: float = 0.0  # random and listed crashes over the run
    lookahead: float = 1.0
    mean_size: float = 0.0  # a job's mean run time on one processor of speed 1
    memory: float = 0.0  # peak bytes
    wall: float = 0.0  # seconds
    memory_terms: dict[str, float] | None = None
    wall_terms: dict[str, float] | None = None
    work: Work = Work()  # the protocol's own computation (``Protocol.work``)
    longest_end: float = 0.0  # its longest job on the fastest processor ends at least this late
    #: That job where the jobs are drawn already (a trace, a list): its id, release and size,
    #: for an error to name it.
    longest_job: tuple[int, float, float] | None = None
    #: The key behind the protocol's traffic where it is not the protocol's own: a latency
    #: that outlasts the jobs (network.latency = 1e9: the reports of a billion time units are
    #: the latency's doing) or a full graph of many sites (n^2 reports a round). A refusal
    #: for that traffic names it.
    long_because: str | None = None
    unit: str = "time units"  # run.time_unit: what span and duration count (s for a trace)

    def describe(self) -> str:
        text = (
            f"about {self.jobs:,.0f} jobs released over {self.span:,.4g} {self.unit}; the run lasts at least "
            f"{self.duration:,.4g}; about {count_text(self.messages)} messages"
        )
        if self.traffic.what:
            text += f" ({self.traffic.what})"
        if self.rounds is not None:
            rounds = "1 round" if self.rounds == 1 else f"{count_text(self.rounds)} rounds"
            text += f"; about {rounds}, one every {self.traffic.round_every:g}"
        if self.crashes:
            text += f"; about {count_text(self.crashes)} crashes"
        text += f"; about {count_text(self.windows)} window{'s' * (count_text(self.windows) != '1')}"
        if self.work.what:
            text += f"; the protocol's own work: {self.work.what}"
        return text

    def resources(self) -> str:
        """Peak memory and wall time, and the costs they come from (``gridemu validate``)."""
        c = costs()
        return (
            f"peak memory about {gib(self.memory)}, wall time about {_duration(self.wall)} in one process "
            f"(costs measured {c.measured} on {c.machine}: bench/calibrate.py)"
        )

    def refusal(self, limits: Limits) -> ScenarioError | None:
        """The first limit this run is past, as the error to raise; None when it fits or
        ``limits.force``. Float resolution is :func:`check_resolution`'s, not a budget."""
        if limits.force:
            return None
        if not math.isfinite(self.duration) and self.crashes:
            # Random crashes restart jobs from scratch faster than they can finish: the
            # memory and time figures are infinite because of faults.mtbf, not the protocol.
            return ScenarioError(
                "faults.mtbf",
                "random crashes come so often that restarted jobs would never finish: the run would not end "
                f"({self.describe()}); a longer mtbf, or {FORCE_HINT}",
            )
        if self.memory > limits.memory_bytes:
            return ScenarioError(
                self._blame(self.memory_terms),
                f"the run needs about {gib(self.memory)} of memory, more than the {gib(limits.memory_bytes)} "
                f"available ({self.describe()}); {FORCE_HINT}",
            )
        if not self.wall <= limits.wall_seconds:
            return ScenarioError(
                self._blame(self.wall_terms),
                f"the run would take about {_duration(self.wall)}, more than the {_duration(limits.wall_seconds)} "
                f"budget ({self.describe()}); {FORCE_HINT}",
            )
        if self.rounds is not None and self.rounds > MAX_ROUNDS:
            # How many rounds follows from how long the run lasts: a latency can make it long,
            # a topology cannot.
            return ScenarioError(
                "network.latency" if self.long_because == "network.latency" else "protocol",
                f"about {count_text(self.rounds)} protocol rounds (the run lasts at least {self.duration:.3g} time "
                f"units, a round every {self.traffic.round_every:g}): it would not end in practice; set "
                f"run.horizon or shorten the jobs ({FORCE_HINT})",
            )
        if self.messages > MAX_MESSAGES:
            return ScenarioError(
                self.long_because or "protocol",
                f"about {count_text(self.messages)} messages: it would not end in practice; fewer sites, jobs or "
                f"rounds ({FORCE_HINT})",
            )
        return None

    def _blame(self, terms: dict[str, float] | None) -> str:
        key = _largest(terms)
        return self.long_because if key == "protocol" and self.long_because else key

    def warnings(self, forced: bool = False) -> list[str]:
        """What ``--force`` lets through, said before the run (``forced``: a run that was given
        it, told it goes on rather than how to make it)."""
        past = self.refusal(Limits(math.inf, math.inf))
        if past is None:
            return []
        return [str(past).replace(FORCE_HINT, "running it anyway (--force)") if forced else str(past)]


def _largest(terms: dict[str, float] | None) -> str:
    if not terms:
        return "estimate"
    name = max(terms, key=lambda k: terms[k] if math.isfinite(terms[k]) else math.inf)
    return TERM_KEYS.get(name, "estimate")


def count_text(x: float) -> str:
    return f"{x:,.0f}" if x < 1e6 else f"{x:.2g}"


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "forever"
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds < 120:
        return f"{seconds:.0f} s"  # not .2g: 110 s would read 1.1e+02 s
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.2g} days"


def _restarts(duration: float, mean_size: float, sc: Scenario) -> tuple[float, float]:
    """(the run's duration with random crashes, the crashes over it). A job restarted from
    scratch at each crash of rate 1/mtbf, with repairs of mean mttr, takes on average
    (mtbf + mttr)(e^{s/mtbf} - 1) instead of s: the run stretches by that factor."""
    f = sc.faults
    listed = float(len(f.crashes)) if f is not None else 0.0
    if f is None or not math.isfinite(f.mtbf):
        return duration, listed
    x = mean_size / f.mtbf
    stretch = (1 + f.mttr / f.mtbf) * (math.expm1(x) / x if x > 1e-12 else 1.0) if x < 700 else math.inf
    duration = duration * stretch
    return duration, listed + len(sc.sites) * duration / (f.mtbf + f.mttr)


def _rounds(traffic: Traffic, duration: float) -> float | None:
    """A periodic protocol's rounds while the run lasts, the first (at ``first_round``) and the
    last included; None for a protocol without rounds."""
    every = traffic.round_every
    if not every:
        return None
    first = every if traffic.first_round is None else traffic.first_round
    if duration < first:
        return 0.0
    return float(math.floor((duration - first) / every) + 1) if math.isfinite(duration) else math.inf


def gamma_tail(a: float, x: float) -> float:
    """Q(a, x) = P(X > x) for X ~ gamma(shape a, scale 1): the regularized upper incomplete
    gamma function, from its power series below a + 1 and its continued fraction above
    (Abramowitz and Stegun 6.5.29 and 6.5.31; numpy has no incomplete gamma). For shapes up
    to :data:`_SERIES_SHAPE`: the series takes about sqrt(a) terms a digit."""
    if x <= 0:
        return 1.0
    front = math.exp(-x + a * math.log(x) - math.lgamma(a))
    if x < a + 1:  # P(a, x) = front * sum_n x^n / (a (a+1) ... (a+n))
        term = total = 1.0 / a
        k = a
        for _ in range(100_000):
            k += 1
            term *= x / k
            total += term
            if term <= total * 1e-15:
                break
        return max(0.0, 1.0 - front * total)
    # Q(a, x) = front / (x + 1 - a - 1(1-a) / (x + 3 - a - 2(2-a) / (x + 5 - a - ...))), Lentz's method
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1 / (d if abs(d) > tiny else tiny)
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return front * h


#: Past this shape the gamma is about normal in its cube root (Wilson and Hilferty).
_SERIES_SHAPE = 1e4


def largest_gamma(shape: float, scale: float, n: float) -> float:
    """About the largest of ``n`` gamma(shape, scale) draws: the size exceeded with
    probability 1 / (n + 1) (the expected maximum's usual approximation), by bisection."""
    if n < 1:
        return 0.0
    p = 1.0 / (n + 1)
    if shape > _SERIES_SHAPE:  # X/a ~ (1 - 1/(9a) + z/sqrt(9a))^3 with z standard normal
        z = _bisect(lambda z: 0.5 * math.erfc(z / math.sqrt(2)) > p, 0.0, 40.0)
        return scale * shape * (1 - 1 / (9 * shape) + z / math.sqrt(9 * shape)) ** 3
    hi = max(1.0, shape)
    while gamma_tail(shape, hi) > p and hi < 1e6 * max(1.0, shape):
        hi *= 2
    return scale * _bisect(lambda x: gamma_tail(shape, x) > p, 0.0, hi)


def _bisect(below: Callable[[float], bool], lo: float, hi: float) -> float:
    """The point of [lo, hi] where ``below`` turns false (true at lo, false at hi)."""
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if below(mid) else (lo, mid)
    return hi


def _largest_gamma(alpha: np.ndarray, beta: np.ndarray, rates: np.ndarray, jobs: float) -> float:
    """About the longest job of a Poisson workload: per site's (alpha, beta), its share of the
    jobs by rate; past 64 distinct pairs, the largest shape and scale for all (an upper side)."""
    if (alpha == alpha[0]).all() and (beta == beta[0]).all():  # one pair: np.unique of 1M rows takes 1 s
        return largest_gamma(float(alpha[0]), float(beta[0]), jobs)
    pairs, inverse = np.unique(np.stack([alpha, beta], axis=1), axis=0, return_inverse=True)
    if len(pairs) > 64:
        return largest_gamma(float(alpha.max()), float(beta.max()), jobs)
    share = np.bincount(inverse.ravel(), weights=rates, minlength=len(pairs)) / rates.sum()
    return max(largest_gamma(float(a), float(b), jobs * float(w)) for (a, b), w in zip(pairs, share))


def carries_pieces(sc: Scenario) -> bool:
    """Whether the protocol's messages may carry jobs or pieces beyond its transfers (BILB's
    offered pieces, GM's migrations, MOLBA's moves): every protocol that waits for answers or
    tracks other sites' jobs, i.e. without the ``faults`` capability. A piece a message
    leaves at its receiver is held until the run's end."""
    return not sc.plugin.can("faults")


def job_messages(sc: Scenario, by_kind: dict[str, int]) -> float:
    """Of a run's messages (a count by kind), those that carried a job or a piece (kinds
    declared with ``job=True``, the kernel's ``job`` and ``fragment`` among them): what the
    estimate counts as every message of a protocol that :func:`carries_pieces`, else as its
    transfers (``Traffic.per_job``)."""
    kinds = MessageKinds(sc.plugin.messages)
    return float(sum(n for name, n in by_kind.items() if name in kinds.code and kinds[name].job))


def estimate(sc: Scenario, table: np.ndarray | None = None, checkpoint: bool = False) -> Estimate:
    """The estimate of a run of ``sc``; ``table``: its jobs when they are drawn already;
    ``checkpoint``: the run writes checkpoints (``--checkpoint``)."""
    wl, sites = sc.workload, sc.sites
    capacity = float(sum(sum(s.speeds) for s in sites))
    procs_total = float(sum(len(s.speeds) for s in sites))
    # A run ends when its last job does: a short stream of releases lasts as long as its
    # longest job (20,000 gamma(2, 2) jobs released over 0.3 time units end near t = 25).
    fastest = max((max(s.speeds) for s in sites), default=1.0)
    longest_job = None
    if wl["kind"] == "poisson":
        jobs = poisson_size(wl, len(sites))
        rates = per_site_array("workload.rate", wl.get("rate", 1.0), len(sites))
        span = float(wl["until"]) if "jobs" not in wl else jobs / float(rates.sum())
        procs = wl.get("procs", 1)
        mean_procs = (procs["low"] + procs.get("high", procs["low"])) / 2 if isinstance(procs, dict) else float(procs)
        alpha = per_site_array("workload.alpha", wl.get("alpha", 2.0), len(sites))
        beta = per_site_array("workload.beta", wl.get("beta", 2.0), len(sites))
        work = float((rates / rates.sum() * (alpha * beta)).sum()) * jobs * mean_procs
        last_end = _largest_gamma(alpha, beta, rates, jobs) / fastest
    elif wl["kind"] == "streams":
        jobs, span, work, longest = streams_extent(wl, sites)
        last_end = longest / fastest
    else:
        table = generate_jobs(sc)[0] if table is None else table
        jobs = float(len(table))
        span = float(table["release"].max()) if len(table) else 0.0
        work = float((table["size"] * table["procs"]).sum())
        ends = table["release"] + table["size"] / fastest
        last_end = 0.0
        if len(table):
            i = int(np.argmax(ends))
            last_end = float(ends[i])
            longest_job = (int(table["job_id"][i]), float(table["release"][i]), float(table["size"][i]))
    mean_size = work / jobs if jobs else 0.0
    duration = max(span, work / capacity, last_end)
    n = len(sites)
    degree = float(np.mean(sc.topology.degrees(n))) if not sc.topology.full else float(n - 1)
    traffic = sc.plugin.traffic(sc.params, n, degree) if sc.plugin.traffic else Traffic()
    long_because = None
    if traffic.per_job or traffic.per_time:
        if sc.max_latency > duration:
            long_because = "network.latency"
        elif sc.topology.full and traffic.per_time and n > FULL_GRAPH_BLAME:
            # Reports to every other site: n^2 a round, and the topology is the lever.
            long_because = "network.topology"
        duration += sc.max_latency  # a job may travel once
    duration, crashes = _restarts(duration, mean_size, sc)
    if math.isfinite(sc.horizon):
        duration = min(duration, sc.horizon)
    rounds = _rounds(traffic, duration)
    periodic = traffic.per_time * (traffic.round_every * rounds if rounds is not None else duration)
    messages = traffic.per_job * jobs + periodic
    talks = bool(messages) or crashes > 0
    # A window advances by at least the lookahead, and past an idle stretch to the next event
    # that may send: about one window per job, per round (two: the round and its answers),
    # per crash, and per message each site receives (the shipped runs: within 3x of this).
    sends = jobs + 2 * (rounds or 0.0) + messages / max(1, n) + 2 * crashes
    windows = min(duration / sc.lookahead, sends) + 1 if talks else 1.0
    c = costs()
    figures = {"site": n, "proc": procs_total, "job": jobs, "message": messages, "window": windows}
    held = {
        "site": n,
        "proc": procs_total,
        "job": jobs,
        "job_message": messages if carries_pieces(sc) else traffic.per_job * jobs,  # an upper side
        "site_round": n * (rounds or 0.0),
    }
    if sc.data["metrics"].get("counterfactual") == "local":
        # A second run, every organization alone: its time, and its job table beside the
        # first's (the first run's sites are gone by then).
        figures["job"] *= 2
        figures["site"] *= 2
        held["job"] *= 2
    memory_terms = {k: v * c.memory.get(f"per_{k}", 0.0) for k, v in held.items()}
    if checkpoint:
        # Writing a checkpoint opens the shards' states again beside the live ones, with
        # their plain encoding: about the run's state once more at its largest (quickstart,
        # 400,000 jobs: 175 MiB over the 445 held; this term says 170).
        memory_terms["checkpoint"] = sum(memory_terms[k] for k in ("site", "proc", "job_message", "site_round"))
        memory_terms["checkpoint"] += jobs * c.memory.get("per_job", 0.0)  # the first run's jobs only
    # The messages of one round (all-to-all reports go out together) or of one window are
    # held at once, as rows, until the barrier hands them on.
    # A message is held for its latency, so with a latency of many rounds the reports of all
    # those rounds are held together (network.latency = 1e6 over rounds of 50: 8.7 GiB held
    # where one round's batch said 1.4 GiB).
    if rounds and rounds >= 1 and traffic.round_every > 0:
        per_batch = min(messages, messages / rounds * (1.0 + sc.max_latency / traffic.round_every))
    else:
        per_batch = messages / max(windows, 1.0)
    if math.isnan(per_batch):  # inf / inf: a run that does not end (its refusal says why)
        per_batch = math.inf
    memory_terms["in_flight"] = per_batch * IN_FLIGHT_BYTES
    if isinstance(sc.latency, np.ndarray):
        memory_terms["link"] = 2.0 * sc.latency.nbytes  # the matrix, and its rows on the shards
    wall_terms = {k: v * c.seconds.get(f"per_{k}", 0.0) for k, v in figures.items()}
    # What the protocol computes beyond the kernel's linear costs (MOLBA's plans, REF's
    # coalitions), at its own calibrated cost; a protocol not calibrated here has none.
    size = RunSize(n, jobs, degree, rounds or 0.0, messages)
    own = sc.plugin.work(sc.params, size) if sc.plugin.work else Work()
    wall_terms["work"] = own.units * c.work.get(sc.plugin.name, 0.0)
    return Estimate(
        jobs,
        span,
        duration,
        messages,
        rounds,
        traffic,
        n,
        procs_total,
        windows,
        crashes,
        sc.lookahead,
        mean_size,
        c.memory.get("base", 0.0) + sum(memory_terms.values()),
        c.seconds.get("base", 0.0) + sum(wall_terms.values()),
        memory_terms,
        wall_terms,
        own,
        last_end,
        longest_job,
        long_because,
        sc.data["run"].get("time_unit", "time units"),
    )


def check_resolution(est: Estimate) -> None:
    """Refuse a run whose virtual clock would stop advancing in floats (releases at 1e300
    with a lookahead of 1, processors of speed 1e-300): ``t + lookahead == t`` at the time it
    reaches. No ``--force``: the run would fail there after all the work before."""
    end = max(est.span, est.duration)
    if not math.isfinite(end):
        return  # an endless run: the budget's refusal says so
    if not end + est.lookahead > end:
        if est.span >= est.duration:
            what = "its releases"
        elif est.longest_end >= est.duration:
            what = "its longest job"
            if est.longest_job is not None:
                what += ", job {}, released at {:g} with size {:g}".format(*est.longest_job)
        else:
            what = "its work spread over the processors"
        raise ScenarioError(
            "run.lookahead",
            f"a window of {est.lookahead:g} no longer advances virtual time at t={end:.3g}, which the run reaches "
            f"({what}; float resolution): use a larger network.latency or run.lookahead, or a shorter run",
        )
