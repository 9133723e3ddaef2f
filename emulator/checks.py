"""Invariants every run checks at the end (DESIGN.md): conservation and causality.

Each check is vectorized over the job table and raises :class:`InvariantError` naming
the first offending job.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from emulator.errors import InvariantError


def check_conservation(table: pd.DataFrame, submitted: np.ndarray) -> None:
    """Every submitted job appears exactly once, unchanged, in one state."""
    ids = table["job_id"].to_numpy()
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise InvariantError(f"conservation: job {int(uniq[counts > 1][0])} is held by {int(counts.max())} sites at the end")
    want = np.sort(submitted["job_id"])
    if len(uniq) != len(want) or not np.array_equal(uniq, want):
        missing = np.setdiff1d(want, uniq)
        extra = np.setdiff1d(uniq, want)
        if len(missing):
            raise InvariantError(f"conservation: job {int(missing[0])} was lost ({len(missing)} jobs missing at the end)")
        raise InvariantError(f"conservation: job {int(extra[0])} appeared from nowhere")
    by_id = table.set_index("job_id").loc[want]
    for col in ("release", "size", "procs"):
        bad = by_id[col].to_numpy() != submitted[np.argsort(submitted["job_id"])][col]
        if bad.any():
            raise InvariantError(f"conservation: job {int(want[bad][0])} changed its {col} on the way")


def check_causality(table: pd.DataFrame, site_procs: np.ndarray) -> None:
    """No job starts before its release, on more processors than its site has, or overbooks a site."""
    started = table["start"].notna().to_numpy()
    start = table["start"].to_numpy()
    early = started & (start < table["release"].to_numpy())
    if early.any():
        j = table.iloc[int(np.flatnonzero(early)[0])]
        raise InvariantError(f"causality: job {int(j.job_id)} started at {j.start} before its release {j.release}")
    site = table["exec_site"].to_numpy()
    procs = table["procs"].to_numpy()
    too_wide = started & (procs > site_procs[site])
    if too_wide.any():
        j = table.iloc[int(np.flatnonzero(too_wide)[0])]
        raise InvariantError(f"causality: job {int(j.job_id)} needs {j.procs} processors, site {j.exec_site} has {site_procs[j.exec_site]}")
    # Processors in use per site never exceed its count: sweep starts (+q) and ends (-q),
    # ends first at equal times, with a running sum that restarts at every site.
    idx = np.flatnonzero(started)
    if not len(idx):
        return
    end = table["end"].to_numpy()[idx]
    end = np.where(np.isnan(end), np.inf, end)
    s = site[idx]
    times = np.concatenate([start[idx], end])
    delta = np.concatenate([procs[idx], -procs[idx]])
    sites = np.concatenate([s, s])
    jobs = np.concatenate([idx, idx])
    order = np.lexsort((delta, times, sites))
    times, delta, sites, jobs = times[order], delta[order], sites[order], jobs[order]
    total = np.cumsum(delta)
    first = np.r_[True, sites[1:] != sites[:-1]]
    base = np.maximum.accumulate(np.where(first, np.arange(len(sites)), 0))
    offset = np.where(base > 0, total[base - 1], 0)
    used = total - offset
    over = used > site_procs[sites]
    if over.any():
        k = int(np.flatnonzero(over)[0])
        j = table.iloc[int(jobs[k])]
        raise InvariantError(
            f"causality: site {int(sites[k])} runs {int(used[k])} processors of {int(site_procs[sites[k]])} "
            f"at t={times[k]} (job {int(j.job_id)})"
        )
