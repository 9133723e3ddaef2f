"""The kernel: windows, backends, determinism, the FCFS recurrence, invariants."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import gridemu.emulator as emulator
from gridemu.brokers import registry
from gridemu.brokers.agent import Agent
from gridemu.brokers.protocol import Protocol
from gridemu.emulator.checks import check_causality, check_conservation, check_guarantees
from gridemu.emulator.engine import pack_sites
from gridemu.emulator.report import gantt_boxes
from gridemu.model.errors import InvariantError
from gridemu.sites.results import interval_set, site_runs_in_order
from tests.conftest import small_grid


def jobs_of(data, **kw) -> pd.DataFrame:
    return emulator.run(data, **kw).jobs


def test_pack_sites_is_even_and_contiguous():
    packing = pack_sites(10, 3)
    assert packing.tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert np.ptp(np.bincount(pack_sites(10_000, 7))) <= 1
    assert pack_sites(5, 2, "round_robin").tolist() == [0, 1, 0, 1, 0]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 5), st.data())
def test_usage_runs_of_round_robin_shards_come_in_site_and_group_order(n_sites, n_shards, data):
    """Each shard's ledger is sorted by (site, group) and holds its sites only: putting the
    sites' runs in site order gives the rows sorted by (site, group), as a sort would."""
    site, group = [], []
    for shard in range(n_shards):
        for s in range(shard, n_sites, n_shards):
            groups = sorted(data.draw(st.sets(st.integers(0, 9), max_size=4)))
            site += [s] * len(groups)
            group += groups
    site, group = np.array(site, dtype=np.int64), np.array(group)
    order = site_runs_in_order(site)
    sorted_ = np.lexsort((group, site))
    assert site[order].tolist() == site[sorted_].tolist() and group[order].tolist() == group[sorted_].tolist()


@pytest.mark.parametrize("protocol", ["averaging", "random"])
def test_same_job_table_for_any_backend_and_shard_count(ray_session, protocol):
    data = small_grid(protocol, jobs=800, sites=6)
    base = emulator.run(data, backend="inprocess", shards=1)
    assert base.summary["global"]["messages_total"] > 0  # the protocol really talks
    assert (base.jobs["migrations"] > 0).any()
    # The usage ledger sorted by site and group (round_robin gathers it out of order).
    usage = base.usage
    assert usage["site_id"].nunique() == 6 and len(usage) > 6  # migrated jobs: several groups at a site
    pd.testing.assert_frame_equal(usage, usage.sort_values(["site_id", "group"]).reset_index(drop=True))
    for backend, shards, packing in [("inprocess", 3, "block"), ("inprocess", 4, "round_robin"), ("ray", 2, "block")]:
        other = emulator.run(data, backend=backend, shards=shards, overrides={"run.packing": packing})
        pd.testing.assert_frame_equal(base.jobs, other.jobs)
        pd.testing.assert_frame_equal(base.usage, other.usage)
        assert other.summary["global"]["events"] == base.summary["global"]["events"]
        assert other.summary["global"]["messages"] == base.summary["global"]["messages"]


def test_jobs_in_flight_at_the_horizon_on_ray_shards(ray_session, tmp_path):
    """A Ray shard sends one object a window with a batch for every shard; each destination
    takes its own part, in the loop and from the transfers still travelling at the horizon,
    also when a checkpoint at the last barrier fetched them already."""
    data = {
        "run": {"seed": 8, "horizon": 15.0},
        "network": {"latency": 2.5},
        "sites": {"count": 3, "procs": 1},
        "workload": {"kind": "poisson", "rate": [0.6, 0.6, 0.6], "alpha": 1.0, "beta": 1.0, "jobs": 60},
        "protocol": {"name": "random"},
    }
    base = emulator.run(data, backend="inprocess", shards=1)
    moving = base.jobs[base.jobs["state"] == "transferred"]
    assert moving["exec_site"].nunique() == 3  # in flight to every site (each its own shard at 3 shards)
    for shards in (2, 3):
        pd.testing.assert_frame_equal(base.jobs, emulator.run(data, backend="ray", shards=shards).jobs)
    saved = emulator.run(data, backend="ray", shards=3, checkpoint=0, out=tmp_path / "run")
    pd.testing.assert_frame_equal(base.jobs, saved.jobs)


def test_seed_changes_the_run_and_reproduces_it():
    data = small_grid("random", jobs=300)
    a, b, c = jobs_of(data, seed=1), jobs_of(data, seed=1), jobs_of(data, seed=2)
    pd.testing.assert_frame_equal(a, b)
    assert not a["release"].equals(c["release"])


@pytest.mark.parametrize("procs", [1, {"low": 1, "high": 4}])
@pytest.mark.parametrize("horizon", [math.inf, 150.0])
def test_fcfs_recurrence_equals_event_loop(procs, horizon):
    data = small_grid("local", jobs=1500, sites=4)
    data["sites"]["procs"] = 4
    data["workload"]["procs"] = procs
    data["run"]["horizon"] = horizon
    fast = emulator.run(data)
    slow = emulator.run(data, recurrence=False)
    placement = ["proc", "proc_set"]  # the recurrence records none (sites/fcfs_recurrence.py)
    pd.testing.assert_frame_equal(fast.jobs.drop(columns=placement), slow.jobs.drop(columns=placement))
    assert (fast.jobs["proc"] == -1).all()
    # ... and the Gantt chart's rebuilt placement is the one the event loop records
    boxes = gantt_boxes(fast.jobs, {k: 4 for k in range(4)})
    rebuilt = boxes.groupby("job_id").apply(
        lambda b: interval_set([p for r in b.itertuples() for p in range(r.proc, r.proc + r.count)])
    )
    ran = slow.jobs[slow.jobs["start"].notna()].set_index("job_id")
    recorded = [
        s or str(p) if q == 1 else s or f"{p}-{p + q - 1}"
        for s, p, q in zip(ran["proc_set"], ran["proc"], ran["procs"])
    ]
    assert rebuilt.loc[ran.index].tolist() == recorded
    assert fast.summary["global"]["events"] == slow.summary["global"]["events"]
    if math.isfinite(horizon):
        states = set(fast.jobs["state"])
        assert {"done", "pending"} <= states


def test_fcfs_recurrence_on_a_shard_with_another_scheduler_equals_event_loop(monkeypatch):
    # A shard of local FCFS sites alone runs as columns (ColumnEngine, tests/test_fcfs_columns.py),
    # so the test above never reaches the recurrence: with one SPT site the shard is a SiteEngine,
    # whose FCFS sites take the recurrence and the SPT site the event loop.
    from gridemu.sites import fcfs_recurrence

    enabled, real = [], fcfs_recurrence.enable
    monkeypatch.setattr(fcfs_recurrence, "enable", lambda site: (enabled.append(site.site_id), real(site))[1])
    data = small_grid("local", jobs=1500, sites=4)
    data["workload"]["procs"] = {"low": 1, "high": 4}
    data["sites"] = [{"name": f"s{k}", "speeds": [1.0] * 4, "scheduler": "spt" if k == 3 else "fcfs"} for k in range(4)]
    fast = emulator.run(data)
    assert sorted(enabled) == [0, 1, 2]
    slow = emulator.run(data, recurrence=False)
    assert len(enabled) == 3
    placement = ["proc", "proc_set"]  # the recurrence records none (sites/fcfs_recurrence.py)
    pd.testing.assert_frame_equal(fast.jobs.drop(columns=placement), slow.jobs.drop(columns=placement))
    on_fcfs = fast.jobs["exec_site"] < 3
    assert (fast.jobs.loc[on_fcfs, "proc"] == -1).all() and (fast.jobs.loc[~on_fcfs, "proc"] >= 0).all()
    assert fast.summary["global"]["events"] == slow.summary["global"]["events"]


def test_horizon_cuts_the_run_and_every_job_keeps_one_state():
    data = small_grid("averaging", jobs=1000)
    data["run"]["horizon"] = 100.0
    res = emulator.run(data)
    jobs = res.jobs
    assert len(jobs) == 1000 and jobs["job_id"].is_unique
    assert (jobs.loc[jobs.state == "done", "end"] < 100).all()
    assert jobs.loc[jobs.state == "pending", "release"].min() >= 100
    assert jobs.loc[jobs.state.isin(["queued", "pending"]), "start"].isna().all()
    assert (jobs.loc[jobs.state == "running", "start"] < 100).all()


def test_windows_follow_send_bounds():
    """Local sites never talk: one window; averaging needs windows for every round."""
    local = emulator.run(small_grid("local", jobs=400)).summary["global"]
    avg = emulator.run(small_grid("averaging", jobs=400)).summary["global"]
    assert local["messages_total"] == 0
    assert local["windows"] == 1
    assert avg["windows"] > 20
    with_progress = emulator.run(small_grid("local", jobs=400), on_progress=lambda p: None).summary["global"]
    assert with_progress["windows"] > 1 and with_progress["events"] == local["events"]
    assert avg["messages"]["load"] > 0


def test_periodic_windows_reach_the_lookahead_while_jobs_are_released():
    """Every window may reach T + lookahead, so while jobs are released a periodic
    protocol's cap (1/200 of the span) does not cut windows below it: fewer barriers, the
    same job table, and the same counts for any shard count (windows depend on T alone)."""
    data = small_grid("averaging", jobs=400, network={"latency": 5.0})  # span/200 is about 0.6
    long = emulator.run(data)
    short = emulator.run(data, overrides={"run.lookahead": 0.25})
    pd.testing.assert_frame_equal(long.jobs, short.jobs)
    assert (long.jobs["migrations"] > 0).any()
    assert long.summary["global"]["windows"] * 3 < short.summary["global"]["windows"]  # 35 against 164
    sharded = emulator.run(data, shards=3)
    pd.testing.assert_frame_equal(long.jobs, sharded.jobs)
    for key in ("windows", "events", "messages"):
        assert sharded.summary["global"][key] == long.summary["global"][key]


# ------------------------------------------------------------------ conservation (property)


@st.composite
def random_scenarios(draw):
    n_sites = draw(st.integers(1, 6))
    procs = draw(st.integers(1, 4))
    protocol = draw(st.sampled_from(["local", "random", "averaging"]))
    scheduler = draw(st.sampled_from(["fcfs", "spt", "list"]))
    data = {
        "run": {"seed": draw(st.integers(0, 10_000))},
        "network": {"latency": draw(st.sampled_from([0.01, 0.5, 3.0]))},
        "sites": {"count": n_sites, "procs": procs, "scheduler": scheduler},
        "workload": {
            "kind": "poisson",
            "rate": [draw(st.floats(0.05, 2.0)) for _ in range(n_sites)],
            "alpha": draw(st.floats(0.5, 3.0)),
            "beta": draw(st.floats(0.5, 3.0)),
            "jobs": draw(st.integers(1, 150)),
            "procs": {"low": 1, "high": draw(st.integers(1, procs))},
        },
        "protocol": {"name": protocol},
    }
    if protocol == "averaging":
        data["protocol"]["period"] = draw(st.floats(1.0, 40.0))
    if draw(st.booleans()):
        data["run"]["horizon"] = draw(st.floats(5.0, 200.0))
    return data, draw(st.integers(1, n_sites))


_IN_FLIGHT_AT_HORIZON = (
    {
        "run": {"seed": 0, "horizon": 5.0},
        "network": {"latency": 3.0},
        "sites": {"count": 2, "procs": 1},
        "workload": {"kind": "poisson", "rate": [1.0, 1.0], "alpha": 1.0, "beta": 1.0, "jobs": 5},
        "protocol": {"name": "random"},
    },
    1,
)


_REPORTS_ALWAYS_IN_FLIGHT = (
    {
        "run": {"seed": 183},
        "network": {"latency": 3.0},
        "sites": {"count": 2, "procs": 3, "scheduler": "spt"},
        "workload": {"kind": "poisson", "rate": [1.69, 0.21], "alpha": 3.0, "beta": 1.0, "jobs": 122},
        "protocol": {"name": "averaging", "period": 1.0},
    },
    1,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_scenarios())
@example(_IN_FLIGHT_AT_HORIZON)  # a transfer delivered into a site's queue of events after the horizon
@example(_REPORTS_ALWAYS_IN_FLIGHT)  # period < latency: a report is always in flight; the run must still end
def test_conservation_and_causality_on_random_scenarios(case):
    data, shards = case
    one = emulator.run(data, shards=1)
    many = emulator.run(data, shards=shards)
    # The run's own end checks passed (they raise); check the table independently too.
    jobs = one.jobs
    assert len(jobs) == data["workload"]["jobs"] and jobs["job_id"].is_unique
    started = jobs["start"].notna()
    assert (jobs.loc[started, "start"] >= jobs.loc[started, "release"]).all()
    if "horizon" not in data["run"]:
        assert (jobs["state"] == "done").all()
    moving = jobs["state"] == "transferred"
    assert jobs.loc[moving, "start"].isna().all() and (jobs.loc[moving, "migrations"] > 0).all()
    pd.testing.assert_frame_equal(jobs, many.jobs)


# ------------------------------------------------------------------ invariant checks


def _table(**cols):
    base = {
        "job_id": [0, 1],
        "release": [0.0, 0.0],
        "size": [1.0, 1.0],
        "procs": [1, 1],
        "exec_site": [0, 0],
        "start": [0.0, 0.0],
        "end": [1.0, 1.0],
    }
    base.update(cols)
    return pd.DataFrame(base)


def test_causality_check_names_the_job():
    with pytest.raises(InvariantError, match="job 1 started at 0.5 before its release 2.0"):
        check_causality(_table(release=[0.0, 2.0], start=[0.0, 0.5], end=[1.0, 1.5]), np.array([2]))
    with pytest.raises(InvariantError, match="site 0 runs 2 processors of 1"):
        check_causality(_table(), np.array([1]))
    check_causality(_table(start=[0.0, 1.0], end=[1.0, 2.0]), np.array([1]))  # back to back is fine
    # ... and on plain arrays, the columns a shard checks for its own sites
    arrays = {k: v.to_numpy() for k, v in _table(release=[0.0, 2.0], start=[0.0, 0.5], end=[1.0, 1.5]).items()}
    with pytest.raises(InvariantError, match="job 1 started at 0.5 before its release 2.0"):
        check_causality(arrays, np.array([2]))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0, 1, 65_536]), st.integers(0, 4), st.integers(0, 3), st.integers(1, 3)),
        min_size=1,
        max_size=12,
    ),
    st.integers(2, 4),
)
def test_causality_check_finds_overbooking_exactly_where_a_count_does(jobs, procs):
    """Overbooking against a count at every start: processors of the jobs running then
    (started at or before it, ending after it; a job ending as another starts frees its
    processors first). Ties in time are common here, and a site id past 16 bits takes the
    sort the small ones do not (65,536 would be site 0 in 16 bits)."""
    site = np.array([j[0] for j in jobs])
    start = np.array([float(j[1]) for j in jobs])
    end = start + np.array([float(j[2]) for j in jobs])
    end[np.array([j[2] for j in jobs]) == 3] = np.nan  # still running at the end
    q = np.array([j[3] for j in jobs])
    table = {
        "job_id": np.arange(len(jobs)),
        "release": np.zeros(len(jobs)),
        "procs": q,
        "exec_site": site,
        "start": start,
        "end": end,
    }
    site_procs = np.zeros(65_537, dtype=np.int64)
    site_procs[[0, 1, 65_536]] = procs
    stop = np.where(np.isnan(end), np.inf, end)
    over = any(
        q[(site == site[k]) & (start <= start[k]) & (stop > start[k])].sum() > procs
        for k in range(len(jobs))
        if q[k] <= procs
    )
    wide = bool((q > procs).any())
    if wide or over:
        with pytest.raises(InvariantError, match="processors"):
            check_causality(table, site_procs)
    else:
        check_causality(table, site_procs)


@pytest.mark.parametrize("protocol", ["random", "averaging"])  # the columns path, the sites' event loops
def test_each_shard_checks_its_own_sites(protocol):
    """The run's causality check happens in the shards (Shard.results): a schedule broken
    after the run is caught there, naming the job."""
    from gridemu.emulator.backends import InProcessBackend
    from gridemu.emulator.engine import build_shard_specs
    from gridemu.emulator.scenario import load_scenario
    from gridemu.emulator.shard import ColumnEngine
    from gridemu.scenarios.workload import site_draws

    scenario = load_scenario(small_grid(protocol, jobs=200, sites=4))
    backend = InProcessBackend(build_shard_specs(scenario, None, 1, draws=site_draws(scenario)))
    until, info = 0.0, backend.status()[0]
    while info.done < info.submitted:  # one shard: windows of one lookahead, no inbox
        until += scenario.lookahead
        info = backend.step(until, [[]])[0][0]
    engine = backend.shards[0].engine
    if isinstance(engine, ColumnEngine):
        cols = engine.columns
        first = int(np.argmax((cols.release > 1.0) & ~cols.leaves))  # a job run at home
        cols.start[first] = 0.5  # as if it had started before its release
        job = int(cols.jobs["job_id"][first])
    else:
        site = next(s for s in engine.sites if s.cursor and s.r_start[0] == s.r_start[0])  # slot 0 started
        site.r_start[0] = site.c_release[0] - 1.0
        job = int(site.c_id[0])
    with pytest.raises(InvariantError, match=f"causality: job {job} started at"):
        backend.results(math.inf)


def test_conservation_check_names_the_job():
    submitted = np.zeros(3, dtype=[("job_id", "i8"), ("release", "f8"), ("size", "f8"), ("procs", "i4")])
    submitted["job_id"] = [0, 1, 2]
    submitted["size"] = 1.0
    submitted["procs"] = 1
    table = pd.DataFrame({"job_id": [0, 1, 1], "fragment": 0, "release": 0.0, "size": 1.0, "procs": 1})
    with pytest.raises(InvariantError, match=r"job 1 \(fragment 0\) is held by two sites"):
        check_conservation(table, submitted)
    with pytest.raises(InvariantError, match="job 2 was lost"):
        check_conservation(table.iloc[:2], submitted)
    # Pieces of a divisible job must add up to it, each piece held once.
    pieces = pd.DataFrame(
        {"job_id": [0, 1, 1, 2], "fragment": [0, 0, 7, 0], "release": 0.0, "size": [1.0, 0.25, 0.75, 1.0], "procs": 1}
    )
    check_conservation(pieces, submitted)
    pieces.loc[2, "size"] = 0.5
    with pytest.raises(InvariantError, match="job 1 has size 1.0 but its pieces add up to 0.75"):
        check_conservation(pieces, submitted)
    # Whole jobs (the path without a search), submitted in any order.
    whole = pd.DataFrame({"job_id": [0, 1, 2], "fragment": 0, "release": 0.0, "size": 1.0, "procs": 1})
    check_conservation(whole, submitted[::-1])
    whole.loc[2, "release"] = 3.0
    with pytest.raises(InvariantError, match="job 2 changed its release"):
        check_conservation(whole, submitted[::-1])
    whole.loc[2, "release"] = 0.0
    whole.loc[1, "size"] = 2.0
    with pytest.raises(InvariantError, match="job 1 has size 1.0 but its pieces add up to 2.0"):
        check_conservation(whole, submitted)
    with pytest.raises(InvariantError, match="job 3 appeared from nowhere"):
        check_conservation(
            pd.DataFrame({"job_id": [0, 1, 2, 3], "fragment": 0, "release": 0.0, "size": 1.0, "procs": 1}), submitted
        )


def test_guarantee_check_names_the_late_job():
    jobs = pd.DataFrame({"job_id": [3, 4], "end": [5.0, np.nan], "deadline": [5.0, 9.0]})
    check_guarantees(jobs, horizon=9.0)  # on time; job 4 unfinished but its time has not come
    with pytest.raises(InvariantError, match="guarantee: job 4 was not finished at the horizon t=10.0"):
        check_guarantees(jobs, horizon=10.0)
    jobs.loc[0, "end"] = 5.5
    with pytest.raises(InvariantError, match=r"guarantee: job 3 finished at t=5.5, after the latest finish time t=5.0"):
        check_guarantees(jobs, horizon=9.0)


class _RudeAgent(Agent):
    """Declares it never sends, then sends a job anyway."""

    name = "rude"
    intercepts_arrivals = True

    def send_bound(self) -> float:
        return math.inf

    def on_arrival(self, now, slot):
        self.site.transfer(now, slot, (self.site.site_id + 1) % self.grid.n_sites)
        return True


def test_sending_before_the_declared_bound_stops_the_run(monkeypatch):
    monkeypatch.setitem(registry.PROTOCOLS, "rude", Protocol("rude", _RudeAgent, "sends before its bound"))
    with pytest.raises(
        InvariantError, match=r"causality: site site\d sent a 'job' message .* before its declared send bound"
    ):
        emulator.run(small_grid("local", jobs=50), overrides={"protocol.name": "rude"})


def test_an_in_process_run_leaves_the_cyclic_collector_as_it_found_it(monkeypatch):
    # The run pauses the collector and sets apart (gc.freeze) what the process held before it,
    # so that its last collection walks only what it made; finished or failed, it hands both back.
    import gc
    import weakref

    class Cycle:  # made before the run, garbage during it: collected after, not lost
        pass

    left = Cycle()
    left.me = left
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    emulator.run(small_grid("random", jobs=100), backend="inprocess")
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    monkeypatch.setitem(registry.PROTOCOLS, "rude", Protocol("rude", _RudeAgent, "sends before its bound"))
    ref = weakref.ref(left)
    del left  # unreachable now, but frozen with the rest while the next run goes
    with pytest.raises(InvariantError, match="causality"):
        emulator.run(small_grid("local", jobs=50), overrides={"protocol.name": "rude"}, backend="inprocess")
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    gc.collect()
    assert ref() is None


def test_latency_matrix_sets_lookahead_and_delays_transfers():
    data = small_grid("random", jobs=300, sites=3)
    data["network"] = {"latency_matrix": [[0, 2.0, 5.0], [2.0, 0, 0.25], [5.0, 0.25, 0]]}
    sc = emulator.load_scenario(data)
    assert sc.lookahead == 0.25
    res = emulator.run(data)
    moved = res.jobs[res.jobs.migrations > 0]
    lat = np.array(data["network"]["latency_matrix"])
    assert len(moved) > 0
    # A transferred job cannot start before its release plus the link's latency.
    assert (moved["start"] >= moved["release"] + lat[moved["submit_site"], moved["exec_site"]] - 1e-12).all()


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 2)), max_size=14),
    st.sampled_from(["any", "permutation", "subset"]),
)
def test_piece_order_sorts_by_job_then_fragment(rows, ids_are):
    """The piece table's order: by (job, fragment), stable. Whole jobs with distinct ids (all
    of 0..n-1, or a shard's share with gaps) take the table of positions; repeats, fragments
    and ids far beyond the row count take the sort."""
    from gridemu.model.jobs import piece_order

    rng = np.random.default_rng(len(rows))
    if ids_are == "permutation":
        rows = [(i, 0) for i in rng.permutation(len(rows)).tolist()]
    elif ids_are == "subset":
        rows = [(i, 0) for i in rng.choice(100 * (len(rows) + 1), size=len(rows), replace=False).tolist()]
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    fragment = np.array([r[1] for r in rows], dtype=np.int64)
    assert piece_order(ids, fragment).tolist() == np.lexsort((fragment, ids)).tolist()


@settings(max_examples=120, deadline=None)
@given(
    st.integers(0, 30),
    st.integers(1, 4),
    st.sampled_from(["sorted", "unsorted", "repeat", "pieces", "gap"]),
    st.integers(0, 2**16),
)
def test_shards_columns_join_in_piece_order(n, k, case, seed):
    """Shards' job columns joined into one set sorted by (job, fragment), equal keys in shard
    order: the ids scattered in place where each shard's are sorted and all of them are
    0..n-1 once, else concatenated and sorted; either way what a stable sort of the
    concatenated rows gives."""
    from gridemu.model.jobs import columns_in_piece_order

    rng = np.random.default_rng(seed)
    ids = rng.permutation(n)
    fragment = np.zeros(n, dtype=np.int64)
    if case == "repeat" and n:
        ids[rng.integers(n)] = ids[rng.integers(n)]
    elif case == "pieces" and n:
        fragment[rng.integers(n)] = 1
        ids[rng.integers(n)] = ids[rng.integers(n)]
    elif case == "gap":
        ids = ids * 2
    cut = np.sort(rng.integers(0, n + 1, size=k - 1))
    parts = []
    for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), n]):
        part = {"job_id": ids[lo:hi].astype(np.int64), "fragment": fragment[lo:hi], "row": np.arange(lo, hi)}
        if case != "unsorted":
            order = np.lexsort((part["fragment"], part["job_id"]))
            part = {c: v[order] for c, v in part.items()}
        parts.append(part)
    flat = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}  # before: the parts are handed over
    joined = columns_in_piece_order(parts)
    expect = np.lexsort((flat["fragment"], flat["job_id"]))
    assert set(joined) == set(flat)
    for c in flat:
        assert joined[c].tolist() == flat[c][expect].tolist(), c


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=20), st.integers(0, 1000))
def test_largest_remainder_adds_up_and_rounds_the_largest_remainders_up(weights, total):
    from gridemu.model.checks import largest_remainder

    w = np.array(weights)
    share = w / w.sum() * total
    counts = largest_remainder(share, total)
    assert counts.sum() == total
    up = counts > np.floor(share)
    assert (counts - np.floor(share) <= 1).all() and (counts >= np.floor(share)).all()
    if up.any() and (~up).any():  # every share rounded up has a remainder at least as large
        rest = share - np.floor(share)
        assert rest[up].min() >= rest[~up].max() - 1e-12


def test_site_cpu_is_the_windows_thread_cpu_shared_by_each_sites_wall_slice(monkeypatch):
    # Each site is timed on the wall clock and the window's thread CPU is shared in
    # proportion, so time a shard spends waiting for a core charges no site. Clocks made
    # deterministic: the wall clock moves 1 a read, the thread's CPU clock not at all (a
    # shard that never ran: every cost 0) or by far more than the wall (capped: each
    # site's share is its wall slices, 1 per window in which it ran).
    import gridemu.emulator.shard as shard_module

    class Clocks:
        def __init__(self, cpu_step: float):
            self.wall, self.cpu, self.cpu_step = 0.0, 0.0, cpu_step

        def perf_counter(self) -> float:
            self.wall += 1.0
            return self.wall

        def thread_time(self) -> float:
            self.cpu += self.cpu_step
            return self.cpu

    costs = {}
    for cpu_step in (0.0, 1e12):
        monkeypatch.setattr(shard_module, "time", Clocks(cpu_step))
        result = emulator.run("quickstart", backend="inprocess", overrides={"workload.jobs": 400})
        costs[cpu_step] = result.sites["cpu_seconds"].to_numpy()
    assert (costs[0.0] == 0).all()
    visits = costs[1e12]
    assert (visits >= 1).all() and (visits == np.round(visits)).all()
    assert visits.sum() <= result.summary["global"]["windows"] * len(visits)
