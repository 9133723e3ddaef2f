"""Every shipped scenario (and one run per protocol not shipped alone) keeps its job table.

The digests in ``tests/data/golden_jobs.json`` were written by ``python -m tests.golden
--write`` before the kernel and the protocols were reorganized into plug-ins; a change of
layout or speed must not change a single job.
"""

from __future__ import annotations

import functools
import json

import pytest

from tests import golden

STORED = json.loads(golden.GOLDEN.read_text())


@functools.cache
def one_shard(name: str) -> dict:
    """The golden run on one shard, with its windows (run once for both tests below)."""
    return golden.run_one(name, windows=True)


def table(run: dict) -> dict:
    return {k: run[k] for k in ("rows", "digest")}


@pytest.mark.parametrize("name", golden.names())
def test_job_table_is_unchanged(name):
    assert name in STORED, f"no digest recorded for {name}: run python -m tests.golden --write {name}"
    assert table(one_shard(name)) == STORED[name]


def site_count(name: str) -> int:
    from gridemu.emulator.scenario import load_scenario

    scenario, overrides = golden.EXTRA.get(name, (name, {}))
    return len(load_scenario(scenario, overrides).sites)


# The migration paper's counterexamples run on one site: one shard is all they can have.
SHARDED = [(name, min(3, n)) for name in golden.names() if (n := site_count(name)) > 1]


@pytest.mark.parametrize(("name", "shards"), SHARDED)
def test_job_table_is_the_same_with_several_in_process_shards(name, shards):
    run = golden.run_one(name, shards=shards, windows=True)
    assert table(run) == STORED[name]
    # The windows too: a message crossing shards shortens none (power-of-d had 627-629
    # windows on 2 and 3 shards against 589 on one).
    assert run["windows"] == one_shard(name)["windows"]


# Protocols whose golden runs take few windows (thousands of Ray barriers would take
# minutes here; bilb and gm on Ray are compared with in-process in their own test files).
@pytest.mark.parametrize("name", ["quickstart-random", "molba", "fairshare-swegrid", "shapley"])
def test_job_table_is_the_same_on_ray_with_two_shards(ray_session, name):
    assert golden.run_one(name, backend="ray", shards=2) == STORED[name]
