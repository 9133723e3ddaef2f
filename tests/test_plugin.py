"""A protocol is one module and one registry line: a toy protocol defined in this file alone
runs end to end through the CLI (validation, messages, send bounds, summary, result files),
and on Ray shards with the in-process job table; docs/adding-a-protocol.md's example, a
file importing only ``gridemu.plugin``, runs as the page shows it (API, CLI ``--plugin``).

The toy, ``relay``: every new job is sent ``hops`` sites further round the ring (one job
transfer), and a ``hello`` notice about it travels the same way site by site, each site
passing it on with one more hop: a small protocol that sends, answers and moves jobs.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import gridemu
import gridemu.emulator as emulator
from gridemu.brokers import registry
from gridemu.emulator.cli import main
from gridemu.model.jobs import JOB_DTYPE
from gridemu.plugin import Agent, Params, Protocol, RunFacts, message, param
from tests.golden import digest
from tests.test_checkpoint import stop_at

HELLO = message("hello", hops=int, job_id=int)


class RelayAgent(Agent):
    name = "relay"
    intercepts_arrivals = True

    def on_arrival(self, now: float, slot: int) -> bool:
        hops, site = self.params.hops, self.site
        if hops == 0:
            return False
        site.send(now, (site.site_id + 1) % self.grid.n_sites, "hello", hops=1, job_id=site.job_id(slot))
        dst = (site.site_id + hops) % self.grid.n_sites
        if dst == site.site_id:
            return False
        site.transfer(now, slot, dst)
        return True

    def on_hello(self, now: float, msg: Any) -> None:
        if msg.hops < self.params.hops:
            self.site.send(
                now, (self.site.site_id + 1) % self.grid.n_sites, "hello", hops=msg.hops + 1, job_id=msg.job_id
            )

    def send_bound(self) -> float:
        return min(self.site.next_release(), self.site.next_message_time())


@dataclass(frozen=True)
class RelayParams(Params):
    hops: int = param(1, "sites each new job travels round the ring", nonneg=True)


def summary(facts: RunFacts) -> dict[str, Any]:
    moved = facts.jobs["exec_site"] != facts.jobs["submit_site"]
    return {"name": "relay", "hops": facts.params.hops, "jobs_moved": int(moved.sum())}


RELAY = Protocol(
    "relay",
    RelayAgent,
    "toy: relay each new job around the ring",
    params=RelayParams,
    messages=(HELLO,),
    summary=summary,
)


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
    assert (
        main(["run", scenario_file(tmp_path, 2), "--backend", "inprocess", "--shards", "3", "--out", str(b), "--quiet"])
        == 0
    )
    pd.testing.assert_frame_equal(pd.read_parquet(a / "jobs.parquet"), pd.read_parquet(b / "jobs.parquet"))


def test_the_toy_protocols_keys_are_checked(relay, tmp_path, capsys):
    assert main(["validate", scenario_file(tmp_path, -1)]) == 2
    assert "protocol.hops: must be >= 0, got -1" in capsys.readouterr().err


def test_an_unknown_protocol_names_the_registered_ones(tmp_path, capsys):
    assert main(["validate", scenario_file(tmp_path, 1)]) == 2
    err = capsys.readouterr().err
    assert "protocol.name: unknown value 'relay'" in err and "bilb" in err
    assert "a protocol of your own: load its file or module with --plugin FILE|MODULE" in err


def test_a_message_of_an_undeclared_kind_stops_the_run_naming_it(tmp_path, capsys):
    class Rude(RelayAgent):
        def on_arrival(self, now: float, slot: int) -> bool:
            self.site.send(now, 0, "shout", job=self.site.job_record(slot))
            return False

    registry.register(Protocol("rude", Rude, "sends a kind it never declared", params=RelayParams, messages=(HELLO,)))
    try:
        path = scenario_file(tmp_path, 1)
        text = open(path).read().replace('name = "relay"', 'name = "rude"')
        open(path, "w").write(text)
        assert main(["run", path, "--backend", "inprocess", "--quiet"]) == 3
        assert "sent a 'shout' message, a kind its protocol does not declare" in capsys.readouterr().err
    finally:
        registry.unregister("rude")


@pytest.mark.parametrize(
    ("where", "text"),
    [
        (lambda me, n: n, "to site 4, which is not a site of this grid (0-3)"),
        # a negative id once landed on the last site of the shard's list
        (lambda me, n: -1, "to site -1, which is not a site of this grid (0-3)"),
        # a topology's links refuse a site itself; the full graph's check must too
        (lambda me, n: me, "to itself"),
    ],
    ids=["past-the-last", "negative", "itself"],
)
@pytest.mark.parametrize("shards", ["1", "2"])
def test_a_message_to_no_other_site_stops_the_run_naming_it(tmp_path, capsys, where, text, shards):
    class Stray(RelayAgent):
        def on_arrival(self, now: float, slot: int) -> bool:
            self.site.send(now, where(self.site.site_id, self.grid.n_sites), "hello", hops=1, job_id=0)
            return False

    registry.register(Protocol("stray", Stray, "sends where no site is", params=RelayParams, messages=(HELLO,)))
    try:
        path = scenario_file(tmp_path, 1)
        Path(path).write_text(Path(path).read_text().replace('name = "relay"', 'name = "stray"'))
        assert main(["run", path, "--backend", "inprocess", "--shards", shards, "--quiet"]) == 3
        err = capsys.readouterr().err
        assert re.search(r"site site\d sent a 'hello' message at t=[0-9.]+ " + re.escape(text), err), err
    finally:
        registry.unregister("stray")


class _WrongHello(RelayAgent):
    def on_hello(self, msg):  # the kernel calls on_hello(now, msg)
        pass


class _WrongArrival(RelayAgent):
    def on_arrival(self, slot):
        return False


class _NotADataclass(Params):
    hops: int = 1


@dataclass(frozen=True)
class _TupleKey(Params):
    weights: tuple = param((1.0, 2.0), "a key no check reads")


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (
            lambda: Protocol("w1", _WrongHello, "x", params=RelayParams, messages=(HELLO,)),
            "protocol 'w1': _WrongHello.on_hello(self, msg) cannot take the kernel's call on_hello(now, msg); "
            "define it as def on_hello(self, now, msg)",
        ),
        (
            lambda: Protocol("w2", _WrongArrival, "x", params=RelayParams, messages=(HELLO,)),
            "_WrongArrival.on_arrival(self, slot) cannot take the kernel's call on_arrival(now, slot)",
        ),
        (
            lambda: Protocol("w3", RelayAgent, "x", params=_NotADataclass, messages=(HELLO,)),
            "protocol 'w3': params must be a @dataclass(frozen=True) subclass of gridemu.plugin.Params",
        ),
        (
            # Each found only at run time before: a traceback at validate, one at the first run
            # (kinds named twice), a one-line error at the first such message (no handler).
            lambda: Protocol("w4", RelayAgent, "x", params=_TupleKey, messages=(HELLO,)),
            "protocol 'w4': params: weights: a key of type <class 'tuple'> needs a check of its own",
        ),
        (
            lambda: Protocol("w5", RelayAgent, "x", params=RelayParams, messages=(HELLO, message("job", n=int))),
            "protocol 'w5': message kinds declared twice: job (job and fragment are the kernel's own kinds",
        ),
        (
            lambda: Protocol("w6", RelayAgent, "x", params=RelayParams, messages=(HELLO, HELLO)),
            "protocol 'w6': message kinds declared twice: hello",
        ),
        (
            lambda: Protocol("w7", RelayAgent, "x", params=RelayParams, messages=(HELLO, message("ackx", n=int))),
            "protocol 'w7' declares the 'ackx' message kind, but RelayAgent has no on_ackx(self, now, msg)",
        ),
    ],
    ids=[
        "message-handler",
        "arrival",
        "params-not-a-dataclass",
        "key-without-check",
        "kernel-kind",
        "kind-twice",
        "no-handler",
    ],
)
def test_an_authors_mistake_is_refused_when_the_protocol_is_made(make, error):
    # Found at run time, a wrong hook was a 58-line traceback from a site's event loop (a
    # RayTaskError on Ray), and params without @dataclass read as "unknown key (allowed: none)".
    with pytest.raises(ValueError, match=re.escape(error)):
        make()


def test_a_field_its_kind_cannot_hold_stops_the_run_in_one_line(tmp_path, capsys):
    class Fractional(RelayAgent):
        def on_arrival(self, now: float, slot: int) -> bool:
            self.site.send(now, (self.site.site_id + 1) % self.grid.n_sites, "hello", hops=0.5, job_id=0)
            return False

    registry.register(Protocol("frac", Fractional, "sends half a hop", params=RelayParams, messages=(HELLO,)))
    try:
        path = scenario_file(tmp_path, 1)
        Path(path).write_text(Path(path).read_text().replace('name = "relay"', 'name = "frac"'))
        assert main(["run", path, "--backend", "inprocess", "--quiet"]) == 3
        err = capsys.readouterr().err
        assert re.search(r"site site\d at t=[0-9.]+: a 'hello' message's field 'hops' \(int\) got 0.5", err), err
        assert err.count("\n") == 1 and "Traceback" not in err
    finally:
        registry.unregister("frac")


def test_a_capability_a_plugin_lacks_says_it_can_declare_it(relay, tmp_path, capsys):
    path = scenario_file(tmp_path, 1)
    Path(path).write_text(Path(path).read_text().replace("latency = 0.5", 'latency = 0.5\ntopology = "ring"'))
    assert main(["validate", path]) == 2
    err = capsys.readouterr().err
    assert "protocols whose agents run over any topology" in err
    assert "(yours can declare capabilities={'topologies'} in its Protocol)" in err


def test_registering_a_name_twice_says_how_to_do_it_again(relay):
    other = Protocol("relay", RelayAgent, "the same, made again", params=RelayParams, messages=(HELLO,))
    with pytest.raises(ValueError, match=re.escape("unregister('relay') first")):
        registry.register(other)


def test_a_protocol_registered_at_run_time_travels_with_the_shard_spec():
    from gridemu.emulator.engine import build_shard_specs
    from gridemu.emulator.scenario import load_scenario

    registry.register(RELAY)
    try:
        specs = build_shard_specs(load_scenario(RELAY_SCENARIO), None, 2)
        assert [s.plugin for s in specs] == [RELAY, RELAY]
    finally:
        registry.unregister("relay")
    shipped = build_shard_specs(load_scenario({**RELAY_SCENARIO, "protocol": {"name": "random"}}), None, 2)
    assert [s.plugin for s in shipped] == [None, None]  # a shipped protocol travels as its name


RELAY_SCENARIO = {
    "run": {"seed": 3},
    "network": {"latency": 0.5},
    "sites": {"count": 5, "procs": 2},
    "workload": {"kind": "poisson", "rate": 0.3, "jobs": 300},
    "protocol": {"name": "relay", "hops": 2},
}


@pytest.mark.parametrize("shards", [1, 3])
def test_a_registered_plugin_on_ray_gives_the_inprocess_job_table(ray_session, relay, shards):
    whole = emulator.run(RELAY_SCENARIO, backend="inprocess")
    on_ray = emulator.run(RELAY_SCENARIO, backend="ray", shards=shards)
    assert on_ray.summary["global"]["backend"] == "ray" and on_ray.summary["global"]["shards"] == shards
    assert digest(on_ray.jobs) == digest(whole.jobs)
    assert on_ray.summary["protocol"] == whole.summary["protocol"] == {"name": "relay", "hops": 2, "jobs_moved": 300}
    pd.testing.assert_frame_equal(on_ray.sites.drop(columns="cpu_seconds"), whole.sites.drop(columns="cpu_seconds"))


@pytest.mark.parametrize(("before", "after"), [("ray", "ray"), ("inprocess", "ray")])
def test_a_plugin_checkpoint_on_ray_names_the_protocol_and_resumes(ray_session, tmp_path, before, after, capsys):
    registry.register(RELAY)
    try:
        whole = emulator.run(RELAY_SCENARIO, backend="inprocess")
        out = tmp_path / "r"
        with pytest.raises(KeyboardInterrupt):
            emulator.run(RELAY_SCENARIO, backend=before, shards=3, out=out, checkpoint=0, on_progress=stop_at(4))
        # The checkpoint names the agent's class, never pickles it: nothing of this module in it.
        assert b"RelayAgent" not in (out / "checkpoint.gridemu").read_bytes()
    finally:
        registry.unregister("relay")
    # Without the protocol registered, resume says which one it needs.
    assert main(["resume", str(out), "--quiet"]) == 2
    assert "the run's protocol 'relay' is not registered in this process" in capsys.readouterr().err
    registry.register(RELAY)
    try:
        assert digest(emulator.resume(out, backend=after).jobs) == digest(whole.jobs)
    finally:
        registry.unregister("relay")


class _Unsaved(RelayAgent):
    def on_hello(self, now: float, msg: Any) -> None:
        self.key = lambda x: x  # no checkpoint can hold it


@pytest.mark.parametrize("backend", ["inprocess", "ray"])
def test_an_agent_state_no_checkpoint_holds_is_one_line(ray_session, tmp_path, capsys, backend):
    # A traceback from the pickler (or plain's encoder) before: now one line naming the protocol, exit 3.
    registry.register(Protocol("unsaved", _Unsaved, "x", params=RelayParams, messages=(HELLO,)))
    try:
        path = scenario_file(tmp_path, 1)
        Path(path).write_text(Path(path).read_text().replace('name = "relay"', 'name = "unsaved"'))
        argv = ["run", path, "--backend", backend, "--shards", "2", "--checkpoint", "0", "--quiet"]
        assert main([*argv, "--out", str(tmp_path / "r")]) == 3
    finally:
        registry.unregister("unsaved")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "gridemu: invariant violated: checkpoint: the unsaved protocol's agents hold state a checkpoint cannot save"
    )
    assert "lambda" in err[0]


def test_report_takes_a_plugins_report_and_says_when_it_is_missing(doc_folder, capsys):
    argv = ["run", "my.toml", "--plugin", "scatter.py", "--backend", "inprocess", "--out", "runs/r", "--quiet"]
    assert main(argv) == 0
    registry.unregister("scatter")  # a new process
    capsys.readouterr()
    assert main(["report", "runs/r", "--no-plot"]) == 0
    assert "the run's protocol 'scatter' is not registered here" in capsys.readouterr().err
    assert main(["report", "runs/r", "--no-plot", "--plugin", "scatter.py"]) == 0
    assert "not registered here" not in capsys.readouterr().err


def test_a_module_name_for_a_file_here_says_to_name_the_file(doc_folder, capsys):
    assert main(["validate", "my.toml", "--plugin", "scatter"]) == 2
    err = capsys.readouterr().err
    assert "a module name is looked up on Python's path, not in this folder: --plugin scatter.py" in err


def test_the_view_gives_each_site_its_own_named_streams(relay):
    from gridemu.emulator.engine import build_shard_specs
    from gridemu.emulator.scenario import load_scenario
    from gridemu.emulator.shard import Shard
    from gridemu.model.rng import PURPOSE_BROKER, named_rng, site_rng

    spec = build_shard_specs(load_scenario(RELAY_SCENARIO), None, 1)[0]
    spec.jobs = np.zeros(0, dtype=JOB_DTYPE)
    views = [site.agent.site for site in Shard(spec).engine.sites]
    first = views[2].rng("x")
    assert views[2].rng("x") is first  # one generator a purpose: it goes on
    draws = first.random(4)
    assert np.array_equal(draws, named_rng(3, 2, "relay", "x").random(4))
    others = [views[2].rng("y"), views[1].rng("x"), named_rng(3, 2, "other", "x"), site_rng(3, 2, PURPOSE_BROKER)]
    assert all(not np.array_equal(o.random(4), draws) for o in others)
    with pytest.raises(TypeError, match="a string naming what the draws are for"):
        views[0].rng(4)


# docs/adding-a-protocol.md: the file and the commands, run as the page shows them ----------------

DOC = Path(__file__).resolve().parent.parent / "docs" / "adding-a-protocol.md"


def doc_block(name: str) -> str:
    """The code block under ``<!-- example: NAME -->`` in the page."""
    found = re.search(rf"<!-- example: {re.escape(name)} -->\n```\w+\n(.*?)```", DOC.read_text(), re.S)
    assert found, f"docs/adding-a-protocol.md has no example block {name!r}"
    return found.group(1)


@pytest.fixture
def doc_folder(tmp_path, monkeypatch):
    """scatter.py as the page writes it and my.toml naming it, in the working folder."""
    (tmp_path / "scatter.py").write_text(doc_block("scatter.py"))
    (tmp_path / "my.toml").write_text(
        Path(scenario_file(tmp_path, 0))
        .read_text()
        .replace('name = "relay"\nhops = 0', 'name = "scatter"\nshare = 0.6')
    )
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    registry.unregister("scatter")
    for name in ("scatter", "gridemu_plugin_scatter"):
        sys.modules.pop(name, None)


def test_the_docs_example_imports_gridemu_plugin_alone():
    code = doc_block("scatter.py")
    imports = re.findall(r"^(?:from|import) (\S+)", code, re.M)
    assert [m for m in imports if m.startswith("gridemu")] == ["gridemu.plugin"]
    assert set(imports) <= {"__future__", "dataclasses", "typing", "gridemu.plugin"}


def test_the_docs_plugin_example_runs_in_process_and_on_ray(ray_session, doc_folder, monkeypatch):
    monkeypatch.syspath_prepend(str(doc_folder))
    scope: dict[str, Any] = {}
    exec(compile(doc_block("run"), "adding-a-protocol.md", "exec"), scope)  # its own assert: the same job table
    a, b = scope["a"], scope["b"]
    assert b.summary["global"]["backend"] == "ray" and b.summary["global"]["shards"] == 3
    assert a.summary["protocol"]["share"] == 0.6 and 0 < a.summary["protocol"]["jobs_moved"] < 200
    # Each moved job was answered with an ack, which its sender recorded.
    assert len(a.timeseries) == a.summary["protocol"]["jobs_moved"] == int(a.sites["sent_ack"].sum())
    c = gridemu.run("my.toml", backend="ray", shards=1)
    assert digest(c.jobs) == digest(a.jobs)


def test_the_docs_plugin_cli_commands_run_in_process_and_on_ray(ray_session, doc_folder, capsys):
    for line in doc_block("cli").splitlines():
        args = shlex.split(line)
        assert args[0] == "gridemu" and main(args[1:]) == 0, line
        registry.unregister("scatter")  # each command is a new process
    assert "my.toml: ok" in capsys.readouterr().out
    assert (
        main(["run", "my.toml", "--plugin", "scatter.py", "--backend", "inprocess", "--out", "runs/i", "--quiet"]) == 0
    )
    pd.testing.assert_frame_equal(pd.read_parquet("runs/s/jobs.parquet"), pd.read_parquet("runs/i/jobs.parquet"))
    assert json.loads(Path("runs/s/summary.json").read_text())["protocol"]["name"] == "scatter"


@pytest.mark.parametrize(
    ("plugin", "text", "error"),
    [
        ("missing.py", None, "--plugin missing.py: no such file"),
        ("broken.py", "def f(:\n", "--plugin broken.py: importing it failed (SyntaxError"),
        (
            "raises.py",
            "raise RuntimeError('no config')\n",
            "--plugin raises.py: importing it failed (RuntimeError: no config)",
        ),
        ("empty.py", "X = 1\n", "--plugin empty.py: defines no PROTOCOL and registers no protocol"),
        ("wrong.py", "PROTOCOL = 'scatter'\n", "--plugin wrong.py: PROTOCOL is a str, not a gridemu.plugin.Protocol"),
        ("no_such_module_here", None, "--plugin no_such_module_here: importing it failed (ModuleNotFoundError"),
    ],
)
def test_a_bad_plugin_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, plugin, text, error):
    monkeypatch.chdir(tmp_path)
    if text is not None:
        (tmp_path / plugin).write_text(text)
    assert main(["validate", scenario_file(tmp_path, 1), "--plugin", plugin]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gridemu: error: {error}") and err.count("\n") == 1
    assert f"gridemu_plugin_{Path(plugin).stem}" not in sys.modules


def test_a_ray_sweep_refuses_a_plugin(tmp_path, capsys):
    assert main(["sweep", scenario_file(tmp_path, 1), "--plugin", "x.py", "--out", str(tmp_path / "s")]) == 2
    assert "add --backend inprocess" in capsys.readouterr().err


def test_the_plugin_module_exports_what_an_author_needs():
    import gridemu.plugin as plugin

    for name in plugin.__all__:
        assert getattr(plugin, name) is not None
    assert plugin.register is registry.register and plugin.Protocol is Protocol


def test_the_resume_hint_names_the_plugins_the_run_loaded(tmp_path, capsys):
    from gridemu.emulator.checkpoint import FILE
    from gridemu.emulator.cli import _resume_hint

    (tmp_path / FILE).write_bytes(b"")
    _resume_hint(tmp_path, ["scatter.py", "my plug.py"])
    hint = capsys.readouterr().err.strip()
    assert hint.endswith(f"gridemu resume {tmp_path} --plugin scatter.py --plugin 'my plug.py'")
    _resume_hint(tmp_path, [])
    assert capsys.readouterr().err.strip().endswith(f"gridemu resume {tmp_path}")
