"""Checkpoints at barriers (emulator/checkpoint.py): a stopped run resumes to the job table of
a run never stopped, and a lost Ray shard is rebuilt and replayed to the same job table."""

from __future__ import annotations

import gc

import pytest

import gridemu.emulator as emulator
from gridemu.emulator import backends, coordinator
from gridemu.emulator import checkpoint as ckpt
from gridemu.emulator.cli import main
from gridemu.emulator.results import write_marker
from gridemu.model.errors import GridemuError
from gridemu.sites.site import Site
from tests.golden import digest

SMALL = {
    "quickstart": {"workload.jobs": 3000},
    "bilb-topology": {"sites.count": 12, "workload.until": 100.0},
    "gm-grid": {},
    "molba": {},
    # Sites that wait for their next arrival or timer: stopped with completions and messages waiting.
    "power-of-d": {"sites.count": 60, "workload.jobs": 3000},
    # What its check_jobs settles (period, rounds) is no [protocol] key: the saved scenario validates again.
    "dedicated": {"workload.rounds": 4},
}


def stop_at(window: int):
    """An on_progress callback that stops the run (as Ctrl-C would) after ``window`` windows."""
    seen = {"n": 0}

    def stop(progress) -> None:
        seen["n"] += 1
        if seen["n"] == window:
            raise KeyboardInterrupt

    return stop


def test_writing_checkpoints_keeps_no_copy_of_the_shards(tmp_path, monkeypatch):
    # A checkpoint is written from the shards' states opened again; a run pauses the cyclic
    # collector, so a copy whose sites and agents still refer to each other stayed until the
    # end: 8 more sites alive at every checkpoint of quickstart's 8.
    alive = []

    def save(*args, **kwargs):
        saved(*args, **kwargs)
        alive.append(sum(type(o) is Site for o in gc.get_objects()))

    saved = ckpt.save
    monkeypatch.setattr(ckpt, "save", save)
    emulator.run(
        "quickstart", backend="inprocess", overrides={"workload.jobs": 2000}, out=tmp_path / "run", checkpoint=0
    )
    assert len(alive) > 20 and max(alive) == alive[0] <= 8


@pytest.mark.parametrize("name", sorted(SMALL))
def test_a_stopped_run_resumes_to_the_same_job_table(tmp_path, name):
    kw = {"backend": "inprocess", "shards": 2, "overrides": SMALL[name]}
    whole = emulator.run(name, **kw)
    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        emulator.run(name, **kw, out=out, checkpoint=0, on_progress=stop_at(5))
    # No result file, whole or partial: the marker, the lock the run held, the checkpoint.
    assert sorted(p.name for p in out.iterdir()) == [".gridemu-lock", ".gridemu-run", "checkpoint.gridemu"]
    resumed = emulator.resume(out)
    assert digest(resumed.jobs) == digest(whole.jobs)
    assert resumed.summary["global"]["mean_flow_time"] == whole.summary["global"]["mean_flow_time"]
    names = {p.name for p in out.iterdir()}
    assert "jobs.parquet" in names and "checkpoint.gridemu" not in names  # the results replaced the checkpoint
    assert resumed.folder == out
    with pytest.raises(GridemuError, match="the run is complete"):  # the CLI: a line and exit 0
        emulator.resume(out)


def test_a_resumed_runs_rates_count_what_it_handled(tmp_path):
    # Its wall_seconds are the resumed process's: the rates over them count the events after
    # the checkpoint, not the whole run's (overstated by what the stopped run had done).
    kw = {"backend": "inprocess", "overrides": {"workload.jobs": 3000}}
    whole = emulator.run("quickstart", **kw).summary["global"]
    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        emulator.run("quickstart", **kw, out=out, checkpoint=0, on_progress=stop_at(40))
    saved = ckpt.load(out)["checkpoint"]
    before = sum(i.events for i in saved.infos)
    done = sum(i.done for i in saved.infos)
    assert 0 < before < whole["events"] and 0 < done < whole["jobs"]
    glob = emulator.resume(out).summary["global"]
    assert glob["events"] == whole["events"] and "resumed_from_window" not in whole
    assert glob["resumed_from_window"] == saved.windows > 0
    wall = glob["wall_seconds"]
    assert glob["events_per_second"] == pytest.approx((glob["events"] - before) / wall, rel=1e-3, abs=0.1)
    assert glob["jobs_per_second"] == pytest.approx((glob["jobs"] - done) / wall, rel=1e-3, abs=0.1)


@pytest.mark.parametrize(("before", "after"), [("inprocess", "ray"), ("ray", "inprocess")])
def test_a_checkpoint_resumes_on_the_other_backend(ray_session, tmp_path, before, after):
    kw = {"shards": 2, "overrides": SMALL["quickstart"]}
    whole = emulator.run("quickstart", backend="inprocess", **kw)
    with pytest.raises(KeyboardInterrupt):
        emulator.run("quickstart", backend=before, **kw, out=tmp_path / "r", checkpoint=0, on_progress=stop_at(3))
    assert digest(emulator.resume(tmp_path / "r", backend=after).jobs) == digest(whole.jobs)


def kill_shard_at(monkeypatch, calls: set[int]) -> dict:
    """Kill shard actor 1 (no restart) just before the given windows of the Ray backend (each
    chunk of windows the shards run among themselves one window long: the n-th call is the
    n-th window)."""
    real = backends.RayBackend.run_windows
    seen = {"n": 0}

    def run_windows(self, *args):
        seen["n"] += 1
        if seen["n"] in calls:
            self.ray.kill(self.actors[1], no_restart=True)
        return real(self, *args)

    monkeypatch.setattr(coordinator, "CHUNK_SECONDS", 0.0)
    monkeypatch.setattr(backends.RayBackend, "run_windows", run_windows)
    return seen


@pytest.mark.parametrize("every", [None, 0.0])
def test_a_lost_shard_actor_is_rebuilt_and_the_run_ends_the_same(ray_session, monkeypatch, capsys, every):
    small = SMALL["quickstart"]
    whole = emulator.run("quickstart", backend="inprocess", overrides=small)
    kill_shard_at(monkeypatch, {9})
    res = emulator.run("quickstart", backend="ray", shards=2, checkpoint=every, overrides=small)
    assert digest(res.jobs) == digest(whole.jobs)
    err = capsys.readouterr().err
    assert "a shard actor died (ActorDiedError" in err
    assert ("from the start" in err) if every is None else ("from the checkpoint of window 8" in err)


def test_a_shard_that_keeps_dying_stops_the_run_with_one_error(ray_session, monkeypatch):
    kill_shard_at(monkeypatch, set(range(3, 200, 3)))
    with pytest.raises(GridemuError, match="a shard actor died .* 3 rebuilds did not get the run through"):
        emulator.run("quickstart", backend="ray", shards=2, overrides=SMALL["quickstart"])


def test_resume_without_a_checkpoint_or_with_a_damaged_one_is_one_line(tmp_path, capsys):
    assert main(["resume", str(tmp_path)]) == 2
    assert "holds no checkpoint (checkpoint.gridemu)" in capsys.readouterr().err
    (tmp_path / "summary.json").write_text("{}")  # a run that went through: nothing to do, said so
    assert main(["resume", str(tmp_path)]) == 0
    assert "the run is complete (summary.json), nothing to resume" in capsys.readouterr().out
    (tmp_path / "summary.json").unlink()
    (tmp_path / "checkpoint.gridemu").write_bytes(b"not a checkpoint at all")
    assert main(["resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is no gridemu run folder" in err
    write_marker(tmp_path)
    assert main(["resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a gridemu checkpoint" in err
    assert main(["run", "quickstart", "--checkpoint", "-1", "--out", str(tmp_path / "x")]) == 2
    assert "--checkpoint: must be a number of seconds >= 0" in capsys.readouterr().err
    assert main(["validate", "quickstart", "--checkpoint", "-1"]) == 2  # validate estimates such a run
    assert "--checkpoint: must be a number of seconds >= 0" in capsys.readouterr().err


def test_cli_resume_writes_the_results_of_the_stopped_run(tmp_path, capsys):
    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        emulator.run(
            "quickstart",
            backend="inprocess",
            overrides=SMALL["quickstart"],
            out=out,
            checkpoint=0,
            on_progress=stop_at(4),
        )
    assert main(["resume", str(out), "--quiet"]) == 0
    whole = emulator.run("quickstart", backend="inprocess", overrides=SMALL["quickstart"])
    import pandas as pd

    assert digest(pd.read_parquet(out / "jobs.parquet")) == digest(whole.jobs)


NODE_REMOVED = """
import ray
from ray.cluster_utils import Cluster
import gridemu.emulator as emulator
from gridemu.emulator import coordinator
from tests.golden import digest

coordinator.CHUNK_SECONDS = 0.0  # chunks of one window: a progress report at every barrier
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
worker = cluster.add_node(num_cpus=1)
cluster.wait_for_nodes()
ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
kw = {"shards": 2, "overrides": {"workload.jobs": 3000}}
whole = emulator.run("quickstart", backend="inprocess", **kw)
seen = {"n": 0}

def remove_worker_node(progress):
    seen["n"] += 1
    if seen["n"] == 5:
        cluster.remove_node(worker)

# The two shard actors are spread over the two nodes; the second node goes away mid-run.
lost = emulator.run("quickstart", backend="ray", on_progress=remove_worker_node, **kw)
print("windows seen", seen["n"], "same job table", digest(lost.jobs) == digest(whole.jobs))

# Again with a new second node, which goes away while the shards start (at their first
# status), before the first checkpoint: rebuilt from checkpoint zero, not ShardLost.
from gridemu.emulator import backends

worker = cluster.add_node(num_cpus=1)
cluster.wait_for_nodes()
real_status = backends.RayBackend.status

def status(self):
    if worker in cluster.worker_nodes:
        cluster.remove_node(worker)
    return real_status(self)

backends.RayBackend.status = status
lost = emulator.run("quickstart", backend="ray", checkpoint=3600, **kw)
print("at start-up: same job table", digest(lost.jobs) == digest(whole.jobs))
ray.shutdown()
cluster.shutdown()
"""


@pytest.mark.slow
def test_a_removed_ray_node_is_rebuilt_to_the_same_job_table():
    # A cluster of two raylets (ray.cluster_utils.Cluster) in a process of its own: this
    # session's Ray instance stays as it is.
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "-c", NODE_REMOVED],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "same job table True" in done.stdout, done.stdout + done.stderr[-3000:]
    assert "at start-up: same job table True" in done.stdout, done.stdout + done.stderr[-3000:]
    assert done.stderr.count("rebuilding the shards from the start") >= 2, done.stderr[-3000:]  # once in each run


def test_ctrl_c_writes_a_checkpoint_at_the_next_barrier(tmp_path):
    # --checkpoint 3600: no periodic checkpoint in this short run. SIGINT during window 5
    # is held until that window's barrier, where one checkpoint is written; then the run
    # stops as Ctrl-C does, and resumes to the job table of a run never stopped.
    import os
    import signal

    from gridemu.emulator import checkpoint as ckpt

    kw = {"backend": "inprocess", "shards": 2, "overrides": SMALL["quickstart"]}
    whole = emulator.run("quickstart", **kw)
    seen = {"n": 0}

    def interrupt(progress) -> None:
        seen["n"] += 1
        if seen["n"] == 5:
            os.kill(os.getpid(), signal.SIGINT)

    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        emulator.run("quickstart", **kw, out=out, checkpoint=3600, on_progress=interrupt)
    assert seen["n"] == 5  # stopped at that barrier, not later
    assert ckpt.load(out)["checkpoint"].windows == 5
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers given back
    assert digest(emulator.resume(out).jobs) == digest(whole.jobs)


def test_a_shard_that_cannot_be_built_is_one_error_not_a_rebuild(ray_session):
    # An error raised while building a shard inside its actor is no lost node: rebuilding
    # would raise it again. One clear error naming it, at once.
    import dataclasses

    from gridemu.emulator.engine import build_shard_specs
    from gridemu.emulator.scenario import load_scenario
    from gridemu.scenarios.workload import generate_jobs

    sc = load_scenario("quickstart", {"workload.jobs": 200})
    specs = build_shard_specs(sc, generate_jobs(sc)[0], 2)
    broken = [dataclasses.replace(s, protocol="no-such-protocol") for s in specs]
    # Seen when the shards are connected to each other, their first call.
    with pytest.raises(GridemuError, match="a shard actor could not be built: .*no-such-protocol") as err:
        backends.RayBackend(broken)
    assert not isinstance(err.value, backends.ShardLost)
