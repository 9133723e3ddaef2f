"""The checks of docs/results/bilb_table41.py and bilb_thesis_checks.py (thesis Tables 4.1
and 4.5): the Monte Carlo estimator of EG, the matching of printed cells, the M/G/1 bound."""

from __future__ import annotations

import math

import pytest

from gridemu.brokers.bilb.cost import expected_delay
from gridemu.experiments.bilb_table41 import delay, monte_carlo_eg, payoffs, social_limit
from gridemu.experiments.bilb_thesis_checks import (
    OVERLOADED_FIRST,
    ROW6,
    Printed,
    Source,
    best_assignment,
    fit,
    gamma_moments,
    mg1_wait,
    named,
    period_bound,
    rounds_to,
    score_bound,
    spread_bound,
    truncates_to,
)


@pytest.mark.parametrize("load, foreign", [(0.0, 1.0), (5.0, 5.0), (10.0, 20.0)])
def test_monte_carlo_agrees_with_expected_delay(load: float, foreign: float) -> None:
    """EG from g's definition (section 4.2) brackets the closed form of expected_delay."""
    mean, half = monte_carlo_eg(load, foreign, rate=0.2, draws=200_000, seed=7)
    assert abs(mean - expected_delay(load, foreign, 0.2)) <= half
    assert 0 < half < 0.02 * max(foreign, 1.0)  # the interval is tight enough to mean something


def test_delay_cases() -> None:
    """g(r, L, Φ): all of Φ before L, the rest of Φ while it runs, nothing after."""
    out = delay([1.0, 4.0, 5.5, 9.0], load=3.0, foreign=5.0)
    assert out.tolist() == [5.0, 4.0, 2.5, 0.0]


def test_monte_carlo_detects_a_wrong_closed_form() -> None:
    """The check could fail: EG with λ off by 10 % lies far outside the interval."""
    mean, half = monte_carlo_eg(2.0, 5.0, rate=0.2, draws=200_000, seed=7)
    assert abs(mean - expected_delay(2.0, 5.0, 0.22)) > 5 * half


def test_table41_payoffs() -> None:
    """Prop. 4.2 (social outcome > 0), Cor. 4.1 (accept dominated), the limit 1/λ."""
    p = payoffs(5.0, 5.0, 0.2)
    assert p["receiver"] < 0 < p["social"] < p["sender"]
    assert p["cooperate"] == pytest.approx(p["social"] / 2)
    assert social_limit(200.0, 0.2) == pytest.approx(5.0, abs=1e-9)


# a six-field source row (Table 4.4, N = 10, l = 5, last value moved off a rounding tie)
SOURCE = [Source("4.4", "r", f, v) for f, v in zip(ROW6, (1.807, 0.058, 1.343, 0.098, 1.116, 0.857))]


def _row(values: list[float]) -> list[Printed]:
    return [Printed(f, v, 2) for f, v in zip(ROW6, values)]


def test_best_assignment_finds_a_planted_permutation() -> None:
    """Source cells printed to two decimals in another order are all found again."""
    source = SOURCE
    order = [4, 5, 0, 1, 2, 3]  # the overloaded-first reading
    cells = _row([round(source[j].value, 2) for j in order])
    pairs = best_assignment(cells, source)
    assert pairs == list(enumerate(order))
    assert fit(cells, source, pairs) == (
        6,
        pytest.approx(sum(abs(c.value - source[j].value) * 100 for c, j in zip(cells, order))),
    )
    assert named(cells, source, OVERLOADED_FIRST) == pairs


def test_perturbed_value_does_not_match() -> None:
    """A printed value one unit of its last digit away from every source value matches none."""
    source = SOURCE
    cells = _row([1.13, 0.86, 1.81, 0.06, 1.34, 0.10])  # 1.13: 1.116 plus one unit, rounded
    pairs = best_assignment(cells, source)
    assert not rounds_to(cells[0], 1.116)
    assert not any(rounds_to(cells[0], s.value) for s in source)
    assert fit(cells, source, pairs)[0] == 5
    assert truncates_to(Printed("x", 1.80, 2), 1.807) and not rounds_to(Printed("x", 1.80, 2), 1.807)


def test_mg1_bound_known_cases() -> None:
    """M/M/1 at λ = 0.5, μ = 1 waits ρ/(μ - λ) = 1; gamma(1, 1) at λ = 0.2 waits 0.25."""
    assert mg1_wait(0.5, 1.0, 2.0) == pytest.approx(1.0)
    assert gamma_moments(2.0, 2.0) == (4.0, 24.0)
    assert score_bound(0.2, 1, 1) == pytest.approx(0.25)
    assert score_bound(0.2, 2, 2) == pytest.approx(3.0)
    assert score_bound(0.2, 1, 1, processors=10) == pytest.approx(11.5)
    assert spread_bound(0.25, 10) == pytest.approx(11.5)
    with pytest.raises(ValueError):
        mg1_wait(1.0, 1.0, 2.0)


def test_period_bound_near_steady_state() -> None:
    """At load 0.2 a period of 1000 is long enough: the simulated bound is near W/E[S]."""
    mean, half = period_bound(0.2, 1, 1, periods=400, seed=3)
    assert math.isfinite(mean) and half < 0.02
    assert abs(mean - 0.25) < 0.03
