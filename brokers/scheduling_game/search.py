"""Dynamic programming (Algorithm 3.5, DYN), Equitable Walk (Algorithm 3.6, EW) and Adjusted
Equitable Walk (section 3.6, AEW) over the grid of dedicated resources of
:mod:`.dedicated` (whose docstring gives the representation).

Source: ``shared/papers/multi-organization-grid-thesis.txt``, sections 3.3.2, 3.3.3, 3.6.

Partial and complete grid schedules are kept as integer keys: position i of machine l is a
digit (``bits`` bits, the owner id) at slot off_l + i, so appending a job or swapping two
adjacent jobs changes the key by one addition, and a key hashes in O(1) for the taboo set of
EW. Keys are int64 while they fit in 62 bits (every instance of the small data sets) and
Python ints in object arrays beyond.

Readings:

* DYN, line B of Function paretoSchedules is printed ``C[k'] += p (n_{k',l} - j[k][l])``;
  the prose says "for each organization O_k', all the remaining n_{k',l} - j[k][l] jobs
  will be delayed", but the jobs of O_k' remaining on M_l number n_{k',l} - j[k'][l]: the
  index is read as k' (with j[k][l] every organization would be charged k's remaining
  count and the costs would not be sums of completion times).
* DYN: a partial grid schedule is reached from every machine whose last job could have
  been added last; the copies are one schedule and are merged (by key) before the Pareto
  filter of line C, so the result sets hold each grid schedule once.
* EW, line 2 starts with an empty taboo list, but the example after Algorithm 3.6 says the
  move back to the starting **SPT** schedule "has been already visited": the start is put
  in taboo (and in Π^EW, as line 2 does).
* EW, line 19 keeps a candidate only if C' ≺_e C* (C* = [∞]: the first candidate is taken),
  so of two candidates with equal θ̄ the first found (machine by machine, position by
  position) is advanced. The example after Algorithm 3.6 advances the later one (J_{1,1}^2
  rather than J_{1,1}^1, both giving θ̄ = [7, 13]); ``later_ties=True`` reproduces it.
* EW, line 6: k = argmax C; ties go to the lowest k.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from gridemu.brokers.scheduling_game.dedicated import (
    DedicatedInstance,
    Grid,
    Solutions,
    completion_sums,
    mjf_grid,
    spt_grid,
)
from gridemu.brokers.scheduling_game.equitable import equitably_optimal_subset, pareto_optimal_subset


@dataclass(frozen=True)
class _Slots:
    """Where each machine's positions sit in a key."""

    bits: int
    offsets: tuple[int, ...]
    lengths: tuple[int, ...]
    dtype: type

    @classmethod
    def of(cls, instance: DedicatedInstance) -> "_Slots":
        bits = max(1, (instance.n_orgs - 1).bit_length())
        lengths = tuple(instance.jobs_on(l) for l in range(instance.n_machines))
        offsets = tuple(int(x) for x in np.cumsum((0,) + lengths[:-1]))
        return cls(bits, offsets, lengths, np.int64 if bits * sum(lengths) <= 62 else object)

    def weight(self, l: int, i: int) -> int:
        return 1 << (self.bits * (self.offsets[l] + i))

    def decode(self, key: int) -> Grid:
        key, mask = int(key), (1 << self.bits) - 1
        return tuple(
            tuple((key >> (self.bits * (off + i))) & mask for i in range(n))
            for off, n in zip(self.offsets, self.lengths)
        )

    def encode(self, grid: Grid) -> int:
        return sum(k * self.weight(l, i) for l, s in enumerate(grid) for i, k in enumerate(s))


@dataclass(frozen=True)
class Front:
    """Partial grid schedules of one j: their keys and [C_k] (with the delays of the jobs still
    to come, lines A-B)."""

    keys: np.ndarray
    costs: np.ndarray


# ------------------------------------------------------------------- DYN (section 3.3.2)
def pareto_schedules(instance: DedicatedInstance, j: tuple[int, ...], ref: dict, slots: _Slots | None = None) -> Front:
    """Function paretoSchedules(j, ref): the Pareto-optimal partial grid schedules in which
    j[k][l] (here ``j[k * N + l]``) jobs of J_{k,l} are scheduled, memoized in ``ref``."""
    n = instance.n_orgs
    slots = slots or _Slots.of(instance)
    if not any(j):
        return Front(np.zeros(1, dtype=slots.dtype), np.zeros((1, n), dtype=instance.dtype))
    if j in ref:
        return ref[j]
    keys, costs = [], []
    for k in range(n):
        for l in range(n):
            if j[k * n + l] == 0:
                continue
            prev = j[: k * n + l] + (j[k * n + l] - 1,) + j[k * n + l + 1 :]
            cur = pareto_schedules(instance, prev, ref, slots)
            i = j[k * n + l]  # J_{k,l}^i, the i-th shortest (from 1)
            p = instance.sizes[k][l][i - 1]
            delta = np.zeros(n, dtype=instance.dtype)
            delta[k] += p  # line A
            for kk in range(n):  # line B
                delta[kk] += p * (len(instance.sizes[kk][l]) - j[kk * n + l])
            position = sum(j[kk * n + l] for kk in range(n)) - 1  # end of M_l
            keys.append(cur.keys + k * slots.weight(l, position))
            costs.append(cur.costs + delta)
    all_keys, first = np.unique(np.concatenate(keys), return_index=True)  # one copy each
    all_costs = np.concatenate(costs)[first]
    keep = pareto_optimal_subset(all_costs)  # line C
    ref[j] = Front(all_keys[keep], all_costs[keep])
    return ref[j]


def dynamic_programming(instance: DedicatedInstance) -> Solutions:
    """Algorithm 3.5 (DYN): the equitably-optimal subset of the Pareto-optimal grid schedules
    built by :func:`pareto_schedules` from j[k][l] = n_{k,l}. ``extra["pareto"]`` holds the
    Pareto-optimal set (as :class:`Solutions`), ``extra["states"]`` the number of j computed."""
    n = instance.n_orgs
    slots = _Slots.of(instance)
    j = tuple(len(instance.sizes[k][l]) for k in range(n) for l in range(n))
    ref: dict = {}
    front = pareto_schedules(instance, j, ref, slots)
    pareto = Solutions(tuple(slots.decode(key) for key in front.keys), front.costs)
    eq = equitably_optimal_subset(front.costs)
    out = Solutions(tuple(pareto.schedules[i] for i in eq), front.costs[eq])
    out.extra.update(pareto=pareto, states=len(ref))
    return out


# ---------------------------------------------------------- EW and AEW (sections 3.3.3 and 3.6)
def _theta(c: list) -> list:
    return list(accumulate(sorted(c, reverse=True)))


def _dominates(a: list, b: list) -> bool:
    return a != b and all(x <= y for x, y in zip(a, b))


def _walk(
    instance: DedicatedInstance, offset: np.ndarray, later_ties: bool, max_steps: int | None, start: Grid | None
) -> Solutions:
    """Algorithm 3.6 on the cost vector c = C - offset (offset 0: EW on C; offset C(MJF): AEW,
    c = -u). Each step the worst organization k = argmax c advances one of its jobs past the
    foreign job just before it: the not-yet-visited swap with an equitably-optimal c'."""
    n = instance.n_orgs
    slots = _Slots.of(instance)
    grid = spt_grid(instance) if start is None else start  # line 1
    owners = [list(s) for s in grid]
    sizes = []
    for l, s in enumerate(grid):
        seen = [0] * n
        row = []
        for k in s:
            row.append(instance.sizes[k][l][seen[k]])
            seen[k] += 1
        sizes.append(row)
    weights = [[slots.weight(l, i) for i in range(len(s))] for l, s in enumerate(grid)]
    c = [x.item() for x in completion_sums(instance, grid) - offset]
    key = slots.encode(grid)
    taboo = {key}  # line 2 (and the start)
    visited_keys, visited_costs = [key], [c]
    steps, best = 0, None
    while max_steps is None or steps < max_steps:
        k = max(range(n), key=c.__getitem__)  # line 6
        best = best_t = None
        for l in range(n):  # lines 7-21
            own, sz, w = owners[l], sizes[l], weights[l]
            for i in range(1, len(own)):
                kp = own[i - 1]
                if own[i] != k or kp == k:
                    continue
                new_key = key + (k - kp) * (w[i - 1] - w[i])
                if new_key in taboo:
                    continue
                c2 = c.copy()
                c2[kp] += sz[i]
                c2[k] -= sz[i - 1]
                t = _theta(c2)
                if best_t is None or _dominates(t, best_t) or (later_ties and t == best_t):
                    best, best_t = (l, i, new_key, c2), t
        if best is None:  # line 26
            break
        l, i, key, c = best  # lines 23-25
        owners[l][i - 1], owners[l][i] = owners[l][i], owners[l][i - 1]
        sizes[l][i - 1], sizes[l][i] = sizes[l][i], sizes[l][i - 1]
        taboo.add(key)
        visited_keys.append(key)
        visited_costs.append(c)
        steps += 1
    arr = np.array(visited_costs, dtype=instance.dtype)
    eq = equitably_optimal_subset(arr)  # line 27
    out = Solutions(tuple(slots.decode(visited_keys[i]) for i in eq), arr[eq] + offset)
    out.extra.update(visited=len(visited_keys), finished=best is None)
    return out


def equitable_walk(
    instance: DedicatedInstance, later_ties: bool = False, max_steps: int | None = None, start: Grid | None = None
) -> Solutions:
    """Algorithm 3.6 (EW): a taboo walk from **SPT** that keeps improving the organization with
    the largest C_k; returns the equitably-optimal subset of the visited grid schedules.
    ``max_steps`` stops the walk early (the thesis: EW "can be stopped at any moment");
    ``start`` replaces **SPT** (ties by owner id) by another starting schedule, e.g. another
    SPT schedule. ``extra``: "visited" (grid schedules, the start included), "finished"."""
    return _walk(instance, np.zeros(instance.n_orgs, dtype=instance.dtype), later_ties, max_steps, start)


def adjusted_equitable_walk(
    instance: DedicatedInstance, later_ties: bool = False, max_steps: int | None = None, start: Grid | None = None
) -> Solutions:
    """AEW (section 3.6): the walk of EW maximizing u_k = C_k(MJF) - C_k (the worst organization
    is argmin u, dominance is ≺_e on -u). Returns the equitably-optimal subset in u of the
    visited schedules (``costs`` are still C); the acceptable ones have every u_k ≥ 0."""
    return _walk(instance, completion_sums(instance, mjf_grid(instance)), later_ties, max_steps, start)
