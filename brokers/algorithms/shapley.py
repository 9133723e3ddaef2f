"""Shapley-fair scheduling (Skowron and Rządca): REF, RAND(N), DIRECTCONTR and the baselines.

Pure functions, no simulation kernel. Sources, cited by line of the text files in
``shared/papers``: [S] = ``shapley-fair-directcontr.txt`` (the short paper: the heuristic and
the comparison), [L] = ``shapley-nonmonetary-fair-scheduling.txt`` (the long paper: REF as its
Algorithms 1-2, RAND as its Algorithm 3, experiments in its section 6).

Model ([S] section 2, [L] section 2): organizations 0..k-1; organization u puts ``procs[u]``
identical processors into the common pool (global processor indices, org 0's first, each
org's contiguous) and submits sequential jobs (:class:`SJob`). On-line, non-clairvoyant (no
decision reads a job's size before it completes), no preemption, greedy ("at any time moment
if there is a free processor and a non-empty set of ready, but not scheduled jobs, some job
must be assigned", [L] 240-241), each organization's jobs start in the order it submitted
them: (release, id). Time is integral: releases and sizes are integers (validated, the job
named). :func:`simulate` is event-driven: the events are the distinct release and completion
times before ``t_end``; at an event the completions and releases of that instant are applied
first, then free processors get waiting jobs. Nothing is started at ``t_end`` itself (it
would add 0 to every ψ_sp at ``t_end``); jobs running at ``t_end`` count as in ψ_sp.

Utility (:func:`psi_sp`): [S] eq. (2) line 64, [L] eq. (3) line 895:
ψ_sp(σ, t) = Σ_{(s,p)∈σ: s≤t} p'·(t − (s + (s + p' − 1))/2) with p' = min(p, t − s) ([L] writes
the min explicitly; [S] 62 says "if the job is not yet completed (p is not known), we set
p = (t − s)"). A job running at t is therefore counted exactly as a completed job of length
p' = t − s would be (its completed unit parts; a unit part that starts at time i is worth
t − i at t); a job that starts at t is worth 0. Contributions and values use the same ψ_sp.

Policies (:data:`POLICIES`) and the readings where the papers are ambiguous or silent:
  * Selection inside one event (all policies that rank organizations). A job started at t
    adds 0 to ψ_sp at t, so when [L] Algorithm 2 line 4 recomputes ψ[C][u] at t after a
    start ([L] 552-555), nothing changes: the ranking computed at the start of the event
    holds for the whole event, and free processors are filled from the organizations in
    ranked order, each giving its waiting jobs in submission order until it has no more
    released ones. This is also what [S] 116 says of DIRECTCONTR ("The waiting jobs are
    assigned to the processors in the order of decreasing differences (φ − ψ)"). Ties go
    to the lowest organization index, in every policy. Only CURRFAIRSHARE and ROUNDROBIN
    change their ranking within an event (running counts, the cycle pointer).
  * Processors. Except in DIRECTCONTR (which visits processors in its random order γ),
    a started job takes the free processor of lowest global index. ψ_sp does not depend on
    which processor, so this only fixes ``Result.machine``.
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
    event, which the in-event rule above already does. For unit-size jobs every greedy
    schedule has the same v ([L] Proposition 5.4), so the estimate is unbiased for REF's
    φ; for other sizes it estimates the Shapley value of the FCFS values, not of REF's.
    ``phi`` in the result is the estimate at t_end.
  * ``"directcontr"``: [S] Algorithm 1 (lines 84-113), event-driven (t_prev = the previous
    event; at the first event t_prev = t). At every event, lines 6-8, then a fresh random
    permutation γ of all processors (line 9; ``default_rng(seed).permutation(M)``, one per
    event, none for the final accounting at t_end), lines 10-16 for every processor, lines
    17-21 over the free processors in γ order. Three repairs make ψ equal ψ_sp and φ the
    ψ_sp of the unit parts processed on the organization's processors, as the prose says
    ([S] 80: "keeps for each organization O its utility ψ_sp[O]"; [S] 82: finUt counts
    "the unit-size parts ... completed before t_prev"; [S] 116: "the utility of the
    unit-size parts of the job completed between t_prev and t is ... ½(t − t_prev)(t −
    t_prev + 1) (line 15)"; [S] 80: "the job that is started on processor m increases the
    contribution φ of the owner of m"):
      - lines 11-16 apply to every processor that ran a job during (t_prev, t], including
        a job that completes exactly at t ("not FreeMachine(m, t)" evaluated before the
        completions at t free the processor; otherwise a job's last segment is lost);
      - lines 15-16 are read ψ[own(J)] += ½d(d+1), φ[own(m)] += ½d(d+1) (printed φ[own(J)],
        ψ[own(m)], which would credit the job's owner with contribution for its own job and
        contradicts lines 13-14 and 7-8);
      - lines 22-23 (finUt[org] += 1, finCon[own(m)] += 1 at a start) are dropped: with
        "completed" counters and ½d(d+1) they count every started job's first unit twice
        (ψ would exceed ψ_sp by t − s per job). They never affect a decision (φ, ψ do not
        change inside the event).
    With these, at every event ψ[u] = ψ_sp(u's jobs, t), Σ_u φ[u] = Σ_u ψ[u], finUt[u] =
    the unit parts of u's jobs completed by t, finCon[o] = those processed on o's
    processors; and the algorithm is [L] Algorithm 4 ([L] 2039-2082, one event per time
    moment) collapsed over the moments without events. Line 19: argmax of φ − ψ among the
    organizations with a released waiting job, ties to the lowest index. ``phi`` in the
    result is φ after the accounting of lines 6-16 at t_end. :func:`directcontr_trace`
    returns the counters after every event.
  * ``"roundrobin"`` ([S] 118: "cycles through the list of organizations"): a pointer,
    initially 0, kept across events; a start goes to the first organization with a
    released waiting job at or after the pointer (cyclically), and the pointer moves to
    the organization after it.
  * ``"fairshare"`` ([S] 120): lowest (processor time already assigned to the
    organization's jobs) / share, where the time assigned at t counts completed jobs fully
    and running jobs by their elapsed time t − s ("the total time of the processor already
    assigned"; a non-clairvoyant scheduler cannot count the unknown remainder). A job
    started at t has elapsed 0, so the ranking holds through the event (see above).
    ``"utfairshare"`` ([S] 124): lowest ψ_sp(t) / share. ``"currfairshare"`` ([S] 126):
    lowest (number of the organization's jobs running at t, completions at t excluded,
    starts at t included as they happen) / share. Shares: ``shares`` or, by default,
    procs[u] / Σ procs ([S] 122: "we set the target share to the fraction of processors
    contributed"); ratios are compared exactly (fractions).
  * Fairness ([S] 142, [L] 2127-2138): p_tot = Σ_{(s,p)∈σ*: s ≤ t_end} min(p, t_end − s)
    over REF's schedule σ*, and Δψ = Σ_u |ψ_u − ψ*_u|: [S] writes "|ψ − ψ*| = Σ(ψ − ψ*)"
    and [L] "‖ψ − ψ*‖_M = Σ(ψ − ψ*)"; both name a norm, [L] the Manhattan metric ([L]
    408), so the printed sum without bars is read as the L1 norm (the plain sum could be
    negative).
"""
from __future__ import annotations

import heapq
import math
import numbers
from bisect import bisect_right
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import Callable, Iterable, Sequence

import numpy as np

POLICIES = ("ref", "rand", "directcontr", "roundrobin", "fairshare", "utfairshare", "currfairshare")

REF_LIMIT = 10

_INT64_SAFE = 2**62


@dataclass(frozen=True)
class SJob:
    """A sequential job of organization ``org``: released at ``release``, ``size`` unit parts."""

    id: int
    org: int
    release: int
    size: int


@dataclass
class Result:
    """One run up to t_end: starts and processors of the jobs started before t_end, ψ_sp and φ at t_end."""

    start: dict[int, int]
    machine: dict[int, int]
    psi: list[float]
    phi: list[float] | None


@dataclass(frozen=True)
class DCState:
    """DIRECTCONTR's counters after the event at ``t`` (after its starts); γ empty at the final t_end."""

    t: int
    gamma: tuple[int, ...]
    fin_ut: tuple[int, ...]
    fin_con: tuple[int, ...]
    phi: tuple[int, ...]
    psi: tuple[int, ...]
    started: tuple[tuple[int, int], ...]  # (job id, processor) started at t, in γ order


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


# ------------------------------------------------------------------------------ validation


def _finite_number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _as_int(x, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"{what}: must be an integer, got {x!r}")
    if isinstance(x, numbers.Integral):
        return int(x)
    if not math.isfinite(x) or not float(x).is_integer():
        raise ValueError(f"{what}: must be an integer, got {x!r}")
    return int(x)


def _check_procs(procs: Sequence[int]) -> list[int]:
    if len(procs) == 0:
        raise ValueError("procs: at least one organization is needed")
    out = []
    for u, m in enumerate(procs):
        if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 1:
            raise ValueError(f"procs[{u}]: must be an integer >= 1, got {m!r}")
        out.append(int(m))
    return out


def _check_jobs(jobs: Sequence[SJob], k: int) -> list[SJob]:
    """Validated copies with int fields; ids unique, org in range, release >= 0, size >= 1, integral."""
    seen: set[int] = set()
    out = []
    for job in jobs:
        if job.id in seen:
            raise ValueError(f"job {job.id}: id used twice")
        seen.add(job.id)
        if isinstance(job.org, bool) or not isinstance(job.org, numbers.Integral) or not 0 <= job.org < k:
            raise ValueError(f"job {job.id}: org {job.org!r} out of range (there are {k} organizations)")
        release = _as_int(job.release, f"job {job.id}: release")
        size = _as_int(job.size, f"job {job.id}: size")
        if release < 0:
            raise ValueError(f"job {job.id}: release must be >= 0, got {job.release!r}")
        if size < 1:
            raise ValueError(f"job {job.id}: size must be >= 1, got {job.size!r}")
        out.append(SJob(job.id, int(job.org), release, size))
    return out


def _check_shares(shares: Sequence[float] | None, procs: list[int]) -> list[Fraction]:
    if shares is None:
        total = sum(procs)
        return [Fraction(m, total) for m in procs]
    if len(shares) != len(procs):
        raise ValueError(f"shares: {len(shares)} values for {len(procs)} organizations")
    out = []
    for u, s in enumerate(shares):
        if not _finite_number(s) or not s > 0:
            raise ValueError(f"shares[{u}]: must be a finite number > 0, got {s!r}")
        out.append(Fraction(s))
    return out


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


class _Piecewise:
    """t ↦ Σ_S w_S · 2·v(S, t) for fixed schedules, every coordinate of the weight vectors at once."""

    def __init__(self, entries: Sequence[tuple[Sequence[int], np.ndarray]], width: int, t_end: int):
        taus, deltas, weights = [], [], []
        for w, sp in entries:
            if len(sp) == 0 or not any(w):
                continue
            tau, delta = _delta_rows(np.asarray(sp).reshape(-1, 2), t_end)
            taus.append(tau)
            deltas.append(delta)
            weights.append(np.broadcast_to(np.asarray(w, dtype=np.int64), (len(tau), width)))
        if not taus:
            self.taus: list[int] = []
            self.cum = None
            return
        tau = np.concatenate(taus)
        delta = np.concatenate(deltas)
        weight = np.concatenate(weights)
        order = np.argsort(tau, kind="stable")
        tau, delta, weight = tau[order], delta[order], weight[order]
        x = max(int(t_end), 1)
        bound = float(np.abs(weight).max()) * float(
            (np.abs(delta[:, 0]) * float(x) * x + np.abs(delta[:, 1]) * float(x) + np.abs(delta[:, 2])).sum()
        )
        if bound < _INT64_SAFE / 4:
            cum = np.cumsum(weight[:, :, None] * delta[:, None, :], axis=0)
        else:  # exact, slower: Python integers
            cum = np.cumsum(weight.astype(object)[:, :, None] * delta.astype(object)[:, None, :], axis=0)
        # Keep only the last row of each breakpoint.
        last = np.r_[tau[1:] != tau[:-1], True]
        self.taus = tau[last].tolist()
        self.cum = cum[last]

    def at(self, t: int, width: int) -> list[int]:
        i = bisect_right(self.taus, t) - 1
        if i < 0 or self.cum is None:
            return [0] * width
        a, b, c = self.cum[i, :, 0], self.cum[i, :, 1], self.cum[i, :, 2]
        return [int(a[j]) * t * t + int(b[j]) * t + int(c[j]) for j in range(width)]


def _shapley_scale(n: int) -> tuple[int, list[int]]:
    """L = lcm of the Shapley denominators n·C(n−1, s−1), and W[s] = L·(s−1)!(n−s)!/n! (integers)."""
    L = 1
    for s in range(1, n + 1):
        L = math.lcm(L, n * math.comb(n - 1, s - 1))
    W = [0] + [L // (n * math.comb(n - 1, s - 1)) for s in range(1, n + 1)]
    return L, W


# ------------------------------------------------------------------------- the event loop


class _Sim:
    """Greedy event-driven list scheduling of local organizations 0..k-1 on local processors 0..M-1.

    Subclasses rank the organizations (:meth:`pick`) and may order the free processors
    (:meth:`proc_order`) or keep counters (:meth:`begin_event`, :meth:`end_event`,
    :meth:`finish`). ψ_sp (doubled, exact), assigned processor time and running counts of
    every organization are kept here.
    """

    def __init__(self, org_jobs: list[list[SJob]], proc_org: Sequence[int], t_end: int):
        self.k = len(org_jobs)
        self.org_jobs = org_jobs
        self.proc_org = list(proc_org)
        self.M = len(self.proc_org)
        self.t_end = t_end
        self.next = [0] * self.k
        self.pa = [0] * self.k  # 2ψ_sp(u, t) = pa t² + pb t + pc on the current piece
        self.pb = [0] * self.k
        self.pc = [0] * self.k
        self.done_time = [0] * self.k
        self.run_count = [0] * self.k
        self.run_sum_s = [0] * self.k
        self.running: dict[int, tuple[SJob, int]] = {}  # processor -> (job, start)
        self.starts: list[tuple[int, int, int]] = []  # (job id, start, local processor)
        self.current: list[tuple[int, int]] = []  # starts of the current event: (job id, proc)

    # -- state readers
    def psi2(self, u: int, t: int) -> int:
        return self.pa[u] * t * t + self.pb[u] * t + self.pc[u]

    def assigned(self, u: int, t: int) -> int:
        return self.done_time[u] + self.run_count[u] * t - self.run_sum_s[u]

    # -- hooks
    def begin_event(self, t_prev: int | None, t: int) -> None:
        pass

    def end_event(self, t: int) -> None:
        pass

    def finish(self, t_prev: int | None) -> None:
        pass

    def proc_order(self, t: int, free: list[int]) -> list[int]:
        return sorted(free)

    def pick(self, t: int, waiting: list[int]) -> int:
        raise NotImplementedError

    # -- the loop
    def _waiting(self, u: int, t: int) -> bool:
        i = self.next[u]
        jobs = self.org_jobs[u]
        return i < len(jobs) and jobs[i].release <= t

    def run(self) -> "_Sim":
        t_end = self.t_end
        releases = sorted({j.release for jobs in self.org_jobs for j in jobs if j.release < t_end})
        ri = 0
        heap: list[tuple[int, int]] = []  # (completion, processor)
        free = set(range(self.M))
        t_prev: int | None = None
        while True:
            t = releases[ri] if ri < len(releases) else None
            if heap and (t is None or heap[0][0] < t):
                t = heap[0][0]
            if t is None or t >= t_end:
                break
            self.begin_event(t_prev, t)
            while heap and heap[0][0] == t:
                _, m = heapq.heappop(heap)
                job, s = self.running.pop(m)
                u = job.org
                p = job.size
                # switch the job's ψ from the running piece to the completed one
                self.pa[u] -= 1
                self.pb[u] += 2 * p - 1 + 2 * s
                self.pc[u] -= p * (2 * s + p - 1) + s * s - s
                self.done_time[u] += p
                self.run_count[u] -= 1
                self.run_sum_s[u] -= s
                free.add(m)
            while ri < len(releases) and releases[ri] <= t:
                ri += 1
            self.current = []
            waiting = [u for u in range(self.k) if self._waiting(u, t)]
            if free and waiting:
                for m in self.proc_order(t, list(free)):
                    if not waiting:
                        break
                    u = self.pick(t, waiting)
                    job = self.org_jobs[u][self.next[u]]
                    self.next[u] += 1
                    if not self._waiting(u, t):
                        waiting.remove(u)
                    free.discard(m)
                    self.running[m] = (job, t)
                    heapq.heappush(heap, (t + job.size, m))
                    self.pa[u] += 1
                    self.pb[u] += 1 - 2 * t
                    self.pc[u] += t * t - t
                    self.run_count[u] += 1
                    self.run_sum_s[u] += t
                    self.starts.append((job.id, t, m))
                    self.current.append((job.id, m))
            self.end_event(t)
            t_prev = t
        self.finish(t_prev)
        return self


def _local_jobs(jobs: Iterable[SJob], members: Sequence[int]) -> list[list[SJob]]:
    """Jobs of ``members`` renumbered to local org indices, each org's list in submission order."""
    pos = {u: i for i, u in enumerate(members)}
    out: list[list[SJob]] = [[] for _ in members]
    for j in jobs:
        if j.org in pos:
            out[pos[j.org]].append(SJob(j.id, pos[j.org], j.release, j.size))
    for lst in out:
        lst.sort(key=lambda j: (j.release, j.id))
    return out


def _argbest(keys: Sequence, waiting: list[int], largest: bool) -> int:
    """The waiting organization with the largest (or smallest) key; ties to the lowest index."""
    best = waiting[0]
    for u in waiting[1:]:
        if (keys[u] > keys[best]) if largest else (keys[u] < keys[best]):
            best = u
    return best


# --------------------------------------------------------------------------------- policies


class _Keyed(_Sim):
    """Largest key first, keys computed once per event by ``key_fn(sim, t)``."""

    def __init__(self, org_jobs, proc_org, t_end, key_fn, largest=True):
        super().__init__(org_jobs, proc_org, t_end)
        self.key_fn = key_fn
        self.largest = largest
        self._keys_t: int | None = None
        self._keys: list = []

    def pick(self, t, waiting):
        if self._keys_t != t:
            self._keys = self.key_fn(self, t)
            self._keys_t = t
        return _argbest(self._keys, waiting, self.largest)


class _Fcfs(_Sim):
    """The first waiting job by (release, id) over all organizations (RAND's simplified schedules)."""

    def pick(self, t, waiting):
        def head(u: int) -> tuple[int, int]:
            job = self.org_jobs[u][self.next[u]]
            return (job.release, job.id)

        return min(waiting, key=head)


class _RoundRobin(_Sim):
    def __init__(self, org_jobs, proc_org, t_end):
        super().__init__(org_jobs, proc_org, t_end)
        self.pointer = 0

    def pick(self, t, waiting):
        ws = set(waiting)
        for i in range(self.k):
            u = (self.pointer + i) % self.k
            if u in ws:
                self.pointer = (u + 1) % self.k
                return u
        raise AssertionError("pick called with no waiting organization")


class _CurrFairShare(_Sim):
    def __init__(self, org_jobs, proc_org, t_end, shares):
        super().__init__(org_jobs, proc_org, t_end)
        self.shares = shares

    def pick(self, t, waiting):  # recomputed at every start: the running counts change
        keys = [Fraction(self.run_count[u]) / self.shares[u] for u in range(self.k)]
        return _argbest(keys, waiting, largest=False)


class _DirectContr(_Sim):
    """[S] Algorithm 1 with the three repairs of the module docstring."""

    def __init__(self, org_jobs, proc_org, t_end, seed, record=False, by_index=False):
        super().__init__(org_jobs, proc_org, t_end)
        self.by_index = by_index
        self.rng = np.random.default_rng(seed)
        self.fin_ut = [0] * self.k
        self.fin_con = [0] * self.k
        self.phi = [0] * self.k
        self.psi = [0] * self.k
        self.gamma: list[int] = []
        self.record = record
        self.trace: list[DCState] = []

    def _account(self, t_prev: int | None, t: int) -> None:
        d = 0 if t_prev is None else t - t_prev
        for u in range(self.k):  # lines 6-8
            self.phi[u] += d * self.fin_con[u]
            self.psi[u] += d * self.fin_ut[u]
        tri = d * (d + 1) // 2
        # lines 10-16 (the order of γ does not matter here): every processor that ran a job
        # during (t_prev, t], its completions at t not yet applied
        for m, (job, _s) in self.running.items():
            own_j, own_m = job.org, self.proc_org[m]
            self.fin_ut[own_j] += d
            self.fin_con[own_m] += d
            self.psi[own_j] += tri
            self.phi[own_m] += tri

    def begin_event(self, t_prev, t):
        self._account(t_prev, t)
        self.gamma = [int(m) for m in self.rng.permutation(self.M)]  # line 9

    def proc_order(self, t, free):  # lines 17-18: free processors in γ order
        if self.by_index:
            return sorted(free)
        fs = set(free)
        return [m for m in self.gamma if m in fs]

    def pick(self, t, waiting):  # line 19
        keys = [self.phi[u] - self.psi[u] for u in range(self.k)]
        return _argbest(keys, waiting, largest=True)

    def _snapshot(self, t, gamma):
        if self.record:
            self.trace.append(
                DCState(t, tuple(gamma), tuple(self.fin_ut), tuple(self.fin_con), tuple(self.phi),
                        tuple(self.psi), tuple(self.current))
            )

    def end_event(self, t):
        self._snapshot(t, self.gamma)

    def finish(self, t_prev):
        if t_prev is None:
            self.current = []
            self._snapshot(self.t_end, ())
            return
        self._account(t_prev, self.t_end)
        self.current = []
        self._snapshot(self.t_end, ())


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


def _proc_layout(procs: list[int]) -> tuple[list[int], list[int]]:
    """Global processor owners and the first index of every organization's processors."""
    owner, first = [], []
    for u, m in enumerate(procs):
        first.append(len(owner))
        owner.extend([u] * m)
    return owner, first


def _sp_array(starts: Iterable[tuple[int, int, int]], size_of: dict[int, int]) -> np.ndarray:
    rows = [(s, size_of[jid]) for jid, s, _m in starts]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


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
            subs = tuple(
                (sub, sched[sub]) for r in range(1, size) for sub in combinations(members, r)
            )
            gp = tuple(g for u in members for g in range(first[u], first[u] + procs[u]))
            tasks.append(
                RefTask(members, tuple(j for u in members for j in by_org[u]), gp,
                        tuple(owner[g] for g in gp), t_end, subs)
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


# --------------------------------------------------------------------------------- RAND


def _fcfs_schedule(jobs: list[SJob], procs: list[int], members: tuple[int, ...], t_end: int) -> np.ndarray:
    owner, first = _proc_layout(procs)
    gp = [g for u in members for g in range(first[u], first[u] + procs[u])]
    pos = {u: i for i, u in enumerate(members)}
    sim = _Fcfs(_local_jobs(jobs, members), [pos[owner[g]] for g in gp], t_end).run()
    size_of = {j.id: j.size for j in jobs}
    return _sp_array(sim.starts, size_of)


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
    entries = [(w, _fcfs_schedule(jobs, procs, c, t_end)) for c, w in sorted(weight.items())]
    return _Piecewise(entries, k, t_end), samples


# ------------------------------------------------------------------------------ simulate


def simulate(
    jobs: Sequence[SJob],
    procs: Sequence[int],
    policy: str,
    t_end: int,
    *,
    seed: int = 0,
    samples: int = 10,
    shares: Sequence[float] | None = None,
    level_map=map,
    gamma: str = "random",
) -> Result:
    """Run ``policy`` (one of :data:`POLICIES`) on ``jobs`` over [0, t_end); see the module docstring.

    ``gamma`` is DIRECTCONTR's processor order at an event: "random" (line 9) or "index"
    (free processors by number: the order the decentralized protocol matches them in)."""
    if gamma not in ("random", "index"):
        raise ValueError(f"gamma: expected 'random' or 'index', got {gamma!r}")
    procs_l = _check_procs(procs)
    k = len(procs_l)
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r}: unknown; expected one of {POLICIES}")
    if policy == "ref" and k > REF_LIMIT:
        raise ValueError(
            f"policy ref: {k} organizations; REF is exponential (limit {REF_LIMIT}): use rand or directcontr"
        )
    t_end = _as_int(t_end, "t_end")
    if t_end < 0:
        raise ValueError(f"t_end: must be >= 0, got {t_end!r}")
    samples = _as_int(samples, "samples")
    if samples < 1:
        raise ValueError(f"samples: N must be >= 1, got {samples!r}")
    share_f = _check_shares(shares, procs_l)
    jobs_l = _check_jobs(jobs, k)

    if policy == "ref":
        start, machine, phi = _simulate_ref(jobs_l, procs_l, t_end, level_map)
        psi = _psi_of(jobs_l, start, k, t_end)
        return Result(start, machine, psi, phi)

    owner, _first = _proc_layout(procs_l)
    org_jobs = _local_jobs(jobs_l, list(range(k)))
    phi_out: list[float] | None = None
    if policy == "rand":
        est, n = _rand_estimator(jobs_l, procs_l, t_end, samples, seed)

        def rand_keys(sim: _Sim, t: int) -> list[int]:
            base = est.at(t, k)
            return [base[u] - n * sim.psi2(u, t) for u in range(k)]

        sim = _Keyed(org_jobs, owner, t_end, rand_keys).run()
        phi_out = [float(Fraction(x, 2 * n)) for x in est.at(t_end, k)]
    elif policy == "directcontr":
        sim = _DirectContr(org_jobs, owner, t_end, seed, by_index=gamma == "index").run()
        phi_out = [float(x) for x in sim.phi]
    elif policy == "roundrobin":
        sim = _RoundRobin(org_jobs, owner, t_end).run()
    elif policy == "fairshare":
        sim = _Keyed(org_jobs, owner, t_end,
                     lambda s, t: [Fraction(s.assigned(u, t)) / share_f[u] for u in range(k)],
                     largest=False).run()
    elif policy == "utfairshare":
        sim = _Keyed(org_jobs, owner, t_end,
                     lambda s, t: [Fraction(s.psi2(u, t), 2) / share_f[u] for u in range(k)],
                     largest=False).run()
    else:  # currfairshare
        sim = _CurrFairShare(org_jobs, owner, t_end, share_f).run()
    start = {jid: s for jid, s, _m in sim.starts}
    machine = {jid: m for jid, _s, m in sim.starts}
    return Result(start, machine, _psi_of(jobs_l, start, k, t_end), phi_out)


def directcontr_trace(jobs: Sequence[SJob], procs: Sequence[int], t_end: int, *, seed: int = 0) -> list[DCState]:
    """DIRECTCONTR's finUt, finCon, φ, ψ and starts after every event, and after the accounting at t_end."""
    procs_l = _check_procs(procs)
    t_end = _as_int(t_end, "t_end")
    if t_end < 0:
        raise ValueError(f"t_end: must be >= 0, got {t_end!r}")
    jobs_l = _check_jobs(jobs, len(procs_l))
    owner, _ = _proc_layout(procs_l)
    sim = _DirectContr(_local_jobs(jobs_l, list(range(len(procs_l)))), owner, t_end, seed, record=True).run()
    return sim.trace


def _psi_of(jobs: list[SJob], start: dict[int, int], k: int, t_end: int) -> list[float]:
    pairs: list[list[tuple[int, int]]] = [[] for _ in range(k)]
    for j in jobs:
        if j.id in start:
            pairs[j.org].append((start[j.id], j.size))
    return [psi_sp(pairs[u], t_end) for u in range(k)]


# ------------------------------------------------------------------------------ fairness


def p_tot(result_ref: Result, jobs: Sequence[SJob], t_end: int) -> int:
    """p_tot = Σ over the jobs REF started by t_end of min(p, t_end − s) ([S] 142, [L] 2127)."""
    size_of = {j.id: j.size for j in jobs}
    total = 0
    for jid, s in result_ref.start.items():
        if jid not in size_of:
            raise ValueError(f"job {jid}: in result_ref.start but not among the jobs")
        if s <= t_end:
            total += min(size_of[jid], t_end - s)
    return int(total)


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
