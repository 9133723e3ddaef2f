"""A protocol's [protocol] keys are one frozen dataclass (brokers/params.py): checked by type,
defaulted, documented, and handed to every agent frozen."""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
import tomllib
from pathlib import Path

import pytest

from gridemu.brokers import registry
from gridemu.brokers.protocol import ScenarioFacts
from gridemu.emulator.cli import main
from gridemu.emulator.engine import build_shard_specs
from gridemu.emulator.scenario import load_scenario
from gridemu.emulator.shard import Shard
from gridemu.model.errors import ScenarioError
from gridemu.scenarios.workload import generate_jobs

ROOT = Path(__file__).resolve().parent.parent


def facts(name: str, overrides: dict | None = None) -> ScenarioFacts:
    return load_scenario(name, overrides).facts()


def test_defaults_are_filled_from_the_fields_and_from_other_keys():
    sc = load_scenario("quickstart", {"protocol": {"name": "averaging", "period": 30}})
    assert sc.params.period == 30.0 and isinstance(sc.params.period, float)
    assert sc.params.start == 30.0  # the default start is one period
    assert sc.data["protocol"] == {"name": "averaging", "period": 30.0, "start": 30.0, "exchange": "neighbors"}


@pytest.mark.parametrize(
    ("name", "table", "needles"),
    [
        ("averaging", {"perod": 5}, ["protocol.perod", "unknown key", "period, start, exchange"]),
        ("averaging", {"exchange": "shout"}, ["protocol.exchange", "'shout'", "neighbors, gossip"]),
        ("averaging", {"period": "soon"}, ["protocol.period", "must be a number"]),
        ("averaging", {"start": -1}, ["protocol.start", "must be >= 0"]),
        ("bilb", {"learn": "yes"}, ["protocol.learn", "must be true or false"]),
        ("bilb", {"limit": [1, 2]}, ["protocol.limit", "has 2 values but there are 4 sites"]),
        ("bilb", {"window": [0.5, 0.2]}, ["protocol.window", "0 <= from < to <= 1"]),
        ("bilb", {"eta": 2.0}, ["protocol.eta", "(0, 1]"]),
    ],
)
def test_from_table_names_the_key_of_every_error(name, table, needles):
    sc = facts("bilb", {"sites.count": 4})
    with pytest.raises(ScenarioError) as err:
        registry.get(name).params.from_table(table, sc)
    for needle in needles:
        assert needle in str(err.value)


def test_a_key_of_another_protocol_is_skipped_only_when_asked():
    sc = facts("quickstart")
    averaging = registry.get("averaging").params
    with pytest.raises(ScenarioError, match=r"protocol\.limit: unknown key \(allowed: name, period, start, exchange\)"):
        averaging.from_table({"limit": 3.0}, sc)
    assert averaging.from_table({"limit": 3.0}, sc, ignore={"limit"}) == averaging.from_table({}, sc)


def test_every_agent_of_a_shard_gets_the_same_frozen_params():
    sc = load_scenario("bilb-overloaded", {"workload.until": 500.0})
    spec = build_shard_specs(sc, generate_jobs(sc)[0], 1)[0]
    shard = Shard(spec)
    params = {id(site.agent.params) for site in shard.engine.sites}
    assert len(params) == 1
    one = shard.engine.sites[0].agent.params
    assert isinstance(one.limit, tuple) and one.limit[0] == 1000.0  # per-site values: a tuple nobody can change
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.period = 5.0
    assert pickle.loads(pickle.dumps(one)) == one  # Ray specs and checkpoints carry it as plain data
    # The protocol's shape information is the grid's, not mixed into the parameters.
    assert not hasattr(one, "capacities") and spec.grid.info == {}


def test_grid_info_reaches_agents_through_the_grid():
    sc = load_scenario("quickstart", {"workload.jobs": 50})
    spec = build_shard_specs(sc, generate_jobs(sc)[0], 1)[0]
    assert spec.grid.info["capacities"] == tuple(float(sum(s.speeds)) for s in sc.sites)
    assert "capacities" not in sc.data["protocol"]


def test_no_agent_reads_its_params_as_a_dict():
    bad = []
    for path in sorted((ROOT / "brokers").rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"params(\.get\(|\[)", line):
                bad.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", list(registry.SHIPPED))
def test_every_key_is_documented_and_its_default_passes_its_own_checks(name, capsys):
    params = registry.get(name).params
    assert all(doc for _, _, _, doc in params.docs())
    assert main(["list", name, "--plain"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [r[0] for r in rows] == list(params.keys())
    assert all(len(r) == 4 for r in rows)


def test_list_of_an_unknown_protocol_is_an_error_naming_the_known_ones(capsys):
    assert main(["list", "relay"]) == 2
    assert "protocol: unknown value 'relay'" in capsys.readouterr().err


def test_what_the_jobs_settle_is_no_key_and_the_resolved_scenario_runs_again(tmp_path):
    # scheduling_game's period and rounds come from the jobs: they stay out of [protocol], so
    # the run's scenario.toml validates as it is (it once held `rounds`, an unknown key).
    out = tmp_path / "r"
    assert main(["run", "dedicated", "--set", "workload.rounds=3", "--out", str(out), "--quiet"]) == 0
    resolved = tomllib.loads((out / "scenario.toml").read_text())["protocol"]
    assert "rounds" not in resolved and "period" not in resolved
    assert (
        json.loads((out / "summary.json").read_text())["protocol"]["rounds"] == 3
    )  # the agents and the summary had them
    assert main(["validate", str(out / "scenario.toml")]) == 0
    sc = load_scenario(out / "scenario.toml")
    assert sc.params.rounds == 0  # until check_jobs has seen the jobs
