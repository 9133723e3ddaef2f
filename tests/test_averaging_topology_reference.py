"""The ``averaging`` protocol in its decentralized settings against an independent simulator.

``brokers/averaging/reference.py``'s :class:`Decentralized` runs the grid in one event loop from
the thesis (section 4.1's load, Algorithm 4.1) and the rules the agent's docstring documents for
a network topology (each site balances its closed neighborhood once it holds its neighbors'
reports) and for gossip (push-pull with one neighbor a round, drawn from the site's own
stream); it imports nothing of ``brokers/averaging/``. The emulator's job table (start, end,
executing site) must equal its own, bit for bit, on random grids of 4 to 16 sites over ring,
random:3 and grid2d topologies, at a negligible latency, at one that lets jobs start
between a round and its plan, and at one where a round's jobs land after the next round's reports.
"""

from __future__ import annotations

import numpy as np
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.averaging.reference import simulate, simulate_decentralized
from gridemu.emulator.scenario import validate

PERIOD, START = 7.3, 3.1
TOPOLOGIES = ("ring", "random:3", "grid2d")


def instance(seed: int, topology: str) -> dict:
    """A random grid of 4 to 16 sites (an even number for random:3) of 1 to 3 processors, speeds
    differing between sites, jobs of 1 to 3 processors (never more than their own site has, often more than another:
    a sender keeps those), uneven submission rates, real-valued
    times (no two events of a site fall on one instant by chance)."""
    rng = np.random.default_rng([seed, len(topology)])
    n_sites = int(rng.integers(4, 17))
    if topology.startswith("random") and n_sites % 2:
        n_sites -= 1
    m = rng.integers(1, 4, size=n_sites).tolist()
    speed = rng.choice([0.5, 1.0, 2.0], size=n_sites).tolist()
    n = int(rng.integers(8 * n_sites, 20 * n_sites))
    case = {
        "m": m,
        "speed": speed,
        "site": rng.choice(n_sites, size=n, p=rng.dirichlet(np.full(n_sites, 0.5))).tolist(),
        "release": np.sort(rng.uniform(0, 80, size=n)).tolist(),
        "size": rng.gamma(2.0, 4.0, size=n).tolist(),
    }
    case["procs"] = [int(rng.integers(1, m[k] + 1)) for k in case["site"]]
    return case


def scenario(case: dict, latency: float, topology: str, exchange: str, seed: int) -> dict:
    n_sites = len(case["m"])
    rows = zip(case["site"], case["release"], case["size"], case["procs"])
    return {
        "run": {"seed": seed},
        "sites": [{"name": f"s{k}", "speeds": [case["speed"][k]] * case["m"][k]} for k in range(n_sites)],
        "workload": {
            "kind": "jobs",
            "list": [{"site": f"s{s}", "release": r, "size": z, "procs": q} for s, r, z, q in rows],
        },
        "protocol": {"name": "averaging", "period": PERIOD, "start": START, "exchange": exchange},
        "network": {"latency": latency, "topology": topology},
    }


def reference(case: dict, latency: float, topology: str, exchange: str, seed: int):
    neighbors = validate(scenario(case, latency, topology, exchange, seed)).topology.neighbors
    assert topology == "full" or neighbors is not None
    return simulate_decentralized(
        **case, period=PERIOD, start=START, latency=latency, neighbors=neighbors, exchange=exchange, seed=seed
    )


def compare(seed: int, latency: float, topology: str, exchange: str):
    case = instance(seed, topology)
    jobs = emulator.run(scenario(case, latency, topology, exchange, seed)).jobs
    # Releases are distinct and sorted: the job table's rows in release order are the case's jobs.
    jobs = jobs.sort_values("release", kind="stable")
    assert jobs["release"].tolist() == case["release"]
    ref = reference(case, latency, topology, exchange, seed)
    assert jobs["exec_site"].tolist() == ref.exec_site.tolist()
    assert jobs["start"].tolist() == ref.start.tolist()
    assert jobs["end"].tolist() == ref.end.tolist()
    assert int(jobs["migrations"].sum()) == ref.transfers
    return ref


@pytest.mark.parametrize("latency", [1e-9, 0.9, 5.0])
@pytest.mark.parametrize("exchange", ["neighbors", "gossip"])
@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("seed", range(4))
def test_the_agents_give_the_job_table_of_the_decentralized_simulator(seed, topology, exchange, latency):
    compare(seed, latency, topology, exchange)


@pytest.mark.parametrize("exchange", ["neighbors", "gossip"])
def test_the_instances_move_jobs(exchange):
    """The comparison is not vacuous: jobs move in every instance of every setting."""
    for topology in TOPOLOGIES:
        moved = [reference(instance(s, topology), 0.9, topology, exchange, s).transfers for s in range(4)]
        assert all(t > 0 for t in moved), (topology, moved)


@pytest.mark.parametrize("seed", range(4))
def test_on_the_full_graph_it_is_the_central_simulator(seed):
    """The decentralized simulator with every site a neighbor of every other plans, at each site,
    the plan the centralized one makes for the whole grid: the same job table."""
    case = instance(seed, "full")
    central = simulate(**case, period=PERIOD, start=START, latency=0.9)
    spread = simulate_decentralized(**case, period=PERIOD, start=START, latency=0.9)
    assert spread.exec_site.tolist() == central.exec_site.tolist()
    assert spread.start.tolist() == central.start.tolist() and spread.end.tolist() == central.end.tolist()


def test_gossip_by_hand_on_two_sites():
    """Two sites of 1 processor, linked (each the other's only neighbor); site 0 gets four jobs
    of size 2 at t=0. At t=1 both draw their partner (the other site) and send their load:
    L_0 = 1 + 7 = 8, L_1 = 1. At t=1.5 site 1 gets L_0, is the less loaded, sends nothing and
    answers L_1 = 1.5; site 0 gets site 1's L_1 = 1 and sends half the difference, 3.5: its
    latest-queued job (2 fits), not the next (2 > 1.5). At t=2 site 0 gets the answer 1.5 with
    its load 2 + 4 = 6 (two queued jobs left, the running one ends at 2): it owes 2.25 more and
    sends job 2 (queued last but one). Jobs 3 and 2 reach site 1 at 2.0 and 2.5."""
    ref = simulate_decentralized(
        [0.0] * 4, [2.0] * 4, [1] * 4, [0] * 4, [1, 1], [1.0, 1.0], 10.0, 1.0, 0.5, [[1], [0]], "gossip"
    )
    assert ref.exec_site.tolist() == [0, 0, 1, 1]
    assert ref.start.tolist() == [0.0, 2.0, 4.0, 2.0] and ref.transfers == 2
