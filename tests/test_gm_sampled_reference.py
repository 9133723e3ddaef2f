"""Decentralized GM (``gm``, ``mode = "sampled"``) against its own reference
(brokers/gm/sampled_reference.py: one event heap for the whole grid, written from the
paper's Algorithm 1 and the protocol's rules, not through the agent): the same pieces
(start, end, site, processor), job table and message counts, bit for bit, on random mixed
grids, topologies and instants where many events coincide."""

from __future__ import annotations

import numpy as np
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.gm.sampled_reference import Schedule, as_arrays, simulate
from gridemu.emulator.scenario import load_scenario
from gridemu.scenarios.workload import generate_jobs

SPEEDS = [0.5, 1.0, 2.0, 3.0]


def random_grid(
    seed: int, n: int, d: int, latency: float, cost: float = 0.0, remote: float = 0.0, jobs: int = 200, topology=None
) -> dict:
    """n sites of 1 to 3 processors of mixed speeds, Poisson arrivals, a priority per site (ties)."""
    rng = np.random.default_rng(1000 + seed)
    sites = [
        {"name": f"s{k}", "speeds": [float(v) for v in rng.choice(SPEEDS, size=int(rng.integers(1, 4)))]}
        for k in range(n)
    ]
    data = {
        "run": {"seed": seed},
        "network": {"latency": latency},
        "sites": sites,
        "scheduler": {"name": "planned"},
        "workload": {
            "kind": "poisson",
            "rate": [float(x) for x in rng.uniform(0.3, 1.2, n)],
            "jobs": jobs,
            "alpha": 2.0,
            "beta": 2.0,
            "priority": [float(x) for x in rng.integers(0, 3, n)],
        },
        "protocol": {"name": "gm", "mode": "sampled", "samples": d, "migration_cost": cost, "remote_cost": remote},
    }
    if topology is not None:
        data["network"]["topology"] = topology
    return data


def reference(data: dict) -> Schedule:
    sc = load_scenario(data)
    sub = generate_jobs(sc)[0]
    p = sc.data["protocol"]
    return simulate(
        sub["job_id"],
        sub["release"],
        sub["size"],
        sub["priority"],
        sub["submit_site"],
        [list(s.speeds) for s in sc.sites],
        p["samples"],
        float(sc.data["network"]["latency"]),
        sc.data["run"]["seed"],
        neighbors=sc.topology.neighbors,
        migration_cost=p["migration_cost"],
        remote_cost=p["remote_cost"],
    )


def same_schedule(result, ref: Schedule) -> None:
    """Every piece, the job table and the message counts, bit for bit."""
    t = result.jobs.sort_values("job_id")
    want = as_arrays(ref)
    np.testing.assert_array_equal(t["job_id"].to_numpy(), want["job_id"])
    assert (t["state"] == "done").all()
    for col in ("start", "end", "exec_site", "migrations"):
        np.testing.assert_array_equal(t[col].to_numpy(), want[col], err_msg=col)
    got: dict[int, list] = {}
    for row in result.pieces.itertuples():
        got.setdefault(int(row.job_id), []).append((row.start, row.end, int(row.exec_site), int(row.proc), row.size))
    for j, pieces in ref.pieces.items():
        mine = sorted(got[j], key=lambda x: (x[0], x[1]))
        assert [x[:4] for x in mine] == [x[:4] for x in pieces], f"job {j}"
        np.testing.assert_allclose([x[4] for x in mine], [x[4] for x in pieces], rtol=0, atol=1e-9)
    msgs = result.summary["global"]["messages"]
    assert {k: msgs.get(k, 0) for k in ref.messages} == ref.messages


def exercised(ref: Schedule) -> dict[str, int]:
    """What a case tried: placements and steals (job moves), preemptions, moves within a site."""
    multi = sum(len(p) > 1 for p in ref.pieces.values())
    local = sum(
        any(a[2] == b[2] and a[3] != b[3] for a, b in zip(p, p[1:])) for p in ref.pieces.values()
    )  # resumed on another processor of the same site
    return {"placed": ref.placed, "stolen": ref.stolen, "preempted": multi, "local_moves": local}


CASES = [
    # seed, sites, d, latency, migration_cost, remote_cost
    (1, 2, 1, 0.05, 0.0, 0.0),
    (2, 3, 2, 1e-6, 0.0, 0.0),
    (3, 4, 3, 0.05, 0.0, 0.0),
    (4, 5, 1, 1e-6, 0.2, 0.1),
    (5, 6, 2, 0.05, 0.3, 0.5),
    (6, 8, 3, 0.05, 0.1, 0.0),
    (7, 8, 2, 1e-6, 0.0, 0.4),
    (8, 7, 1, 0.05, 0.5, 0.5),
    (9, 3, 3, 0.05, 0.0, 0.0),
    (10, 2, 2, 1e-6, 0.25, 0.25),
]


@pytest.mark.parametrize(("seed", "n", "d", "latency", "cost", "remote"), CASES)
def test_sampled_gm_equals_the_reference_on_random_mixed_grids(seed, n, d, latency, cost, remote):
    data = random_grid(seed, n, d, latency, cost, remote)
    ref = reference(data)
    same_schedule(emulator.run(data), ref)
    what = exercised(ref)
    assert what["placed"] + what["stolen"] > 0 and what["preempted"] > 0


def test_the_cases_move_jobs_every_way():
    """Together the random cases place, steal, preempt and move jobs between processors of a site."""
    total = {"placed": 0, "stolen": 0, "preempted": 0, "local_moves": 0}
    for case in CASES[:6]:
        for k, v in exercised(reference(random_grid(*case))).items():
            total[k] += v
    assert min(total.values()) > 0, total


@pytest.mark.parametrize(("topology", "seed", "d"), [("ring", 11, 2), ("random:3", 12, 1), ("random:3", 13, 3)])
def test_sampled_gm_equals_the_reference_over_a_topology(topology, seed, d):
    data = random_grid(seed, 8, d, 0.05, 0.1, 0.2, jobs=250, topology=topology)
    sc = load_scenario(data)
    assert sc.topology.neighbors is not None  # not the full graph
    same_schedule(emulator.run(data), reference(data))


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("cost", [0.0, 1.0])
def test_sampled_gm_equals_the_reference_when_events_coincide(d, cost):
    """Integral releases and sizes, speeds 1 and 2, latency 1: arrivals, completions, probes,
    bids, steals and jobs land on the same instants, so the event order at one instant
    (completions, messages by source and sequence, timers, arrivals) decides the schedule."""
    rng = np.random.default_rng(40 + d)
    sites = [{"name": f"s{k}", "speeds": [[1.0], [2.0, 1.0], [2.0], [1.0, 1.0]][k]} for k in range(4)]
    jobs = [
        {
            "release": float(rng.integers(0, 30)),
            "size": float(rng.integers(1, 6)),
            "site": f"s{int(rng.integers(0, 4))}",
            "priority": float(rng.integers(0, 2)),
        }
        for _ in range(120)
    ]
    data = {
        "run": {"seed": 5},
        "network": {"latency": 1.0},
        "sites": sites,
        "scheduler": {"name": "planned"},
        "workload": {"kind": "jobs", "list": jobs},
        "protocol": {"name": "gm", "mode": "sampled", "samples": d, "migration_cost": cost, "remote_cost": cost},
    }
    ref = reference(data)
    same_schedule(emulator.run(data), ref)
    assert exercised(ref)["placed"] + exercised(ref)["stolen"] > 0


def test_no_samples_no_messages_in_the_reference_either():
    data = random_grid(3, 4, 0, 0.05)
    ref = reference(data)
    assert ref.messages == {"probe": 0, "bid": 0, "steal": 0, "job": 0}
    same_schedule(emulator.run(data), ref)
