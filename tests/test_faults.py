"""Faults as part of a scenario ([faults], sites/faults.py): crashes, cut links, lost and late
messages. Small instances checked by hand, determinism over shards and backends, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gridemu.emulator as emulator
from gridemu.emulator.scenario import load_scenario
from gridemu.emulator.scenario_toml import to_toml
from gridemu.model.errors import ScenarioError
from gridemu.sites.faults import FaultPlan, SiteFaults
from tests.conftest import small_grid
from tests.golden import digest


def one_site(on_crash: str, crash: dict, procs: int = 2) -> dict:
    """One site of ``procs`` processors and three jobs: sizes 10 and 4 at t=0, 3 at t=5."""
    return {
        "sites": [{"name": "a", "procs": procs}],
        "workload": {
            "kind": "jobs",
            "list": [
                {"release": 0.0, "size": 10.0, "site": 0},
                {"release": 0.0, "size": 4.0, "site": 0},
                {"release": 5.0, "size": 3.0, "site": 0},
            ],
        },
        "faults": {"on_crash": on_crash, "crash": [crash]},
    }


def by_id(result) -> dict[int, tuple]:
    t = result.jobs.sort_values("job_id")
    return {int(j.job_id): (str(j.state), j.start, j.end) for j in t.itertuples()}


def test_a_crash_requeues_the_running_jobs_by_hand():
    # Down over [2, 5): jobs 0 and 1 (started at 0) are killed, 2 time units each lost; at the
    # repair both start again from scratch (0 first: it started first); job 2 (released at
    # the repair instant) queues behind them and starts when job 1 ends at 9.
    r = emulator.run(one_site("requeue", {"site": 0, "at": 2.0, "duration": 3.0}))
    assert by_id(r) == {0: ("done", 5.0, 15.0), 1: ("done", 5.0, 9.0), 2: ("done", 9.0, 12.0)}
    site = r.sites.iloc[0]
    assert (site.crashes, site.downtime, site.jobs_killed, site.jobs_lost, site.work_lost) == (1, 3.0, 2, 0, 4.0)
    assert r.outages.to_dict("list") == {"site_id": [0], "down": [2.0], "up": [5.0]}
    assert r.summary["global"]["faults"]["jobs_killed"] == 2


def test_a_crash_with_lose_ends_the_running_jobs_lost_by_hand():
    r = emulator.run(one_site("lose", {"site": 0, "at": 2.0, "duration": 3.0}))
    assert by_id(r) == {0: ("lost", 0.0, 2.0), 1: ("lost", 0.0, 2.0), 2: ("done", 5.0, 8.0)}
    assert r.summary["global"]["jobs_by_state"] == {"done": 1, "lost": 2}
    assert r.summary["global"]["faults"]["jobs_lost"] == 2
    assert r.summary["global"]["mean_flow_time"] == 3.0  # over the done job only


def test_a_site_down_for_good_keeps_what_it_holds_queued():
    # Down from t=1 with no repair and no horizon: the run ends, the killed jobs and job 2
    # (submitted while down) are queued there, none vanishes (conservation is checked).
    r = emulator.run(one_site("requeue", {"site": 0, "at": 1.0, "duration": math.inf}))
    assert {s for s, _, _ in by_id(r).values()} == {"queued"}
    assert bool(r.sites.iloc[0].down_at_end)


def test_a_site_down_holds_received_jobs_and_drops_reports():
    # Random broker over four sites; site 3 is down over [5, 40): every job sent to it then
    # waits for the repair, so none starts there inside the downtime.
    data = small_grid("random", jobs=300, sites=4, faults={"crash": [{"site": 3, "at": 5.0, "duration": 35.0}]})
    r = emulator.run(data)
    t = r.jobs
    at3 = t[t.exec_site == 3]
    assert not ((at3.start >= 5.0) & (at3.start < 40.0)).any()
    assert (at3.start == 40.0).any()  # the held jobs start at the repair
    assert (t.state == "done").all()

    # Averaging: load reports that reach a site while it is down are lost there.
    data = small_grid("averaging", jobs=300, sites=4, faults={"crash": [{"site": 2, "at": 30.0, "duration": 100.0}]})
    r = emulator.run(data)
    assert r.sites.set_index("site_id").loc[2, "messages_dropped_down"] > 0
    assert (r.jobs.state == "done").all()


def test_a_cut_link_loses_reports_and_holds_jobs():
    # Two groups cut apart over [0, 200): no load report crosses, so averaging moves nothing
    # between them; every report sent across is counted lost by its sender.
    data = small_grid(
        "averaging", jobs=400, sites=4, faults={"partition": [{"groups": [[0, 1]], "at": 0.0, "duration": 200.0}]}
    )
    r = emulator.run(data)
    t = r.jobs
    across = (t.submit_site < 2) != (t.exec_site < 2)
    assert across.any() and (t[across].start >= 200.0).all()  # moved only once the cut healed
    # Each site sends each round's report to 3 others, 2 of them across the cut.
    sites = r.sites.set_index("site_id")
    rounds_in_cut = sum(1 for k in range(1, 100) if 20.0 * k < 200.0)
    assert (sites["messages_lost"] >= 2 * rounds_in_cut).all()

    # The random broker's transfers over a cut link are delivered one latency after it ends.
    data = small_grid("random", jobs=200, sites=2, faults={"link": [{"sites": [0, 1], "at": 0.0, "duration": 30.0}]})
    r = emulator.run(data)
    t = r.jobs
    moved = t[(t.exec_site != t.submit_site) & (t.release < 30.0)]
    assert len(moved) and (moved.start >= 30.0 + 0.5).all()
    assert r.summary["global"]["faults"]["messages_late"] == len(moved)


def test_lost_and_late_messages_follow_their_probabilities():
    plan = FaultPlan(message_loss=0.3, message_delay=0.5, delay_max=2.0)
    f = SiteFaults(plan, 0, seed=1)
    fates = [f.fate(0.0, 0, 1, 1.0, 1.0, job=False) for _ in range(20000)]
    lost = sum(x is None for x in fates) / len(fates)
    assert abs(lost - 0.3) < 0.02
    delays = np.array([x - 1.0 for x in fates if x is not None])
    assert abs((delays > 0).mean() - 0.5) < 0.02 and delays.max() < 2.0
    jobs = [f.fate(0.0, 0, 1, 1.0, 1.0, job=True) for _ in range(2000)]
    assert None not in jobs  # a transfer is never lost, only late


def test_random_crashes_come_from_the_seed():
    plan = FaultPlan(mtbf=50.0, mttr=5.0)
    a, b = SiteFaults(plan, 3, seed=9), SiteFaults(plan, 3, seed=9)
    ta = [a.next_crash(0.0)]
    for _ in range(50):
        ta.append(a.next_crash(ta[-1][1]))
    tb = [b.next_crash(0.0)]
    for _ in range(50):
        tb.append(b.next_crash(tb[-1][1]))
    assert ta == tb
    gaps = np.array([n[0] - p[1] for p, n in zip(ta, ta[1:])])
    assert (gaps >= 0).all() and 25 < gaps.mean() < 100
    assert SiteFaults(plan, 4, seed=9).next_crash(0.0) != ta[0]  # each site its own stream


FAULTS = {
    "message_loss": 0.1,
    "message_delay": 0.2,
    "delay_max": 3.0,
    "mtbf": 150.0,
    "mttr": 10.0,
    "crash": [{"site": 1, "at": 40.0, "duration": 25.0}],
    "link": [{"sites": [0, 2], "at": 10.0, "duration": 50.0}],
    "partition": [{"groups": [[0, 1], [2]], "at": 100.0, "duration": 30.0}],
}


@pytest.mark.parametrize("protocol", ["random", "averaging", "local"])
def test_faults_give_one_job_table_for_any_shard_count(protocol):
    data = small_grid(protocol, jobs=500, sites=5, faults=FAULTS)
    tables = [digest(emulator.run(data, backend="inprocess", shards=k).jobs) for k in (1, 2, 5)]
    assert len(set(tables)) == 1
    r = emulator.run(data)
    assert r.summary["global"]["faults"]["crashes"] > 1
    assert digest(emulator.run(data, overrides={"run.seed": 8}).jobs) != tables[0]


def test_faults_give_the_same_job_table_on_ray(ray_session):
    data = small_grid("averaging", jobs=500, sites=5, faults=FAULTS)
    ray, here = emulator.run(data, backend="ray", shards=2), emulator.run(data)
    assert digest(ray.jobs) == digest(here.jobs)
    assert ray.outages.equals(here.outages) and len(here.outages) > 1


def test_the_outages_are_the_sites_crashes_and_downtime(tmp_path):
    # outages.parquet: one row per crash, by site and time; the sites' crashes count them and
    # their downtime sums them up to the horizon (none here: every repair comes).
    data = small_grid("averaging", jobs=500, sites=5, faults=FAULTS)
    r = emulator.run(data, backend="inprocess", shards=2, out=tmp_path / "r")
    out = r.outages
    assert list(out.columns) == ["site_id", "down", "up"] and len(out) == r.sites["crashes"].sum() > 1
    assert (out["up"] > out["down"]).all() and np.isfinite(out["up"]).all()
    assert out.sort_values(["site_id", "down"]).index.tolist() == list(range(len(out)))
    per_site = (out["up"] - out["down"]).groupby(out["site_id"]).sum()
    downtime = r.sites.set_index("site_id")["downtime"]
    assert np.allclose(per_site.reindex(downtime.index, fill_value=0.0), downtime)
    assert (1, 40.0, 65.0) in set(out.itertuples(index=False, name=None))  # the listed crash
    from gridemu.emulator.results import load

    assert load(tmp_path / "r").outages.equals(out)
    # Without [faults] there is no such file.
    plain = emulator.run(small_grid("averaging", jobs=100, sites=3), out=tmp_path / "p")
    assert plain.outages.empty and not (tmp_path / "p" / "outages.parquet").exists()


def test_the_report_marks_the_processors_down():
    import pandas as pd

    from gridemu.emulator.report import down_shares

    # Two sites of org0 (2 and 6 processors) and one of org1; site 1 down over [25, 75) of a
    # run of 100: in those bins 6 of org0's 8 processors are down, none of org1's.
    sites = pd.DataFrame({"site_id": [0, 1, 2], "owner": ["org0", "org0", "org1"], "procs": [2, 6, 4]})
    jobs = pd.DataFrame({"release": [0.0], "end": [100.0]})
    outages = pd.DataFrame({"site_id": [1], "down": [25.0], "up": [75.0]})
    down = down_shares(jobs, sites, outages, bins=4, per_bin=10)
    assert np.allclose(down, [[0.0, 0.75, 0.75, 0.0], [0.0, 0.0, 0.0, 0.0]])
    never = down_shares(jobs, sites, outages.assign(up=math.inf), bins=4, per_bin=10)  # never repaired
    assert np.allclose(never[0], [0.0, 0.75, 0.75, 0.75])


@pytest.mark.parametrize(
    ("faults", "key"),
    [
        ({"bogus": 1}, "faults.bogus"),
        ({"message_loss": 1.5}, "faults.message_loss"),
        ({"message_delay": 0.5}, "faults.delay_max"),
        ({"mtbf": 10.0}, "faults.mttr"),
        ({"on_crash": "explode"}, "faults.on_crash"),
        ({"crash": [{"site": 9, "at": 1.0, "duration": 1.0}]}, "faults.crash[0].site"),
        ({"crash": [{"site": 0, "at": 1.0}]}, "faults.crash[0].duration"),
        (
            {"crash": [{"site": 0, "at": 1.0, "duration": 5.0}, {"site": 0, "at": 3.0, "duration": 1.0}]},
            "faults.crash[1]",
        ),
        ({"link": [{"sites": [1, 1], "at": 0.0, "duration": 1.0}]}, "faults.link[0].sites"),
        ({"partition": [{"groups": [[0, 1], [1]], "at": 0.0, "duration": 1.0}]}, "faults.partition[0].groups[1][0]"),
        ({"crash": {"site": 0}}, "faults.crash"),
    ],
)
def test_bad_faults_name_the_key(faults, key):
    with pytest.raises(ScenarioError) as err:
        load_scenario(small_grid("random", sites=3, faults=faults))
    assert err.value.key == key


def test_protocols_that_wait_for_answers_refuse_faults():
    with pytest.raises(ScenarioError, match="does not run with faults") as err:
        load_scenario("gm-grid", overrides={"faults.message_loss": 0.1})
    assert err.value.key == "faults"


def test_a_run_with_faults_resumes_to_the_same_job_table(tmp_path):
    from tests.test_checkpoint import stop_at

    data = small_grid("averaging", jobs=500, sites=5, faults=FAULTS)
    whole = emulator.run(data, shards=2)
    with pytest.raises(KeyboardInterrupt):
        emulator.run(data, shards=2, out=tmp_path / "r", checkpoint=0, on_progress=stop_at(40))
    assert digest(emulator.resume(tmp_path / "r").jobs) == digest(whole.jobs)


def test_a_stuck_periodic_run_stops_and_strict_exits_1(tmp_path, capsys):
    # Site 2 is down for good from t=20 and holds what it was sent; averaging's timers would
    # go on forever at the other sites. The run stops once nothing can move a job.
    import signal

    from gridemu.emulator.cli import main

    data = small_grid("averaging", jobs=200, sites=3, faults={"crash": [{"site": 2, "at": 20.0, "duration": math.inf}]})

    def hang(*_):
        raise AssertionError("a stuck run did not stop")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    try:
        r = emulator.run(data)
        path = tmp_path / "stuck.toml"
        path.write_text(to_toml(data))
        code = main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet", "--strict"])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    g = r.summary["global"]
    assert g["stalled_at"] > 20.0 and g["jobs_by_state"]["queued"] > 0
    assert g["jobs_by_state"]["queued"] + g["jobs_by_state"]["done"] == 200
    assert code == 1
    assert "no job could move any more" in capsys.readouterr().err


def test_a_listed_crash_that_began_during_another_starts_at_the_repair():
    # A random crash (drawn first) that lasts past a listed crash's start: the listed one
    # then begins at the repair instant and keeps its end; one wholly inside is dropped.
    plan = FaultPlan(crashes=((0, 10.0, 50.0), (0, 12.0, 15.0)))
    f = SiteFaults(plan, 0, seed=1)
    f._random_next = (5.0, 20.0)  # as if drawn: down over [5, 20)
    assert f.next_crash(0.0) == (5.0, 20.0)
    assert f.next_crash(20.0) == (20.0, 50.0)  # [10, 50) from the repair at 20
    assert f.next_crash(50.0) is None  # [12, 15) ended while down


def test_the_report_of_a_run_with_faults_reads_its_outages(tmp_path, monkeypatch):
    import pandas as pd

    import gridemu.emulator.report as report_module

    data = small_grid("averaging", jobs=300, sites=5, faults=FAULTS)
    emulator.run(data, out=tmp_path / "r")
    seen = []
    real = report_module.down_shares
    monkeypatch.setattr(report_module, "down_shares", lambda *a, **k: seen.append(a[2]) or real(*a, **k))
    report_module.report(tmp_path / "r")
    assert len(seen) == 1 and seen[0].equals(pd.read_parquet(tmp_path / "r" / "outages.parquet"))
    assert (tmp_path / "r" / "report.png").is_file()
