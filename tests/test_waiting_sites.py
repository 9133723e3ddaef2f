"""Sites whose agents send only at arrivals and timers (``Agent.sends_only_on_arrival_and_timer``)
are visited for those alone before the run's span; their completions and received messages
wait for that visit (emulator/shard.py, SiteEngine). Nothing a run reports may change with it:
the job table, the events and the messages are those of the same run with the declaration
off, on every horizon, shard count and backend, and it visits the sites fewer times."""

from __future__ import annotations

import pandas as pd
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.power_of_d.agent import PowerOfDAgent
from gridemu.brokers.random.agent import RandomBrokerAgent
from gridemu.model.errors import GridemuError
from gridemu.sites.site import Site
from tests.conftest import small_grid


def _grid(protocol: str, **extra) -> dict:
    data = small_grid(
        protocol, jobs=1200, sites=10, network={"topology": "random:3"}, metrics={"counterfactual": "none"}
    )
    data["workload"]["rate"] = [2.5] + [0.8] * 9
    if protocol == "power_of_d":
        data["protocol"]["period"] = 4.0
    for key, value in extra.items():
        data[key].update(value)
    return data


def _counted(monkeypatch, data: dict, **options) -> tuple[object, int]:
    """The run and how many site visits (``Site.advance`` calls) it made."""
    visits = {"n": 0}
    real = Site.advance

    def advance(self, until):
        visits["n"] += 1
        return real(self, until)

    with monkeypatch.context() as m:
        m.setattr(Site, "advance", advance)
        result = emulator.run(data, **options)
    return result, visits["n"]


def _same_run(a, b) -> None:
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    for key in ("events", "messages_total", "messages", "jobs_by_state", "mean_flow_time"):
        assert a.summary["global"][key] == b.summary["global"][key], key


@pytest.mark.parametrize("protocol", ["power_of_d", "random"])
@pytest.mark.parametrize(
    ("extra", "shards"),
    [
        ({}, 1),
        ({}, 3),
        ({"run": {"horizon": 60.0}}, 1),  # the run ends at its horizon, jobs still to release
        ({"run": {"horizon": 60.0}}, 2),
    ],
)
def test_waiting_sites_change_nothing_but_the_visits(monkeypatch, protocol, extra, shards):
    data = _grid(protocol, **extra)
    options = {"backend": "inprocess", "shards": shards, "recurrence": False}
    waiting, fewer = _counted(monkeypatch, data, **options)
    agent = PowerOfDAgent if protocol == "power_of_d" else RandomBrokerAgent
    assert agent.sends_only_on_arrival_and_timer
    monkeypatch.setattr(agent, "sends_only_on_arrival_and_timer", False)
    every, visits = _counted(monkeypatch, data, **options)
    _same_run(waiting, every)
    assert fewer < 0.8 * visits, (fewer, visits)


def test_waiting_sites_on_ray_give_the_in_process_run(monkeypatch, ray_session):
    data = _grid("power_of_d")
    on_ray = emulator.run(data, backend="ray", shards=2)
    monkeypatch.setattr(PowerOfDAgent, "sends_only_on_arrival_and_timer", False)  # this process only
    _same_run(on_ray, emulator.run(data, backend="inprocess"))


def test_an_agent_that_sends_from_a_message_it_said_it_would_not_is_stopped(monkeypatch):
    """A send from a handled-late event comes before the bound the agent declared at its last
    visit: the kernel's causality check stops the run and names the site and the kind."""

    def on_job(self, now, msg):
        self.jobs += 1
        self.site.receive_job(now, msg)
        self.broadcast(now, "report", load=self.jobs)

    monkeypatch.setattr(PowerOfDAgent, "on_job", on_job)
    with pytest.raises(GridemuError, match="causality: site .* sent a 'report' message"):
        emulator.run(_grid("power_of_d"), backend="inprocess")
