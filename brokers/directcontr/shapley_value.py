"""ψ_sp and the Shapley value (Skowron and Rządca), exactly; the fairness measure Δψ/p_tot.

Sources, cited by line of the text files in ``shared/papers``:
[S] = ``shapley-fair-directcontr.txt``: Skowron and Rządca, "Fair share is not enough:
measuring fairness in scheduling with cooperative game theory" (PPAM 2013), the short paper
(the heuristic DIRECTCONTR and the comparison); [L] = ``shapley-nonmonetary-fair-scheduling.txt``:
Skowron and Rządca, "Non-monetary fair scheduling — a cooperative game theory approach"
(SPAA 2013), the long paper (REF as its Algorithms 1-2, RAND as its Algorithm 3,
experiments in its section 6).

Utility (:func:`psi_sp`): [S] eq. (2) line 64, [L] eq. (3) line 895:
ψ_sp(σ, t) = Σ_{(s,p)∈σ: s≤t} p'·(t − (s + (s + p' − 1))/2) with p' = min(p, t − s) ([L] writes
the min explicitly; [S] 62 says "if the job is not yet completed (p is not known), we set
p = (t − s)"). A job running at t is therefore counted exactly as a completed job of length
p' = t − s would be (its completed unit parts; a unit part that starts at time i is worth
t − i at t); a job that starts at t is worth 0. Contributions and values use the same ψ_sp.

The Shapley value (:func:`shapley`): [L] eq. (1), 328-338. For REF and RAND the values of
coalitions are kept exact: 2·ψ_sp of a fixed schedule is a piecewise polynomial in t
(:class:`_Piecewise`), and the Shapley weights are scaled to integers (:func:`_shapley_scale`).

Fairness (:func:`fairness`; [S] 142, [L] 2127-2138): p_tot = Σ_{(s,p)∈σ*: s ≤ t_end}
min(p, t_end − s) over REF's schedule σ* (:func:`.simulation.p_tot`, beside the
:class:`~.simulation.Result` it reads), and Δψ = Σ_u |ψ_u − ψ*_u|: [S] writes
"|ψ − ψ*| = Σ(ψ − ψ*)" and [L] "‖ψ − ψ*‖_M = Σ(ψ − ψ*)"; both name a norm, [L] the
Manhattan metric ([L] 408), so the printed sum without bars is read as the L1 norm (the
plain sum could be negative).

The Shapley-fair scheduling modules: :mod:`.shapley_value` (ψ_sp, the Shapley value,
Δψ/p_tot), :mod:`.simulation` (the model and the event loop that runs a policy),
:mod:`.coalitions` (REF and RAND(N), which schedule subcoalitions) and
:mod:`.policies` (DIRECTCONTR, the baselines and ``simulate``, the entry point).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from itertools import combinations
from typing import Callable, Iterable, Sequence

import numpy as np

_INT64_SAFE = 2**62


# ---------------------------------------------------------------- ψ_sp and the Shapley value


def psi_sp(pairs: Iterable[tuple[float, float | None]], t: float) -> float:
    """ψ_sp at t of the jobs given as (start s, processing time p) pairs ([S] eq. (2), [L] eq. (3)).

    A pair with s > t is not counted; p = None (not completed, size unknown) or s + p > t is
    counted with p' = t − s, as a completed job of length p' (its completed unit parts); a
    job starting at t is worth 0.
    """
    if not _finite_number(t):
        raise ValueError(f"t: must be a finite number, got {t!r}")
    twice = 0
    for i, pair in enumerate(pairs):
        s, p = pair
        if not _finite_number(s):
            raise ValueError(f"pairs[{i}]: start must be a finite number, got {s!r}")
        if p is not None and (not _finite_number(p) or p < 0):
            raise ValueError(f"pairs[{i}]: processing time must be None or a finite number >= 0, got {p!r}")
        if s > t:
            continue
        pe = t - s if p is None else min(p, t - s)
        twice += pe * (2 * t - 2 * s - pe + 1)
    return twice / 2


def shapley(value: Callable[[frozenset[int]], float], players: Sequence[int]) -> dict[int, float]:
    """Exact Shapley value by the subset formula ([L] eq. (1)): Σ_S |S|!(n−|S|−1)!/n! (v(S∪u) − v(S)).

    ``value`` is called once per subset of ``players``; ``value(frozenset())`` must be 0.
    """
    players = list(players)
    if len(set(players)) != len(players):
        raise ValueError(f"players: must be distinct, got {players!r}")
    empty = value(frozenset())
    if empty != 0:
        raise ValueError(f"value: value(frozenset()) must be 0, got {empty!r}")
    n = len(players)
    v: dict[frozenset[int], float] = {frozenset(): 0}
    for size in range(1, n + 1):
        for combo in combinations(players, size):
            v[frozenset(combo)] = value(frozenset(combo))
    fact = [math.factorial(i) for i in range(n + 1)]
    out: dict[int, float] = {}
    for u in players:
        others = [p for p in players if p != u]
        total = 0.0
        for size in range(n):
            weight = fact[size] * fact[n - size - 1] / fact[n]
            for combo in combinations(others, size):
                s = frozenset(combo)
                total += weight * (v[s | {u}] - v[s])
        out[u] = total
    return out


def _finite_number(x) -> bool:
    if type(x) is int:  # the usual case, before the slow checks against numbers' ABCs
        return True
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


# ------------------------------------------------------------- exact piecewise polynomials
#
# 2·ψ_sp of one job (s, p) at time t is a polynomial in t on each piece:
#   s <= t <= s + p : (t − s)(t − s + 1)        = t² + (1 − 2s) t + (s² − s)
#   t >= s + p      : 2p t − p(2s + p − 1)
# (equal at t = s + p, and 0 at t = s). Written as deltas switched on at t >= s and at
# t >= s + p, any weighted sum of coalition values is a cumulative sum of deltas.


def _delta_rows(sp: np.ndarray, t_end: int) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints and (t², t, 1) deltas of 2·ψ_sp for the (s, p) rows; completions after t_end left out."""
    s = sp[:, 0].astype(np.int64)
    p = sp[:, 1].astype(np.int64)
    on = np.stack([np.ones_like(s), 1 - 2 * s, s * s - s], axis=1)
    done = s + p <= t_end
    s2, p2 = s[done], p[done]
    off = np.stack([-np.ones_like(s2), 2 * p2 - 1 + 2 * s2, -(p2 * (2 * s2 + p2 - 1) + s2 * s2 - s2)], axis=1)
    return np.concatenate([s, s2 + p2]), np.concatenate([on, off], axis=0)


def _merged_rows(tau: np.ndarray, delta: np.ndarray, x: int) -> tuple[np.ndarray, np.ndarray]:
    """One schedule's rows with the deltas of each instant summed (exact: Python integers
    where an int64 sum could overflow)."""
    order = np.argsort(tau, kind="stable")
    tau, delta = tau[order], delta[order]
    starts = np.r_[0, np.flatnonzero(tau[1:] != tau[:-1]) + 1]
    if float(np.abs(delta.astype(float)).sum(axis=0) @ np.array([float(x) * x, float(x), 1.0])) >= _INT64_SAFE / 4:
        delta = delta.astype(object)
    return tau[starts], np.add.reduceat(delta, starts, axis=0)


class _Piecewise:
    """t ↦ Σ_S w_S · 2·v(S, t) for fixed schedules, every coordinate of the weight vectors at once.

    Kept column by column: coordinate u holds only the schedules whose weight for u is not
    0. RAND's weights are sparse (a sampled coalition counts for one or two organizations),
    and a dense (breakpoints × organizations) table took 14 GB at 100 organizations.
    ``entries`` may be a generator: each schedule is reduced to its breakpoints (its rows of
    one instant summed) as it comes and then dropped, so RAND(N) never holds all its sampled
    coalitions' schedules at once (4.6 GB at 300 organizations when it did)."""

    def __init__(self, entries: Iterable[tuple[Sequence[int], np.ndarray]], width: int, t_end: int):
        x = max(int(t_end), 1)
        columns: list[list[tuple[int, np.ndarray, np.ndarray]]] = [[] for _ in range(width)]
        for w, sp in entries:
            if not len(sp) or not any(w):
                continue
            tau, delta = _merged_rows(*_delta_rows(np.asarray(sp).reshape(-1, 2), t_end), x)
            for u in range(width):
                if w[u]:
                    columns[u].append((int(w[u]), tau, delta))
        self.taus: list[np.ndarray] = []
        self.cum: list[np.ndarray | None] = []
        for mine in columns:
            if not mine:
                self.taus.append(np.empty(0, dtype=np.int64))
                self.cum.append(None)
                continue
            tau = np.concatenate([t for _, t, _ in mine])
            delta = np.concatenate([d for _, _, d in mine])
            weight = np.concatenate([np.full(len(t), w, dtype=np.int64) for w, t, _ in mine])
            order = np.argsort(tau, kind="stable")
            tau, delta, weight = tau[order], delta[order], weight[order]
            bound = float(np.abs(weight).max()) * float(
                (
                    np.abs(delta[:, 0].astype(float)) * float(x) * x
                    + np.abs(delta[:, 1].astype(float)) * float(x)
                    + np.abs(delta[:, 2].astype(float))
                ).sum()
            )
            if bound < _INT64_SAFE / 4 and delta.dtype != object:
                cum = np.cumsum(weight[:, None] * delta, axis=0)
            else:  # exact, slower: Python integers
                cum = np.cumsum(weight.astype(object)[:, None] * delta.astype(object), axis=0)
            last = np.r_[tau[1:] != tau[:-1], True]  # the last row of each breakpoint
            self.taus.append(tau[last])
            self.cum.append(cum[last])

    def at(self, t: int, width: int) -> list[int]:
        out = [0] * width
        for u in range(width):
            cum = self.cum[u]
            i = int(np.searchsorted(self.taus[u], t, side="right")) - 1
            if cum is not None and i >= 0:
                a, b, c = cum[i]
                out[u] = int(a) * t * t + int(b) * t + int(c)
        return out


def _shapley_scale(n: int) -> tuple[int, list[int]]:
    """L = lcm of the Shapley denominators n·C(n−1, s−1), and W[s] = L·(s−1)!(n−s)!/n! (integers)."""
    L = 1
    for s in range(1, n + 1):
        L = math.lcm(L, n * math.comb(n - 1, s - 1))
    W = [0] + [L // (n * math.comb(n - 1, s - 1)) for s in range(1, n + 1)]
    return L, W


def _twice_psi(sp: np.ndarray, t: int) -> int:
    total = 0
    for s, p in sp.tolist():
        if s <= t:
            pe = min(p, t - s)
            total += pe * (2 * t - 2 * s - pe + 1)
    return total


def _shapley_exact(v: dict[frozenset[int], Fraction], players: list[int]) -> dict[int, Fraction]:
    n = len(players)
    fact = [math.factorial(i) for i in range(n + 1)]
    out = {}
    for u in players:
        others = [p for p in players if p != u]
        total = Fraction(0)
        for size in range(n):
            w = Fraction(fact[size] * fact[n - size - 1], fact[n])
            for combo in combinations(others, size):
                s = frozenset(combo)
                total += w * (v[s | {u}] - v[s])
        out[u] = total
    return out


# ------------------------------------------------------------------------------ fairness


def fairness(psi: Sequence[float], psi_ref: Sequence[float], ptot: float) -> float:
    """Δψ/p_tot with Δψ = Σ_u |ψ_u − ψ*_u| (the L1 norm; see the module docstring). 0/0 is 0."""
    if len(psi) != len(psi_ref):
        raise ValueError(f"psi: {len(psi)} values, psi_ref: {len(psi_ref)}")
    if not _finite_number(ptot) or ptot < 0:
        raise ValueError(f"ptot: must be a finite number >= 0, got {ptot!r}")
    delta = sum(abs(a - b) for a, b in zip(psi, psi_ref))
    if ptot == 0:
        if delta == 0:
            return 0.0
        raise ValueError(f"ptot: 0 (REF completed no unit part) but Δψ = {delta!r}")
    return delta / ptot
