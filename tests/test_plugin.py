"""A protocol is one module and one registry line: a toy protocol defined in this file alone
runs end to end through the CLI (validation, messages, send bounds, summary, result files).

The toy, ``relay``: every new job is sent ``hops`` sites further round the ring (one job
transfer), and a ``hello`` notice about it travels the same way site by site, each site
passing it on with one more hop: a small protocol that sends, answers and moves jobs.
"""
from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from gridemu.brokers import registry
from gridemu.brokers.agent import Agent
from gridemu.brokers.protocol import Protocol, RunFacts, ScenarioFacts
from gridemu.emulator.cli import main
from gridemu.model.checks import check_number
from gridemu.model.messages import message

HELLO = message("hello", hops=int, job_id=int)


class RelayAgent(Agent):
    name = "relay"
    intercepts_arrivals = True

    def on_arrival(self, now: float, slot: int) -> bool:
        hops, site = self.params["hops"], self.site
        if hops == 0:
            return False
        site.send(now, (site.site_id + 1) % self.grid.n_sites, "hello", hops=1, job_id=site.job_id(slot))
        dst = (site.site_id + hops) % self.grid.n_sites
        if dst == site.site_id:
            return False
        site.transfer(now, slot, dst)
        return True

    def on_hello(self, now: float, msg: Any) -> None:
        if msg.hops < self.params["hops"]:
            self.site.send(now, (self.site.site_id + 1) % self.grid.n_sites, "hello", hops=msg.hops + 1, job_id=msg.job_id)

    def send_bound(self) -> float:
        return min(self.site.next_release(), self.site.next_message_time())


def check(params: dict[str, Any], scenario: ScenarioFacts) -> None:
    params["hops"] = int(check_number("protocol.hops", params.get("hops", 1), nonneg=True, integer=True))


def summary(facts: RunFacts) -> dict[str, Any]:
    moved = facts.jobs["exec_site"] != facts.jobs["submit_site"]
    return {"name": "relay", "hops": facts.protocol["hops"], "jobs_moved": int(moved.sum())}


RELAY = Protocol("relay", RelayAgent, "toy: relay each new job around the ring", keys=("hops",), messages=(HELLO,), check=check, summary=summary)


@pytest.fixture
def relay():
    registry.register(RELAY)
    yield RELAY
    registry.unregister("relay")


def scenario_file(tmp_path, hops) -> str:
    path = tmp_path / "relay.toml"
    path.write_text(
        f"""[run]
seed = 3
[network]
latency = 0.5
[sites]
count = 4
procs = 2
[workload]
kind = "poisson"
rate = 0.3
jobs = 200
[protocol]
name = "relay"
hops = {hops}
"""
    )
    return str(path)


@pytest.mark.parametrize("hops", [0, 1, 3])
def test_a_protocol_defined_in_a_test_file_runs_through_the_cli(relay, tmp_path, hops):
    out = tmp_path / "out"
    assert main(["run", scenario_file(tmp_path, hops), "--backend", "inprocess", "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    jobs = pd.read_parquet(out / "jobs.parquet")
    sites = pd.read_parquet(out / "sites.parquet")
    assert summary["protocol"] == {"name": "relay", "hops": hops, "jobs_moved": 0 if hops in (0, 4) else 200}
    assert (jobs["state"] == "done").all() and len(jobs) == 200
    # Each job ran `hops` sites further round the ring, and every relay is counted per site.
    assert ((jobs["submit_site"] + hops) % 4 == jobs["exec_site"]).all()
    transfers = 0 if hops % 4 == 0 else 200
    assert int(sites["sent_hello"].sum()) == 200 * hops
    assert int(sites["sent_job"].sum()) == transfers
    assert int(sites["messages_received"].sum()) == 200 * hops + transfers
    assert summary["global"]["messages"].get("hello", 0) == 200 * hops
    assert (sites["cpu_seconds"] > 0).all()


def test_the_same_toy_run_gives_the_same_jobs_with_three_shards(relay, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", scenario_file(tmp_path, 2), "--backend", "inprocess", "--out", str(a), "--quiet"]) == 0
    assert main(["run", scenario_file(tmp_path, 2), "--backend", "inprocess", "--shards", "3", "--out", str(b), "--quiet"]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(a / "jobs.parquet"), pd.read_parquet(b / "jobs.parquet"))


def test_the_toy_protocols_keys_are_checked(relay, tmp_path, capsys):
    assert main(["validate", scenario_file(tmp_path, -1)]) == 2
    assert "protocol.hops: must be >= 0, got -1" in capsys.readouterr().err


def test_an_unknown_protocol_names_the_registered_ones(tmp_path, capsys):
    assert main(["validate", scenario_file(tmp_path, 1)]) == 2
    err = capsys.readouterr().err
    assert "protocol.name: unknown value 'relay'" in err and "bilb" in err


def test_a_message_of_an_undeclared_kind_stops_the_run_naming_it(tmp_path, capsys):
    class Rude(RelayAgent):
        def on_arrival(self, now: float, slot: int) -> bool:
            self.site.send(now, 0, "shout", job=self.site.job_record(slot))
            return False

    registry.register(Protocol("rude", Rude, "sends a kind it never declared", keys=("hops",), messages=(HELLO,), check=check))
    try:
        path = scenario_file(tmp_path, 1)
        text = open(path).read().replace('name = "relay"', 'name = "rude"')
        open(path, "w").write(text)
        assert main(["run", path, "--backend", "inprocess", "--quiet"]) == 3
        assert "sent a 'shout' message, a kind its protocol does not declare" in capsys.readouterr().err
    finally:
        registry.unregister("rude")
