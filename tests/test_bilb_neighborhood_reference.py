"""The decentralized rounds of ``bilb`` and ``averaging_game`` over a topology (neighborhood
plans, gossip pairs) equal ``brokers/bilb/neighborhood_reference.py``, an event simulation
written apart from the agents: the same pieces on the same sites, started and ended alike."""

from __future__ import annotations

import numpy as np
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.bilb.neighborhood_reference import NotCovered, neighborhood_run
from gridemu.emulator.scenario import load_scenario
from gridemu.scenarios.workload import generate_jobs


def scenario(
    protocol: str, n: int, topology: str, exchange: str, seed: int, latency: float = 1e-3, limit: float = 1000.0
) -> dict:
    """``bilb-topology``'s defaults on a small grid: λ = 0.2, gamma(2, 2), site 0 heavier."""
    topology = f"random:{3 if n % 2 == 0 else 2}" if topology == "random:3" else topology  # odd K: even n
    proto = {"limit": limit} if protocol == "bilb" else {"join": 0.7}
    return {
        "run": {"seed": seed, "backend": "inprocess"},
        "network": {"latency": latency, "topology": topology},
        "sites": {"count": n, "procs": 1},
        "workload": {
            "kind": "poisson",
            "rate": 0.2,
            "alpha": {"default": 2.0, "0": 3.0},
            "beta": {"default": 2.0, "0": 3.0},
            "until": 60.0,
        },
        "protocol": {"name": protocol, "period": 25.0, "exchange": exchange, **proto},
        "metrics": {"counterfactual": "none"},
    }


def reference_of(data: dict) -> dict[str, np.ndarray]:
    sc = load_scenario(data)
    jobs, _ = generate_jobs(sc)
    proto, n = sc.protocol, len(sc.sites)
    per_site = lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * n  # noqa: E731
    bilb = proto["name"] == "bilb"
    return neighborhood_run(
        jobs,
        sc.topology.neighbors,
        protocol=proto["name"],
        latency=data["network"]["latency"],
        limits=per_site(proto["limit"]) if bilb else None,
        p=None if bilb else per_site(proto["join"]),
        exchange=proto["exchange"],
        start=proto["start"],
        min_gap=proto["min_gap"],
        period=proto["period"],
        seed=sc.seed,
        discrete=proto["discrete"],
        send=proto["send"],
        cut_running=proto["cut_running"],
        starting=proto["starting"],
        learn=proto["learn"],
    )


def rows(table) -> list[tuple]:
    return sorted(zip(*(np.asarray(table[c]).tolist() for c in ("job_id", "exec_site", "start", "end", "size"))))


def assert_equal_runs(data: dict) -> None:
    try:
        ref = reference_of(data)
    except NotCovered as exc:  # e.g. a release at a round's instant
        pytest.skip(str(exc))
    res = emulator.run(data)
    pieces = res.pieces[(res.pieces["state"] == "done") & (res.pieces["size"] > 1e-12)]
    ours, theirs = rows(pieces), rows(ref)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a[:2] == b[:2], (a, b)
        assert np.allclose(a[2:], b[2:], rtol=0, atol=1e-9), (a, b)


CASES = [(n, seed) for n, seed in [(3, 1), (4, 2), (6, 3), (7, 4), (8, 5)]]


@pytest.mark.parametrize("protocol", ["bilb", "averaging_game"])
@pytest.mark.parametrize("topology", ["ring", "random:3", "tree:2"])
@pytest.mark.parametrize("n,seed", CASES)
def test_neighborhood_rounds_equal_the_reference(protocol, topology, n, seed):
    assert_equal_runs(scenario(protocol, n, topology, "neighbors", seed))


@pytest.mark.parametrize("protocol", ["bilb", "averaging_game"])
@pytest.mark.parametrize("topology", ["ring", "random:3", "tree:2"])
@pytest.mark.parametrize("n,seed", CASES)
def test_gossip_rounds_equal_the_reference(protocol, topology, n, seed):
    assert_equal_runs(scenario(protocol, n, topology, "gossip", seed))


@pytest.mark.parametrize("exchange", ["neighbors", "gossip"])
@pytest.mark.parametrize("topology", ["ring", "random:3"])
@pytest.mark.parametrize("n,seed", CASES[1:4])
def test_bounded_levels_and_long_latencies_equal_the_reference(exchange, topology, n, seed):
    """BILB with l_k = 3 (receivers refuse what would pass it) at latency 0.3: with gossip the
    rounds are then four latencies apart, so a round's answers come at the next round's instant."""
    assert_equal_runs(scenario("bilb", n, topology, exchange, seed, latency=0.3, limit=3.0))


@pytest.mark.parametrize("exchange", ["neighbors", "gossip"])
@pytest.mark.parametrize("n,seed", CASES[1:4])
def test_averaging_game_at_long_latencies_equals_the_reference(exchange, n, seed):
    assert_equal_runs(scenario("averaging_game", n, "random:3", exchange, seed, latency=0.3))
