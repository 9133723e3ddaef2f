"""REF and RAND(N) (Skowron and Rządca, [L]): the policies that schedule subcoalitions.

Sources, cited by line of the text files in ``shared/papers``:
[S] = ``shapley-fair-directcontr.txt``: Skowron and Rządca, "Fair share is not enough:
measuring fairness in scheduling with cooperative game theory" (PPAM 2013), the short paper
(the heuristic DIRECTCONTR and the comparison); [L] = ``shapley-nonmonetary-fair-scheduling.txt``:
Skowron and Rządca, "Non-monetary fair scheduling — a cooperative game theory approach"
(SPAA 2013), the long paper (REF as its Algorithms 1-2, RAND as its Algorithm 3,
experiments in its section 6).

REF's φ is the exact Shapley value of the game of the subcoalitions' schedules, RAND's an
estimate from N sampled orderings; both then rank by φ − ψ (:class:`_Keyed` of
:mod:`.simulation`). :func:`ref_coalition`, :class:`RefTask` and
:class:`RefSchedule` are module level and picklable: a level of REF can run on Ray
(:mod:`.shapley_parallel`). The readings, where the papers are ambiguous or silent:

* ``"ref"``: [L] Algorithm 1 with Algorithm 2's SelectAndSchedule for ψ_sp ([L] 423-555,
  prose 412-419; [S] 74-76). Every subcoalition C of the grand coalition has its own
  schedule σ[C] of C's jobs on C's processors, built by REF itself restricted to C;
  v(C, t) = Σ_{u∈C} ψ_sp(u in σ[C], t); φ[C][u] is the Shapley value ([L] eq. (1),
  328-338; UpdateVals, Algorithm 1 lines 18-27) of the game C' ↦ v(C', t) on the subsets
  of C, C itself included; when σ[C] has a free processor, the organization with the
  largest φ[C][u] − ψ[C][u] among those with a released waiting job starts its first one
  (Algorithm 2 line 2, [L] 552: "u ← argmin(ψ[C][u] − φ[C][u])"; [L] 1072: "the
  organization that has the largest difference (φ − ψ)"). "while FreeMachine(σ[C′], t)"
  (Algorithm 1 line 36, [L] 538) is read as "while a processor is free and a job waits".
  The general Distance rule of Algorithm 1 is not used: with ψ_sp its Δψ is 0 at t, and
  [L] 1069-1072 replaces it by Algorithm 2. All comparisons are exact (integers equal to
  2·L·(φ − ψ), L the lcm of the Shapley denominators), so ties are real ties.
  ``phi`` in the result is φ[grand][u] at t_end.
* REF's loop order. [L] Algorithm 1 loops over time moments outside and coalition sizes
  inside (lines 30-37, [L] 525-540: "foreach time moment t ... for s ← 1 to ‖C‖ do
  foreach C′ ... UpdateVals(C′, t); while FreeMachine(σ[C′], t) do
  SelectAndSchedule(C′, t)"). σ[C] up to t depends only on the values v(C', t') of its
  proper subcoalitions for t' ≤ t, and v(C', t') only on the jobs σ[C'] started before t'
  (a job started at t' adds 0 at t'). So the two loops can be swapped without changing
  any schedule (the tests compare with a literal time-stepped Algorithm 1): all
  coalitions of one size are scheduled over the whole horizon, then the next size. The
  work of one size (level) is one call ``level_map(fn, tasks)`` with ``fn`` =
  :func:`ref_coalition` (module level) and picklable :class:`RefTask` items (each carrying
  the finished schedules of its proper subcoalitions), returning :class:`RefSchedule`
  items; a Ray-backed map can replace the built-in ``map``. ``level_map`` is thus called
  k times in all, not k times per event. More than :data:`REF_LIMIT` organizations is
  refused (3^k work).
* ``"rand"``: RAND(N) with N = ``samples``, [L] Algorithm 3 ([L] 557-648) used on jobs of
  any size as in [L] 2029 ("RAND is Algorithm 3 used as a heuristic for workloads with
  jobs having different sizes"). Prepare (Algorithm 3 lines 2-9): N random orderings of
  all organizations, drawn independently (with replacement) by
  ``numpy.random.default_rng(seed).permutation(k)``; each ordering gives every
  organization u one sample: the set P of organizations before u in it. The estimate is
  φ[u](t) = (1/N) Σ_{i=1..N} (v(P_i ∪ {u}, t) − v(P_i, t)): the N samples of u only, each
  counted with its multiplicity (Algorithm 3 line 35, "foreach C′ ∈ Subs: O(u) ∉ C′",
  read as the sets sampled for u, as in the proof of Theorem 5.6, [L] 1934: "φ[O(u)] =
  Σ 1/N X_i", and as [S] 78 says: "for each organization selects only N random subsets
  not containing O(u)"). v(∅) = 0. Every sampled coalition (P and P ∪ {u}, the grand
  coalition included when it is sampled) keeps a "simplified schedule ... determined by
  an arbitrary greedy algorithm" ([L] 1870-1871): ours is FCFS over the coalition's jobs
  by (release, id), lowest free processor. The grand coalition is scheduled by the
  largest φ − ψ with ψ = ψ_sp of its own schedule (Algorithm 3 line 16); line 19's
  "φ[O(u)] ← φ[O(u)] + 1" only keeps the chosen organization on top for the rest of the
  event, which the in-event rule (:mod:`.simulation`) already does. For unit-size jobs every greedy
  schedule has the same v ([L] Proposition 5.4), so the estimate is unbiased for REF's
  φ; for other sizes it estimates the Shapley value of the FCFS values, not of REF's.
  ``phi`` in the result is the estimate at t_end.

The Shapley-fair scheduling modules: :mod:`.shapley_value` (ψ_sp, the Shapley value,
Δψ/p_tot), :mod:`.simulation` (the model and the event loop that runs a policy),
:mod:`.coalitions` (REF and RAND(N), which schedule subcoalitions) and
:mod:`.policies` (DIRECTCONTR, the baselines and ``simulate``, the entry point).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

import numpy as np

from gridemu.brokers.directcontr.shapley_value import _Piecewise, _shapley_exact, _shapley_scale, _twice_psi
from gridemu.brokers.directcontr.simulation import SJob, _Keyed, _local_jobs, _proc_layout, _Sim, _sp_array

REF_LIMIT = 10


@dataclass(frozen=True)
class RefTask:
    """REF's work for one coalition: its members, jobs and processors, and its proper subcoalitions' schedules.

    ``subs`` holds, for every non-empty proper subset S of ``members`` (as a sorted tuple),
    the (start, size) rows of the jobs σ[S] started before ``t_end``, as an int64 array of
    shape (n, 2).
    """

    members: tuple[int, ...]
    jobs: tuple[SJob, ...]
    procs: tuple[int, ...]  # global processor indices of the members, ascending
    proc_org: tuple[int, ...]  # owner of each of those processors
    t_end: int
    subs: tuple[tuple[tuple[int, ...], np.ndarray], ...]


@dataclass(frozen=True)
class RefSchedule:
    """σ[C] for one coalition: (job id, start, global processor) of every job started before t_end."""

    members: tuple[int, ...]
    starts: tuple[tuple[int, int, int], ...]


# ---------------------------------------------------------------------------------- REF


def ref_coalition(task: RefTask) -> RefSchedule:
    """σ[C] of REF for one coalition over [0, t_end), given the finished σ of its proper subcoalitions.

    Module-level and with picklable input and output, for ``level_map``.
    """
    members = task.members
    n = len(members)
    pos = {u: i for i, u in enumerate(members)}
    L, W = _shapley_scale(n)
    entries = []
    for sub, sp in task.subs:
        inside = set(sub)
        w = [W[len(sub)] if u in inside else -W[len(sub) + 1] for u in members]
        entries.append((w, sp))
    phi0 = _Piecewise(entries, n, task.t_end)

    def keys(sim: _Sim, t: int) -> list[int]:
        psi2 = [sim.psi2(i, t) for i in range(n)]
        v2 = sum(psi2)
        base = phi0.at(t, n)
        # 2L·(φ − ψ): φ = w(n)(v(C) − v(C∖u)) + Σ_{S⊊C} ..., the C∖u terms being in phi0
        return [W[n] * v2 + base[i] - L * psi2[i] for i in range(n)]

    local_proc_org = [pos[o] for o in task.proc_org]
    sim = _Keyed(_local_jobs(task.jobs, members), local_proc_org, task.t_end, keys).run()
    return RefSchedule(members, tuple((jid, s, task.procs[m]) for jid, s, m in sim.starts))


def _simulate_ref(jobs: list[SJob], procs: list[int], t_end: int, level_map) -> tuple[dict, dict, list[float]]:
    k = len(procs)
    owner, first = _proc_layout(procs)
    size_of = {j.id: j.size for j in jobs}
    by_org: list[list[SJob]] = [[] for _ in range(k)]
    for j in jobs:
        by_org[j.org].append(j)
    sched: dict[tuple[int, ...], np.ndarray] = {}
    grand: RefSchedule | None = None
    for size in range(1, k + 1):
        tasks = []
        for members in combinations(range(k), size):
            subs = tuple((sub, sched[sub]) for r in range(1, size) for sub in combinations(members, r))
            gp = tuple(g for u in members for g in range(first[u], first[u] + procs[u]))
            tasks.append(
                RefTask(
                    members, tuple(j for u in members for j in by_org[u]), gp, tuple(owner[g] for g in gp), t_end, subs
                )
            )
        for res in level_map(ref_coalition, tasks):
            sched[tuple(res.members)] = _sp_array(res.starts, size_of)
            if len(res.members) == k:
                grand = res
    assert grand is not None
    # φ[grand] at t_end: the Shapley value of v(·, t_end), exactly.
    v = {frozenset(c): Fraction(int(_twice_psi(sp, t_end)), 2) for c, sp in sched.items()}
    v[frozenset()] = Fraction(0)
    phi_map = _shapley_exact(v, list(range(k)))
    start = {jid: s for jid, s, _m in grand.starts}
    machine = {jid: m for jid, _s, m in grand.starts}
    return start, machine, [float(phi_map[u]) for u in range(k)]


# --------------------------------------------------------------------------------- RAND


def _fcfs_schedule(release: np.ndarray, size: np.ndarray, machines: int, t_end: int) -> np.ndarray:
    """(s, p) of the jobs a coalition's FCFS schedule starts before t_end: its jobs (sorted
    by (release, id)) each take the processor that frees first, at max(release, that
    instant). Identical processors and one queue in submission order make that list
    scheduling the event loop's FCFS (starts never decrease: past t_end none follows)."""
    free = [0] * machines
    starts = []  # ints, not (s, p) tuples: RAND builds thousands of these, millions of rows each
    for r, p in zip(release.tolist(), size.tolist()):
        s = r if r > free[0] else free[0]
        if s >= t_end:
            break
        heapq.heapreplace(free, s + p)
        starts.append(s)
    return np.column_stack((np.array(starts, dtype=np.int64), size[: len(starts)].astype(np.int64)))


def _rand_estimator(jobs, procs, t_end, samples, seed) -> tuple[_Piecewise, int]:
    """Σ_i (2v(P_i ∪ {u}, t) − 2v(P_i, t)) for every u, as a piecewise polynomial; the N."""
    k = len(procs)
    rng = np.random.default_rng(seed)
    weight: dict[tuple[int, ...], list[int]] = {}
    for _ in range(samples):
        order = [int(u) for u in rng.permutation(k)]
        before: list[int] = []
        for u in order:
            with_u = tuple(sorted(before + [u]))
            weight.setdefault(with_u, [0] * k)[u] += 1
            if before:
                weight.setdefault(tuple(sorted(before)), [0] * k)[u] -= 1
            before.append(u)
    ordered = sorted(jobs, key=lambda j: (j.release, j.id))
    org = np.array([j.org for j in ordered], dtype=np.int64)
    release = np.array([j.release for j in ordered], dtype=np.int64)
    size = np.array([j.size for j in ordered], dtype=np.int64)

    def schedules():  # one at a time: each is reduced and dropped before the next is built
        for c, w in sorted(weight.items()):
            mine = np.isin(org, c)
            yield w, _fcfs_schedule(release[mine], size[mine], sum(procs[u] for u in c), t_end)

    return _Piecewise(schedules(), k, t_end), samples
