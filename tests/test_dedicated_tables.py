"""The chapter-3 table scripts' own pieces: the readings of the job split, the cap option of
the walks, and the brute-force checks quoted in docs/results/dedicated.md."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from gridemu.brokers.scheduling_game.dedicated import DedicatedInstance, schedule_count
from gridemu.brokers.scheduling_game.search import dynamic_programming
from gridemu.experiments import dedicated_checks, dedicated_tables
from gridemu.scenarios.dedicated import exponential_instance


def counts(inst: DedicatedInstance) -> np.ndarray:
    """counts[k, l]: organization k's jobs on machine l."""
    return np.array([[len(inst.sizes[k][l]) for l in range(inst.n_orgs)] for k in range(inst.n_orgs)])


@pytest.mark.parametrize("reading", dedicated_tables.READINGS)
def test_every_reading_puts_n_jobs_on_every_machine(reading):
    for index in range(30):
        c = counts(dedicated_tables.reading_instance(reading, 3, 5, 10, index))
        assert (c.sum(axis=0) == 5).all(), (reading, index, c)


def test_the_readings_differ_as_their_definitions_say():
    same = [counts(dedicated_tables.reading_instance("same", 3, 6, 10, i)) for i in range(30)]
    assert all((c == c[:, :1]).all() for c in same)  # one split, every machine
    rotated = [counts(dedicated_tables.reading_instance("rotated", 3, 6, 10, i)) for i in range(30)]
    assert all((c.sum(axis=1) == 6).all() for c in rotated)  # each organization n jobs in all
    assert all((c[:, 1] == np.roll(c[:, 0], 1)).all() for c in rotated)
    # composition and per-job draw each machine on its own: some instance has two different splits
    for reading in ("composition", "per-job"):
        drawn = [counts(dedicated_tables.reading_instance(reading, 2, 8, 10, i)) for i in range(30)]
        assert any((c[:, 0] != c[:, 1]).any() for c in drawn), reading
    # per-job splits are binomial: more even than uniform ones over 600 machines
    spread = {
        reading: np.mean(
            [
                abs(c[0, l] - 4)
                for i in range(300)
                for c in [counts(dedicated_tables.reading_instance(reading, 2, 8, 10, i))]
                for l in (0, 1)
            ]
        )
        for reading in ("composition", "per-job")
    }
    assert spread["per-job"] < spread["composition"] - 0.5, spread


def test_the_walk_cap_is_an_option_and_none_is_uncapped():
    assert dedicated_tables._steps("none") is None and dedicated_tables._steps("50000") == 50_000
    with pytest.raises(argparse.ArgumentTypeError, match="max-steps"):
        dedicated_tables._steps("0")
    capped = dedicated_tables.run_large(("large", 4, 15, 10, 0, 3))
    assert not capped["ew_finished"] and capped["ew_visited"] <= 4
    small = dedicated_tables.run_large(("large", 2, 10, 10, 1, None))
    assert small["ew_finished"] and small["aew_finished"]


@pytest.mark.parametrize("n", [3, 4, 5])
def test_the_brute_force_front_of_the_exponential_instance_is_dyns(n):
    inst = DedicatedInstance.of(exponential_instance(n))
    total, vectors, schedules = dedicated_checks.exponential_front(n)
    assert total == schedule_count(inst)
    assert vectors == schedules == len(dynamic_programming(inst).extra["pareto"])


def test_the_largest_schedule_count_of_a_small_3_instance():
    # 4 jobs split 2/1/1 on each of 3 machines: 4!/(2! 1! 1!) = 12 orders each
    assert dedicated_checks.largest_count(3, 4) == 12**3
    assert dedicated_checks.largest_count(2, 5) == 10**2


def test_the_exact_count_moments_of_the_readings():
    # composition for N = 2: E[C(n, K)] = 2^n / (n + 1) per machine, two machines independent
    mean, _ = dedicated_checks.count_moments("composition", 2, 5)
    assert mean == pytest.approx((2**5 / 6) ** 2)
    # same: both machines share the split, E[C(n, K)^2] = C(2n, n) / (n + 1)
    assert dedicated_checks.count_moments("same", 2, 8)[0] == pytest.approx(12870 / 9)
    # per-job: E[C(n, K)] with K binomial = C(2n, n) / 2^n
    assert dedicated_checks.count_moments("per-job", 2, 5)[0] == pytest.approx((252 / 32) ** 2)
    # a sampled mean of the readings' own generator agrees with the exact one
    draws = [schedule_count(dedicated_tables.reading_instance("same", 2, 5, 10, i)) for i in range(2000)]
    mean, sd = dedicated_checks.count_moments("same", 2, 5)
    assert abs(np.mean(draws) - mean) < 4 * sd / np.sqrt(len(draws))


def test_the_run_block_names_the_worker_processes_the_runs_used():
    # Runs saved before meta.json recorded the pool: their command line says it (default 2).
    assert dedicated_tables._workers_in("--sets large --orgs 2 --workers 1 --out runs/x") == 1
    assert dedicated_tables._workers_in("--sets large --orgs 2 --out runs/x") == 2
    assert dedicated_tables._workers({"workers": [1]}) == "one worker process"
    assert dedicated_tables._workers({"workers": [1, 2]}) == "one or two worker processes"
    assert dedicated_tables._workers({}) == "two worker processes"
