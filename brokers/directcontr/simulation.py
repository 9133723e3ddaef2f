"""The Shapley papers' scheduling model (Skowron and Rządca) and the event loop that runs a policy.

Sources, cited by line of the text files in ``shared/papers``:
[S] = ``shapley-fair-directcontr.txt``: Skowron and Rządca, "Fair share is not enough:
measuring fairness in scheduling with cooperative game theory" (PPAM 2013), the short paper
(the heuristic DIRECTCONTR and the comparison); [L] = ``shapley-nonmonetary-fair-scheduling.txt``:
Skowron and Rządca, "Non-monetary fair scheduling — a cooperative game theory approach"
(SPAA 2013), the long paper (REF as its Algorithms 1-2, RAND as its Algorithm 3,
experiments in its section 6).

Model ([S] section 2, [L] section 2): organizations 0..k-1; organization u puts ``procs[u]``
identical processors into the common pool (global processor indices, org 0's first, each
org's contiguous) and submits sequential jobs (:class:`SJob`). On-line, non-clairvoyant (no
decision reads a job's size before it completes), no preemption, greedy ("at any time moment
if there is a free processor and a non-empty set of ready, but not scheduled jobs, some job
must be assigned", [L] 240-241), each organization's jobs start in the order it submitted
them: (release, id). Time is integral: releases and sizes are integers (validated, the job
named). The simulation (:class:`_Sim`, run by :func:`.policies.simulate`) is
event-driven: the events are the distinct release and completion times before ``t_end``; at
an event the completions and releases of that instant are applied first, then free
processors get waiting jobs. Nothing is started at ``t_end`` itself (it would add 0 to every
ψ_sp at ``t_end``); jobs running at ``t_end`` count as in ψ_sp.

Readings common to every policy (those of each policy are in :mod:`.policies` and
:mod:`.coalitions`):

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

The loop keeps ψ_sp (doubled, exact), assigned processor time and running counts of every
organization; a policy ranks the organizations (``pick``) and may order the free
processors or keep counters of its own. :class:`_Keyed` is the common ranking: keys
computed once per event, the largest (or smallest) first. :func:`p_tot`, the denominator of
Δψ/p_tot (:mod:`.shapley_value`), is here beside the :class:`Result` it reads.

The Shapley-fair scheduling modules: :mod:`.shapley_value` (ψ_sp, the Shapley value,
Δψ/p_tot), :mod:`.simulation` (the model and the event loop that runs a policy),
:mod:`.coalitions` (REF and RAND(N), which schedule subcoalitions) and
:mod:`.policies` (DIRECTCONTR, the baselines and ``simulate``, the entry point).
"""

from __future__ import annotations

import heapq
import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from operator import attrgetter
from typing import Iterable, Sequence

import numpy as np

from gridemu.brokers.directcontr.shapley_value import _finite_number, psi_sp


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


# ------------------------------------------------------------------------------ validation


def _as_int(x, what: str) -> int:
    if type(x) is int:  # the usual case, before the slow checks against numbers' ABCs
        return x
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
        org, release, size = job.org, job.release, job.size
        # Plain ints (the usual case) skip the checks against numbers' ABCs and the messages' f-strings.
        plain = type(org) is int and type(release) is int and type(size) is int
        if not plain and (isinstance(org, bool) or not isinstance(org, numbers.Integral)) or not 0 <= org < k:
            raise ValueError(f"job {job.id}: org {org!r} out of range (there are {k} organizations)")
        if not plain:
            release = _as_int(release, f"job {job.id}: release")
            size = _as_int(size, f"job {job.id}: size")
        if release < 0:
            raise ValueError(f"job {job.id}: release must be >= 0, got {job.release!r}")
        if size < 1:
            raise ValueError(f"job {job.id}: size must be >= 1, got {job.size!r}")
        if plain and type(job) is SJob:  # a frozen job of ints is its own validated copy
            out.append(job)
            continue
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
        self.busy = [0] * self.k  # processors of each organization running a job (any owner's)
        self.running: dict[int, tuple[SJob, int, int]] = {}  # processor -> (job, start, local org)
        self.starts: list[tuple[int, int, int]] = []  # (job id, start, local processor)
        self.current: list[tuple[int, int]] = []  # starts of the current event: (job id, proc)
        self.is_free: np.ndarray | None = None  # free processors, for orders other than by index (run)

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

    def proc_order(self, t: int, free: set[int]) -> Iterable[int]:
        """The free processors (``free``, read only; also ``self.is_free``, a mask) in the order
        they get jobs; the loop takes as many as it starts jobs."""
        return sorted(free)

    def pick(self, t: int, waiting: list[int]) -> int:
        raise NotImplementedError

    # -- the loop
    def run(self) -> "_Sim":  # noqa: C901
        t_end, k, org_jobs, proc_org = self.t_end, self.k, self.org_jobs, self.proc_org
        releases = sorted({j.release for jobs in org_jobs for j in jobs if j.release < t_end})
        # Each organization's releases in submission order and its job count: whether it has a
        # released job waiting is tested in the loop itself (once per organization and event).
        rel = [[j.release for j in jobs] for jobs in org_jobs]
        n_of = [len(jobs) for jobs in org_jobs]
        orgs = range(k)
        nxt, running, starts = self.next, self.running, self.starts
        pa, pb, pc, done_time = self.pa, self.pb, self.pc, self.done_time
        run_count, run_sum_s, busy = self.run_count, self.run_sum_s, self.busy
        push, pop = heapq.heappush, heapq.heappop
        ri = 0
        heap: list[tuple[int, int]] = []  # (completion, processor)
        free = set(range(self.M))
        # The default order (lowest index first) takes the smallest free processors: a heap of
        # them gives those without sorting every free one at each event (RICC's 8,192
        # processors, mostly free: sorting them was 42 % of a warm window's time).
        lowest: list[int] | None = list(range(self.M)) if type(self).proc_order is _Sim.proc_order else None
        # Another order reads which processors are free from this mask (DIRECTCONTR's γ order:
        # one array operation an event, not a list of every free processor made for it).
        is_free = self.is_free = np.ones(self.M, dtype=bool) if lowest is None else None
        t_prev: int | None = None
        while True:
            t = releases[ri] if ri < len(releases) else None
            if heap and (t is None or heap[0][0] < t):
                t = heap[0][0]
            if t is None or t >= t_end:
                break
            self.begin_event(t_prev, t)
            while heap and heap[0][0] == t:
                _, m = pop(heap)
                job, s, u = running.pop(m)
                p = job.size
                # switch the job's ψ from the running piece to the completed one
                pa[u] -= 1
                pb[u] += 2 * p - 1 + 2 * s
                pc[u] -= p * (2 * s + p - 1) + s * s - s
                done_time[u] += p
                run_count[u] -= 1
                run_sum_s[u] -= s
                busy[proc_org[m]] -= 1
                free.add(m)
                if lowest is not None:
                    push(lowest, m)
                else:
                    is_free[m] = True
            while ri < len(releases) and releases[ri] <= t:
                ri += 1
            current = self.current = []
            waiting = [u for u in orgs if nxt[u] < n_of[u] and rel[u][nxt[u]] <= t]
            if free and waiting:
                order = _pop_all(lowest) if lowest is not None else self.proc_order(t, free)
                for m in order:
                    if not waiting:
                        break
                    u = self.pick(t, waiting)
                    i = nxt[u]
                    job = org_jobs[u][i]
                    nxt[u] = i = i + 1
                    if not (i < n_of[u] and rel[u][i] <= t):
                        waiting.remove(u)
                    free.discard(m)
                    if is_free is not None:
                        is_free[m] = False
                    running[m] = (job, t, u)
                    push(heap, (t + job.size, m))
                    pa[u] += 1
                    pb[u] += 1 - 2 * t
                    pc[u] += t * t - t
                    run_count[u] += 1
                    run_sum_s[u] += t
                    busy[proc_org[m]] += 1
                    starts.append((job.id, t, m))
                    current.append((job.id, m))
            self.end_event(t)
            t_prev = t
        self.finish(t_prev)
        return self


def _pop_all(heap: list[int]) -> Iterable[int]:
    """The heap's items, smallest first, each popped only when the caller asks for it (a
    processor the loop does not take stays in the heap)."""
    while heap:
        yield heap[0]
        heapq.heappop(heap)


_SUBMISSION = attrgetter("release", "id")


def _local_jobs(jobs: Iterable[SJob], members: Sequence[int]) -> list[list[SJob]]:
    """Jobs of ``members`` by local org index (``members``' order), each org's list in
    submission order. The jobs keep their global ``org``: the loop knows a job's local
    organization from the list it took it from (no job is made again for a coalition)."""
    pos = {u: i for i, u in enumerate(members)}
    out: list[list[SJob]] = [[] for _ in members]
    for j in jobs:
        i = pos.get(j.org)
        if i is not None:
            out[i].append(j)
    for lst in out:
        lst.sort(key=_SUBMISSION)
    return out


def _argbest(keys: Sequence, waiting: list[int], largest: bool) -> int:
    """The waiting organization with the largest (or smallest) key; ties to the lowest index."""
    best = waiting[0]
    for u in waiting[1:]:
        if (keys[u] > keys[best]) if largest else (keys[u] < keys[best]):
            best = u
    return best


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
