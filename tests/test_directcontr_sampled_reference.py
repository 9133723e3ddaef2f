"""Decentralized DIRECTCONTR (``directcontr``, ``mode = "sampled"``) against its own reference
(brokers/directcontr/sampled_reference.py: one event heap for the whole grid, each site's
2(φ − ψ) computed exactly from the jobs' unit parts, written from the papers' rule and the
protocol's documented rules, not through the agent): the same job table (exec_site, start,
end) and message counts on random small grids, over a ring, where many events coincide,
with a horizon that cuts the run, and without choices."""

from __future__ import annotations

import numpy as np
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.directcontr.sampled_reference import Schedule, as_arrays, simulate
from gridemu.emulator.scenario import load_scenario
from gridemu.scenarios.workload import generate_jobs


def random_grid(
    seed: int, n: int, d: int, latency: float, jobs: int = 40, horizon: float = 1000.0, topology=None, sizes=8
) -> dict:
    """n organizations of one site each, 1 to 3 identical processors, integral releases in
    [0, 30) and sizes in [1, sizes)."""
    rng = np.random.default_rng(500 + seed)
    data = {
        "run": {"seed": seed, "horizon": horizon},
        "network": {"latency": latency},
        "sites": [{"name": f"s{k}", "procs": int(rng.integers(1, 4))} for k in range(n)],
        "scheduler": {"name": "planned"},
        "workload": {
            "kind": "jobs",
            "list": [
                {
                    "site": f"s{int(rng.integers(0, n))}",
                    "release": float(rng.integers(0, 30)),
                    "size": float(rng.integers(1, sizes)),
                }
                for _ in range(jobs)
            ],
        },
        "protocol": {"name": "directcontr", "mode": "sampled", "choices": d, "compare": []},
    }
    if topology is not None:
        data["network"]["topology"] = topology
    return data


def reference(data: dict) -> Schedule:
    sc = load_scenario(data)
    sub = generate_jobs(sc)[0]
    return simulate(
        sub["job_id"],
        sub["release"],
        sub["size"],
        sub["submit_site"],
        [s.procs for s in sc.sites],
        data["protocol"]["choices"],
        float(data["network"]["latency"]),
        data["run"]["seed"],
        sc.horizon,
        neighbors=sc.topology.neighbors,
    )


def same_schedule(data: dict, ref: Schedule) -> None:
    """exec_site (started jobs), start and end (NaN where the reference has none) to 1e-9;
    the message counts by kind."""
    result = emulator.run(data)
    t = result.jobs.sort_values("job_id")
    want = as_arrays(ref, t["job_id"].tolist())
    start = t["start"].to_numpy(dtype=float)
    for col in ("start", "end"):
        np.testing.assert_allclose(t[col].to_numpy(dtype=float), want[col], rtol=0, atol=1e-9, err_msg=col)
    got_site = np.where(np.isnan(start), -1, t["exec_site"].to_numpy())
    np.testing.assert_array_equal(got_site, want["exec_site"], err_msg="exec_site")
    msgs = result.summary["global"]["messages"]
    assert {k: msgs.get(k, 0) for k in ref.messages} == ref.messages


CASES = [
    # seed, organizations, d, latency
    (1, 2, 1, 0.01),
    (2, 2, 2, 0.1),
    (3, 3, 1, 0.1),
    (4, 3, 2, 0.01),
    (5, 4, 1, 0.01),
    (6, 4, 2, 0.1),
    (7, 5, 1, 0.1),
    (8, 5, 2, 0.01),
    (9, 6, 1, 0.01),
    (10, 6, 2, 0.1),
    (11, 6, 2, 0.01),
    (12, 4, 1, 0.1),
]


@pytest.mark.parametrize(("seed", "n", "d", "latency"), CASES)
def test_sampled_directcontr_equals_the_reference_on_random_grids(seed, n, d, latency):
    data = random_grid(seed, n, d, latency)
    ref = reference(data)
    assert len(ref.end) == 40  # every job done by the horizon
    same_schedule(data, ref)


def test_the_cases_take_every_path():
    """Together the random cases move jobs, decide at once on a need, refuse asks and break
    ties between equal keys where not every waiting organization is served."""
    total = {"moved": 0, "pushed": 0, "refused": 0, "ties": 0}
    for case in CASES:
        ref = reference(random_grid(*case))
        for k in total:
            total[k] += getattr(ref, k)
    assert min(total.values()) > 0, total


@pytest.mark.parametrize(("seed", "d", "latency"), [(21, 1, 0.1), (22, 2, 0.01), (23, 2, 1.0)])
def test_sampled_directcontr_equals_the_reference_over_a_ring(seed, d, latency):
    data = random_grid(seed, 6, d, latency, topology="ring")
    assert load_scenario(data).topology.neighbors is not None  # not the full graph
    ref = reference(data)
    assert ref.moved > 0
    same_schedule(data, ref)


@pytest.mark.parametrize(
    ("seed", "d", "latency"), [(36, 1, 1.0), (37, 2, 1.0), (38, 3, 1.0), (35, 1, 0.5), (41, 2, 0.5), (38, 3, 0.5)]
)
def test_sampled_directcontr_equals_the_reference_when_events_coincide(seed, d, latency):
    """Latency 1 or 1/2 and integral releases and sizes: releases, completions, probes,
    reports, needs, asks and transfers land on the same instants, so the order at one instant
    (completions, messages by source and sequence, timers, arrivals) and the ties between
    equal keys decide the schedule. At latency 1/2 a report is extrapolated over 1/2 (its
    curvature term counts, unlike over 1)."""
    data = random_grid(seed, 4, d, latency, jobs=60, sizes=4)
    ref = reference(data)
    assert ref.moved > 0 and ref.ties > 0
    same_schedule(data, ref)


@pytest.mark.parametrize(("seed", "horizon"), [(41, 12.0), (42, 20.0)])
def test_sampled_directcontr_equals_the_reference_up_to_a_horizon_that_cuts_the_run(seed, horizon):
    data = random_grid(seed, 5, 2, 0.1, horizon=horizon)
    ref = reference(data)
    assert 0 < len(ref.end) < len(ref.start) < 40  # some done, some running, some not started
    same_schedule(data, ref)


def test_no_choices_no_messages_in_the_reference_either():
    data = random_grid(3, 4, 0, 0.1)
    ref = reference(data)
    assert sum(ref.messages.values()) == 0 and ref.moved == 0
    same_schedule(data, ref)
