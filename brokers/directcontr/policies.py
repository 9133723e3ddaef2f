"""Shapley-fair scheduling policies (Skowron and Rządca): DIRECTCONTR, round robin, the
fair-share variants, and :func:`simulate`, which runs any of them, REF and RAND included.

Sources, cited by line of the text files in ``shared/papers``:
[S] = ``shapley-fair-directcontr.txt``: Skowron and Rządca, "Fair share is not enough:
measuring fairness in scheduling with cooperative game theory" (PPAM 2013), the short paper
(the heuristic DIRECTCONTR and the comparison); [L] = ``shapley-nonmonetary-fair-scheduling.txt``:
Skowron and Rządca, "Non-monetary fair scheduling — a cooperative game theory approach"
(SPAA 2013), the long paper (REF as its Algorithms 1-2, RAND as its Algorithm 3,
experiments in its section 6).

Pure functions, no simulation kernel. Policies (:data:`POLICIES`) and the readings where
the papers are ambiguous or silent (those common to every policy are in
:mod:`.simulation`, REF's and RAND's in :mod:`.coalitions`):

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
      contradicts lines 13-14 and 7-8); ``simulate(..., lines_15_16="literal")`` runs them as
      printed (the other two repairs kept), so the two readings can be compared (in a run:
      the ``directcontr`` protocol's key ``lines_15_16``);
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

The Shapley-fair scheduling modules: :mod:`.shapley_value` (ψ_sp, the Shapley value,
Δψ/p_tot), :mod:`.simulation` (the model and the event loop that runs a policy),
:mod:`.coalitions` (REF and RAND(N), which schedule subcoalitions) and
:mod:`.policies` (DIRECTCONTR, the baselines and ``simulate``, the entry point).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from gridemu.brokers.directcontr.coalitions import REF_LIMIT, _rand_estimator, _simulate_ref
from gridemu.brokers.directcontr.simulation import (
    Result,
    SJob,
    _argbest,
    _as_int,
    _check_jobs,
    _check_procs,
    _check_shares,
    _Keyed,
    _local_jobs,
    _proc_layout,
    _psi_of,
    _Sim,
)

# [S] Algorithm 1 lines 15-16: "prose" swaps them back as the prose says (the default), "literal" as printed.
READINGS = ("prose", "literal")
POLICIES = ("ref", "rand", "directcontr", "roundrobin", "fairshare", "utfairshare", "currfairshare")


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
        # 1 / share[u] = den[u] / num[u], times the numerators' least common multiple.
        exact = [Fraction(s) for s in shares]
        common = math.lcm(*(s.numerator for s in exact))
        self.weight = [s.denominator * (common // s.numerator) for s in exact]

    def pick(self, t, waiting):  # recomputed at every start: the running counts change
        # run_count[u] / share[u] scaled by one positive integer, so exact ints (Fractions
        # were a tenth of a long RICC window): the same order and the same ties.
        keys = [c * w for c, w in zip(self.run_count, self.weight)]
        return _argbest(keys, waiting, largest=False)


class _DirectContr(_Sim):
    """[S] Algorithm 1 with the three repairs of the module docstring."""

    def __init__(self, org_jobs, proc_org, t_end, seed, record=False, by_index=False, lines_15_16="prose"):
        super().__init__(org_jobs, proc_org, t_end)
        self.by_index = by_index
        self.literal = lines_15_16 == "literal"
        self.rng = np.random.default_rng(seed)
        self.fin_ut = [0] * self.k
        self.fin_con = [0] * self.k
        self.phi = [0] * self.k
        self.psi = [0] * self.k
        self.gamma = np.arange(0)  # γ of the current event
        self.record = record
        self.trace: list[DCState] = []

    def _account(self, t_prev: int | None, t: int) -> None:
        d = 0 if t_prev is None else t - t_prev
        for u in range(self.k):  # lines 6-8
            self.phi[u] += d * self.fin_con[u]
            self.psi[u] += d * self.fin_ut[u]
        tri = d * (d + 1) // 2
        # lines 10-16 (the order of γ does not matter here): every processor that ran a job
        # during (t_prev, t], its completions at t not yet applied, adds to its job owner's
        # finUt and ψ and to its own owner's finCon and φ; summed per organization from the
        # running counts, so an event costs the organizations, not the processors.
        for u in range(self.k):
            jobs, procs = self.run_count[u], self.busy[u]
            self.fin_ut[u] += d * jobs
            self.fin_con[u] += d * procs
            if self.literal:  # as printed: the triangle of a job goes to φ of its owner, ψ of m's owner
                self.phi[u] += tri * jobs
                self.psi[u] += tri * procs
            else:
                self.psi[u] += tri * jobs
                self.phi[u] += tri * procs

    def begin_event(self, t_prev, t):
        self._account(t_prev, t)
        self.gamma = self.rng.permutation(self.M)  # line 9

    def proc_order(self, t, free):  # lines 17-18: free processors in γ order
        if self.by_index:
            return sorted(free)
        gamma = self.gamma
        return map(int, gamma[self.is_free[gamma]])  # as ints, and only those the loop takes

    def pick(self, t, waiting):  # line 19
        keys = [self.phi[u] - self.psi[u] for u in range(self.k)]
        return _argbest(keys, waiting, largest=True)

    def _snapshot(self, t, gamma):
        if self.record:
            self.trace.append(
                DCState(
                    t,
                    tuple(int(m) for m in gamma),
                    tuple(self.fin_ut),
                    tuple(self.fin_con),
                    tuple(self.phi),
                    tuple(self.psi),
                    tuple(self.current),
                )
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
    lines_15_16: str = "prose",
) -> Result:
    """Run ``policy`` (one of :data:`POLICIES`) on ``jobs`` over [0, t_end); see the module docstring.

    ``gamma`` is DIRECTCONTR's processor order at an event: "random" (line 9) or "index"
    (free processors by number: the order the decentralized protocol matches them in).
    ``lines_15_16`` is DIRECTCONTR's reading of [S] Algorithm 1 lines 15-16: "prose" (the
    repaired one, ψ = ψ_sp) or "literal" (as printed: φ[own(J)], ψ[own(m)])."""
    if gamma not in ("random", "index"):
        raise ValueError(f"gamma: expected 'random' or 'index', got {gamma!r}")
    if lines_15_16 not in READINGS:
        raise ValueError(f"lines_15_16: expected one of {READINGS}, got {lines_15_16!r}")
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
        sim = _DirectContr(org_jobs, owner, t_end, seed, by_index=gamma == "index", lines_15_16=lines_15_16).run()
        phi_out = [float(x) for x in sim.phi]
    elif policy == "roundrobin":
        sim = _RoundRobin(org_jobs, owner, t_end).run()
    elif policy == "fairshare":
        sim = _Keyed(
            org_jobs,
            owner,
            t_end,
            lambda s, t: [Fraction(s.assigned(u, t)) / share_f[u] for u in range(k)],
            largest=False,
        ).run()
    elif policy == "utfairshare":
        sim = _Keyed(
            org_jobs,
            owner,
            t_end,
            lambda s, t: [Fraction(s.psi2(u, t), 2) / share_f[u] for u in range(k)],
            largest=False,
        ).run()
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
