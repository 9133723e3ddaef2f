"""Per-site Poisson arrivals with gamma sizes (thesis ch. 4 settings), drawn site by site.

Every site's jobs come from its own streams (arrivals, sizes, processor counts; see
``model.rng``), so any subset of the sites can be drawn apart: the driver draws them all
(``generate_jobs``), or each shard draws the sites it hosts from a :class:`SiteDraws`, and the
jobs are the same either way. Drawn jobs are not numbered yet (``model.jobs.number_jobs``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gridemu.model.checks import largest_remainder, per_site_array
from gridemu.model.errors import ScenarioError
from gridemu.model.jobs import empty_jobs
from gridemu.model.rng import PURPOSE_ARRIVALS, PURPOSE_PROCS, PURPOSE_SIZES, site_rngs

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.sites.spec import SiteSpec


@dataclass(frozen=True)
class SiteDraws:
    """What drawing any site's jobs needs: the ``[workload]`` table, how many sites share its
    per-site values and its ``jobs`` total, the organizations (owner indices) and the seed."""

    workload: dict[str, Any]
    n_sites: int
    orgs: tuple[str, ...]
    seed: int


def draw_sites(draws: SiteDraws, sites: list["SiteSpec"]) -> np.ndarray:
    """The jobs of ``sites`` (any subset, in the given order), each site's in release order:
    rate λ per site, gamma(α shape, β scale) sizes, ``jobs`` split over all sites by rate."""
    wl, n, seed = draws.workload, draws.n_sites, draws.seed
    rate = per_site_array("workload.rate", wl.get("rate", 1.0), n, positive=True)
    alpha = per_site_array("workload.alpha", wl.get("alpha", 2.0), n, positive=True)
    beta = per_site_array("workload.beta", wl.get("beta", 2.0), n, positive=True)
    priority = per_site_array("workload.priority", wl.get("priority", 0.0), n, nonneg=True)
    until = float(wl.get("until", math.inf))
    counts = largest_remainder(rate / rate.sum() * int(wl["jobs"]), int(wl["jobs"])) if "jobs" in wl else None
    releases = []
    site_ids = [s.site_id for s in sites]
    for s, arr_rng in zip(sites, site_rngs(seed, site_ids, PURPOSE_ARRIVALS)):
        if counts is not None:
            release = np.cumsum(arr_rng.exponential(1.0 / rate[s.site_id], size=int(counts[s.site_id])))
            releases.append(release[release < until])
            continue
        # Draw in blocks until the stream passes `until`.
        chunks, t = [], 0.0
        block = max(16, int(rate[s.site_id] * until * 1.1) + 16)
        while t < until:
            r = t + np.cumsum(arr_rng.exponential(1.0 / rate[s.site_id], size=block))
            chunks.append(r[r < until])
            t = r[-1]
        releases.append(np.concatenate(chunks))
    sizes = np.array([len(r) for r in releases], dtype=np.int64)
    jobs = empty_jobs(int(sizes.sum()))
    if not len(jobs):
        return jobs
    ids = np.array(site_ids, dtype=np.int64)
    org_index = {org: k for k, org in enumerate(draws.orgs)}
    owner = np.array([org_index[s.org] for s in sites], dtype=np.int64)
    jobs["release"] = np.concatenate(releases)
    jobs["submit_site"] = np.repeat(ids, sizes)
    jobs["owner"] = jobs["group"] = np.repeat(owner, sizes)
    jobs["priority"] = np.repeat(priority[ids], sizes)
    size, procs = jobs["size"], wl.get("procs", 1)
    lo = 0
    size_rngs = site_rngs(seed, site_ids, PURPOSE_SIZES)
    proc_rngs = site_rngs(seed, site_ids, PURPOSE_PROCS) if isinstance(procs, dict) else None
    for s, k in zip(sites, sizes.tolist()):
        part = size[lo : lo + k]
        part[:] = next(size_rngs).gamma(alpha[s.site_id], beta[s.site_id], size=k)
        if k and not part.min() > 0:
            # A tiny shape or scale draws sizes that underflow to 0: no model runs a job of no work.
            j = int(np.argmin(part))
            raise ScenarioError(
                "workload.alpha",
                f"site {s.name}'s gamma(alpha={alpha[s.site_id]:g}, beta={beta[s.site_id]:g}) sizes underflow to 0 "
                f"(its job {j} drew {float(part[j])!r}): use a larger alpha or beta",
            )
        if isinstance(procs, dict):
            high = int(procs.get("high", procs.get("low", 1)))
            jobs["procs"][lo : lo + k] = next(proc_rngs).integers(int(procs.get("low", 1)), high + 1, size=k)
        lo += k
    if not isinstance(procs, dict):
        jobs["procs"] = int(procs)
    integral = wl.get("integral", False)
    if integral:  # the Shapley papers' integral time: released at t, whole units of work
        jobs["release"] = np.floor(jobs["release"])
    if integral is True:  # "releases" keeps real sizes (the thesis ch. 4 simulator's time unit)
        jobs["size"] = np.ceil(jobs["size"])
    return jobs
