"""The ``averaging`` protocol (whole jobs, thesis Alg. 4.1) against its centralized simulator.

``brokers/averaging/reference.py`` runs the whole grid in one event loop, written from the
thesis (section 4.1's load, Algorithm 4.1) and the whole-job rules the agent's docstring
documents, and imports nothing of the agent or of ``averaging_plan``: the two must give the
same job table (start, end, executing site), bit for bit, on the full graph (where every
site computes the same plan from the same reports), at a negligible latency and at latencies
that let jobs start between a round and its plan.
"""

from __future__ import annotations

import numpy as np
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.averaging.reference import simulate

PERIOD, START = 7.3, 3.1


def instance(seed: int) -> dict:
    """A small random grid: 2 to 5 sites of 1 to 3 processors whose speeds differ between sites
    (a job's share is its work over the receiver's total speed), jobs of 1 to 3 processors,
    never more than their own site has but often more than another (a sender keeps those),
    uneven submission rates. Real-valued times, so
    no two events of a site fall on one instant by chance."""
    rng = np.random.default_rng(seed)
    n_sites = int(rng.integers(2, 6))
    m = rng.integers(1, 4, size=n_sites).tolist()
    speed = rng.choice([0.5, 1.0, 2.0], size=n_sites).tolist()
    n = int(rng.integers(10, 60))
    case = {
        "m": m,
        "speed": speed,
        "site": rng.choice(n_sites, size=n, p=rng.dirichlet(np.ones(n_sites))).tolist(),
        "release": np.sort(rng.uniform(0, 100, size=n)).tolist(),
        "size": rng.gamma(2.0, 4.0, size=n).tolist(),
    }
    case["procs"] = [int(rng.integers(1, m[k] + 1)) for k in case["site"]]
    return case


def scenario(case: dict, latency: float) -> dict:
    n_sites = len(case["m"])
    rows = zip(case["site"], case["release"], case["size"], case["procs"])
    return {
        "sites": [{"name": f"s{k}", "speeds": [case["speed"][k]] * case["m"][k]} for k in range(n_sites)],
        "workload": {
            "kind": "jobs",
            "list": [{"site": f"s{s}", "release": r, "size": z, "procs": q} for s, r, z, q in rows],
        },
        "protocol": {"name": "averaging", "period": PERIOD, "start": START},
        "network": {"latency": latency},
    }


@pytest.mark.parametrize("latency", [1e-9, 0.9, 5.0])
@pytest.mark.parametrize("seed", range(8))
def test_the_agents_give_the_job_table_of_the_central_simulator(seed, latency):
    case = instance(seed)
    jobs = emulator.run(scenario(case, latency)).jobs
    # Releases are distinct and sorted: the job table's rows in release order are the case's jobs.
    jobs = jobs.sort_values("release", kind="stable")
    assert jobs["release"].tolist() == case["release"]
    ref = simulate(
        case["release"], case["size"], case["procs"], case["site"], case["m"], case["speed"], PERIOD, START, latency
    )
    assert jobs["exec_site"].tolist() == ref.exec_site.tolist()
    assert jobs["start"].tolist() == ref.start.tolist()
    assert jobs["end"].tolist() == ref.end.tolist()
    assert int((jobs["migrations"]).sum()) == ref.transfers


def test_the_instances_move_jobs_and_let_some_stay():
    """The comparison is not vacuous: jobs move in most of the cases."""
    moved = [simulate(**instance(s), period=PERIOD, start=START, latency=1e-9).transfers for s in range(8)]
    assert sum(t > 0 for t in moved) >= 6 and sum(moved) > 50


def test_the_simulator_by_hand_on_two_sites():
    """Site 0 (1 processor) gets three jobs of size 2 at t=0; site 1 is empty. Reports at t=1:
    L_0 = 1 + 5 = 6, L_1 = 1, L̄ = 3.5, so site 0 owes site 1 2.5 (Alg. 4.1). At t=1.5 (one
    latency) it sends its latest-queued job (2 fits in 2.5; job 1 would not fit in the 0.5
    left); job 2 reaches site 1 at 2.0 and ends at 4.0; job 1 runs at site 0 from 2 to 4."""
    ref = simulate([0.0] * 3, [2.0] * 3, [1] * 3, [0] * 3, [1, 1], [1.0, 1.0], period=1.0, start=1.0, latency=0.5)
    assert ref.exec_site.tolist() == [0, 0, 1]
    assert ref.start.tolist() == [0.0, 2.0, 2.0] and ref.end.tolist() == [2.0, 4.0, 4.0]
    assert ref.transfers == 1


def test_a_job_on_several_processors_counts_its_work_against_what_is_owed():
    """Two sites of 2 processors; four jobs of size 4 on 2 processors at site a at t=0. At the
    round (t=1) L_a = 1 + (3 x 8 queued + 3 x 2 left of the running one) / 2 = 16, L_b = 1,
    L̄ = 8.5: a owes b 7.5, and a queued job adds 4 x 2 / 2 = 4 to L_b: one fits, not two.
    Counting its size alone (2) sent all three queued jobs and lifted L_b to 13, above the
    mean, and the next rounds sent jobs back and forth (until 2026-11-27)."""
    case = {
        "m": [2, 2],
        "speed": [1.0, 1.0],
        "site": [0] * 4,
        "release": [0.0] * 4,
        "size": [4.0] * 4,
        "procs": [2] * 4,
    }
    ref = simulate(**case, period=1.0, start=1.0, latency=1e-9)
    assert ref.transfers == 1 and ref.exec_site.tolist().count(1) == 1
    jobs = emulator.run(scenario(case, 1e-9) | {"protocol": {"name": "averaging", "period": 1.0, "start": 1.0}}).jobs
    assert int(jobs["migrations"].max()) == 1 and int(jobs["migrations"].sum()) == 1
