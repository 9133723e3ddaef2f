"""Dedicated-resource workloads (thesis ch. 3, section 3.7.1 "Workloads").

N organizations, each owning one single-processor machine; every job is *dedicated*: it must
run on one given machine, often another organization's. An instance is ``sizes[k][l]``, the
sizes of organization k's jobs for machine l, sorted non-decreasing (the thesis numbers jobs
so "without loss of generality", and by Proposition 3.1 only that order among one owner's
jobs on one machine matters).

The thesis's random instances: every machine gets the same number of jobs n; how many of
them each organization owns is "distributed uniformly" (for N = 2: n_{1,l} uniform over
{0, ..., n}, n_{2,l} = n - n_{1,l}); sizes are uniform over {1, ..., max_size}. For N > 2 the
text says no more, so a machine's n jobs are split among the N owners by a uniformly random
composition (each of the C(n+N-1, N-1) splits equally likely), which is the N = 2 rule.
The data sets of section 3.7.1 are :data:`SMALL`, :data:`SMALL_3` and :data:`LARGE`. The *exponential* instances
(Figure 3.2): two organizations with jobs 1, 2, 4, ..., 2^(n-1) each on machine 1.

In a run (``workload.kind = "dedicated"``) organization k submits from its site k, and the
draw of machine l's jobs comes from machine l's own stream, round after round: round r's jobs
are released together at r × ``period`` (the repeated game of section 3.5: one off-line
instance per round).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.model.checks import check_number, choice
from gridemu.model.errors import ScenarioError
from gridemu.model.jobs import empty_jobs
from gridemu.model.rng import PURPOSE_DEDICATED, site_rng

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.sites.spec import SiteSpec

Sizes = tuple[tuple[tuple[int, ...], ...], ...]  # sizes[k][l]: organization k's jobs for machine l, sorted
INSTANCES = ("random", "exponential")


@dataclass(frozen=True)
class DataSet:
    """A data set of section 3.7.1: ``per_cell`` instances for every (N, n_{.,l}, max p)."""

    name: str
    n_orgs: tuple[int, ...]
    jobs_per_machine: tuple[int, ...]
    max_size: tuple[int, ...]
    per_cell: int = 50

    def cells(self) -> list[tuple[int, int, int]]:
        return [(big_n, n, p) for big_n in self.n_orgs for n in self.jobs_per_machine for p in self.max_size]

    def instance(self, n_orgs: int, jobs_per_machine: int, max_size: int, index: int, seed: int = 0) -> Sizes:
        """The ``index``-th instance of a cell: its own stream, so any subset reproduces alone."""
        rng = np.random.default_rng([seed, n_orgs, jobs_per_machine, max_size, index])
        return random_instance(rng, n_orgs, jobs_per_machine, max_size)


SMALL = DataSet("small", (2,), (5, 8, 10, 11, 12), (5, 10, 20, 50))
SMALL_3 = DataSet("small-3", (3,), (4, 5, 6), (10,))
#: The text lists n_{.,k} in {10, 15, 20}; Tables 3.13 and 3.22 also have 25.
LARGE = DataSet("large", (2, 3, 4, 5, 6, 7, 8), (10, 15, 20, 25), (10,))


def composition(rng: np.random.Generator, n_orgs: int, n: int) -> np.ndarray:
    """A uniformly random composition of n into ``n_orgs`` parts (stars and bars)."""
    bars = np.sort(rng.choice(n + n_orgs - 1, size=n_orgs - 1, replace=False))
    return np.diff(np.concatenate(([-1], bars, [n + n_orgs - 1]))) - 1  # stars between bars


def machine_jobs(rng: np.random.Generator, n_orgs: int, n: int, max_size: int) -> list[tuple[int, ...]]:
    """One machine's jobs of a random instance: per organization, its sorted sizes."""
    counts = composition(rng, n_orgs, n)
    sizes = rng.integers(1, max_size + 1, size=n)
    cuts = np.cumsum(counts)[:-1]
    return [tuple(sorted(int(x) for x in part)) for part in np.split(sizes, cuts)]


def random_instance(rng: np.random.Generator, n_orgs: int, n: int, max_size: int) -> Sizes:
    """A random instance of section 3.7.1: n jobs on each of the N machines (drawn machine by
    machine from ``rng``; a run draws machine l's jobs from machine l's own stream instead)."""
    return by_owner([machine_jobs(rng, n_orgs, n, max_size) for _ in range(n_orgs)])


def by_owner(machines: list[list[tuple[int, ...]]]) -> Sizes:
    """``sizes[k][l]`` from each machine's jobs per owner (``machines[l][k]``)."""
    return tuple(tuple(jobs[k] for jobs in machines) for k in range(len(machines)))


def exponential_instance(n: int) -> Sizes:
    """Figure 3.2's instance: both organizations have jobs 1, 2, 4, ..., 2^(n-1) on machine 1."""
    jobs = tuple(2**i for i in range(n))
    return ((jobs, ()), (jobs, ()))


# --------------------------------------------------------------------------- in a run


def check_dedicated(wl: dict[str, Any], sites: list["SiteSpec"]) -> None:
    """``[workload] kind = "dedicated"``: ``jobs_per_machine`` (n), ``max_size`` (default 10),
    ``instance`` (random or exponential), ``rounds`` (default 1) and ``period`` (the time
    between two rounds' releases; default 2 × n × max_size, room for the largest possible
    machine load, for exponential 2^(n+2)). Defaults are filled in place."""
    if len({s.org for s in sites}) != len(sites):
        raise ScenarioError(
            "sites", "dedicated workloads need one site per organization (organization k owns machine k)"
        )
    if any(s.procs != 1 for s in sites):
        raise ScenarioError(
            "sites.procs", "dedicated resources have one processor each (thesis 3.1): set sites.procs = 1"
        )
    instance = choice("workload.instance", wl.get("instance", "random"), INSTANCES)
    if "jobs_per_machine" not in wl:
        raise ScenarioError("workload.jobs_per_machine", "give the number of jobs on each machine (n in section 3.7.1)")
    n = int(check_number("workload.jobs_per_machine", wl["jobs_per_machine"], positive=True, integer=True, most=10_000))
    max_size = int(check_number("workload.max_size", wl.get("max_size", 10), positive=True, integer=True, most=1e9))
    if instance == "exponential":
        if len(sites) != 2:
            raise ScenarioError(
                "sites.count", f"the exponential instance (Figure 3.2) has two organizations, got {len(sites)} sites"
            )
        if n > 40:
            raise ScenarioError(
                "workload.jobs_per_machine",
                f"the exponential instance has jobs up to 2^(n-1): n must be at most 40, got {n}",
            )
    rounds = int(check_number("workload.rounds", wl.get("rounds", 1), positive=True, integer=True, most=100_000))
    load = 2 ** (n + 1) if instance == "exponential" else n * max_size
    period = check_number("workload.period", wl.get("period", 2.0 * load), positive=True, finite=True)
    wl.update(instance=instance, jobs_per_machine=n, max_size=max_size, rounds=rounds, period=period)


def dedicated_jobs(wl: dict[str, Any], sites: list["SiteSpec"], seed: int) -> tuple[np.ndarray, list[str]]:
    """Every round's instance as jobs: organization k's jobs for machine l are submitted at
    site k with ``target_site`` l, released at r × period, in group k."""
    check_dedicated(wl, sites)
    n_orgs, n, rounds = len(sites), wl["jobs_per_machine"], wl["rounds"]
    streams = [site_rng(seed, l, PURPOSE_DEDICATED) for l in range(n_orgs)]
    parts = []
    for r in range(rounds):
        if wl["instance"] == "exponential":
            sizes = exponential_instance(n)
        else:
            sizes = by_owner([machine_jobs(stream, n_orgs, n, wl["max_size"]) for stream in streams])
        parts.append(instance_jobs(sizes, release=r * wl["period"]))
    jobs = np.concatenate(parts)
    return jobs, [s.org for s in sites]


def instance_jobs(sizes: Sizes, release: float = 0.0) -> np.ndarray:
    """An instance's jobs (owner = submitting site = group = k, ``target_site`` = l), in
    (owner, machine, size) order."""
    rows = [(k, l, p) for k, per_machine in enumerate(sizes) for l, jobs in enumerate(per_machine) for p in jobs]
    jobs = empty_jobs(len(rows))
    if rows:
        k, l, p = (np.array(c) for c in zip(*rows))
        jobs["owner"] = jobs["submit_site"] = jobs["group"] = k
        jobs["target_site"] = l
        jobs["size"] = p
    jobs["release"] = release
    return jobs
