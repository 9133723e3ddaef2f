"""Invariants every run checks at the end (DESIGN.md): conservation and causality.

Each check is vectorized over the job (or piece) table and raises :class:`InvariantError` naming
the first offending job.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from gridemu.model.errors import InvariantError
from gridemu.model.jobs import radix_ids

if TYPE_CHECKING:  # pandas only for annotations: shards check their sites without it
    import pandas as pd


def check_conservation(pieces: pd.DataFrame, submitted: np.ndarray) -> None:
    """Every submitted job is in the table once, unchanged, or as pieces that add up to it.

    ``pieces`` has one row per piece a site holds (a whole job is one piece, fragment 0);
    each (job, fragment) must appear once and the pieces of a job must sum to its size.
    """
    ids = pieces["job_id"].to_numpy()
    frag = pieces["fragment"].to_numpy()
    # Rows are sorted by (job, fragment): a repeat sits next to its twin.
    same = ids[1:] == ids[:-1]
    twin = same & (frag[1:] == frag[:-1])
    if twin.any():
        k = int(np.flatnonzero(twin)[0])
        raise InvariantError(
            f"conservation: job {int(ids[k])} (fragment {int(frag[k])}) is held by two sites at the end"
        )
    if len(ids) and (ids[1:] >= ids[:-1]).all():  # sorted: each job's first piece starts a run, no sort needed
        uniq = ids[np.r_[True, ~same]]
    else:
        uniq = np.unique(ids)
    want = submitted["job_id"]
    ordered = len(want) < 2 or bool((want[1:] > want[:-1]).all())  # the shards' jobs come in id order
    sub = submitted if ordered else submitted[np.argsort(want, kind="stable")]
    want = sub["job_id"]
    if len(uniq) != len(want) or not np.array_equal(uniq, want):
        missing = np.setdiff1d(want, uniq)
        extra = np.setdiff1d(uniq, want)
        if len(missing):
            raise InvariantError(
                f"conservation: job {int(missing[0])} was lost ({len(missing)} jobs missing at the end)"
            )
        raise InvariantError(f"conservation: job {int(extra[0])} appeared from nowhere")
    whole = len(uniq) == len(ids)  # no job split: the rows are the submitted jobs, in order
    job = None if whole else np.searchsorted(want, ids)
    for col in ("release", "procs"):
        bad = pieces[col].to_numpy() != (sub[col] if whole else sub[col][job])
        if bad.any():
            raise InvariantError(f"conservation: job {int(ids[bad][0])} changed its {col} on the way")
    if whole:
        size = pieces["size"].to_numpy()
        bad = size != sub["size"]
    else:
        size = np.bincount(job, weights=pieces["size"].to_numpy(), minlength=len(want))
        bad = ~np.isclose(size, sub["size"], rtol=1e-9, atol=1e-9)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InvariantError(
            f"conservation: job {int(want[k])} has size {sub['size'][k]} but its pieces add up to {size[k]}"
        )


def check_guarantees(jobs: pd.DataFrame, horizon: float) -> None:
    """No job finishes after the latest finish time announced at its submission (thesis 4.1).

    A job still unfinished at a horizon past its announced time is late too.
    """
    deadline = jobs["deadline"].to_numpy()
    end = jobs["end"].to_numpy()
    tol = 1e-9 * np.maximum(1.0, np.abs(deadline))
    late = np.isfinite(deadline) & ((end > deadline + tol) | (np.isnan(end) & (deadline + tol < horizon)))
    if late.any():
        j = jobs.iloc[int(np.flatnonzero(late)[0])]
        when = f"finished at t={j.end}" if not math.isnan(j.end) else f"was not finished at the horizon t={horizon}"
        raise InvariantError(
            f"guarantee: job {int(j.job_id)} {when}, after the latest finish time t={j.deadline} announced at its "
            f"submission ({int(late.sum())} late jobs)"
        )


def check_causality(table: Mapping[str, Any], site_procs: np.ndarray) -> None:
    """No job starts before its release, on more processors than its site has, or overbooks a site.

    ``table``: job_id, release, procs, exec_site, start, end as columns (a DataFrame, or the
    arrays a shard gathers of its own sites: each shard checks its sites' schedules).
    """
    ids = np.asarray(table["job_id"])
    start = np.asarray(table["start"], dtype=float)
    release = np.asarray(table["release"])
    started = ~np.isnan(start)
    early = started & (start < release)
    if early.any():
        k = int(np.flatnonzero(early)[0])
        raise InvariantError(f"causality: job {int(ids[k])} started at {start[k]} before its release {release[k]}")
    site = np.asarray(table["exec_site"])
    procs = np.asarray(table["procs"])
    too_wide = started & (procs > site_procs[site])
    if too_wide.any():
        k = int(np.flatnonzero(too_wide)[0])
        raise InvariantError(
            f"causality: job {int(ids[k])} needs {procs[k]} processors, site {site[k]} has {site_procs[site[k]]}"
        )
    # Processors in use per site never exceed its count: sweep starts (+q) and ends (-q).
    idx = np.flatnonzero(started)
    if not len(idx):
        return
    end = np.asarray(table["end"], dtype=float)[idx]
    end = np.where(np.isnan(end), np.inf, end)
    s = site[idx]
    q = procs[idx]
    # One sort of every end (-q) and start (+q), by site, then time: ends first at equal
    # times, as they come first and the sorts are stable; the sites by radix where they can
    # be (1M jobs: 0.33 -> 0.18 s). Temporaries are dropped as soon as used
    # (10M jobs: each is 80-160 MB).
    both = np.concatenate([s, s])
    order = np.lexsort((np.concatenate([end, start[idx]]), radix_ids(both)))
    del end
    sites = both[order]
    del both
    # Every start has its end (at infinity for a job still running), so each site's events
    # add up to 0: the running sum over all sites is each site's own.
    used = np.cumsum(np.concatenate([-q, q])[order])
    over = used > site_procs[sites]
    if over.any():
        k = int(np.flatnonzero(over)[0])
        row = idx[order[k] % len(idx)]  # a start (the second half): its job
        raise InvariantError(
            f"causality: site {int(sites[k])} runs {int(used[k])} processors of {int(site_procs[sites[k]])} "
            f"at t={start[row]} (job {int(ids[row])})"
        )
