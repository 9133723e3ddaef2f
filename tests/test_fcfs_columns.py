"""FCFS sites with a routing protocol run as numpy columns (sites/fcfs_columns.py): the
same job table and the same per-site counters as the event loop, in every setting."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridemu.emulator as emulator
from gridemu.emulator.engine import build_shard_specs
from gridemu.emulator.scenario import load_scenario
from gridemu.emulator.shard import ColumnEngine, Shard
from gridemu.model.errors import InvariantError
from gridemu.scenarios.workload import generate_jobs
from gridemu.sites import fcfs_columns
from tests.conftest import small_grid

COUNTERS = ["site_id", "events", "messages_received", "messages_sent", "sent_job"]


def routed_grid(**extra) -> dict:
    data = small_grid("random", jobs=1200, sites=6)
    data["sites"]["procs"] = [4, 2, 6, 3, 4, 5]
    data["workload"]["rate"] = [2.0, 0.6, 0.9, 0.4, 0.8, 1.1]
    for key, value in extra.items():
        data.setdefault(key, {}).update(value)
    return data


def assert_same_run(data: dict, **kw) -> emulator.RunResult:
    fast = emulator.run(data, **kw)
    slow = emulator.run(data, recurrence=False, **kw)
    placement = ["proc", "proc_set"]  # recorded by the event loop only (sites/fcfs_recurrence.py)
    pd.testing.assert_frame_equal(fast.jobs.drop(columns=placement), slow.jobs.drop(columns=placement))
    pd.testing.assert_frame_equal(fast.sites[COUNTERS], slow.sites[COUNTERS])
    for key in ("events", "messages", "messages_total"):
        assert fast.summary["global"][key] == slow.summary["global"][key]
    return fast


def test_the_columns_serve_routing_protocols_on_fcfs_sites_only():
    def uses_columns(data):
        scenario = load_scenario(data)
        jobs, groups = generate_jobs(scenario)
        return isinstance(Shard(build_shard_specs(scenario, jobs, 1, groups=groups)[0]).engine, ColumnEngine)

    assert uses_columns(routed_grid())
    assert uses_columns(routed_grid(protocol={"name": "local"}))  # its route keeps every job home
    assert not uses_columns(routed_grid(protocol={"name": "local"}, faults={"mtbf": 50.0, "mttr": 5.0}))
    assert not uses_columns(routed_grid(scheduler={"name": "spt"}))
    mixed = routed_grid()
    mixed["sites"] = [{"name": "a", "speeds": [1.0, 2.0]}, {"name": "b", "procs": 3}]
    mixed["workload"]["rate"] = [1.0, 0.5]
    assert not uses_columns(mixed)  # processors of two speeds in one site
    mixed["sites"][0]["speeds"] = [2.0, 2.0]
    assert uses_columns(mixed)


def test_the_columns_paths_empty_processor_sets_are_the_strings_pandas_would_make(tmp_path):
    # The columns path records no placement: proc_set is built as empty strings directly
    # (two Arrow buffers on pandas 3), and must read and write as the inferred column does.
    res = emulator.run(routed_grid(), backend="inprocess")
    inferred = pd.Series(np.full(len(res.jobs), "", dtype=object), name="proc_set")
    pd.testing.assert_series_equal(res.jobs["proc_set"], inferred)
    res.jobs[["proc_set"]].to_parquet(tmp_path / "a.parquet")
    inferred.to_frame().to_parquet(tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    rigid = routed_grid(workload={"procs": {"low": 1, "high": 2}})  # recorded by the event loop
    sets = emulator.run(rigid, backend="inprocess", recurrence=False).jobs["proc_set"]
    assert sets.str.len().gt(0).any() and sets.dtype == inferred.dtype


@pytest.mark.parametrize("horizon", [math.inf, 120.0])
@pytest.mark.parametrize("shards", [1, 4])
def test_same_job_table_as_the_event_loop(horizon, shards):
    res = assert_same_run(routed_grid(run={"horizon": horizon}), shards=shards)
    states = set(res.jobs["state"])
    assert (res.jobs["migrations"] > 0).any()
    if math.isfinite(horizon):
        assert {"done", "pending"} <= states and states - {"done", "pending"}  # some cut mid-way
    else:
        assert states == {"done"}


def test_a_rigid_job_wider_than_its_destination_stops_both_paths_alike():
    # Jobs of up to 5 processors submitted at the 5-processor sites; the random broker
    # sends some to the sites of 2 and 3 processors, where they could never start (their
    # queues blocked for ever, in both paths alike, before): both stop at the same one.
    rng = np.random.default_rng(3)
    jobs = [
        {"release": float(t), "size": float(z), "site": int(s), "procs": int(q)}
        for t, z, s, q in zip(
            np.sort(rng.uniform(0, 300, 400)), rng.gamma(2, 2, 400), rng.choice([0, 4, 5], 400), rng.integers(1, 6, 400)
        )
    ]
    data = routed_grid()
    data["sites"]["procs"] = [5, 2, 6, 3, 5, 5]
    data["workload"] = {"kind": "jobs", "list": jobs}
    errors = []
    for recurrence in (True, False):
        with pytest.raises(
            InvariantError, match="the random protocol sent a job to a site where it can never start"
        ) as e:
            emulator.run(data, recurrence=recurrence)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and errors[0].startswith("site site1 (2 processors) at t=")


def test_a_latency_matrix_and_other_speeds():
    n = 6
    lat = [[0.0 if i == j else 0.5 + 0.25 * ((i + j) % 3) for j in range(n)] for i in range(n)]
    data = routed_grid(network={"latency_matrix": lat}, sites={"speed": [1.0, 2.0, 0.5, 1.0, 1.5, 1.0]})
    data["network"].pop("latency")
    assert_same_run(data, shards=3)


def test_shards_and_packing_give_the_same_table():
    data = routed_grid()
    base = emulator.run(data).jobs
    for shards, packing in [(2, "block"), (3, "round_robin"), (6, "block")]:
        other = emulator.run(data, shards=shards, overrides={"run.packing": packing}).jobs
        pd.testing.assert_frame_equal(base, other)


def test_lockstep_rounds_and_the_plain_loop_agree(monkeypatch):
    data = routed_grid(network={"latency": 4.0})
    data["sites"]["procs"] = [4, 3, 6, 3, 4, 5]
    data["workload"]["procs"] = {"low": 1, "high": 3}
    runs = []
    for threshold in (0, 10**9):  # every window in rounds of arrays / every window one by one
        monkeypatch.setattr(fcfs_columns, "LOCKSTEP_MIN_ROWS", threshold)
        runs.append(emulator.run(data).jobs)
    pd.testing.assert_frame_equal(*runs)


def test_cpu_and_messages_are_counted_per_site():
    res = emulator.run(routed_grid())
    sites = res.sites
    assert (sites["cpu_seconds"] > 0).all()
    assert sites["messages_received"].sum() == sites["sent_job"].sum() == res.summary["global"]["messages"]["job"]
    moved = res.jobs[res.jobs["migrations"] > 0]
    np.testing.assert_array_equal(np.bincount(moved["exec_site"], minlength=6), sites["messages_received"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(0, 3)), max_size=40),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), max_size=40),
    st.randoms(use_true_random=False),
)
def test_arrival_order_is_the_event_loops_order(messages, arrivals, rnd):
    """``arrival_order`` against a lexsort of the event loop's whole key, computed apart: by
    site, time, kind (messages before local arrivals), then source and sequence number, or
    submission position. Times tie often; messages come in any order."""
    seen: set[tuple[int, int]] = set()
    msgs = []
    for site, t, src in messages:  # a sequence number is each source's count: (src, seq) never repeats
        seq = sum(1 for s, _ in seen if s == src)
        seen.add((src, seq))
        msgs.append((site, float(t), src, seq))
    rnd.shuffle(msgs)
    local = sorted((float(t), site, j) for j, (site, t) in enumerate(arrivals))  # (release, site, job id)
    pos = {}
    position = []
    for _, site, _ in local:
        position.append(pos.get(site, 0))
        pos[site] = position[-1] + 1
    site = np.array([m[0] for m in msgs] + [a[1] for a in local], dtype=np.int64)
    when = np.array([m[1] for m in msgs] + [a[0] for a in local])
    src = np.array([m[2] for m in msgs], dtype=np.int64)
    seq = np.array([m[3] for m in msgs], dtype=np.int64)
    kind = np.array([1] * len(msgs) + [3] * len(local))
    key1 = np.concatenate((src, np.array(position, dtype=np.int64)))
    key2 = np.concatenate((seq, np.zeros(len(local), np.int64)))
    want = np.lexsort((key2, key1, kind, when, site))
    assert fcfs_columns.arrival_order(site, when, src, seq).tolist() == want.tolist()
