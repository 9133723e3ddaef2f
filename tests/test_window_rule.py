"""The window rule (emulator/window.py) on its own: its cases, and its two promises as
properties: a window always advances time, and nothing sent inside it is due inside it."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gridemu.emulator.window import WINDOW_SLICES, Window, WindowRule, next_window
from gridemu.model.errors import GridemuError

times = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
bounds = st.one_of(times, st.just(math.inf))
lookaheads = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)
horizons = st.one_of(st.just(math.inf), st.floats(min_value=1e-3, max_value=2e6, allow_nan=False))


@st.composite
def rules(draw) -> WindowRule:
    return WindowRule.for_run(
        draw(lookaheads), draw(horizons), draw(times), periodic=draw(st.booleans()), progress=draw(st.booleans())
    )


def test_the_window_reaches_the_earliest_send_bound_plus_the_lookahead():
    rule = WindowRule(lookahead=2.0)
    assert next_window(rule, 5.0, 9.0) == Window(5.0, 11.0)  # B > T: W = B + lookahead
    assert next_window(rule, 5.0, 1.0) == Window(5.0, 7.0)  # B < T (a bound of the past): W = T + lookahead
    assert next_window(rule, 5.0, math.inf) == Window(5.0, math.inf)  # nobody ever sends: one window


def test_the_horizon_cuts_the_window_and_ends_the_run():
    rule = WindowRule(lookahead=2.0, horizon=6.0)
    assert next_window(rule, 5.0, 9.0) == Window(5.0, 6.0)
    assert next_window(rule, 6.0, 9.0) is None
    assert next_window(WindowRule(lookahead=2.0), math.inf, math.inf) is None  # no event left


def test_span_is_the_last_release_cut_at_the_horizon():
    assert WindowRule.for_run(1.0, math.inf, 50.0).span == 50.0
    assert WindowRule.for_run(1.0, 30.0, 50.0).span == 30.0
    assert WindowRule.for_run(1.0, 30.0, 0.0).span == 30.0  # every job released at 0: the horizon


def test_periodic_windows_are_capped_by_their_start_alone():
    rule = WindowRule.for_run(0.1, math.inf, 400.0, periodic=True)
    assert rule.slice == 400.0 / WINDOW_SLICES == 2.0
    assert next_window(rule, 10.0, 100.0) == Window(10.0, 12.0)  # the cap, not B + lookahead
    assert next_window(rule, 10.0, 10.0) == Window(10.0, 10.1)  # B + lookahead below the cap
    # While jobs are released the cap is never below the lookahead; after, 1/200 of the span.
    wide = WindowRule.for_run(5.0, math.inf, 400.0, periodic=True)
    assert next_window(wide, 10.0, 100.0) == Window(10.0, 15.0)
    assert next_window(wide, 500.0, 1000.0) == Window(500.0, 502.0)


def test_progress_caps_only_a_run_whose_sites_never_talk():
    rule = WindowRule.for_run(1.0, math.inf, 400.0, progress=True)
    assert next_window(rule, 0.0, math.inf) == Window(0.0, 2.0)
    assert next_window(rule, 0.0, 50.0) == Window(0.0, 51.0)
    assert next_window(WindowRule.for_run(1.0, math.inf, 400.0), 0.0, math.inf).end == math.inf


def test_a_window_lost_to_float_resolution_is_one_clear_error():
    with pytest.raises(GridemuError, match="run.lookahead: a window of 1 no longer advances virtual time at t=1e\\+20"):
        next_window(WindowRule(lookahead=1.0), 1e20, 1e20)


@given(rules(), times, bounds)
def test_a_window_advances_time_whenever_work_remains(rule, pending, bound):
    try:
        window = next_window(rule, pending, bound)
    except GridemuError:  # only where T + lookahead rounds to T
        assert pending + rule.lookahead == pending or pending + rule.slice == pending
        return
    if pending >= rule.horizon:
        assert window is None
        return
    assert window.start == pending and window.end > pending
    assert window.end <= rule.horizon


@given(rules(), times, bounds, st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=10.0))
def test_nothing_sent_inside_a_window_is_due_before_its_end(rule, pending, bound, where, extra):
    window = next_window(rule, pending, bound)
    if window is None or math.isinf(bound):
        return
    # An agent sends at or after its bound and inside the window; a link takes at least the lookahead.
    first = max(bound, pending)
    if first >= window.end:
        return  # nobody can send in this window
    sent = min(first + where * (window.end - first), math.nextafter(window.end, -math.inf))
    assert sent + rule.lookahead + extra >= window.end


@given(rules(), times, bounds, bounds)
def test_a_periodic_window_ends_by_a_cap_that_depends_on_its_start_alone(rule, pending, bound, other):
    if not rule.periodic:
        return
    window = next_window(rule, pending, bound)
    if window is None:
        return
    cap = rule.cap(pending, other)
    assert cap == rule.cap(pending, bound)
    assert window.end <= pending + cap
    assert cap >= (rule.lookahead if pending < rule.span else rule.slice)


def test_a_message_in_flight_bounds_the_window_only_where_an_agent_may_answer_it():
    from gridemu.emulator.exchange import window_after
    from gridemu.emulator.shard import StepInfo

    # One shard waits at T = 5 (its bound 20); a message to another shard is due at 6.
    infos = [StepInfo(5.0, 20.0, {}, 0, 0), StepInfo(30.0, 40.0, {}, 0, 0)]
    answers = WindowRule(lookahead=2.0)
    assert window_after(answers, infos, 6.0, n_jobs=1) == Window(5.0, 8.0)  # its receiver may send at 6
    # Agents that send only at arrivals and timers: the message is no bound; after the span
    # it is an event (T), before it no event either (its site handles it at its next arrival).
    quiet = WindowRule(lookahead=2.0, span=10.0, answers=False, waits=True)
    assert window_after(quiet, infos, 6.0, n_jobs=1) == Window(5.0, 22.0)
    assert window_after(quiet, infos, 4.0, n_jobs=1) == Window(5.0, 22.0)
    late = [StepInfo(12.0, 20.0, {}, 0, 0, clock=10.0), StepInfo(30.0, 40.0, {}, 0, 0, clock=10.0)]
    assert window_after(quiet, late, 11.0, n_jobs=1) == Window(11.0, 22.0)
    # Routing agents on the route path handle a message when it is due: an event, no bound.
    routing = WindowRule(lookahead=2.0, span=10.0, answers=False)
    assert window_after(routing, infos, 4.0, n_jobs=1) == Window(4.0, 22.0)


@pytest.mark.parametrize("scenario", ["power-of-d", "quickstart", "quickstart-random"])
def test_a_run_s_windows_are_the_same_on_any_number_of_shards(scenario):
    # power_of_d's agents send only at arrivals and timers: a message crossing to another
    # shard used to shorten and add windows where a message within a shard does not (589
    # windows on one shard, 627 and 629 on two and three). quickstart's agents answer.
    from gridemu import emulator

    ov = {"sites.count": 100, "workload.jobs": 5000} if scenario == "power-of-d" else {"workload.until": 300}
    if scenario == "quickstart-random":  # the route path: routing agents as columns
        scenario, ov = "quickstart", ov | {"protocol.name": "random"}
    runs = [emulator.run(scenario, backend="inprocess", shards=k, overrides=ov) for k in (1, 2, 3)]
    windows = [r.summary["global"]["windows"] for r in runs]
    assert windows == [windows[0]] * 3, windows
    assert all(r.jobs.equals(runs[0].jobs) for r in runs[1:])
