"""Rigid parallel job workloads of thesis section 5.6.1 (issue 4, part 4): *uni* and *swf*.

Pure generator functions producing job arrays (``model.jobs.JOB_DTYPE``, one row per job in
draw order: ``job_id`` 0..n-1, ``owner`` = ``submit_site`` = ``group`` the organization k,
``size`` the length p, ``procs`` q, ``release`` 0: the model of chapter 5 has no release
dates). Scenarios never import brokers: ``brokers.molba.protocol.instance`` turns such an
array into the chapter's ``Job(id, org, p, q)`` list where an algorithm needs one.

Every function takes a :class:`numpy.random.Generator` and draws only from it, so the same
generator state gives the same jobs; callers derive the generator from a stable spawn key
(see :func:`scenarios.workload.site_rng`), never from a global seed. Within one call the
draws are made in a fixed order: owners, then sizes (``q``), then lengths (``p``).

Readings of the thesis (``shared/papers/multi-organization-grid-thesis.txt``, line numbers
in brackets):

* *uni* [2803]: "the sizes p and the numbers of required processors q of jobs were produced
  by two independent, uniform distributions over, respectively, {1, ..., 50} and
  {1, ..., m}". So ``p`` is an integer in 1..50 and ``q`` an integer in 1..m, **q ≤ m**
  (q = m is allowed here; the "smaller than m" restriction is only stated for *swf*).
* *swf* [2804]: "a realistic workload generator [Lublin and Feitelson, 2003]. ... The maximum
  required number of processors is smaller than m. The number of generated jobs is set to
  n. All the release dates are set to 0." So **q < m** (q ≤ m - 1; m ≥ 2 is needed). How
  the thesis enforced q < m is not said; we redraw (see below).
* Owners [2806]: "Zipf distribution with number of elements equal to the total number of
  organizations (N) and the exponent of s = 1.4267". Read as the bounded Zipf law over
  ranks k = 1..N with P(k) = k^-s / H(N, s), H(N, s) = sum_{j=1..N} j^-s, rank k being
  organization index k - 1 (organization 0 owns the most jobs). The thesis does not say
  which organization gets which rank; we use the index order, with no shuffle. The exponent
  must be > 1 (API requirement of this module, as for numpy's unbounded ``zipf``; the
  bounded law itself would be defined for any s > 0).

The Lublin–Feitelson model (U. Lublin, D. G. Feitelson, "The workload on parallel
supercomputers: modeling the characteristics of rigid jobs", JPDC 63(11):1105-1122, 2003),
without its arrival process:

* Size (processors). With probability ``serial_prob`` the job is serial (q = 1). Otherwise
  x = log2(size) is drawn from a *two-stage uniform*: U(u_low, u_med) with probability
  ``u_prob``, else U(u_med, u_hi). With probability ``pow2_prob`` (of *all* jobs: the
  reference program draws one uniform u and takes u ≤ serial_prob → serial,
  u ≤ serial_prob + pow2_prob → power of two) x is rounded to an integer first, so the size
  is a power of two; in any case q = round(2^x) (halves rounded up). Power-of-two sizes can
  also arise from the non-rounded branch (e.g. 2^0.9 ≈ 1.87 → 2), so the observed fraction
  of powers of two among parallel jobs is a little above pow2_prob / (1 - serial_prob);
  :func:`lublin_size_pmf` gives the exact distribution.
* Runtime. log(runtime) follows a *hyper-gamma* distribution: Gamma(a1, scale b1) with
  probability p, else Gamma(a2, scale b2), where p = pa·q + pb clipped to [0, 1]. Because
  pa < 0, larger jobs draw more often from the second (long) gamma: this is the model's
  size–runtime correlation. As in the reference program, draws with log(runtime) > 12
  (about 1.9 days) are redrawn and the runtime is exp(draw) truncated to whole seconds
  (≥ 1 s, since a gamma draw is ≥ 0). ``p`` of the produced jobs is that runtime, in
  seconds, as a float.
* Scaling to a machine of m processors: u_hi = log2(m) (the model's "log2 of the system
  size"; the defaults are for 2^7 = 128), u_med = u_hi minus the default gap u_hi - u_med
  (2.5 for "all jobs": the reference program says u_med should be u_hi - 2.5, within
  [u_hi - 3.5, u_hi - 1.5]), clamped into [u_low, u_hi]; u_low is kept. pa and pb are kept
  per processor, as the reference program does (it only asks to fit the size parameters to
  the system); at m = 512 the mixing probability p therefore reaches 0 at q ≈ 144.
* q < m: a parallel job whose size comes out ≥ m is redrawn *within its branch* (a fresh
  two-stage uniform draw, rounded again if it is a power-of-two job), i.e. the parallel
  size is conditioned on fitting; the serial and power-of-two proportions are unchanged.
  When m = 2 no parallel size fits and every job is serial.

Parameter values and confidence. The values below were checked against the authors'
reference implementation of the model, ``m_lublin99.c`` (Lublin & Feitelson, distributed
with the paper through the Parallel Workloads Archive; block "MODEL PARAMETERS"), of which a
copy was read while writing this module. We are confident that they are the program's
defaults and that the algorithms above are the program's. We could not consult the paper
itself, so we cite no table number of the paper and are *not* certain that every printed
table value equals the program's (we believe the "all jobs" values are the paper's fitted
values for the whole sample). The default preset is the "all jobs" (typeless, "whole
sample") one: the program's other mode mixes batch and interactive jobs by their arrival
process, which has no meaning here (all release dates are 0). Batch and interactive presets
are provided for completeness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from numbers import Integral, Real

import numpy as np

from gridemu.model.jobs import empty_jobs

#: Zipf exponent of the owners' distribution, thesis line 2806 (after Iosup et al., 2006).
ZIPF_EXPONENT = 1.4267

#: *uni* job lengths are uniform over 1..UNI_P_MAX (thesis line 2803).
UNI_P_MAX = 50

# --- Lublin–Feitelson (2003) model parameters -------------------------------------------
# Source: the reference program m_lublin99.c of Lublin & Feitelson, "MODEL PARAMETERS"
# block; "all jobs" = the program's typeless ("whole sample") set, used when jobs are not
# split into batch and interactive. Values read from the program (high confidence that
# they are its defaults); equality with the paper's printed tables is believed, not checked.

# Job size ("number of nodes"), all jobs.
SERIAL_PROB = 0.244  # proportion of serial jobs
POW2_PROB = 0.576  # proportion of (all) jobs whose size is forced to a power of two
U_LOW = 0.8  # log2 of the smallest parallel size (0.8: 2^0.8 rounds to 2)
U_MED = 4.5  # change point of the two-stage uniform (= U_HI - 2.5)
U_HI = 7.0  # log2 of the machine size the defaults were fitted for (128)
U_PROB = 0.86  # probability of the first stage U(U_LOW, U_MED)

# Runtime (hyper-gamma of log(runtime in seconds)), all jobs.
A1 = 4.2  # shape of the first (short) gamma
B1 = 0.94  # scale of the first gamma
A2 = 312.0  # shape of the second (long) gamma
B2 = 0.03  # scale of the second gamma
PA = -0.0054  # slope of p = PA * q + PB (p: probability of the first gamma)
PB = 0.78  # intercept of p

# Batch jobs (same source).
SERIAL_PROB_BATCH = 0.2927
POW2_PROB_BATCH = 0.6686
U_LOW_BATCH = 1.2
U_MED_BATCH = 5.0
U_HI_BATCH = 7.0
U_PROB_BATCH = 0.875
A1_BATCH = 6.57
B1_BATCH = 0.823
A2_BATCH = 639.1
B2_BATCH = 0.0156
PA_BATCH = -0.003
PB_BATCH = 0.6986

# Interactive jobs (same source).
SERIAL_PROB_INTERACTIVE = 0.1541
POW2_PROB_INTERACTIVE = 0.625
U_LOW_INTERACTIVE = 1.0
U_MED_INTERACTIVE = 3.0
U_HI_INTERACTIVE = 5.5
U_PROB_INTERACTIVE = 0.705
A1_INTERACTIVE = 3.8351
B1_INTERACTIVE = 0.6605
A2_INTERACTIVE = 7.073
B2_INTERACTIVE = 0.6856
PA_INTERACTIVE = -0.0118
PB_INTERACTIVE = 0.9156

#: log(runtime) draws above this are redrawn (reference program's TOO_MUCH_TIME: e^12 s).
MAX_LOG_RUNTIME = 12.0


@dataclass(frozen=True)
class LublinParams:
    """One parameter set of the Lublin–Feitelson model (sizes and runtimes; no arrivals).

    ``u_hi`` is the log2 of the machine size the set was fitted for; :func:`lublin_jobs`
    moves ``u_hi`` to log2(m) and ``u_med`` with it (keeping ``u_hi - u_med``).
    """

    serial_prob: float
    pow2_prob: float
    u_low: float
    u_med: float
    u_hi: float
    u_prob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float


ALL_JOBS = LublinParams(SERIAL_PROB, POW2_PROB, U_LOW, U_MED, U_HI, U_PROB, A1, B1, A2, B2, PA, PB)
BATCH = LublinParams(
    SERIAL_PROB_BATCH,
    POW2_PROB_BATCH,
    U_LOW_BATCH,
    U_MED_BATCH,
    U_HI_BATCH,
    U_PROB_BATCH,
    A1_BATCH,
    B1_BATCH,
    A2_BATCH,
    B2_BATCH,
    PA_BATCH,
    PB_BATCH,
)
INTERACTIVE = LublinParams(
    SERIAL_PROB_INTERACTIVE,
    POW2_PROB_INTERACTIVE,
    U_LOW_INTERACTIVE,
    U_MED_INTERACTIVE,
    U_HI_INTERACTIVE,
    U_PROB_INTERACTIVE,
    A1_INTERACTIVE,
    B1_INTERACTIVE,
    A2_INTERACTIVE,
    B2_INTERACTIVE,
    PA_INTERACTIVE,
    PB_INTERACTIVE,
)


# --- input checks -------------------------------------------------------------------------


def _check_rng(rng: object) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")


def _check_count(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name}: must be an integer ≥ {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}: must be ≥ {minimum}, got {value!r}")
    return int(value)


def _check_exponent(a: object) -> float:
    if isinstance(a, bool) or not isinstance(a, Real) or not math.isfinite(a) or a <= 1:
        raise ValueError(f"a: the Zipf exponent must be a finite number > 1, got {a!r}")
    return float(a)


def _check_params(params: object) -> LublinParams:
    if not isinstance(params, LublinParams):
        raise TypeError(f"params: expected a LublinParams, got {type(params).__name__}")
    for name in ("serial_prob", "pow2_prob", "u_prob"):
        v = getattr(params, name)
        if not 0 <= v <= 1:
            raise ValueError(f"params.{name}: must be a probability in [0, 1], got {v!r}")
    if params.serial_prob + params.pow2_prob > 1:
        raise ValueError("params.pow2_prob: serial_prob + pow2_prob must not exceed 1")
    if not params.u_low <= params.u_med <= params.u_hi:
        raise ValueError("params.u_med: must satisfy u_low ≤ u_med ≤ u_hi")
    for name in ("a1", "b1", "a2", "b2"):
        v = getattr(params, name)
        if not v > 0:
            raise ValueError(f"params.{name}: must be > 0, got {v!r}")
    return params


# --- owners ---------------------------------------------------------------------------------


def zipf_probabilities(n_orgs: int, a: float = ZIPF_EXPONENT) -> np.ndarray:
    """P(owner = k) = (k+1)^-a / H(n_orgs, a) for k = 0..n_orgs-1 (bounded Zipf, rank k+1)."""
    n_orgs = _check_count("n_orgs", n_orgs)
    a = _check_exponent(a)
    w = np.arange(1, n_orgs + 1, dtype=float) ** -a
    return w / w.sum()


def zipf_owners(rng: np.random.Generator, n: int, n_orgs: int, a: float = ZIPF_EXPONENT) -> np.ndarray:
    """Owners (organization indices, int64) of ``n`` jobs, drawn i.i.d. by bounded Zipf.

    Rank k = 1..n_orgs has probability k^-a / sum_j j^-a and is organization k - 1, so
    organization 0 is the most likely (thesis line 2806; see the module docstring).
    """
    _check_rng(rng)
    n = _check_count("n", n)
    probs = zipf_probabilities(n_orgs, a)
    cdf = np.cumsum(probs)
    owners = np.searchsorted(cdf, rng.random(n), side="right")
    return np.minimum(owners, len(probs) - 1).astype(np.int64)  # cdf[-1] may be 1 - ε


# --- uni ------------------------------------------------------------------------------------


def rigid_jobs(owners: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Job i (id i) of organization ``owners[i]`` (owner, submit site and group), length
    ``p[i]`` (its size) and ``q[i]`` processors, released at 0, as a job array."""
    jobs = empty_jobs(len(owners))  # release 0
    jobs["job_id"] = np.arange(len(owners))
    jobs["owner"] = jobs["group"] = jobs["submit_site"] = owners
    jobs["size"], jobs["procs"] = p, q
    return jobs


def uni_jobs(rng: np.random.Generator, n: int, n_orgs: int, m: int) -> np.ndarray:
    """*uni* instance: p uniform in {1..50}, q uniform in {1..m} (q ≤ m, thesis line 2803)."""
    _check_rng(rng)
    n = _check_count("n", n)
    n_orgs = _check_count("n_orgs", n_orgs)
    m = _check_count("m", m)
    owners = zipf_owners(rng, n, n_orgs)
    q = rng.integers(1, m + 1, size=n)
    p = rng.integers(1, UNI_P_MAX + 1, size=n)
    return rigid_jobs(owners, p.astype(float), q)


# --- Lublin–Feitelson -------------------------------------------------------------------


def scaled_params(params: LublinParams, m: int) -> LublinParams:
    """``params`` fitted to a machine of m processors: u_hi = log2(m), u_med shifted with it.

    u_med keeps its distance to u_hi and is clamped into [u_low, u_hi]; u_low is kept (when
    log2(m) < u_low, i.e. m = 1, u_low is lowered to u_hi; such a machine fits no parallel
    job anyway).
    """
    params = _check_params(params)
    m = _check_count("m", m)
    hi = math.log2(m)
    low = min(params.u_low, hi)
    med = min(max(hi - (params.u_hi - params.u_med), low), hi)
    return replace(params, u_low=low, u_med=med, u_hi=hi)


def _two_stage_uniform(rng: np.random.Generator, k: int, sp: LublinParams) -> np.ndarray:
    first = rng.random(k) <= sp.u_prob
    lo = np.where(first, sp.u_low, sp.u_med)
    hi = np.where(first, sp.u_med, sp.u_hi)
    return lo + rng.random(k) * (hi - lo)


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(x + 0.5)


def _draw_sizes(rng: np.random.Generator, n: int, m: int, params: LublinParams) -> tuple[np.ndarray, np.ndarray]:
    """Sizes q (int64, 1 ≤ q < m) and the flag "power-of-two branch" of n jobs."""
    sp = scaled_params(params, m)
    u = rng.random(n)
    serial = u <= sp.serial_prob
    pow2 = ~serial & (u <= sp.serial_prob + sp.pow2_prob)
    q = np.ones(n, dtype=np.int64)
    if m <= 2:  # no parallel size fits below m: every job is serial
        return q, np.zeros(n, dtype=bool)
    todo = np.flatnonzero(~serial)
    while todo.size:
        x = _two_stage_uniform(rng, todo.size, sp)
        x = np.where(pow2[todo], _round_half_up(x), x)
        size = _round_half_up(2.0**x).astype(np.int64)
        ok = size < m
        q[todo[ok]] = size[ok]
        todo = todo[~ok]
    return q, pow2


def _draw_log_runtimes(rng: np.random.Generator, q: np.ndarray, params: LublinParams) -> np.ndarray:
    """Hyper-gamma draws of log(runtime), p = clip(pa·q + pb, 0, 1), redrawn above 12."""
    p_first = np.clip(params.pa * q + params.pb, 0.0, 1.0)
    log_rt = np.empty(len(q))
    todo = np.arange(len(q))
    while todo.size:
        first = rng.random(todo.size) <= p_first[todo]
        shape = np.where(first, params.a1, params.a2)
        scale = np.where(first, params.b1, params.b2)
        hg = rng.gamma(shape, scale)
        ok = hg <= MAX_LOG_RUNTIME
        log_rt[todo[ok]] = hg[ok]
        todo = todo[~ok]
    return log_rt


def _draw_runtimes(rng: np.random.Generator, q: np.ndarray, params: LublinParams) -> np.ndarray:
    """Runtimes exp(hyper-gamma) truncated to whole seconds (float, ≥ 1), as the program does."""
    return np.maximum(np.floor(np.exp(_draw_log_runtimes(rng, q, params))), 1.0)


def lublin_jobs(
    rng: np.random.Generator, n: int, n_orgs: int, m: int, *, params: LublinParams = ALL_JOBS
) -> np.ndarray:
    """*swf* instance: Lublin–Feitelson sizes and runtimes, q < m (thesis line 2804), Zipf owners.

    ``params`` defaults to the model's "all jobs" set; the size part is scaled to m
    (:func:`scaled_params`). m must be ≥ 2 (q < m leaves no size otherwise).
    """
    _check_rng(rng)
    n = _check_count("n", n)
    n_orgs = _check_count("n_orgs", n_orgs)
    m = _check_count("m", m)
    if m < 2:
        raise ValueError(f"m: swf jobs need q < m, so m must be ≥ 2, got {m}")
    params = _check_params(params)
    owners = zipf_owners(rng, n, n_orgs)
    q, _ = _draw_sizes(rng, n, m, params)
    p = _draw_runtimes(rng, q, params)
    return rigid_jobs(owners, p, q)


def _tsu_cdf(x: float, sp: LublinParams) -> float:
    """P(X < x) for the two-stage uniform of ``sp`` (continuous, so < and ≤ agree)."""

    def uni(lo: float, hi: float) -> float:
        if hi <= lo:  # degenerate stage: a point mass at lo
            return 1.0 if x > lo else 0.0
        return min(max((x - lo) / (hi - lo), 0.0), 1.0)

    return sp.u_prob * uni(sp.u_low, sp.u_med) + (1 - sp.u_prob) * uni(sp.u_med, sp.u_hi)


def lublin_size_pmf(m: int, params: LublinParams = ALL_JOBS) -> dict[int, float]:
    """Exact distribution of q produced by :func:`lublin_jobs` for m processors.

    {q: probability}, summing to 1; the reference for tests and for documentation.
    """
    m = _check_count("m", m, minimum=2)
    sp = scaled_params(params, m)
    pmf: dict[int, float] = {1: sp.serial_prob}
    if m == 2:
        return {1: 1.0}
    # Power-of-two branch: x rounded half up to k, q = 2^k; keep q < m, renormalize.
    branch: dict[int, float] = {}
    for k in range(0, int(math.floor(sp.u_hi)) + 2):
        prob = _tsu_cdf(k + 0.5, sp) - _tsu_cdf(k - 0.5, sp)
        if prob > 0 and 2**k < m:
            branch[2**k] = prob
    _add_branch(pmf, branch, sp.pow2_prob)
    # Other parallel jobs: q = j when 2^x ∈ [j - 0.5, j + 0.5).
    branch = {}
    for j in range(1, m):
        prob = _tsu_cdf(math.log2(j + 0.5), sp) - _tsu_cdf(math.log2(j - 0.5) if j > 1 else -math.inf, sp)
        if prob > 0:
            branch[j] = prob
    _add_branch(pmf, branch, 1 - sp.serial_prob - sp.pow2_prob)
    return pmf


def _add_branch(pmf: dict[int, float], branch: dict[int, float], weight: float) -> None:
    total = sum(branch.values())
    for q, prob in branch.items():
        pmf[q] = pmf.get(q, 0.0) + weight * prob / total


__all__ = [
    "ALL_JOBS",
    "BATCH",
    "INTERACTIVE",
    "LublinParams",
    "ZIPF_EXPONENT",
    "lublin_jobs",
    "lublin_size_pmf",
    "rigid_jobs",
    "scaled_params",
    "uni_jobs",
    "zipf_owners",
    "zipf_probabilities",
]
