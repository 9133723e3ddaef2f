"""Statistics of runs and sweeps: tail percentiles of job figures, and a sweep's mean, standard
deviation, count and 95 % confidence interval per setting (Student t; no scipy: the quantiles
come from a table, exact to the 4 digits printed, interpolated in 1/df between its rows).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

#: The tail of a job figure that a run and a sweep report, beside its mean.
QUANTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99), ("max", 1.0))
#: The job figures with a tail: summary.json's ``global`` gets ``<figure>_<p50|p95|p99|max>``.
TAIL_FIGURES = ("flow_time", "wait_time", "bounded_slowdown")

#: t_{0.975, df}: the two-sided 95 % quantile of Student's t with df degrees of freedom.
_T975 = {
    1: 12.7062,
    2: 4.3027,
    3: 3.1824,
    4: 2.7764,
    5: 2.5706,
    6: 2.4469,
    7: 2.3646,
    8: 2.3060,
    9: 2.2622,
    10: 2.2281,
    11: 2.2010,
    12: 2.1788,
    13: 2.1604,
    14: 2.1448,
    15: 2.1314,
    16: 2.1199,
    17: 2.1098,
    18: 2.1009,
    19: 2.0930,
    20: 2.0860,
    25: 2.0595,
    30: 2.0423,
    40: 2.0211,
    60: 2.0003,
    120: 1.9799,
}
_Z975 = 1.959964


def t975(df: int) -> float:
    """Student's t quantile for a two-sided 95 % interval with ``df`` degrees of freedom
    (df >= 1); between the table's rows, linear in 1/df (the usual interpolation, off by
    less than 0.001)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df in _T975:
        return _T975[df]
    rows = sorted(_T975)
    if df > rows[-1]:
        lo, hi, t_lo, t_hi = rows[-1], math.inf, _T975[rows[-1]], _Z975
    else:
        lo = max(r for r in rows if r < df)
        hi = min(r for r in rows if r > df)
        t_lo, t_hi = _T975[lo], _T975[hi]
    w = (1 / lo - 1 / df) / (1 / lo - (0 if math.isinf(hi) else 1 / hi))
    return t_lo + w * (t_hi - t_lo)


def tail(values: np.ndarray | pd.Series, name: str) -> dict[str, float | None]:
    """``<name>_p50``, ``_p95``, ``_p99`` and ``_max`` of ``values`` (None when empty)."""
    v = np.asarray(values, dtype=float)
    if not len(v):
        return {f"{name}_{label}": None for label, _ in QUANTILES}
    qs = np.quantile(v, [q for _, q in QUANTILES])
    return {f"{name}_{label}": float(x) for (label, _), x in zip(QUANTILES, qs)}


def confidence(runs: pd.DataFrame, keys: list[str], figures: list[str]) -> pd.DataFrame:
    """Per setting of ``keys`` (all runs when none; in the order the runs first give each:
    a sweep's runs come in its grid's order), each figure's ``_mean``, ``_std``, ``_n``
    (runs with a value), ``_ci95`` (half-width: t_{0.975,n-1} · std / √n; NaN for n < 2) and
    ``_lo``/``_hi`` (mean ∓ half-width), with ``runs`` first."""
    groups = runs.groupby(keys, sort=False) if keys else [((), runs)]
    rows, index = [], []
    for key, part in groups:
        row: dict[str, Any] = {"runs": len(part)}
        for f in figures:
            v = pd.to_numeric(part[f], errors="coerce").dropna().to_numpy(dtype=float)
            n = len(v)
            mean = float(v.mean()) if n else math.nan
            # From the first value: the same deviations, and runs that agree (a seed that draws
            # nothing) give exactly 0, not the ulp numpy's rounded mean leaves (± 2.2e-12).
            std = float((v - v[0]).std(ddof=1)) if n > 1 else math.nan
            half = t975(n - 1) * std / math.sqrt(n) if n > 1 else math.nan
            row.update({f"{f}_mean": mean, f"{f}_std": std, f"{f}_n": n, f"{f}_ci95": half})
            row.update({f"{f}_lo": mean - half, f"{f}_hi": mean + half})
        rows.append(row)
        index.append(key if isinstance(key, tuple) else (key,))
    table = pd.DataFrame(rows)
    if keys:
        table.index = (
            pd.MultiIndex.from_tuples(index, names=keys)
            if len(keys) > 1
            else pd.Index([i[0] for i in index], name=keys[0])
        )
    return table


def interval_text(mean: float, half: float, signed: bool = False) -> str:
    """A figure as the sweep tables print it: ``mean ± half-width`` (``signed``: a difference,
    its sign always shown), the mean alone where there is no interval, "-" where no value."""
    if pd.isna(mean):
        return "-"
    return (f"{mean:+.4g}" if signed else f"{mean:.4g}") + (f" ± {half:.2g}" if pd.notna(half) else "")


def paired(runs: pd.DataFrame, keys: list[str], figures: list[str]) -> tuple[str, object, pd.DataFrame] | None:
    """Each setting against the first value of the last swept key (of those given more than one
    value), seed by seed (a sweep's
    seeds are the same at every setting): per setting of ``keys`` but that baseline, the
    :func:`confidence` of each figure's difference to the baseline run of the same seed and
    other keys, and ``<figure>_below``, the seeds where it came out lower. Returns (key,
    baseline value, table), or None where no setting has a baseline run of the same seed.
    Two settings whose 95 % intervals overlap can still differ in every seed: this says so."""
    varied = [k for k in keys if runs[k].nunique(dropna=False) > 1]  # a key swept over one value compares nothing
    if not varied or "seed" not in runs:
        return None
    key = varied[-1]
    others = [k for k in keys if k != key]
    first = runs[key].iloc[0]  # the grid's order: its first value
    base = runs[runs[key] == first]
    rest = runs[runs[key] != first]
    if base.empty or rest.empty:
        return None
    joined = rest.merge(base[[*others, "seed", *figures]], on=[*others, "seed"], suffixes=("", "_base"))
    if joined.empty:
        return None
    diff = joined[[*others, key, "seed"]].copy()
    for f in figures:
        diff[f] = pd.to_numeric(joined[f], errors="coerce") - pd.to_numeric(joined[f"{f}_base"], errors="coerce")
    table = confidence(diff, [*others, key], figures)
    groups = diff.groupby([*others, key], sort=False)
    for f in figures:
        table[f"{f}_below"] = groups[f].apply(lambda d: int((d < 0).sum())).to_numpy()
    return key, first, table
