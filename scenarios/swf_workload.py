"""An SWF trace as a scenario's workload: the window (given, or drawn from the seed), users
mapped to organizations (``workload.orgs_by``, ``user_map``), each organization's jobs at its
first site, and what a trace study should hear about the result (:func:`org_warnings`).
The trace itself is read and converted by :mod:`gridemu.scenarios.swf`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gridemu.model.checks import check_number
from gridemu.model.errors import ScenarioError, WorkloadError, first_few
from gridemu.scenarios.swf import SwfJobs, read_swf, scale_to_load, swf_to_jobs

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.scenarios.workload import WorkloadSource


def swf_jobs(scenario: "WorkloadSource") -> tuple[np.ndarray, list[str]]:
    """An SWF trace: users mapped to organizations; each organization submits to its first site."""
    wl = scenario.workload
    n_orgs = int(wl.get("orgs", len(scenario.orgs)))
    if n_orgs != len(scenario.orgs):
        raise ScenarioError(
            "workload.orgs",
            f"the trace is split over {n_orgs} organizations but the sites belong to {len(scenario.orgs)}",
        )
    user_map = {int(k): int(v) for k, v in (wl.get("user_map") or {}).items()}
    trace = read_swf(wl["path"])
    t_start, t_end = wl.get("t_start"), wl.get("t_end")
    if t_start == "random":
        # A sub-trace of length `duration` at a random start (the Shapley papers' experiments).
        if "duration" not in wl:
            raise ScenarioError("workload.duration", 'give the sub-trace length for t_start = "random"')
        duration = check_number("workload.duration", wl["duration"], positive=True)
        submit = trace.records["submit_time"]
        submit = submit[submit >= 0]
        lo, hi = float(submit.min()), float(submit.max()) - duration
        if hi < lo:
            raise ScenarioError(
                "workload.duration",
                f"{duration} is longer than the trace ({float(submit.max()) - lo} s of submissions)",
            )
        rng = np.random.default_rng(np.random.SeedSequence(scenario.seed, spawn_key=(0x57494E44,)))
        t_start = float(np.floor(rng.uniform(lo, hi)))
        t_end = t_start + duration
        scenario.extra["swf_window"] = [t_start, t_end]
    elif "duration" in wl:  # a window of that length from a given start ([L]'s "first 5·10^6 time moments")
        if t_start is None or t_end is not None:
            raise ScenarioError("workload.duration", "give it with t_start (a number or \"random\"), not with t_end")
        t_start = check_number("workload.t_start", t_start)
        t_end = t_start + check_number("workload.duration", wl["duration"], positive=True)
    # Each organization's processors and first site, in one pass over the sites.
    org_index = {org: k for k, org in enumerate(scenario.orgs)}
    site_org = [org_index[s.org] for s in scenario.sites]
    org_procs = np.bincount(site_org, weights=[s.procs for s in scenario.sites], minlength=len(scenario.orgs))
    warm = wl.get("warm_start") == "fcfs"
    first_site: dict[int, int] = {}
    for s, k in zip(scenario.sites, site_org):
        first_site.setdefault(k, s.site_id)
    first_procs = [scenario.sites[first_site[k]].procs for k in range(n_orgs) if k in first_site]
    out = swf_to_jobs(
        trace.records,
        n_orgs=n_orgs,
        seed=scenario.seed,
        user_map=user_map,
        orgs_by=wl.get("orgs_by", "random"),
        capacity=org_procs.tolist(),
        split_parallel=bool(wl.get("split_parallel", False)),
        t_start=t_start,
        t_end=t_end,
        org_names=list(scenario.orgs),  # group paths start with the organization's own name
        # A warm start replays the trace on the whole machine: every site's processors.
        warm_machines=int(org_procs.sum()) if warm else None,
        first=int(wl["jobs"]) if "jobs" in wl else None,
        # Left out before users are mapped (a job wider than every organization's first site
        # runs nowhere): "balanced" then balances the jobs that run. _too_wide does the rest.
        widest=max(first_procs) if wl.get("too_wide", "error") == "skip" and not wl.get("split_parallel") else None,
    )
    if not len(out.jobs) and len(trace.records):
        raise WorkloadError(_empty_window(wl["path"], trace.records["submit_time"], t_start, t_end, out.skipped))
    jobs = out.jobs
    jobs["submit_site"] = np.array([first_site[o] for o in range(n_orgs)])[jobs["owner"]]
    jobs = _too_wide(wl, scenario.sites, out)
    if "load" in wl:
        # The window's own jobs: a warm start's backlog (released at t_start) is no arrival.
        capacity = float(sum(sum(s.speeds) for s in scenario.sites))
        offered, factor = scale_to_load(jobs[out.warm :], capacity, float(wl["load"]))
        scenario.extra["swf_load"] = {"offered": offered, "target": float(wl["load"]), "arrival_scale": factor}
    scenario.extra["swf_skipped"] = dict(out.skipped)
    if warm:
        scenario.extra["swf_warm_jobs"] = out.warm
    scenario.extra["workload_warnings"] = (
        skip_warnings(wl["path"], out.skipped, len(jobs), out.wide_work / max(out.wide_work + _work(jobs), 1e-300))
        + map_warnings(wl["path"], user_map, trace.records["user_id"])
        + number_warnings(wl["path"], trace.records["job_number"])
        + org_warnings(jobs, org_procs, scenario.orgs, wl.get("orgs_by", "random"))
    )
    return jobs, list(out.group_names)


def _too_wide(wl: dict, sites: list, out: SwfJobs) -> np.ndarray:
    """The jobs, where none is wider than its organization's site: one that is stops the run
    with its trace number, or (``workload.too_wide = "skip"``) is left out and counted
    (``too_wide``), the others numbered 0.. again."""
    jobs = out.jobs
    too_big = jobs["procs"] > np.array([s.procs for s in sites])[jobs["submit_site"]]
    if not too_big.any():
        return jobs
    if wl.get("too_wide", "error") == "skip":
        out.skipped["too_wide"] = out.skipped.get("too_wide", 0) + int(too_big.sum())
        out.wide_work += _work(jobs[too_big])
        jobs, out.trace_numbers = jobs[~too_big], out.trace_numbers[~too_big]
        jobs["job_id"] = np.arange(len(jobs))
        out.jobs = jobs
        if not len(jobs):
            raise WorkloadError(f"{wl['path']}: every job of the window is wider than its organization's site")
        return jobs
    j = int(np.flatnonzero(too_big)[0])
    raise WorkloadError(
        f"{wl['path']}: job {int(out.trace_numbers[j])} of the trace needs {int(jobs['procs'][j])} processors, "
        f"more than its organization's site {sites[int(jobs['submit_site'][j])].name} has "
        f"({int(too_big.sum())} such jobs); give the sites more processors, set workload.split_parallel = true, "
        'or workload.too_wide = "skip"'
    )


def _empty_window(path: str, submit: np.ndarray, t_start: float | None, t_end: float | None, skipped: dict) -> str:
    """Why a trace gave no job: the window against the span of its submit times, or its
    jobs' faults."""
    times = submit[submit >= 0]
    span = (
        f"its jobs are submitted from {float(times.min()):,.0f} to {float(times.max()):,.0f} s"
        if len(times)
        else "no line has a submit time"
    )
    if skipped.keys() & {"before_window", "after_window"}:
        lo = "the start" if t_start is None else f"{float(t_start):,.0f}"
        hi = "the end" if t_end is None else f"{float(t_end):,.0f}"
        return f"{path}: no job is submitted in the window [{lo}, {hi}) s: {span} (workload.t_start, t_end, duration)"
    reasons = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k, n in skipped.items())
    return f"{path}: none of its jobs can be emulated ({reasons}); {span}"


def map_warnings(path: str, user_map: dict[int, int], users: np.ndarray) -> list[str]:
    """``workload.user_map`` entries for users who submit nothing in the whole trace (a typo,
    or the map of another trace): they place nobody."""
    absent = sorted(set(user_map) - set(np.unique(users).tolist()))
    if not absent:
        return []
    return [f"workload.user_map: user(s) {first_few(absent, 10)} submit no job in {path}: their entries place nobody"]


def number_warnings(path: str, numbers: np.ndarray) -> list[str]:
    """Job numbers (SWF field 1, a counter in the format) that more than one line gives: two
    traces joined, or a log cut and pasted. The run takes every line (its own job ids are its
    own), but a message naming a job of the trace by its number may mean either."""
    values, counts = np.unique(numbers, return_counts=True)
    repeated = values[counts > 1]
    if not len(repeated):
        return []
    lines, shown = int(counts[counts > 1].sum()), first_few(repeated.tolist())
    return [
        f"{Path(path).name}: {len(repeated):,} job numbers appear on more than one line ({shown}; "
        f"{lines:,} lines in all): every line is a job of the run, but a job named by its trace number "
        "may be either"
    ]


def _work(jobs: np.ndarray) -> float:
    """The jobs' work: run time x processors."""
    return float((jobs["size"] * jobs["procs"]).sum())


def skip_warnings(path: str, skipped: dict[str, int], kept: int, wide_share: float = 0.0) -> list[str]:
    """The trace's jobs that cannot be emulated (no run time, no processors, ...), which
    ``summary.json`` counts (``trace_jobs_skipped``), said at validation and at the run's
    start too; the jobs outside the chosen window, or after its first ``workload.jobs``,
    are left out on purpose and not named."""
    faults = {k: n for k, n in skipped.items() if k not in ("before_window", "after_window", "after_first_jobs")}
    if not faults:
        return []
    reasons = ", ".join(
        f"{n:,} {k.replace('_', ' ')}" + (f": {100 * wide_share:.0f} % of the window's work" if k == "too_wide" else "")
        for k, n in faults.items()
    )
    return [
        f"{Path(path).name}: {sum(faults.values()):,} jobs skipped, which cannot be emulated ({reasons}); "
        f"{kept:,} jobs kept (summary.json: trace_jobs_skipped)"
    ]


def _ratio(r: float) -> str:
    """A ratio as people read it: 2,398, not 2.4e+03; 1e+299, not its 300 digits."""
    return f"{r:,.0f}" if r < 1e6 else f"{r:.3g}"


def org_warnings(jobs: np.ndarray, procs: np.ndarray, orgs: list[str], rule: str) -> list[str]:
    """What a trace study should hear about how its users fell on the organizations (``procs``:
    each one's processors): one with no job, or work per processor 10 times apart (a site of
    5 processors with 300 long jobs beside idle big ones)."""
    work = np.bincount(jobs["owner"], weights=jobs["size"] * jobs["procs"], minlength=len(procs)) / procs
    user_work = np.bincount(jobs["group"], weights=jobs["size"] * jobs["procs"])  # one group per user
    users = int(np.count_nonzero(user_work))
    out = []
    empty = [orgs[k] for k in np.flatnonzero(work == 0)]
    if empty:
        if rule != "balanced":
            hint = 'try orgs_by = "balanced" or a user_map'
        elif users < len(procs):
            hint = (
                f"the trace has {users} users with jobs here for {len(procs)} "
                "organizations: use fewer organizations or a longer window"
            )
        else:  # balanced over the jobs that run: a map, or sites too narrow after it
            hint = "the users workload.user_map pins, or jobs too wide for a site after the mapping, left it none"
        out.append(
            f"workload.orgs_by = {rule!r}: {len(empty)} of {len(procs)} organizations got no job of the trace "
            f"({first_few(empty)}); {hint}"
        )
    busy = work[work > 0]
    if len(busy) > 1 and busy.max() > 10 * busy.min():
        hi, lo = int(np.argmax(work)), int(np.flatnonzero(work == busy.min())[0])
        top = float(user_work.max() / user_work.sum())
        hint = (
            'try orgs_by = "balanced"'
            if rule != "balanced"
            else f"users are mapped whole, {users} of them for {len(procs)} organizations, the busiest with "
            f"{100 * top:.0f} % of the work: fewer organizations or a longer window even it out"
        )
        out.append(
            f"workload.orgs_by = {rule!r}: work per processor differs {_ratio(busy.max() / busy.min())}x between "
            f"organizations ({orgs[hi]}: {work[hi]:.3g} s, {orgs[lo]}: {work[lo]:.3g} s a processor); {hint}"
        )
    return out
