"""Network topologies (emulator/topology.py): their shapes, their checks, and protocols that
send only along links (averaging over neighborhoods and by gossip, the random broker)."""

from __future__ import annotations

import random
from collections import deque

import numpy as np
import pandas as pd
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.averaging.algorithm import averaging_plan
from gridemu.emulator.scenario import load_scenario
from gridemu.emulator.topology import build_topology
from gridemu.model.errors import ScenarioError
from gridemu.sites.spec import SiteSpec
from tests.conftest import small_grid


def sites(n: int) -> list[SiteSpec]:
    return [SiteSpec(i, f"s{i}", f"o{i}", (1.0,), "fcfs") for i in range(n)]


def topo(spec: str, n: int, seed: int = 1):
    return build_topology({"topology": spec}, sites(n), seed)


def connected(neighbors) -> bool:
    seen, todo = {0}, deque([0])
    while todo:
        for j in neighbors[todo.popleft()]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return len(seen) == len(neighbors)


SHAPE_CASES = [
    (spec, n)
    for spec in [
        "ring",
        "random:2",
        "random:3",
        "random:8",
        "smallworld:2:0.5",
        "smallworld:4:0.3",
        "smallworld:6:1.0",
        "tree:2",
        "tree:5",
        "grid2d",
    ]
    for n in [2, 16, 100]
    if n > int((spec.split(":") + ["0"])[1]) or spec.startswith("tree")  # K < n (the checks refuse more)
]


@pytest.mark.parametrize(("spec", "n"), SHAPE_CASES)
def test_every_shape_is_symmetric_connected_and_loop_free(spec, n):
    nb = topo(spec, n).neighbors
    assert len(nb) == n
    for i, mine in enumerate(nb):
        assert i not in mine and list(mine) == sorted(set(mine))
        assert all(i in nb[j] for j in mine)
    assert connected(nb)


def test_degrees_of_each_shape():
    n = 100
    assert set(topo("ring", n).degrees(n)) == {2}
    deg = topo("random:8", n).degrees(n)
    assert deg.max() <= 8 and deg.min() >= 2 and deg.mean() > 7.5  # K except where two draws pick one link
    deg = topo("random:3", n).degrees(n)
    assert deg.max() <= 3 and deg.mean() > 2.8
    assert topo("smallworld:6:0.5", n).degrees(n).sum() == n * 6  # rewiring keeps the number of links
    tree = topo("tree:3", n).neighbors
    assert tree[0] == (1, 2, 3) and tree[4] == (1, 13, 14, 15)
    grid = topo("grid2d", n).neighbors  # 10 x 10
    assert grid[0] == (1, 10) and grid[55] == (45, 54, 56, 65)
    assert topo("full", n).neighbors is None


def _random_graph_as_written(n: int, k: int, seed: int) -> list[set[int]]:
    """random:K as the module doc defines it, link by link: the union of K // 2 random
    Hamiltonian cycles, then a random perfect matching when K is odd, drawn in that order
    from the topology's stream; a link drawn twice counts once."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0x544F504F,)))
    adj: list[set[int]] = [set() for _ in range(n)]
    for _ in range(k // 2):
        cycle = rng.permutation(n).tolist()
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            if a != b:
                adj[a].add(b)
                adj[b].add(a)
    if k % 2:
        order = rng.permutation(n).tolist()
        for a, b in zip(order[0::2], order[1::2]):
            adj[a].add(b)
            adj[b].add(a)
    return adj


@pytest.mark.parametrize(("n", "k"), [(2, 1), (3, 2), (4, 3), (10, 4), (17, 8), (64, 5), (1000, 8)])
def test_random_graphs_are_the_cycles_and_matching_the_doc_defines(n, k):
    """The vectorized draw (emulator/topology.py) against the definition written out."""
    sites = [SiteSpec(i, f"s{i}", f"o{i}", (1.0,), "fcfs") for i in range(n)]
    for seed in (1, 2, 7):
        topo = build_topology({"topology": f"random:{k}"}, sites, seed)
        assert topo.neighbors == tuple(tuple(sorted(nb)) for nb in _random_graph_as_written(n, k, seed))


def test_random_shapes_come_from_the_seed():
    for spec in ("random:4", "smallworld:4:0.5"):
        assert topo(spec, 50, seed=3) == topo(spec, 50, seed=3)
        assert topo(spec, 50, seed=3) != topo(spec, 50, seed=4)
    assert topo("smallworld:4:0.0", 30) == topo("smallworld:4:0.0", 30, seed=9)  # no rewiring: the lattice


@pytest.mark.parametrize(
    ("spec", "n", "words"),
    [
        ("star", 5, "unknown topology 'star'"),
        ("random:x", 5, "K must be a whole number"),
        ("random:9", 5, "between 2 and 4"),
        ("random:1", 10, "between 2 and 9"),
        ("random:3", 5, "odd K needs an even number of sites"),
        ("smallworld:3:0.1", 10, "K must be even"),
        ("smallworld:4:1.5", 10, "P must be a probability"),
        ("ring:2", 5, "unknown topology"),
    ],
)
def test_bad_shapes_are_clear_errors(spec, n, words):
    with pytest.raises(ScenarioError, match="network.topology") as err:
        topo(spec, n)
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("source,target\n0,1\n1,1\n", "line 3: a link from site s1 to itself"),
        ("source,target\n0,1\n1,7\n", "line 3: target '7' is no site"),
        ("source,target\n0,1\n2,3\n", "not connected"),
        ("from,to\n0,1\n", "header must name source and target"),
        ("source,target,latency\n0,1,2\n1,2,-1\n2,3,1\n", "line 3: latency must be a number > 0"),
        ("source,target,latency\n0,1,2\n1,0,3\n", "listed before with latency 2.0"),
    ],
)
def test_edge_file_errors_name_the_line(tmp_path, text, words):
    path = tmp_path / "edges.csv"
    path.write_text(text)
    with pytest.raises(ScenarioError, match="network.topology_file") as err:
        build_topology({"topology_file": str(path)}, sites(4), 1)
    assert words in str(err.value)


def test_link_latencies_drawn_from_a_distribution_are_symmetric_and_set_the_lookahead():
    data = small_grid(
        "random",
        jobs=300,
        sites=6,
        network={"topology": "ring", "latency": {"dist": "uniform", "low": 0.5, "high": 2.0}},
    )
    scenario = load_scenario(data)
    lat = scenario.latency
    assert lat.shape == (6, 6) and np.allclose(lat, lat.T)
    off = lat[~np.eye(6, dtype=bool)]
    assert (off >= 0.5).all() and (off <= 2.0).all() and len(set(off.round(12))) == 15  # each link its own
    links = [lat[i, j] for i, nb in enumerate(scenario.topology.neighbors) for j in nb]
    assert scenario.lookahead == min(links)
    assert np.array_equal(load_scenario(data).latency, lat)  # drawn from the seed
    data["run"]["seed"] += 1
    assert not np.array_equal(load_scenario(data).latency, lat)
    res = emulator.run(data)  # messages keep each link's latency: causality is checked by the run
    assert (res.jobs["state"] == "done").all()


def test_an_edge_file_with_names_and_latencies_sets_the_links_and_the_lookahead(tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("source,target,latency\nsite0,site1,0.5\nsite1,site2,2.0\nsite2,site3,1.5\nsite3,site0,0.75\n")
    data = small_grid("random", jobs=400, sites=4, network={"topology_file": str(path)})
    scenario = load_scenario(data)
    assert scenario.topology.neighbors == ((1, 3), (0, 2), (1, 3), (0, 2))
    assert scenario.lookahead == 0.5
    assert scenario.latency[1, 2] == scenario.latency[2, 1] == 2.0
    res = emulator.run(data)
    moved = res.jobs[res.jobs["exec_site"] != res.jobs["submit_site"]]
    assert len(moved) and all(e in scenario.topology.neighbors[s] for s, e in zip(moved.submit_site, moved.exec_site))


def test_protocols_that_need_the_full_graph_refuse_a_topology():
    data = small_grid("molba", sites=5, network={"topology": "ring"})
    with pytest.raises(
        ScenarioError, match='network.topology: the molba protocol needs every site to hear every other'
    ):
        load_scenario(data)


def test_full_is_the_default_and_gives_the_same_job_table():
    data = small_grid("averaging", jobs=800, sites=6)
    base = emulator.run(data)
    full = emulator.run(data, overrides={"network.topology": "full"})
    pd.testing.assert_frame_equal(base.jobs, full.jobs)


@pytest.mark.parametrize("protocol", ["random", "averaging"])
def test_messages_travel_only_along_links_and_shards_do_not_change_the_run(protocol):
    data = small_grid(protocol, jobs=1500, sites=12, network={"topology": "random:3"})
    data["workload"]["rate"] = [3.0] + [0.4] * 11
    res = emulator.run(data)
    nb = load_scenario(data).topology.neighbors
    moved = res.jobs[res.jobs["migrations"] > 0]
    assert len(moved)
    if protocol == "random":  # one hop from the submitting site
        assert all(e in nb[s] for s, e in zip(moved.submit_site, moved.exec_site))
    pd.testing.assert_frame_equal(res.jobs, emulator.run(data, shards=4).jobs)
    # Reports go to neighbors only: a site sends one per neighbor per round.
    if protocol == "averaging":
        sent = res.sites["sent_load"].to_numpy()
        degree = np.array([len(x) for x in nb])
        rounds = sent // degree
        assert (sent == rounds * degree).all() and len(set(rounds)) == 1


def test_neighborhood_averaging_on_a_ring_sends_far_fewer_reports_than_the_full_graph():
    data = small_grid("averaging", jobs=2000, sites=16)
    data["workload"]["rate"] = [2.0] + [0.3] * 15
    full = emulator.run(data).summary["global"]
    ring = emulator.run(data, overrides={"network.topology": "ring"}).summary["global"]
    assert ring["messages"]["load"] * 15 == full["messages"]["load"] * 2  # 2 neighbors instead of 15 (same rounds)


def test_pairwise_averaging_converges_to_the_global_mean_on_a_static_load():
    # The gossip agent's decision for a pair is Algorithm 4.1 over the pair: the more loaded
    # sends half the difference. Repeated over random links of a connected graph, every load
    # goes to the mean and the total is kept.
    n = 32
    nb = topo("random:4", n).neighbors
    links = [(i, j) for i in range(n) for j in nb[i] if i < j]
    loads = [0.0] * n
    loads[0] = 3200.0
    rng = random.Random(5)
    for _ in range(4000):
        i, j = rng.choice(links)
        for k, l, amount in averaging_plan([loads[i], loads[j]]):
            (a, b) = (i, j) if k == 0 else (j, i)
            loads[a] -= amount
            loads[b] += amount
    assert sum(loads) == pytest.approx(3200.0)
    assert max(abs(x - 100.0) for x in loads) < 1e-6


def test_gossip_spreads_a_static_load_over_a_ring():
    # 300 long jobs at site 0 at t = 0, nothing else: each gossip round moves work along the ring.
    jobs = [{"release": 0.0, "size": 40.0, "site": 0} for _ in range(300)]
    data = {
        "run": {"seed": 2},
        "network": {"latency": 0.5, "topology": "ring"},
        "sites": {"count": 8, "procs": 1},
        "workload": {"kind": "jobs", "list": jobs},
        "protocol": {"name": "averaging", "period": 10.0, "exchange": "gossip"},
        "metrics": {"counterfactual": "none"},
    }
    res = emulator.run(data)
    assert set(res.jobs["exec_site"]) == set(range(8))  # the load reached the far side of the ring
    counts = np.bincount(res.jobs["exec_site"], minlength=8)
    assert counts.max() < 150 and counts.min() > 10
    per_site = res.sites["sent_gossip"].to_numpy()
    assert (per_site > 0).all() and per_site.max() - per_site.min() <= 1  # one exchange per round per site
