"""The ``molba`` protocol: MOLBA and ILBA run over messages (thesis ch. 5, issue 4 part 3)."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridemu.emulator as emulator
from gridemu.brokers.molba.agent import Book, MolbaAgent, plan_time
from gridemu.brokers.molba.algorithm import guarantee_violations, molba_plan
from gridemu.brokers.molba.list_scheduling import Job, check_schedule
from gridemu.brokers.molba.reference import thesis_plan
from gridemu.emulator.scenario import load_scenario
from gridemu.model.errors import InvariantError, ScenarioError


def rigid(n_sites=5, m=16, jobs=60, model="uni", seed=3, latency=0.01, **protocol) -> dict:
    return {
        "run": {"seed": seed},
        "network": {"latency": latency},
        "sites": {"count": n_sites, "procs": m},
        "scheduler": {"name": "planned"},
        "workload": {"kind": "rigid", "model": model, "jobs": jobs},
        "protocol": {"name": "molba", **protocol},
    }


def hand_made(rows, n_sites, m, latency=0.5) -> dict:
    """Jobs (site, p, q) released at 0, as the workload's ``jobs`` list."""
    return {
        "network": {"latency": latency},
        "sites": {"count": n_sites, "procs": m},
        "scheduler": {"name": "planned"},
        "workload": {"kind": "jobs", "list": [{"site": k, "release": 0, "size": p, "procs": q} for k, p, q in rows]},
        "protocol": {"name": "molba"},
    }


def overloaded_rows(rows, n_sites: int, m: int) -> list[tuple[int, float, int]]:
    """Drawn (owner, p, q) rows made an instance where organization 0 is often overloaded:
    even owners become 0, odd ones are clipped to the grid, q to m, p halved."""
    return [(min(k, n_sites - 1) if k % 2 else 0, p / 2, min(q, m)) for k, p, q in rows]


def instance_of(result) -> tuple[list[Job], list[int]]:
    table = result.jobs.sort_values("job_id")
    jobs = [Job(int(r.job_id), int(r.submit_site), float(r.size), int(r.procs)) for r in table.itertuples()]
    return jobs, [len(s["speeds"]) for s in result.scenario["sites"]]


def executed(result, t0: float) -> dict[int, tuple[int, float]]:
    return {int(r.job_id): (int(r.exec_site), float(r.start) - t0) for r in result.jobs.itertuples()}


@pytest.mark.parametrize(
    "model,n_sites,m,jobs,protocol",
    [
        ("uni", 5, 16, 60, {}),
        ("uni", 10, 32, 120, {}),
        ("uni", 2, 8, 30, {}),
        ("lublin", 5, 32, 80, {}),
        ("uni", 5, 16, 60, {"ilba": False}),
        ("uni", 10, 16, 100, {"alpha": 3}),
        ("uni", 10, 16, 100, {"alpha": 2, "ilba": False}),
        ("uni", 4, 8, 40, {"alpha": 1.5}),
    ],
)
def test_decentralized_schedule_is_the_references(model, n_sites, m, jobs, protocol):
    """Every job runs where and when (from T0) the oracle (``brokers/molba/reference.py``, written
    apart from the agents' ``molba_plan``) puts it; guarantees hold."""
    result = emulator.run(rigid(n_sites, m, jobs, model, **protocol))
    inst, machines = instance_of(result)
    alpha = None if protocol.get("alpha") is None else float(protocol["alpha"])
    ref = thesis_plan(inst, machines, alpha, protocol.get("ilba", True))
    by_id = {j.id: j for j in inst}
    t0 = plan_time(0.01, 1)
    got = executed(result, t0)
    assert got.keys() == ref.final.keys()
    for job, (machine, start, _) in ref.final.items():
        assert got[job][0] == machine, job
        assert got[job][1] == pytest.approx(start, abs=1e-9), job
    plan = molba_plan(inst, machines, alpha, protocol.get("ilba", True))
    assert guarantee_violations(plan, inst, machines) == []
    check_schedule(plan.final, inst, machines)
    proto = result.summary["protocol"]
    assert proto["score"] == pytest.approx(proto["score_reference"])
    # the summary's reference figures (computed by molba_plan) are the oracle's too
    assert proto["makespan_reference"] == pytest.approx(max(s + by_id[j].p for j, (_, s, _) in ref.final.items()))
    assert proto["plan_time"] == pytest.approx(t0)
    assert "refuse" not in result.summary["global"]["messages"]
    # jobs leave their owner only where the oracle says so, each by one request and one grant
    moved = sum(1 for j, (machine, _, _) in ref.final.items() if machine != by_id[j].org)
    assert proto["jobs_migrated"] == moved
    assert (
        result.summary["global"]["messages"].get("request", 0)
        == moved
        == result.summary["global"]["messages"].get("grant", 0)
    )


@settings(max_examples=25, deadline=None)
@given(
    st.integers(2, 5),
    st.sampled_from([1, 2, 4, 8]),
    st.lists(st.tuples(st.integers(0, 4), st.integers(1, 20), st.integers(1, 8)), min_size=1, max_size=16),
    st.sampled_from(["meta", 2, 3]),
    st.booleans(),
)
def test_decentralized_runs_keep_the_guarantees_on_random_instances(n_sites, m, rows, alpha, balance):
    """Hand-made instances with one organization often overloaded (owners clipped to the
    grid, q to m); the run checks the guarantees itself and must match the oracle
    (``brokers/molba/reference.py``), job by job."""
    data = hand_made(overloaded_rows(rows, n_sites, m), n_sites, m, latency=0.1)
    data["protocol"].update(alpha=alpha, ilba=balance)
    result = emulator.run(data)  # raises InvariantError on a broken guarantee
    proto = result.summary["protocol"]
    assert proto["makespan"] == pytest.approx(proto["makespan_reference"])
    inst, machines = instance_of(result)
    a = None if alpha == "meta" else float(alpha)
    plan = molba_plan(inst, machines, a, balance)
    assert guarantee_violations(plan, inst, machines) == []
    ref = thesis_plan(inst, machines, a, balance)
    got = executed(result, proto["plan_time"])
    assert got == {j: (machine, pytest.approx(start)) for j, (machine, start, _) in ref.final.items()}


def test_molba_moves_jobs_and_ilba_improves_on_an_overloaded_grid():
    # Zipf owners at N = 10: organization 0 gets most jobs, so O' is not empty.
    result = emulator.run(rigid(10, 32, 200, seed=1))
    proto = result.summary["protocol"]
    assert proto["overloaded"] >= 1 and proto["jobs_moved_by_molba"] > 0
    assert proto["score_local"] > proto["score_molba"] >= proto["score_molba_ilba"] >= 1.0
    # no organization ends later than alone (relative to the plan's start)
    t0 = proto["plan_time"]
    ends = result.jobs.groupby("owner")["end"].max() - t0
    assert all(e <= loc + 1e-9 for e, loc in zip(ends.sort_index(), proto["org_makespans_local"]))


def test_figure_5_2_instance_runs_to_the_optimum():
    # Figure 5.2 rebuilt as in tests/test_molba.py: five whole-machine unit jobs of O_0.
    result = emulator.run(hand_made([(0, 1.0, 4)] * 5, n_sites=5, m=4))
    proto = result.summary["protocol"]
    assert proto["makespan_local"] == 5 and proto["makespan_molba"] == 3 and proto["makespan"] == pytest.approx(1.0)
    assert sorted(result.jobs["exec_site"]) == [0, 1, 2, 3, 4]
    assert (result.jobs["start"] == 7 * 0.5).all()  # every job at T0


def test_same_job_table_for_any_backend_and_shard_count(ray_session):
    data = rigid(6, 16, 80, latency=0.25)
    cols = ["job_id", "exec_site", "start", "end", "state", "migrations"]
    base = emulator.run(data, shards=1)
    for backend, shards in (("inprocess", 3), ("ray", 2)):
        other = emulator.run(data, backend=backend, shards=shards)
        pd.testing.assert_frame_equal(base.jobs[cols], other.jobs[cols])
        assert other.summary["protocol"] == base.summary["protocol"]


def test_a_latency_matrix_delays_the_start_by_seven_of_its_slowest_links():
    data = rigid(3, 8, 20)
    data["network"] = {"latency_matrix": [[0.1, 0.2, 0.3], [0.2, 0.1, 0.4], [0.3, 0.4, 0.1]]}
    result = emulator.run(data)
    assert result.summary["protocol"]["plan_time"] == pytest.approx(7 * 0.4)  # (5 + 2 retries) delays
    assert result.jobs["start"].min() == pytest.approx(7 * 0.4)
    assert result.summary["protocol"]["score"] == pytest.approx(result.summary["protocol"]["score_reference"])


# ------------------------------------------------------------------- hosts never double-book


def test_book_counts_processors_over_the_whole_window():
    book = Book(4)
    book.add(0.0, 2.0, 3)  # [0, 2) uses 3
    book.add(3.0, 1.0, 2)  # [3, 4) uses 2
    assert book.fits(2.0, 1.0, 4)  # the gap [2, 3)
    assert not book.fits(1.0, 1.0, 2)  # 3 + 2 > 4 at t = 1
    assert book.fits(0.0, 5.0, 1)
    assert not book.fits(2.0, 1.5, 3)  # fits at 2 but not once the job at 3 starts
    assert not book.fits(0.0, 1.0, 5)
    assert book.earliest(0.5, 1.5, 3) == 4.0
    assert book.earliest(0.5, 1.0, 2) == 2.0


def refuse_first_request(monkeypatch) -> list[int]:
    """Make the first host that judges a request find its book full over the requested slot
    (as a host whose view diverged would); returns the refused job ids."""
    real = MolbaAgent._judge
    refused: list[int] = []

    def judge_with_a_full_book(self, now, msg):
        if not refused:  # the whole machine, over the planned slot
            self.book.add(msg.start, msg.size / self.speed, self.book.m)
            refused.append(int(msg.job_id))
        return real(self, now, msg)

    monkeypatch.setattr(MolbaAgent, "_judge", judge_with_a_full_book)
    return refused


def test_a_refused_request_is_retried_elsewhere_and_nothing_is_double_booked(monkeypatch):
    refused = refuse_first_request(monkeypatch)
    data = hand_made([(0, 1.0, 4)] * 5, n_sites=5, m=4)
    data["protocol"]["ilba"] = False
    result = emulator.run(data)  # conservation, causality (no site overbooked), guarantees: all checked
    msgs = result.summary["global"]["messages"]
    assert (msgs["refuse"], msgs["request"], msgs["grant"], msgs["job"]) == (1, 3, 2, 2)
    # MOLBA(2) sends jobs 3 and 4 to machines 1 and 2 at time 0; machine 1 refuses job 3,
    # which then goes to the first machine with room at 0 in the owner's view: machine 3.
    assert refused == [3]
    got = executed(result, plan_time(0.5, 1))
    assert got[3] == (3, 0.0) and got[4] == (2, 0.0)
    assert result.summary["protocol"]["makespan"] == pytest.approx(3.0)


def test_without_retries_a_refused_job_runs_at_home_and_the_broken_guarantee_is_reported(monkeypatch):
    refuse_first_request(monkeypatch)
    data = hand_made([(0, 1.0, 4)] * 5, n_sites=5, m=4)
    data["protocol"].update(ilba=False, retries=0)
    # Job 3 runs at home after jobs 0-2, at 3: the makespan, 4, is above 3 x the lower bound.
    with pytest.raises(InvariantError, match=r"guarantee: makespan 4.0 exceeds 3 x the lower bound \(3.0\)"):
        emulator.run(data)


# -------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "change,message",
    [
        ({"protocol": {"name": "molba", "alpha": 0.5}}, r'protocol.alpha: must be "meta" or a number >= 1'),
        ({"protocol": {"name": "molba", "alpha": "fast"}}, "protocol.alpha: must be a number"),
        ({"protocol": {"name": "molba", "ilba": "yes"}}, "protocol.ilba: must be true or false"),
        (
            {"scheduler": {"name": "list"}},
            'scheduler.name: the molba protocol runs the schedule it plans: set scheduler.name = "planned"',
        ),
        ({"protocol": {"name": "local"}}, "scheduler.name: the planned scheduler starts only what a protocol planned"),
        (
            {"workload": {"kind": "poisson", "rate": 1.0, "jobs": 10}},
            "workload.kind: the molba protocol schedules off-line instances",
        ),
        (
            {"sites": {"count": 3, "procs": 4, "speed": [1.0, 2.0, 1.0]}},
            "sites.speed: the molba protocol needs identical processors",
        ),
    ],
)
def test_bad_settings_name_the_key(change, message):
    data = rigid(3, 4, 10)
    data.update(change)
    with pytest.raises(ScenarioError, match=message):
        load_scenario(data)


@pytest.mark.parametrize(
    "row,message",
    [
        (
            {"site": 0, "release": 5, "size": 1, "procs": 1},
            r"workload.list\[1\].release: the molba protocol's model has no release dates",
        ),
        (
            {"site": 0, "release": 0, "size": 1, "procs": 9},
            r"workload.list\[1\].procs: needs 9 processors but site site0 has 4",
        ),
        ({"site": 0, "release": 0, "size": 0, "procs": 1}, r"workload.list\[1\].size: must be > 0"),
        ({"site": 0, "release": 0, "size": 1, "procs": 0}, r"workload.list\[1\].procs: must be > 0"),
    ],
)
def test_bad_jobs_name_the_job(row, message):
    data = hand_made([(0, 1.0, 1)], n_sites=2, m=4)
    data["workload"]["list"].append(row)
    with pytest.raises(ScenarioError, match=message):
        emulator.run(data)


def test_cli_exits_2_on_a_bad_alpha(capsys):
    from gridemu.emulator.cli import main

    assert main(["validate", "molba", "--set", "protocol.alpha=0.5"]) == 2
    assert "protocol.alpha" in capsys.readouterr().err


def test_report_gantt_of_a_molba_run_shows_the_local_schedule_beside_the_executed_one(tmp_path, capsys):
    from gridemu.brokers.molba.protocol import local_table
    from gridemu.emulator.report import gantt_boxes, report

    data = rigid(4, 8, 24)
    result = emulator.run(data, out=tmp_path)
    report(tmp_path, gantt=True)
    assert (tmp_path / "gantt.png").stat().st_size > 10_000
    assert "Gantt chart written" in capsys.readouterr().out
    t0 = result.summary["protocol"]["plan_time"]
    local = local_table(result.jobs, [8] * 4, t0)
    inst, machines = instance_of(result)
    want = {j: start + t0 for j, (_, start, _) in thesis_plan(inst, machines, None, False).local.items()}
    assert dict(zip(local["job_id"], local["start"])) == pytest.approx(want)
    assert (local["exec_site"] == local["submit_site"]).all()
    assert (local["end"] - local["start"]).to_numpy() == pytest.approx(local["size"].to_numpy())
    # The local half's boxes: no two jobs on one processor at once (the executed run's
    # processors, which the job table records, are not the local schedule's).
    boxes = gantt_boxes(local, {s: 8 for s in range(4)})
    for _, part in boxes.groupby("site"):
        used = [(b.start, b.end, p) for b in part.itertuples() for p in range(b.proc, b.proc + b.count)]
        for (s1, e1, p1), (s2, e2, p2) in itertools.combinations(used, 2):
            assert p1 != p2 or e1 <= s2 + 1e-9 or e2 <= s1 + 1e-9


# ------------------------------------------------------------------ mode = "aggregates"


def test_aggregates_mode_moves_the_late_job_to_the_host_with_room_by_hand():
    # Four organizations of one processor; organization 0 has four jobs of length 1, the
    # others none: C_loc = 4, W̄ = 1, p_max = 1, so with α = 2 it is overloaded (4 > 3). Its
    # jobs start at 0, 1, 2, 3 alone; only the one starting after αW̄ = 2 (job 3) is offered,
    # to site 1 (the aggregator lists the hosts by C_loc, all 0: lowest id), which grants 0. From T0 = 7 latencies:
    # jobs 0-2 at home at 0, 1, 2 and job 3 at site 1 at 0; makespan 3 against 4 alone.
    data = hand_made([(0, 1.0, 1)] * 4, n_sites=4, m=1, latency=0.01)
    data["protocol"].update(mode="aggregates")
    r = emulator.run(data)
    t0 = plan_time(0.01, 1)
    got = executed(r, t0)
    assert {j: (s, round(start, 9)) for j, (s, start) in got.items()} == {
        0: (0, 0.0),
        1: (0, 1.0),
        2: (0, 2.0),
        3: (1, 0.0),
    }
    proto = r.summary["protocol"]
    assert proto["makespan"] == pytest.approx(3.0) and proto["makespan_local"] == 4.0
    # Three loads to the aggregator (site 0) and W̄, p_max back (site 0 is the overloaded one:
    # its hosts list stays inside it), then the offer: a request, a grant and the job.
    assert r.summary["global"]["messages"] == {"job": 1, "load": 3, "grid": 3, "request": 1, "grant": 1}


@settings(max_examples=25, deadline=None)
@given(
    st.integers(2, 6),
    st.sampled_from([1, 2, 4, 8]),
    st.lists(st.tuples(st.integers(0, 5), st.integers(1, 20), st.integers(1, 8)), min_size=1, max_size=20),
    st.sampled_from(["meta", 2, 3]),
    st.integers(0, 2),
)
def test_aggregates_mode_leaves_no_organization_worse_than_alone(n_sites, m, rows, alpha, retries):
    # The run itself raises on an organization that ends later than alone; here the same is
    # checked again from the job table, against the local schedule computed on its own.
    data = hand_made(overloaded_rows(rows, n_sites, m), n_sites, m, latency=0.1)
    data["protocol"].update(alpha=alpha, retries=retries, mode="aggregates")
    result = emulator.run(data)
    inst, machines = instance_of(result)
    local = thesis_plan(inst, machines, None, False).local  # the oracle's (brokers/molba/reference.py)
    t0 = result.summary["protocol"]["plan_time"]
    ends, alone = {}, {}
    for j in inst:
        alone[j.org] = max(alone.get(j.org, 0.0), local[j.id][1] + j.p)
    for r in result.jobs.itertuples():
        ends[int(r.submit_site)] = max(ends.get(int(r.submit_site), 0.0), float(r.end) - t0)
    for k, end in ends.items():
        assert end <= alone[k] + 1e-9
    assert result.summary["global"]["messages"].get("offer", 0) == 0  # no job is broadcast
