"""The job columns of a group of sites at the end of a run (what a shard returns for
jobs.parquet): one conversion per column for the whole group, not one per site."""
from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING, Iterable

import numpy as np

from gridemu.model.jobs import GONE, JOB_DTYPE, OFFERED
from gridemu.model.messages import N_ROUTING
from gridemu.sites.site import DONE, JOB_FIELDS, MESSAGE, PENDING, QUEUED, RUNNING, TRANSFERRED, column_name

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.sites.site import Site


def job_columns(sites: "list[Site]", horizon: float) -> dict[str, np.ndarray]:
    """Columns for jobs.parquet of every job a group of sites holds (not those they sent
    away), once their books are closed (:meth:`Site.finish`): one conversion per column
    for the whole group, not one per site. Results sort the rows by job and fragment.

    Rows come in two blocks: every site's submitted jobs (its ``local_jobs`` array, with
    the fields an agent changed read back from its columns), then every site's received and
    split-off pieces (from its lists). Only the second block is converted from Python
    objects. A site on the FCFS recurrence has no second block.
    """
    n_local = [site.n_local for site in sites]
    n_other = [len(site.r_state) - site.n_local if not site.fast else 0 for site in sites]
    local = np.concatenate([site.local_jobs for site in sites]) if sites else np.zeros(0, dtype=JOB_DTYPE)
    offsets = np.cumsum([0] + n_local).tolist()
    for k, site in enumerate(sites):
        for name in site.changed:  # fields agents changed on submitted jobs (sizes cut, deadlines)
            local[name][offsets[k] : offsets[k + 1]] = getattr(site, column_name(name))[: site.n_local]
    others = [site for site, n in zip(sites, n_other) if n]
    count = sum(n_other)

    def column(lists, dtype, size: int) -> np.ndarray:
        return np.fromiter(chain.from_iterable(lists), dtype=dtype, count=size)

    def received(attr: str) -> "Iterable[list]":
        return (getattr(site, attr)[site.n_local :] for site in others)

    cols = {
        name: np.concatenate([local[name], column(received(column_name(name)), JOB_DTYPE[name], count)])
        for name in JOB_FIELDS
    }
    both = {}
    for attr, dtype in (("r_state", np.int8), ("r_start", float), ("r_end", float)):
        head = column((getattr(site, attr)[: site.n_local] for site in sites), dtype, len(local))
        both[attr] = np.concatenate([head, column(received(attr), dtype, count)])
    state, start, end = both["r_state"], both["r_start"], both["r_end"]
    ids = np.array([site.site_id for site in sites], dtype=np.int32)
    exec_site = np.concatenate([np.repeat(ids, n_local), np.repeat(ids, n_other)])
    keep = state != GONE
    cols = {name: col[keep] for name, col in cols.items()}
    state, start, end, exec_site = state[keep], start[keep], end[keep], exec_site[keep]
    offered = state == OFFERED
    # States follow from times and the horizon: the same rule for the event loop and
    # the recurrence, which computes schedules past the horizon.
    started = start < horizon
    finished = end < horizon
    state = np.where(state == PENDING, PENDING, np.where(finished, DONE, np.where(started, RUNNING, QUEUED)))
    start = np.where(started, start, np.nan)
    end = np.where(finished, end, np.nan)
    # Jobs delivered to a site but due after the horizon are still travelling.
    arriving = [(site.site_id, e[4][N_ROUTING:]) for site in sites if not site.fast for e in site.heap if e[1] == MESSAGE and e[4][5] == site.job_code]
    if arriving:
        extra = np.array([rec for _, rec in arriving], dtype=JOB_DTYPE)
        cols = {name: np.concatenate([cols[name], extra[name]]) for name in JOB_FIELDS}
        state = np.concatenate([state, np.full(len(extra), TRANSFERRED)])
        start = np.concatenate([start, np.full(len(extra), np.nan)])
        end = np.concatenate([end, np.full(len(extra), np.nan)])
        offered = np.concatenate([offered, np.zeros(len(extra), dtype=bool)])
        exec_site = np.concatenate([exec_site, np.array([sid for sid, _ in arriving], dtype=np.int32)])
    cols.update(offered=offered, exec_site=exec_site, start=start, end=end, state=state.astype(np.int8))
    return cols


def usage_ledger(cols: dict[str, np.ndarray]) -> list[tuple[int, int, float]]:
    """Each site's usage ledger from its job columns: processor-time (at the site's speeds)
    of its finished pieces per group, as (site, group, usage) sorted by site and group.
    Each sum runs over the site's pieces in slot order."""
    done = np.flatnonzero(cols["state"] == DONE)
    if not len(done):
        return []
    used = (cols["end"][done] - cols["start"][done]) * cols["procs"][done]
    site = cols["exec_site"][done].astype(np.int64)
    group = cols["group"][done].astype(np.int64)
    key = site * (int(group.max()) + 1) + group
    keys, inverse = np.unique(key, return_inverse=True)
    sums = np.bincount(inverse, weights=used)
    width = int(group.max()) + 1
    return list(zip((keys // width).tolist(), (keys % width).tolist(), sums.tolist()))
