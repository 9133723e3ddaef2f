"""docs/results/bilb_n2.py: its scores are the emulator's, and its diagnostics do what they say."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import gridemu.brokers.bilb.reference as ref
from gridemu import emulator
from gridemu.emulator.scenario import read_scenario_file
from gridemu.experiments import bilb_n2


@pytest.mark.parametrize("n", [2, 10])
def test_reference_scores_equal_the_emulators_under_the_tables_reading(n):
    """The study's cells (reference run, scored by ``scores_of``) are what ``gridemu sweep`` gives
    for the same seed under the tables' reading (latency 0.001 against none: within 1e-3); at
    N = 10 too, which ``--t43-n10`` runs 200 times."""
    data = copy.deepcopy(read_scenario_file("bilb")[0])
    data["run"]["seed"] = 3
    data["sites"]["count"] = n
    data["workload"]["until"] = 1000.0
    data["protocol"] |= {"limit": 2.0, "send": "tail"}
    run = emulator.run(data)
    orgs = sorted(run.summary["organizations"])
    ours = [run.summary["organizations"][org]["score_period_mean"] for org in orgs]
    jobs = bilb_n2.jobs_for(3, n, {})
    pieces = ref.reference_run(jobs, n, protocol="bilb", limits=[2.0] * n, **bilb_n2.TABLES)
    assert bilb_n2.scores_of(jobs, n, pieces) == pytest.approx(ours, abs=1e-3)
    assert max(abs(x) for x in ours) > 0.01  # a run where balancing did something


def test_foreign_plan_bounds_the_load_received_not_the_queue():
    """A receiver with 3 units queued and l = 1 takes nothing from Algorithm 4.3 (its queue is past
    l) but up to 1 when l bounds what it receives."""
    loads, limits, movable = [3.0, 13.0], [1.0, 1.0], [3.0, 13.0]
    assert ref.thesis_bilb(loads, limits, movable)[0] == []
    assert bilb_n2.FOREIGN(loads, limits, movable)[0] == [(1, 0, pytest.approx(1.0))]
    # the queued-work bound counts what the receiver has queued, not what it runs
    assert bilb_n2.QUEUED_ONLY(loads, limits, [0.0, 13.0])[0] == [(1, 0, pytest.approx(1.0))]
    assert bilb_n2.QUEUED_ONLY(loads, limits, movable)[0] == []


def test_release_rounds_run_a_round_at_every_release():
    jobs = bilb_n2.jobs_for(1, 2, {})
    times: list[float] = []
    ref.reference_run(
        jobs,
        2,
        protocol="bilb",
        limits=[1.0, 1.0],
        on_round=lambda t, *_: times.append(t),
        round_at_releases=True,
        **bilb_n2.TABLES,
    )
    assert set(np.unique(jobs["release"]).tolist()) <= set(times)
    plain: list[float] = []
    ref.reference_run(
        jobs, 2, protocol="bilb", limits=[1.0, 1.0], on_round=lambda t, *_: plain.append(t), **bilb_n2.TABLES
    )
    assert not set(np.unique(jobs["release"]).tolist()) <= set(plain)  # the reference alone does not
    assert len(times) == len(set(times))  # one round per instant: a round due later is replaced, not doubled


def test_table44_n10_cells_are_the_emulators_bilb_overloaded():
    """The Table 4.4 N = 10 study's cell for seed 1 (organization 0 overloaded at l_1 = 1000, the
    others at 5) is what ``gridemu run bilb-overloaded`` gives for seed 1 under the tables'
    reading, and its count of rounds is the reference's."""
    sets = {"workload.until": 1000.0, "protocol.send": "tail", "run.seed": 1}
    run = emulator.run("bilb-overloaded", overrides=sets)
    orgs = run.summary["organizations"]
    scores = [orgs[f"org{k}"]["score_period_mean"] for k in range(10)]
    cell = bilb_n2.overloaded_n10(bilb_n2.VARIANTS[0], 5.0, 1)
    assert cell["overloaded"][0] == pytest.approx(scores[0], abs=1e-3)
    assert cell["typical"][0] == pytest.approx(np.mean(scores[1:]), abs=1e-3)
    assert scores[0] > 0.1  # organization 0 gained: load left it
    assert cell["rounds"] > 0 and cell["out"] > 0 and cell["among"] > 0
