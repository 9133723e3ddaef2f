"""Sites and local schedulers on hand-made instances; workloads; averaging plan; score."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridemu.emulator as emulator
from gridemu.brokers.averaging.algorithm import averaging_plan
from gridemu.brokers.averaging.reference import averaging_by_the_text
from gridemu.emulator.results import score

if TYPE_CHECKING:
    from gridemu.sites.site import Site


def explicit(jobs, procs=2, scheduler="fcfs", speeds=None, protocol="local"):
    site = {"name": "a", "procs": procs, "scheduler": scheduler}
    if speeds:
        site = {"name": "a", "speeds": speeds, "scheduler": scheduler}
    return {
        "sites": [site, {"name": "b", "procs": procs}],
        "workload": {"kind": "jobs", "list": [dict(site="a", **j) for j in jobs]},
        "protocol": {"name": protocol},
    }


RIGID = [
    {"release": 0.0, "size": 4.0, "procs": 1},
    {"release": 0.0, "size": 2.0, "procs": 2},  # waits for the first
    {"release": 1.0, "size": 1.0, "procs": 1},  # fits beside job 0
]


@pytest.mark.parametrize("recurrence", [True, False])
def test_fcfs_job_waits_for_the_earlier_wide_job(recurrence):
    jobs = emulator.run(explicit(RIGID), recurrence=recurrence).jobs.set_index("job_id")
    assert jobs.loc[0, "start"] == 0.0 and jobs.loc[0, "end"] == 4.0
    assert jobs.loc[1, "start"] == 4.0  # needs both processors
    # FCFS: job 2 fits beside job 0 at t=1 but may not overtake job 1; it starts when job 1 ends
    assert jobs.loc[2, "start"] == 6.0


def test_list_scheduling_lets_a_job_that_fits_go_first():
    jobs = emulator.run(explicit(RIGID, scheduler="list")).jobs.set_index("job_id")
    assert jobs.loc[2, "start"] == 1.0 and jobs.loc[2, "end"] == 2.0
    assert jobs.loc[1, "start"] == 4.0


def test_spt_runs_shortest_first():
    jobs = [
        {"release": 0.0, "size": 5.0},
        {"release": 0.5, "size": 3.0},
        {"release": 0.6, "size": 1.0},
        {"release": 0.7, "size": 2.0},
    ]
    out = emulator.run(explicit(jobs, procs=1, scheduler="spt")).jobs.set_index("job_id")
    assert out["start"].tolist() == [0.0, 8.0, 5.0, 6.0]


def test_heterogeneous_speeds_use_fastest_free_processor_and_slowest_sets_the_pace():
    jobs = [{"release": 0.0, "size": 4.0}, {"release": 0.0, "size": 4.0}, {"release": 1.0, "size": 6.0, "procs": 2}]
    out = emulator.run(explicit(jobs, speeds=[1.0, 4.0])).jobs.set_index("job_id")
    assert out.loc[0, "end"] == 1.0  # fast processor
    assert out.loc[1, "end"] == 4.0  # slow one
    assert out.loc[2, "start"] == 4.0 and out.loc[2, "end"] == 10.0  # runs at speed 1 on both


def test_poisson_workload_splits_jobs_by_rate_and_draws_gamma_sizes():
    data = {
        "sites": {"count": 4, "procs": 8},
        "workload": {"kind": "poisson", "rate": [3.0, 1.0, 1.0, 1.0], "alpha": 2.0, "beta": 3.0, "jobs": 6000},
    }
    jobs = emulator.run(data).jobs
    counts = jobs.groupby("submit_site").size().tolist()
    assert counts == [3000, 1000, 1000, 1000]
    assert jobs["size"].mean() == pytest.approx(6.0, rel=0.05)  # gamma mean α·β
    gaps = jobs[jobs.submit_site == 0]["release"].diff().dropna()
    assert gaps.mean() == pytest.approx(1 / 3.0, rel=0.08)
    assert jobs["job_id"].tolist() == list(range(6000))
    assert jobs["release"].is_monotonic_increasing


def test_poisson_until_generates_arrivals_up_to_that_time():
    data = {
        "sites": {"count": 2, "procs": 2},
        "workload": {"kind": "poisson", "rate": 0.5, "alpha": 1.0, "beta": 1.0, "until": 400.0},
    }
    jobs = emulator.run(data).jobs
    assert jobs["release"].max() < 400 and len(jobs) == pytest.approx(400, rel=0.2)


def test_integral_poisson_workload_floors_releases_and_rounds_sizes_up():
    data = {
        "sites": {"count": 2, "procs": 2},
        "workload": {"kind": "poisson", "rate": 0.5, "alpha": 1.0, "beta": 1.0, "until": 400.0},
    }
    real = emulator.run(data).jobs
    whole = emulator.run(data | {"workload": data["workload"] | {"integral": True}}).jobs
    assert len(whole) == len(real)
    assert (whole["release"] == np.floor(whole["release"])).all() and (whole["size"] == np.ceil(whole["size"])).all()
    assert (whole["size"] >= 1).all()
    assert np.allclose(np.sort(whole["size"]), np.sort(np.ceil(real["size"])))  # the same draws, rounded
    releases = emulator.run(data | {"workload": data["workload"] | {"integral": "releases"}}).jobs
    assert np.allclose(np.sort(releases["release"]), np.sort(whole["release"]))  # floored alike ...
    assert np.allclose(np.sort(releases["size"]), np.sort(real["size"]))  # ... sizes kept real
    with pytest.raises(
        emulator.ScenarioError,
        match="workload.integral: must be true or false, or \"releases\" \\(floor releases only\\), got 'yes'",
    ):
        emulator.run(data | {"workload": data["workload"] | {"integral": "yes"}})


def test_site_processor_counts_drawn_uniform_and_zipf():
    uni = emulator.load_scenario(
        {"sites": {"count": 200, "procs": {"dist": "uniform", "low": 2, "high": 5}}, "workload": {"jobs": 1}}
    )
    counts = [s.procs for s in uni.sites]
    assert set(counts) == {2, 3, 4, 5}
    zipf = emulator.load_scenario(
        {"sites": {"count": 300, "procs": {"dist": "zipf", "a": 1.4267, "max": 64}}, "workload": {"jobs": 1}}
    )
    counts = np.array([s.procs for s in zipf.sites])
    assert counts.min() >= 1 and counts.max() <= 64 and (counts == 1).mean() > 0.3


def test_csv_job_list(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("release,size,site,procs,group\n0,2,a,1,VO-A/P1\n1,3,b,2,\n")
    data = explicit([])
    data["workload"] = {"kind": "csv", "path": str(path)}
    jobs = emulator.run(data).jobs
    assert jobs["group"].astype(str).tolist() == ["VO-A/P1", "b"]
    assert jobs["procs"].tolist() == [1, 2] and jobs["end"].tolist() == [2.0, 4.0]


def test_swf_trace_as_workload(tmp_path):
    from pathlib import Path

    tiny = Path(__file__).resolve().parent.parent / "scenarios" / "data" / "tiny.swf"
    data = {
        "sites": {"count": 3, "procs": 64},
        "workload": {"kind": "swf", "path": str(tiny)},
        "protocol": {"name": "random"},
    }
    res = emulator.run(data, seed=3)
    assert len(res.jobs) > 30 and (res.jobs["state"] == "done").all()
    assert sum(res.summary["global"]["trace_jobs_skipped"].values()) > 0
    assert res.jobs["group"].astype(str).str.startswith("org").all()
    # A user's group path starts with its organization's own name (org03, not org3, past 10 sites).
    data["sites"]["count"] = 12
    jobs = emulator.run(data, seed=3).jobs
    prefix = jobs["group"].astype(str).str.split("/").str[0]
    assert (prefix == jobs["owner"].astype(str)).all() and prefix.str.match(r"org\d\d$").all()


# ------------------------------------------------------------------ Algorithm 4.1


def test_averaging_plan_by_hand():
    # mean 4: site 0 sends 4 (3 to site 1, 1 to site 2); site 3 sends 2 to site 2.
    assert averaging_plan([8.0, 1.0, 1.0, 6.0]) == [(0, 1, 3.0), (0, 2, 1.0), (3, 2, 2.0)]
    assert averaging_plan([2.0, 2.0]) == []


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(0, 1000, allow_nan=False), st.sampled_from([0.0, 1.0, 2.0, 3.0])), min_size=1, max_size=40
    )
)
def test_averaging_plan_is_the_text_of_algorithm_4_1(loads):
    # averaging_plan goes on from the last receiver it filled (one pass); the text rescans
    # from the first receiver for every sender. Same transfers, bit for bit.
    assert averaging_plan(loads) == averaging_by_the_text(loads)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1000, allow_nan=False), min_size=1, max_size=30))
def test_averaging_plan_reaches_the_mean_and_conserves_load(loads):
    plan = averaging_plan(loads)
    after = list(loads)
    for k, l, amount in plan:
        assert amount > 0 and loads[k] > loads[l]
        after[k] -= amount
        after[l] += amount
    mean = sum(loads) / len(loads)
    assert sum(after) == pytest.approx(sum(loads), abs=1e-6)
    assert max(after) == pytest.approx(mean, abs=1e-6) or not plan and max(loads) - min(loads) < 1e-9
    assert all(x <= mean + 1e-6 for x in after)


def test_score_of_thesis_section_4_5_2():
    assert score(50.0, 100.0) == pytest.approx(1.0)  # flow halved: S = 1
    assert score(200.0, 100.0) == pytest.approx(-1.0)  # flow doubled: S = -1
    assert score(100.0, 100.0) == 0.0


def test_score_computed_by_hand_on_a_two_site_instance():
    # Site a (1 processor) gets three jobs of size 2 at t=0; site b is empty. Reports go
    # out at t=1: L_a = 1 + 5 = 6, L_b = 1, mean 3.5, so a owes b 2.5 time units. a has
    # both reports at t=1.5 and sends its latest queued job (size 2 fits in 2.5; job 1
    # would not fit in the 0.5 left). Job 2 reaches b at 2.0 and ends at 4.0.
    three = [{"release": 0.0, "size": 2.0}] * 3
    data = explicit(three, procs=1, protocol="averaging")
    data["protocol"]["period"] = 1.0
    data["network"] = {"latency": 0.5}
    data["metrics"] = {"counterfactual": "local"}
    res = emulator.run(data)
    jobs = res.jobs.set_index("job_id")
    assert jobs.loc[2, "exec_site"] == 1 and jobs.loc[2, "start"] == 2.0 and jobs.loc[2, "end"] == 4.0
    assert jobs.loc[1, "exec_site"] == 0 and jobs.loc[1, "end"] == 4.0
    org = res.summary["organizations"]["a"]
    # F = 2 + 4 + 4 = 10 against the local F~ = 2 + 4 + 6 = 12: S = 12/10 - 1
    assert org["sum_flow_time"] == 10.0 and org["sum_flow_time_local"] == 12.0
    assert org["score"] == pytest.approx(0.2)
    # Cut at t = 5, alone the third job (4 to 6) does not finish: S_k compares the two jobs
    # both runs finished (2 + 4 against 2 + 4: 0), not 10 against 6 (-0.67, a loss for the run
    # that finished more).
    data["run"] = {"horizon": 5.0}
    org = emulator.run(data).summary["organizations"]["a"]
    assert org["sum_flow_time"] == 10.0 and org["sum_flow_time_local"] == 6.0
    assert org["score"] == 0.0


@pytest.mark.parametrize("recurrence", [True, False])
def test_usage_ledger_charges_processor_time_of_finished_jobs(recurrence):
    data = {
        "sites": {"count": 3, "procs": 4},
        "workload": {
            "kind": "poisson",
            "rate": [1.0, 0.5, 0.5],
            "alpha": 2.0,
            "beta": 2.0,
            "jobs": 600,
            "procs": {"low": 1, "high": 3},
        },
        "run": {"horizon": 150.0},
    }
    res = emulator.run(data, recurrence=recurrence)
    done = res.jobs[res.jobs.state == "done"]
    want = ((done["end"] - done["start"]) * done["procs"]).groupby([done["exec_site"], done["group"].astype(str)]).sum()
    got = res.usage.assign(group=res.usage["group"].astype(str)).set_index(["site_id", "group"])["usage"]
    assert len(got) == 3
    np.testing.assert_allclose(got.sort_index().to_numpy(), want.sort_index().to_numpy())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 40), st.integers(0, 3), st.floats(0, 100), st.floats(0, 10), st.integers(1, 4), st.booleans()
        ),
        max_size=60,
    ),
    st.sampled_from([(1, 1), (1, 15_000), (10**6, 1)]),
)
def test_usage_ledger_sums_each_site_and_group_in_slot_order(rows, spread):
    """Every way of finding the (site, group) pairs (bins where they are dense; sorts where
    the groups or the sites are spread, by radix or not) gives the sums of a loop in slot
    order, bit for bit, and a pair with a finished piece only."""
    from gridemu.sites.results import DONE, usage_ledger

    cols = {
        "exec_site": np.array([r[0] * spread[0] for r in rows], dtype=np.int32),
        "group": np.array([r[1] * spread[1] for r in rows], dtype=np.int32),
        "start": np.array([r[2] for r in rows]),
        "end": np.array([r[2] + r[3] for r in rows]),
        "procs": np.array([r[4] for r in rows], dtype=np.int32),
        "state": np.array([DONE if r[5] else DONE + 1 for r in rows], dtype=np.int8),
    }
    want: dict[tuple[int, int], float] = {}
    for i in range(len(rows)):
        if cols["state"][i] == DONE:
            key = (int(cols["exec_site"][i]), int(cols["group"][i]))
            want[key] = want.get(key, 0.0) + float((cols["end"][i] - cols["start"][i]) * cols["procs"][i])
    got = usage_ledger(cols)
    assert list(zip(got["site_id"].tolist(), got["group"].tolist())) == sorted(want)
    assert got["usage"].tolist() == [want[k] for k in sorted(want)]


def test_load_counts_queued_and_remaining_work_of_rigid_jobs():
    from gridemu.emulator.engine import build_shard_specs
    from gridemu.emulator.scenario import load_scenario
    from gridemu.emulator.shard import Shard
    from gridemu.scenarios.workload import generate_jobs

    data = explicit(
        [
            {"release": 0.0, "size": 4.0, "procs": 2},
            {"release": 0.0, "size": 3.0, "procs": 2},
            {"release": 0.5, "size": 1.0, "procs": 1},
        ],
        procs=2,
        speeds=None,
        scheduler="fcfs",
    )
    sc = load_scenario(data)
    jobs, _ = generate_jobs(sc)
    shard = Shard(build_shard_specs(sc, jobs, 1, recurrence=False)[0])
    shard.step(1.0)
    site = shard.engine.sites[0]
    # at t=1: job 0 has 3 time units left on 2 processors; jobs 1 (2 procs) and 2 (1 proc) wait
    assert site.backlog(1.0) == pytest.approx(3 * 2 + 3 * 2 + 1 * 1)
    assert site.load(1.0) == pytest.approx(1.0 + 13 / 2)


class _FakeSite:
    """What the planned scheduler reads of a site: ids, widths, free processors, start."""

    def __init__(self, procs, free):
        self.c_id = list(range(100, 100 + len(procs)))
        self.c_procs = list(procs)
        self.free_count = free
        self.started: list[tuple[int, float]] = []

    def start(self, slot, now):
        self.free_count -= self.c_procs[slot]
        self.started.append((self.c_id[slot], now))


def test_planned_scheduler_starts_due_jobs_in_due_then_id_order_while_they_fit():
    from gridemu.sites.schedulers import Planned

    site = _FakeSite([1, 2, 1, 1, 1], free=2)
    sched = Planned(site)
    sched.plan(103, 5.0)  # planned before it is queued
    for slot in range(5):
        sched.push(slot)
    sched.plan(101, 3.0)  # two wide: does not fit beside job 100
    sched.plan(100, 3.0)
    sched.plan(102, 9.0)
    sched.plan(102, 4.0)  # re-planned earlier: the first entry is stale
    sched.dispatch(site, 2.0)
    assert site.started == []  # nothing due yet
    sched.dispatch(site, 4.0)
    assert site.started == [(100, 4.0), (102, 4.0)]  # 101 is due first among the others but needs 2
    assert sched.queued() == [1, 3, 4]
    site.free_count = 2  # both end
    sched.dispatch(site, 5.0)
    assert site.started[2:] == [(101, 5.0)]  # due at 3, waiting since; 103 (due 5) no longer fits
    site.free_count = 1
    sched.dispatch(site, 9.0)
    assert site.started[3:] == [(103, 9.0)]
    sched.remove(4)  # taken back unplanned (a transfer): never started
    site.free_count = 5
    sched.dispatch(site, 99.0)
    assert len(site.started) == 4 and sched.queued() == []


# ------------------------------------------------------------------ sending


def _sender(latency, jobs=None) -> "Site":
    from gridemu.model.jobs import empty_jobs
    from gridemu.model.messages import MessageKinds, message
    from gridemu.sites.site import Site
    from gridemu.sites.spec import SiteSpec

    kinds = MessageKinds([message("ping", load=float, round=int)])
    return Site(SiteSpec(1, "s1", "o1", (1.0,), "fcfs"), empty_jobs(0) if jobs is None else jobs, latency, 1, kinds)


@pytest.mark.parametrize("latency", [2.0, np.array([0.5, 0.0, 1.5, 3.0])])
def test_send_all_is_one_send_per_destination(latency):
    # A broadcast goes through send_all (checks and payload once); what leaves the site must
    # be what one send per destination gives: rows, sequence numbers, latencies, counters.
    many, one = _sender(latency), _sender(latency)
    many.send(0.5, 2, "ping", load=1.0)
    one.send(0.5, 2, "ping", load=1.0)
    many.send_all(1.0, [0, 2, 3], "ping", load=2.5, round=4)
    for dst in (0, 2, 3):
        one.send(1.0, dst, "ping", load=2.5, round=4)
    assert many.outbox == one.outbox
    assert [r[2] for r in many.outbox] == [1, 2, 3, 4]
    # load sits in the first float slot (column 6), round in the first int slot (after the 4 float ones)
    assert [(r[1], r[3], r[4], r[6], r[10]) for r in many.outbox[1:]] == [(1, d, 1.0, 2.5, 4) for d in (0, 2, 3)]
    assert [r[0] for r in many.outbox][1:] == [
        1.0 + (latency if isinstance(latency, float) else latency[d]) for d in (0, 2, 3)
    ]
    assert list(many.sent) == list(one.sent) and many.msg_seq == one.msg_seq == 4


def test_send_all_refuses_a_site_off_the_topology_and_an_undeclared_kind():
    from gridemu.model.errors import InvariantError

    site = _sender(1.0)
    site.links = frozenset({0, 2})
    with pytest.raises(InvariantError, match="to site 3, which is not one of its neighbors"):
        site.send_all(0.0, [0, 3], "ping", load=1.0)
    with pytest.raises(InvariantError, match="'pong' message, a kind its protocol does not declare"):
        site.send_all(0.0, [0], "pong")


def test_a_site_takes_messages_in_order_after_completions_and_before_timers_and_arrivals():
    # Received messages wait in the site's inbox, sorted per batch, apart from its heap of
    # completions and timers; the event loop merges the two by the kind rank of DESIGN.md:
    # at one instant completions, then messages (by source and sequence number), timers,
    # local arrivals.
    import math

    from gridemu.brokers.agent import Agent, GridInfo
    from gridemu.brokers.params import Params
    from gridemu.model.jobs import empty_jobs
    from gridemu.model.messages import NO_FIELDS, NO_JOB
    from gridemu.sites.view import SiteView

    jobs = empty_jobs(2)
    jobs["job_id"], jobs["release"], jobs["size"], jobs["submit_site"] = [0, 1], [0.0, 2.0], [2.0, 1.0], 1
    site = _sender(1.0, jobs)
    log = []

    class Log(Agent):
        intercepts_arrivals = True

        def on_arrival(self, now, slot):
            log.append(("arrival", now))
            return False

        def on_complete(self, now, slot):
            log.append(("complete", now))

        def on_timer(self, now, tag):
            log.append(("timer", now, tag))

        def on_ping(self, now, msg):
            log.append(("ping", now, msg.src, msg.seq))

    site.agent = Log(SiteView(site), GridInfo(4, (0, 1, 2, 3), 1, 1.0), Params())
    code = site.kinds.code["ping"]

    def row(t, src, seq):
        return (t, src, seq, 1, t - 1.0, code) + NO_FIELDS + NO_JOB

    site.set_timer(2.0, "t")
    site.deliver([row(2.0, 3, 1), row(1.5, 2, 7), row(2.0, 0, 5)])  # a batch in no order
    assert site.next_message_time() == 1.5 and site.next_agent_event_time() == 1.5
    site.advance(1.8)
    assert log == [("arrival", 0.0), ("ping", 1.5, 2, 7)]
    assert site.next_message_time() == 2.0 and site.next_event_time() == 2.0
    site.deliver([row(3.0, 0, 6), row(2.0, 2, 8)])  # merged with the two still pending
    site.advance(10.0)
    assert log[2:] == [
        ("complete", 2.0),
        ("ping", 2.0, 0, 5),
        ("ping", 2.0, 2, 8),
        ("ping", 2.0, 3, 1),
        ("timer", 2.0, "t"),
        ("arrival", 2.0),
        ("complete", 3.0),
        ("ping", 3.0, 0, 6),
    ]
    assert site.received == 5 and site.pending_messages() == []
    assert site.next_message_time() == math.inf and site.next_agent_event_time() == math.inf
