"""Shards draw their own sites' jobs (workloads drawn site by site): the same jobs, numbered
alike, as the driver's ``generate_jobs``, which is the reference here (it numbers all jobs at
once with one sort; the shards rank theirs against each other's release keys)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridemu.emulator as emulator
from gridemu.emulator import engine
from gridemu.emulator.backends import RayBackend
from gridemu.emulator.engine import build_shard_specs
from gridemu.emulator.scenario import load_scenario
from gridemu.emulator.shard import with_drawn_jobs
from gridemu.model.errors import ScenarioError
from gridemu.model.jobs import empty_jobs, number_jobs, rank_among, release_keys
from gridemu.scenarios.workload import generate_jobs, site_draws
from tests.conftest import small_grid


def _drawn(scenario, n_shards: int) -> np.ndarray:
    specs = with_drawn_jobs(build_shard_specs(scenario, None, n_shards, draws=site_draws(scenario)))
    jobs = np.concatenate([s.jobs for s in specs])
    return jobs[np.argsort(jobs["job_id"])]


@pytest.mark.parametrize("packing", ["block", "round_robin"])
@pytest.mark.parametrize("integral", [False, "releases"])  # integral releases: many equal ones across sites
def test_shards_draw_and_number_the_jobs_the_driver_draws(packing, integral):
    data = small_grid("random", jobs=3000, sites=11)
    data["workload"].update(integral=integral, procs={"low": 1, "high": 3})
    data["run"]["packing"] = packing
    scenario = load_scenario(data)
    want, _ = generate_jobs(scenario)
    if integral:
        assert len(np.unique(want["release"])) < len(want) / 2
    for n_shards in (1, 2, 4, 11):
        got = _drawn(scenario, n_shards)
        assert got.tobytes() == want.tobytes(), n_shards


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9)), min_size=1, max_size=80),
    st.lists(st.integers(0, 3), min_size=10, max_size=10),
)
def test_ranks_among_shards_are_ranks_of_all_jobs(rows, shard_of_site):
    """Releases with ties, sites spread over up to four shards in any way."""
    jobs = empty_jobs(len(rows))
    jobs["release"] = [float(r) for r, _ in rows]
    jobs["submit_site"] = [s for _, s in rows]
    jobs["size"] = np.arange(len(rows))  # tells the jobs apart
    want = number_jobs(jobs)
    parts = [number_jobs(jobs[np.array(shard_of_site)[jobs["submit_site"]] == k]) for k in range(4)]
    keys = [release_keys(p) for p in parts]
    for k, part in enumerate(parts):
        rank_among(part, keys, k)
    got = np.concatenate(parts)
    got = got[np.argsort(got["job_id"])]
    assert got["job_id"].tolist() == list(range(len(rows)))
    assert got["size"].tolist() == want["size"].tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9)), min_size=1, max_size=60), st.booleans())
def test_number_jobs_ranks_by_release_site_and_position(rows, presorted):
    """Against a sort of the rows in the test; ``presorted``: rows in (release, site) order
    already, as drawn workloads come, which number_jobs numbers in place."""
    if presorted:
        rows = sorted(rows)
    jobs = empty_jobs(len(rows))
    jobs["release"] = [float(r) for r, _ in rows]
    jobs["submit_site"] = [s for _, s in rows]
    jobs["size"] = np.arange(len(rows))  # each row's position
    want = sorted(range(len(rows)), key=lambda i: (rows[i][0], rows[i][1], i))
    got = number_jobs(jobs)
    assert got["size"].tolist() == want
    assert got["job_id"].tolist() == list(range(len(rows)))


def test_the_driver_draws_no_poisson_workload(monkeypatch):
    """Run on the draw path, the driver never generates the jobs, yet a result has them all."""
    data = small_grid("random", jobs=500, sites=4)
    want, _ = generate_jobs(load_scenario(data))

    def refuse(scenario):
        raise AssertionError("the driver generated the jobs")

    monkeypatch.setattr(engine, "generate_jobs", refuse)
    result = emulator.run(data, backend="inprocess", shards=3)
    assert result.jobs["release"].tolist() == want["release"].tolist()
    assert result.jobs["size"].tolist() == want["size"].tolist()
    # A workload the shards cannot draw (explicit jobs) still goes through the driver.
    listed = small_grid("random", sites=2)
    listed["workload"] = {"kind": "jobs", "list": [{"release": 0, "size": 1, "site": "site0"}]}
    with pytest.raises(AssertionError, match="the driver generated"):
        emulator.run(listed, backend="inprocess")


def test_drawn_jobs_give_the_same_table_on_ray(ray_session):
    data = small_grid("random", jobs=1500, sites=6)
    base = emulator.run(data, backend="inprocess", shards=1)
    ray2 = emulator.run(data, backend="ray", shards=2, overrides={"run.packing": "round_robin"})
    pd.testing.assert_frame_equal(base.jobs, ray2.jobs)


def test_bad_input_found_in_a_ray_shard_is_the_same_one_line(ray_session):
    """A ScenarioError raised in an actor (a shard drawing its jobs) reaches the caller as
    itself, not wrapped in Ray's task error with a remote traceback."""

    @ray_session.remote
    def draw():
        raise ScenarioError("workload.alpha", "sizes underflow to 0")

    backend = RayBackend.__new__(RayBackend)
    backend.ray = ray_session
    with pytest.raises(ScenarioError) as err:
        backend._get([draw.remote()])
    assert str(err.value) == "workload.alpha: sizes underflow to 0"
