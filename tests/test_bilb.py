"""BILB's plan (Algorithm 4.3) and the cost model EG (section 4.2): the pure functions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import gridemu.emulator as emulator
from gridemu.brokers.bilb.algorithm import TIE, bilb_plan, next_round_time, on_tie_grid, tie_sorted
from gridemu.brokers.bilb.cost import expected_delay


def delay(r: np.ndarray, load: float, foreign: float) -> np.ndarray:
    """g(r, L, Φ) of section 4.2."""
    return np.where(r < load, foreign, np.where(r < load + foreign, load + foreign - r, 0.0))


@pytest.mark.parametrize("load,foreign,rate", [(0.0, 5.0, 0.2), (3.0, 2.0, 0.2), (10.0, 1.0, 0.5), (1.0, 40.0, 0.05)])
def test_expected_delay_matches_numeric_integration_of_its_definition(load, foreign, rate):
    r = np.linspace(0.0, 60.0 / rate, 600_001)
    numeric = np.trapezoid(delay(r, load, foreign) * rate * np.exp(-rate * r), r)
    assert expected_delay(load, foreign, rate) == pytest.approx(numeric, rel=1e-6, abs=1e-9)


def test_expected_delay_is_below_the_senders_gain():
    # Φ - EG(L, Φ) > 0 for all positive Φ and L (section 4.2)
    for load in (0.0, 1.0, 10.0):
        for foreign in (0.1, 1.0, 100.0):
            assert 0 < expected_delay(load, foreign, 0.2) < foreign


def test_bilb_by_hand():
    # loads 0, 4, 8 with generous limits: site 1 balances with site 0 at mean 2 (sends 2),
    # then site 2 with both at mean 4: spaces 4-2=2 for both, sends 4 split 2 and 2.
    plan = bilb_plan([0.0, 4.0, 8.0], [100.0, 100.0, 100.0])
    assert plan == [(1, 0, 2.0), (2, 0, 2.0), (2, 1, 2.0)]
    assert next_round_time(10.0, [0.0, 4.0, 8.0], plan) == 14.0


def test_bilb_limits_bound_sender_and_receiver():
    # the heavy site may send only l=1; the light site may grow only to l=3
    assert bilb_plan([0.0, 10.0], [3.0, 1.0]) == [(1, 0, 1.0)]
    assert bilb_plan([0.0, 10.0], [3.0, 100.0]) == [(1, 0, 3.0)]
    assert bilb_plan([0.0, 10.0], [0.0, 100.0]) == []


def test_bilb_caps_each_surplus_at_the_movable_load():
    # loads 0, 4, 8 as in test_bilb_by_hand, but site 2 can move only 1 and site 1 nothing:
    # site 1 sends nothing, site 2 sends its 1 to the one with the most space (site 0, empty).
    plan = bilb_plan([0.0, 4.0, 8.0], [100.0] * 3, movable=[0.0, 0.0, 1.0])
    assert plan == [(2, 0, 1.0)]
    # the next round comes when the least loaded queue, as the capped plan leaves it, empties
    assert next_round_time(10.0, [0.0, 4.0, 8.0], plan) == 11.0
    with pytest.raises(ValueError, match="2 movable loads"):
        bilb_plan([0.0, 4.0, 8.0], [100.0] * 3, movable=[0.0, 1.0])


loads_and_limits = st.integers(1, 25).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0, 500, allow_nan=False), min_size=n, max_size=n),
        st.lists(st.floats(0, 1000, allow_nan=False), min_size=n, max_size=n),
        st.lists(st.floats(0, 1), min_size=n, max_size=n),
    )
)


# Found by hypothesis: site 17 (0.9999999999999999) ties with site 10 (1.0), comes after it by
# id, and fills the space site 10 made by sending.
TIED = [0.0] * 7 + [1.0] * 4 + [0.0] * 3 + [1.0] * 3 + [0.9999999999999999, 0.0, 0.5, 0.5]
TIED_LIMITS = [0.0] * 10 + [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
TIED_SHARES = [0.0] * 10 + [1.0] + [0.0] * 6 + [1.0, 0.0, 0.0, 0.0]


@settings(max_examples=300, deadline=None)
@given(loads_and_limits)
@example((TIED, TIED_LIMITS, TIED_SHARES))
def test_bilb_guarantees(case):
    loads, limits, share = case
    movable = [load * f for load, f in zip(loads, share)]
    plan = bilb_plan(loads, limits, movable)
    received = [0.0] * len(loads)
    sent = [0.0] * len(loads)
    for k, l, amount in plan:
        assert amount > 0 and k != l
        # Load only flows to less loaded sites: loads within TIE are equal and ordered by id
        # (tie_sorted), so 0.9999999999999999 may send to a lower id at 1.0.
        assert loads[l] <= loads[k] + TIE
        received[l] += amount
        sent[k] += amount
    eps = 1e-9 * (1 + max(loads))
    for i in range(len(loads)):
        assert sent[i] <= limits[i] + eps  # a sender never sends more than its l_k
        assert sent[i] <= movable[i] + eps  # nor more than it can move
        if received[i] > 0:  # a receiver's queue never exceeds its l_k
            assert loads[i] + received[i] - sent[i] <= limits[i] + eps
    assert math.isclose(sum(sent), sum(received), rel_tol=1e-12, abs_tol=1e-9)  # nothing created or lost


# Offers of one round of `bilb-topology --set sites.count=10 --set workload.until=20 --set
# sites.speed=0.1`: ten loads within 7e-6 of each other (site id -> L_k), and the closed
# neighborhoods of sites 6 and 8.
NEAR_EQUAL = {
    0: 109.75243966283449, 1: 109.75244470103976, 2: 109.7524430726533, 3: 109.75244032929356,
    4: 109.75243814504384, 5: 109.75244254272707, 6: 109.75244087134729, 7: 109.7524406712756,
    8: 109.7524404019957, 9: 109.75244084545776,
}  # fmt: skip
HOODS = ([1, 2, 3, 4, 6, 7, 8], [0, 2, 3, 5, 6, 7, 8])


def _orders(loads: dict[int, float]) -> list[list[int]]:
    return [tie_sorted(hood, lambda k: loads[k]) for hood in HOODS]


def test_overlapping_neighborhoods_order_two_sites_alike_on_the_tie_grid():
    six, eight = _orders(NEAR_EQUAL)
    assert six.index(6) < six.index(8) and eight.index(8) < eight.index(6)  # the disagreement: each waited
    snapped = {k: on_tie_grid(v) for k, v in NEAR_EQUAL.items()}
    six, eight = _orders(snapped)
    common = [k for k in six if k in eight]
    assert common == [k for k in eight if k in six]
    assert six == sorted(HOODS[0], key=lambda k: (snapped[k], k))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 10), min_size=2, max_size=12), st.data())
def test_tie_grid_orders_any_two_sites_alike_in_any_company(values, data):
    loads = {k: on_tie_grid(v + data.draw(st.floats(0, 5e-6))) for k, v in enumerate(values)}
    everyone = tie_sorted(loads, loads.__getitem__)
    subset = data.draw(st.lists(st.sampled_from(sorted(loads)), min_size=2, unique=True))
    assert tie_sorted(subset, loads.__getitem__) == [k for k in everyone if k in subset]


def test_the_progress_never_counts_below_zero_or_above_the_jobs_while_pieces_run():
    # The shards count finished pieces less the pieces split off jobs; with BILB splitting
    # jobs over 16 sites that sum went down to -63 mid-run, and the CLI printed "-63 / 593
    # jobs done". The progress shows it floored at 0: never above the jobs finished.
    seen = []
    result = emulator.run("bilb-topology", backend="inprocess", overrides={"sites.count": 16}, on_progress=seen.append)
    total = result.summary["global"]["jobs"]
    assert all(0 <= p.jobs_done <= p.jobs_total == total for p in seen)
    assert seen[-1].jobs_done == total
    assert result.summary["global"]["jobs_by_state"] == {"done": total}
