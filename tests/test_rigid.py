"""Workload generators of thesis section 5.6.1 (scenarios/rigid.py): Zipf owners, *uni*, *swf*.

Statistical tests use fixed seeds and large samples, with tolerances many standard errors
wide, so they are deterministic and far from their thresholds; the hypothesis tests check
properties that hold for every draw.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridemu.brokers.molba.list_scheduling import Job
from gridemu.brokers.molba.protocol import instance
from gridemu.model.jobs import JOB_DTYPE
from gridemu.scenarios.rigid import (
    ALL_JOBS,
    BATCH,
    INTERACTIVE,
    MAX_LOG_RUNTIME,
    ZIPF_EXPONENT,
    _draw_log_runtimes,
    _draw_sizes,
    lublin_jobs,
    lublin_size_pmf,
    scaled_params,
    uni_jobs,
    zipf_owners,
    zipf_probabilities,
)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0, 4)))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson correlation of average ranks (ties share their mean rank)."""

    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(len(v), dtype=float)
        _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
        sums = np.bincount(inverse, weights=r)
        return (sums / counts)[inverse]

    return float(np.corrcoef(ranks(x), ranks(y))[0, 1])


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Job arrays equal bit for bit (NaN walltimes and deadlines included)."""
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def check_rigid_array(jobs: np.ndarray, n: int, n_orgs: int) -> None:
    """What every rigid generator returns: n jobs in draw order, ids 0..n-1, released at 0,
    owner = submit site = group = an organization, integer q and float p."""
    assert jobs.dtype == JOB_DTYPE and jobs.shape == (n,)
    assert jobs["job_id"].tolist() == list(range(n))
    org = jobs["owner"]
    assert org.min() >= 0 and org.max() < n_orgs
    assert np.array_equal(jobs["submit_site"], org) and np.array_equal(jobs["group"], org)
    assert (jobs["release"] == 0).all()
    assert np.issubdtype(jobs["procs"].dtype, np.integer) and np.issubdtype(jobs["size"].dtype, np.floating)


def is_pow2(q: np.ndarray) -> np.ndarray:
    return (q & (q - 1)) == 0


seeds = st.integers(min_value=0, max_value=2**32 - 1)


# --- Zipf owners --------------------------------------------------------------------------


def test_zipf_probabilities_are_the_bounded_law():
    p = zipf_probabilities(4, 2.0)
    h = 1 + 1 / 4 + 1 / 9 + 1 / 16
    assert p == pytest.approx([1 / h, 1 / 4 / h, 1 / 9 / h, 1 / 16 / h])
    assert zipf_probabilities(1).tolist() == [1.0]


@pytest.mark.parametrize("n_orgs", [2, 5, 10, 20])
def test_zipf_owner_frequencies_match_k_to_the_minus_a(n_orgs):
    n = 200_000
    owners = zipf_owners(rng(n_orgs), n, n_orgs)
    freq = np.bincount(owners, minlength=n_orgs) / n
    assert len(freq) == n_orgs  # no owner outside 0..n_orgs-1
    k = np.arange(1, n_orgs + 1, dtype=float)
    expected = k**-ZIPF_EXPONENT / (k**-ZIPF_EXPONENT).sum()
    assert np.abs(freq - expected).max() < 0.01  # standard error ≤ 0.0012
    if n_orgs <= 10:  # neighbouring ranks differ by ≥ 6 standard errors up to N = 10
        assert np.all(np.diff(freq) < 0), freq
    else:  # at N = 20 the tail ranks are too close to compare one by one
        assert np.all(np.diff(freq[:10]) < 0), freq
        assert freq[0] > 0.4 and freq[10:].sum() < freq[1]


@given(seed=seeds, n=st.integers(1, 300), n_orgs=st.integers(1, 30))
@settings(max_examples=50, deadline=None)
def test_zipf_owners_in_range_and_deterministic(seed, n, n_orgs):
    owners = zipf_owners(rng(seed), n, n_orgs)
    assert owners.shape == (n,)
    assert owners.min() >= 0 and owners.max() < n_orgs
    assert np.array_equal(owners, zipf_owners(rng(seed), n, n_orgs))


# --- uni ------------------------------------------------------------------------------------


@given(seed=seeds, n=st.integers(1, 200), n_orgs=st.integers(1, 20), m=st.integers(1, 600))
@settings(max_examples=60, deadline=None)
def test_uni_jobs_ranges_types_and_determinism(seed, n, n_orgs, m):
    jobs = uni_jobs(rng(seed), n, n_orgs, m)
    check_rigid_array(jobs, n, n_orgs)
    q, p = jobs["procs"], jobs["size"]
    assert q.min() >= 1 and q.max() <= m  # q ≤ m, thesis line 2803
    assert (p == np.floor(p)).all() and p.min() >= 1 and p.max() <= 50
    assert same(uni_jobs(rng(seed), n, n_orgs, m), jobs)


def test_uni_jobs_cover_the_whole_ranges_uniformly():
    m, n = 32, 100_000
    jobs = uni_jobs(rng(7), n, 5, m)
    q, p = jobs["procs"], jobs["size"]
    assert set(q.tolist()) == set(range(1, m + 1))  # q = m included
    assert set(p.tolist()) == set(range(1, 51))
    assert np.abs(np.bincount(q, minlength=m + 1)[1:] / n - 1 / m).max() < 0.005
    assert np.abs(np.bincount(p.astype(int), minlength=51)[1:] / n - 1 / 50).max() < 0.005
    assert abs(spearman(q, p)) < 0.03  # independent


def test_different_seeds_give_different_jobs():
    assert not same(uni_jobs(rng(1), 50, 5, 32), uni_jobs(rng(2), 50, 5, 32))
    assert not same(lublin_jobs(rng(1), 50, 5, 32), lublin_jobs(rng(2), 50, 5, 32))


@pytest.mark.parametrize("gen", [uni_jobs, lublin_jobs])
def test_the_chapter_5_instance_of_a_drawn_array(gen):
    """brokers turn a drawn array into the algorithms' jobs: Job(id, org, p, q), Python numbers."""
    jobs = gen(rng(4), 40, 3, 16)
    inst = instance(jobs, [16] * 3)
    assert [j.id for j in inst] == list(range(40))
    for j, row in zip(inst, jobs):
        assert isinstance(j, Job)
        assert type(j.id) is int and type(j.org) is int and type(j.q) is int and isinstance(j.p, float)
        assert (j.org, j.p, j.q) == (row["owner"], row["size"], row["procs"])


# --- Lublin–Feitelson ---------------------------------------------------------------------


@given(seed=seeds, n=st.integers(1, 200), n_orgs=st.integers(1, 20), m=st.integers(2, 600))
@settings(max_examples=60, deadline=None)
def test_lublin_jobs_ranges_types_and_determinism(seed, n, n_orgs, m):
    jobs = lublin_jobs(rng(seed), n, n_orgs, m)
    check_rigid_array(jobs, n, n_orgs)
    q, p = jobs["procs"], jobs["size"]
    assert q.min() >= 1 and q.max() < m  # q < m, thesis line 2804
    assert (p == np.floor(p)).all()
    assert p.min() >= 1 and p.max() <= math.exp(MAX_LOG_RUNTIME)
    assert same(lublin_jobs(rng(seed), n, n_orgs, m), jobs)


def test_lublin_on_two_processors_is_all_serial():
    assert set(lublin_jobs(rng(3), 500, 3, 2)["procs"].tolist()) == {1}


def test_scaling_moves_u_hi_and_u_med_with_the_machine():
    for m in (32, 128, 512):
        sp = scaled_params(ALL_JOBS, m)
        assert sp.u_hi == pytest.approx(math.log2(m))
        assert sp.u_hi - sp.u_med == pytest.approx(ALL_JOBS.u_hi - ALL_JOBS.u_med)
        assert sp.u_low == ALL_JOBS.u_low
    assert scaled_params(ALL_JOBS, 128) == ALL_JOBS  # the defaults are for 128 processors
    small = scaled_params(ALL_JOBS, 4)  # log2(4) - 2.5 < u_low: u_med clamped up
    assert small.u_med == ALL_JOBS.u_low and small.u_hi == 2.0


@pytest.mark.parametrize("params", [ALL_JOBS, BATCH, INTERACTIVE], ids=["all", "batch", "interactive"])
@pytest.mark.parametrize("m", [3, 32, 128, 512])
def test_size_pmf_is_a_distribution_below_m(params, m):
    pmf = lublin_size_pmf(m, params)
    assert sum(pmf.values()) == pytest.approx(1.0, abs=1e-12)
    assert min(pmf) >= 1 and max(pmf) < m
    assert all(v >= 0 for v in pmf.values())
    assert pmf[1] == pytest.approx(params.serial_prob)


@pytest.mark.parametrize("m", [32, 128, 512])
def test_serial_and_power_of_two_fractions(m):
    n = 200_000
    q, pow2_branch = _draw_sizes(rng(m), n, m, ALL_JOBS)
    serial = q == 1
    # Serial jobs: the model's serial_prob (0.244); standard error ≈ 0.001.
    assert abs(serial.mean() - ALL_JOBS.serial_prob) < 0.01
    # Jobs whose size is forced to a power of two: pow2_prob of all jobs (reference program:
    # u ≤ serial_prob + pow2_prob), i.e. pow2_prob / (1 - serial_prob) of the parallel ones.
    assert abs(pow2_branch.mean() - ALL_JOBS.pow2_prob) < 0.01
    par = ~serial
    assert abs(pow2_branch[par].mean() - ALL_JOBS.pow2_prob / (1 - ALL_JOBS.serial_prob)) < 0.01
    assert np.all(is_pow2(q[pow2_branch]))
    # Observed powers of two among parallel sizes: also the accidental ones of the other
    # branch (2^x rounding to a power of two), as computed exactly by lublin_size_pmf.
    pmf = lublin_size_pmf(m)
    expected = sum(v for k, v in pmf.items() if k > 1 and k & (k - 1) == 0) / (1 - pmf[1])
    assert expected > ALL_JOBS.pow2_prob / (1 - ALL_JOBS.serial_prob)
    assert abs(is_pow2(q[par]).mean() - expected) < 0.01


def test_lublin_sizes_follow_the_exact_pmf():
    m, n = 128, 200_000
    q = lublin_jobs(rng(11), n, 4, m)["procs"]
    freq = np.bincount(q, minlength=m) / n
    pmf = lublin_size_pmf(m)
    expected = np.array([pmf.get(k, 0.0) for k in range(m)])
    assert np.abs(freq - expected).max() < 0.01
    assert freq[np.array([2, 4, 8, 16, 32])].sum() > 0.4  # power-of-two peaks


@pytest.mark.parametrize("m, floor", [(128, 0.05), (512, 0.2)])
def test_size_and_runtime_are_positively_rank_correlated(m, floor):
    jobs = lublin_jobs(rng(5), 50_000, 5, m)
    q, p = jobs["procs"], jobs["size"]
    # Observed at these seeds: 0.10 (m = 128) and 0.30 (m = 512); standard error ≈ 0.005.
    assert spearman(q, p) > floor
    # Per job size, larger jobs run longer on average (the mixing probability falls with q).
    assert np.median(p[q >= 32]) > 2 * np.median(p[q == 1])


def test_correlation_comes_from_pa():
    params = dataclasses.replace(ALL_JOBS, pa=0.0)
    jobs = lublin_jobs(rng(5), 50_000, 5, 512, params=params)
    q, p = jobs["procs"], jobs["size"]
    assert abs(spearman(q, p)) < 0.03


@pytest.mark.parametrize("size", [1, 60, 200])
def test_log_runtime_is_the_hyper_gamma_with_size_dependent_mixing(size):
    n = 100_000
    hg = _draw_log_runtimes(rng(size), np.full(n, size), ALL_JOBS)
    assert hg.min() >= 0 and hg.max() <= MAX_LOG_RUNTIME
    p = min(max(ALL_JOBS.pa * size + ALL_JOBS.pb, 0.0), 1.0)  # 0.7746, 0.456, 0 (clipped)
    a1, b1, a2, b2 = ALL_JOBS.a1, ALL_JOBS.b1, ALL_JOBS.a2, ALL_JOBS.b2
    mean = p * a1 * b1 + (1 - p) * a2 * b2
    second = p * (a1 * b1**2 + (a1 * b1) ** 2) + (1 - p) * (a2 * b2**2 + (a2 * b2) ** 2)
    # Standard errors: mean ≤ 0.009, variance ≤ 0.03 (the cut at 12 removes < 1e-6 of draws).
    assert abs(hg.mean() - mean) < 0.05
    assert abs(hg.var() - (second - mean**2)) < 0.2
    # The long gamma (mean 9.4, sd 0.53) falls below 7 with probability 5e-7; the short one
    # (mean 3.9) with probability 0.9268 (Gamma(4.2, scale 0.94) cdf): the share below 7
    # is 0.9268·p (standard error ≤ 0.0016).
    assert abs((hg < 7).mean() - 0.9268 * p) < 0.01


def test_spearman_helper():
    x = np.array([1, 2, 3, 4, 5])
    assert spearman(x, x**3) == pytest.approx(1.0)
    assert spearman(x, -x) == pytest.approx(-1.0)
    assert spearman(np.array([1, 1, 2, 2]), np.array([1, 2, 3, 4])) == pytest.approx(0.894427, abs=1e-6)


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("gen", [uni_jobs, lublin_jobs])
@pytest.mark.parametrize(
    "args, name",
    [
        ((0, 3, 32), "n"),
        ((-1, 3, 32), "n"),
        ((10, 0, 32), "n_orgs"),
        ((10, 3, 0), "m"),
        ((2.5, 3, 32), "n"),
        ((True, 3, 32), "n"),
    ],
)
def test_bad_counts_name_the_parameter(gen, args, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        gen(rng(0), *args)


def test_lublin_needs_two_processors():
    with pytest.raises(ValueError, match=r"^m:"):
        lublin_jobs(rng(0), 10, 3, 1)


@pytest.mark.parametrize("a", [1, 1.0, 0.5, -2, float("nan"), float("inf")])
def test_bad_zipf_exponent(a):
    with pytest.raises(ValueError, match=r"^a:"):
        zipf_owners(rng(0), 10, 3, a)


def test_bad_zipf_counts():
    with pytest.raises(ValueError, match=r"^n:"):
        zipf_owners(rng(0), 0, 3)
    with pytest.raises(ValueError, match=r"^n_orgs:"):
        zipf_owners(rng(0), 10, 0)


def test_generator_required():
    with pytest.raises(TypeError, match=r"^rng:"):
        uni_jobs(42, 10, 3, 32)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^rng:"):
        lublin_jobs(np.random.RandomState(0), 10, 3, 32)  # type: ignore[arg-type]


def test_bad_params():
    with pytest.raises(ValueError, match=r"^params\.pow2_prob:"):
        lublin_jobs(rng(0), 10, 3, 32, params=dataclasses.replace(ALL_JOBS, pow2_prob=0.9))
    with pytest.raises(ValueError, match=r"^params\.a2:"):
        lublin_jobs(rng(0), 10, 3, 32, params=dataclasses.replace(ALL_JOBS, a2=0.0))
