"""The fairness properties of the migration paper (Amar, Mu'alem, Stößer, AAMAS 2008) as checkers.

EF (Definition 2: :func:`ef_violations`, :func:`ef_counts`), WPM (Definition 3:
:func:`wpm_violations`, by counterfactual reruns) and ILV (Definition 4:
:func:`ilv_violations`, reruns on h_θ(J), :func:`h_set`), over the job types and the
simulator of :mod:`brokers.gm.algorithm` (which holds the model and its other readings).

Readings where the text is ambiguous or silent (the paper's wording in quotes):
  * Definition 1 is printed "at least one of the following inequalities is strict:
    r_j ≤ r_k or v_j ≥ v_k": j ≻ k when r_j ≤ r_k, v0_j ≥ v0_k, t_j ≤ t_k and (r_j < r_k or
    v0_j > v0_k) ("the ≻ order does not require strictness with respect to the running
    times").
  * Definition 3 is printed "d_j(θ_j, θ_−j) ≤ d_j'(θ_j', θ_−j) whenever j ≥ j'" (⪰ read for
    ≥): a comparison of completion times d (absolute, not flow times). We test one
    coordinate at a time, by ``step``: released later, lower priority (kept ≥ 0), larger
    size; none may finish earlier than the true type.
  * Definition 4: h_θ(J) contains θ itself (v0 equal, r ≤ r_θ). Of all the J' with the same
    h we test J' = h_θ(J) (no lower jobs at all), the instance the proof of Proposition 3
    uses. Conditions 2-3 ("r_j' ≠ r_k'") are checked: a shared release raises ValueError.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from gridemu.brokers.gm.algorithm import _TOL, GmJob, _index, simulate


def ef_violations(jobs: Sequence[GmJob], completion: Mapping[int, float]) -> list[tuple[int, int]]:
    """Definition 2 (EF): every pair (j, k) with j ≻ k (Definition 1) and d_j > d_k (+1e-9)."""
    by_id = _index(jobs)
    for jid in by_id:
        if jid not in completion:
            raise ValueError(f"job {jid}: no completion time given")
    if not jobs:
        return []
    ids = np.array([j.id for j in jobs])
    out: list[tuple[int, int]] = []
    for rows, cols, dom, late in _dominance_blocks(jobs, completion):
        jj, kk = np.nonzero(dom & late)
        out.extend(zip(ids[rows[jj]].tolist(), ids[cols[kk]].tolist()))
    return sorted(out)


def ef_counts(jobs: Sequence[GmJob], completion: Mapping[int, float]) -> tuple[int, int]:
    """(EF violations, comparable pairs j ≻ k): the figures of "violations per 1,000 pairs"."""
    bad = pairs = 0
    for _, _, dom, late in _dominance_blocks(jobs, completion):
        pairs += int(np.count_nonzero(dom))  # a bool .sum() widens every entry: ~10x slower
        bad += int(np.count_nonzero(dom & late))
    return bad, pairs


def _dominance_blocks(jobs: Sequence[GmJob], completion: Mapping[int, float], block: int = 1024):
    """Blocks of the j ≻ k matrix (Definition 1) and of d_j > d_k: ``(rows, cols, dom, late)``,
    ``rows`` and ``cols`` the positions in ``jobs`` of the block's j and k.

    Jobs are taken in release order, so a block of j compares only with the k released no
    earlier than its first j (j ≻ k needs r_j ≤ r_k): about half the matrix. The k released
    after the block's last j (most of them) need no release test at all, so they come as a
    second block with the two other tests only. Memory stays O(block × n)."""
    r = np.array([j.r for j in jobs], dtype=float)
    order = np.argsort(r, kind="stable")
    r = r[order]
    t = np.array([j.t for j in jobs], dtype=float)[order]
    v = np.array([j.v0 for j in jobs], dtype=float)[order]
    d = np.array([completion[j.id] for j in jobs], dtype=float)[order]
    n = len(jobs)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        first = int(np.searchsorted(r, r[lo], side="left"))
        later = int(np.searchsorted(r, r[hi - 1], side="right"))  # r_k > every r_j from here
        rj, tj, vj, dj = r[lo:hi, None], t[lo:hi, None], v[lo:hi, None], d[lo:hi, None]
        rk, tk, vk = r[first:later], t[first:later], v[first:later]
        dom = (rj <= rk) & (vj >= vk) & (tj <= tk) & ((rj < rk) | (vj > vk))
        yield order[lo:hi], order[first:later], dom, dj > d[first:later] + _TOL
        if later < n:
            dom = (vj >= v[later:]) & (tj <= t[later:])
            yield order[lo:hi], order[later:], dom, dj > d[later:] + _TOL


def wpm_violations(
    jobs: Sequence[GmJob], speeds: Sequence[float], policy: str = "gm", *, step: float = 1.0, **simulate_kwargs
) -> list[tuple[int, str]]:
    """Definition 3 (WPM) by counterfactual reruns, every other job's type fixed.

    For each job j: released ``step`` later ("release"), priority ``step`` lower when it
    stays >= 0 ("priority"), size ``step`` larger ("size"). Each worse type must not
    complete earlier: d_j(worse) >= d_j(true) - 1e-9, absolute completion times.
    Returns (job id, which) for each violation, in job order.
    """
    if not (step > 0) or math.isinf(step):
        raise ValueError(f"step: must be finite and > 0, got {step!r}")
    base = simulate(jobs, speeds, policy, **simulate_kwargs).completion
    out: list[tuple[int, str]] = []
    for pos, job in enumerate(jobs):
        variants = [("release", replace(job, r=job.r + step))]
        if job.v0 - step >= 0:
            variants.append(("priority", replace(job, v0=job.v0 - step)))
        variants.append(("size", replace(job, t=job.t + step)))
        for which, worse in variants:
            other = list(jobs)
            other[pos] = worse
            d = simulate(other, speeds, policy, **simulate_kwargs).completion[job.id]
            if d < base[job.id] - _TOL * max(1.0, abs(base[job.id])):
                out.append((job.id, which))
    return out


def _check_distinct_releases(jobs: Sequence[GmJob]) -> None:
    seen: dict[float, int] = {}
    for job in jobs:
        if job.r in seen:
            raise ValueError(
                f"jobs {seen[job.r]} and {job.id}: both released at {job.r!r}; ILV (Definition 4) "
                "needs distinct release times"
            )
        seen[job.r] = job.id


def h_set(jobs: Sequence[GmJob], theta: GmJob) -> list[GmJob]:
    """Definition 4: h_θ(J) = jobs with v0 > v0_θ, or v0 = v0_θ and r <= r_θ (θ included)."""
    return [k for k in jobs if k.v0 > theta.v0 or (k.v0 == theta.v0 and k.r <= theta.r)]


def ilv_violations(jobs: Sequence[GmJob], speeds: Sequence[float], policy: str = "gm", **simulate_kwargs) -> list[int]:
    """Definition 4 (ILV): ids of the jobs θ whose d_θ changes from J to J' = h_θ(J) ∪ {θ}.

    Raises ValueError naming two jobs that share a release time (conditions 2-3).
    """
    _index(jobs)
    _check_distinct_releases(jobs)
    base = simulate(jobs, speeds, policy, **simulate_kwargs).completion
    out: list[int] = []
    for theta in jobs:
        sub = h_set(jobs, theta)
        d = simulate(sub, speeds, policy, **simulate_kwargs).completion[theta.id]
        if abs(d - base[theta.id]) > _TOL * max(1.0, abs(d)):
            out.append(theta.id)
    return out
