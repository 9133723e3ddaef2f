"""Grid-wide fairshare usage summed up an aggregation tree (``exchange = "tree"``) or by
push-sum gossip (``exchange = "gossip"``)."""

from __future__ import annotations

import pytest

import gridemu.emulator as emulator
from gridemu.brokers.fairshare.agent import FairshareAgent
from gridemu.emulator.scenario import load_scenario
from gridemu.model.errors import ScenarioError
from tests.test_fairshare import LEAVES, final, grid


def test_every_round_total_is_the_sum_of_every_sites_report(monkeypatch):
    # What an all-to-all exchange would sum (every site's report of the round) is what the
    # tree brings down to every site; each site's view of the others is that less its own.
    seen: dict[int, list[tuple[int, dict, dict, dict]]] = {}
    descend = FairshareAgent._descend

    def record(self, now, r, total):
        own = dict(self.own[r])
        descend(self, now, r, total)
        seen.setdefault(r, []).append((self.site.site_id, own, dict(total), self.site.cached_usage(-1)))

    monkeypatch.setattr(FairshareAgent, "_descend", record)
    res = emulator.run(_tree_grid(11, fanout=3))
    assert res.summary["global"]["messages"]["usage_up"] > 0
    complete = [r for r, rows in seen.items() if len(rows) == 11]
    assert len(complete) > 100
    for r in complete:
        rows = seen[r]
        entries = {e for _, own, _, _ in rows for e in own}
        for e in entries:
            expected = sum(own.get(e, 0.0) for _, own, _, _ in rows)
            for site, own, total, view in rows:
                assert total[e] == pytest.approx(expected, rel=1e-12, abs=1e-9)
                assert view[e] == pytest.approx(max(0.0, expected - own.get(e, 0.0)), rel=1e-12, abs=1e-6)


def _tree_grid(sites: int, fanout: int = 4, **kw) -> dict:
    data = grid(hours=2, sites=sites, exchange="tree", **kw)
    data["protocol"]["fanout"] = fanout
    return data


def test_the_tree_sends_2_n_minus_1_rows_per_entry_where_all_to_all_sends_n_n_minus_1():
    n = 12
    tree = emulator.run(_tree_grid(n)).summary["global"]["messages"]
    every = emulator.run(grid(hours=2, sites=n, exchange="all")).summary["global"]["messages"]
    tree_rows = tree["usage_up"] + tree["usage_down"]
    assert tree["usage_up"] <= tree["usage_down"]  # a subtree sum lists at most the entries of the total
    assert tree_rows * (n / 2) < every["usage"] * 1.3  # about N / 2 times fewer (closing rows aside)
    assert tree_rows * 3 < every["usage"]


def test_tree_usage_compensates_an_imbalanced_workload_like_all_to_all():
    streams = [
        {
            "group": g,
            "interval": 20.0,
            "size": 600.0,
            "spread": 0.4,
            "overestimate": [0.2, 0.4],
            **({"sites": [0]} if g == "VO-A/P-A2" else {}),
        }
        for g in LEAVES
    ]
    tree = final(emulator.run(grid(hours=12, streams=streams, exchange="tree")))["VO-A/P-A2"]
    assert abs(tree - 0.30) < 0.03


def test_a_tree_topology_carries_the_tree_and_other_topologies_are_refused():
    data = _tree_grid(7)
    data["network"]["topology"] = "tree:2"
    data["protocol"].pop("fanout")
    assert load_scenario(data).protocol["fanout"] == 2
    data["protocol"]["fanout"] = 3
    with pytest.raises(ScenarioError, match="protocol.fanout: the aggregation tree is the network's tree:2"):
        load_scenario(data)
    data = grid(sites=7, exchange="all")
    data["network"]["topology"] = "ring"
    with pytest.raises(
        ScenarioError, match="network.topology: the fairshare protocol sends usage over a topology by gossip"
    ):
        load_scenario(data)


def test_push_sum_gossip_estimates_the_grid_total_at_every_site(monkeypatch):
    # Each round, N x mass / weight at every site must approach the sum of every site's
    # report of that round (what all-to-all sums), here over a sparse random graph.
    reports: dict[int, dict[int, dict]] = {}
    estimates: dict[int, dict[int, dict]] = {}
    kept: dict[int, list[tuple[dict, float]]] = {}  # each site's mass and weight after the last step
    step = FairshareAgent._push_step

    def record(self, now, r, k):
        if k == 0:
            reports.setdefault(r, {})[self.site.site_id] = dict(self.mass)
        if k == self.steps:
            n = self.grid.n_sites
            estimates.setdefault(r, {})[self.site.site_id] = {e: n * s / self.weight for e, s in self.mass.items()}
            kept.setdefault(r, []).append((dict(self.mass), self.weight))
        step(self, now, r, k)

    monkeypatch.setattr(FairshareAgent, "_push_step", record)
    data = grid(hours=1, sites=12, exchange="gossip")
    data["protocol"]["gossip_rounds"] = 40
    data["network"].update(topology="random:3", latency=0.5)
    res = emulator.run(data)
    n_entries = {r: len({e for rep in reps.values() for e in rep}) for r, reps in reports.items()}
    rounds = [r for r in estimates if len(estimates[r]) == 12 and n_entries[r]]
    assert len(rounds) > 30
    for r in rounds:
        # Nothing is lost or made: the masses add up to the sum of the reports, the weights to N.
        assert sum(w for _, w in kept[r]) == pytest.approx(12.0, rel=1e-12)
        for e in {e for rep in reports[r].values() for e in rep}:
            exact = sum(rep.get(e, 0.0) for rep in reports[r].values())
            assert sum(m.get(e, 0.0) for m, _ in kept[r]) == pytest.approx(exact, rel=1e-12, abs=1e-9)
            for est in estimates[r].values():
                assert est.get(e, 0.0) == pytest.approx(exact, rel=1e-2, abs=1e-6)
    # Per refresh: N x rounds x (at most the entries with usage + 1 weight row): no N^2 term.
    push = res.summary["global"]["messages"]["push"]
    assert sum(12 * 40 for r in reports) < push <= sum(12 * 40 * (n_entries[r] + 1) for r in reports)


def test_gossip_rounds_must_end_within_a_refresh():
    data = grid(sites=4, exchange="gossip", refresh=10.0)
    data["protocol"]["gossip_rounds"] = 30
    data["network"]["latency"] = 0.5
    with pytest.raises(ScenarioError, match="protocol.gossip_rounds: 30 push-sum steps"):
        load_scenario(data)
