"""Grid-wide fairshare in the emulator: the fairshare scheduler, usage reports, shares over time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gridemu.emulator as emulator
from gridemu.experiments.fairshare_grid import LEAVES, TREE, grid
from gridemu.model.errors import ScenarioError
from gridemu.sites.fairshare_forms import figure_2_xml


def final(result) -> dict[str, float]:
    return {e: v["final_share"] for e, v in result.summary["policy"]["entries"].items()}


def test_shares_converge_to_the_targets_at_every_level():
    result = emulator.run(grid())
    shares = final(result)
    targets = {e: v["target"] for e, v in result.summary["policy"]["entries"].items()}
    for entry, share in shares.items():
        assert abs(share - targets[entry]) < 0.03, (entry, share, targets[entry])
    ts = result.timeseries
    assert set(ts.columns) >= {"time", "entry", "share", "target", "usage"}
    assert set(ts["entry"]) == set(targets)
    # usage is grid-wide and cumulative: it never decreases
    for _, part in ts.groupby("entry"):
        assert (part["usage"].diff().dropna() >= -1e-6).all()


def test_the_least_favored_entry_starts_first():
    # One site, one processor, a policy A 50 / B 50 (local scope). A's first job runs 0-100;
    # at 100 A has used 100 and B nothing, so B's job (queued at 1) starts before A's second.
    data = {
        "sites": {"count": 1, "procs": 1},
        "scheduler": {"name": "fairshare"},
        "policy": {
            "tree": {
                "name": "R",
                "type": "resource",
                "children": [{"name": "A", "type": "group", "share": 50}, {"name": "B", "type": "group", "share": 50}],
            }
        },
        "workload": {
            "kind": "jobs",
            "list": [
                {"site": 0, "release": 0, "size": 100, "group": "A"},
                {"site": 0, "release": 0.5, "size": 10, "group": "A"},
                {"site": 0, "release": 1, "size": 10, "group": "B"},
            ],
        },
    }
    jobs = emulator.run(data).jobs.set_index("job_id")
    assert list(jobs["start"]) == [0.0, 110.0, 100.0]


def test_usage_reports_compensate_an_imbalanced_workload():
    # P-A2 submits to site 0 only. With reports (global usage) it gets near its 30 % of VO-A;
    # with local usage only it gets about its share of site 0's VO-A capacity: a third.
    streams = [
        {
            "group": g,
            "interval": 20.0,
            "size": 600.0,
            "spread": 0.4,
            "overestimate": [0.2, 0.4],
            **({"sites": [0]} if g == "VO-A/P-A2" else {}),
        }
        for g in LEAVES
    ]
    with_reports = final(emulator.run(grid(hours=12, streams=streams)))["VO-A/P-A2"]
    local_only = final(emulator.run(grid(hours=12, streams=streams, exchange="none")))["VO-A/P-A2"]
    assert abs(with_reports - 0.30) < 0.03
    assert local_only < 0.15  # about 0.3 / 3
    service = final(emulator.run(grid(hours=12, streams=streams, exchange="service")))["VO-A/P-A2"]
    assert abs(service - 0.30) < 0.04


def late_shares(result) -> dict[str, float]:
    """Each entry's share of its parent's usage over the second half of the run."""
    ts = result.timeseries
    end, mid = ts["time"].max(), ts["time"].max() / 2
    grown = {}
    for entry, part in ts.groupby("entry"):
        u = part.set_index("time")["usage"]
        grown[entry] = u.loc[end] - u[u.index <= mid].iloc[-1]
    parent = lambda e: e.rsplit("/", 1)[0] if "/" in e else None
    total = {p: sum(v for e, v in grown.items() if parent(e) == p) for p in {parent(e) for e in grown}}
    return {e: v / total[parent(e)] for e, v in grown.items()}


def test_an_idle_projects_share_goes_to_its_active_siblings_only():
    streams = [
        {"group": g, "interval": 20.0, "size": 600.0, "spread": 0.4, **({"stop": 600.0} if g == "VO-A/P-A3" else {})}
        for g in LEAVES
    ]
    shares = late_shares(emulator.run(grid(hours=10, streams=streams)))
    # P-A3 (20 % of VO-A) idles: its share goes to P-A1 and P-A2, 10 points each (subgroup
    # isolation, the paper's Figure 13); VO-A keeps 30 % and VO-B's projects are untouched.
    assert shares["VO-A/P-A3"] == 0.0
    assert shares["VO-A/P-A1"] == pytest.approx(0.60, abs=0.03) and shares["VO-A/P-A2"] == pytest.approx(0.40, abs=0.03)
    assert shares["VO-A"] == pytest.approx(0.30, abs=0.02) and shares["VO-B/P-B1"] == pytest.approx(0.60, abs=0.03)


def hand_usage(
    site, groups: list[str], now: float, approach: str, window: tuple[float, int, float] | None
) -> dict[str, float]:
    """Usage per leaf entry at ``now``, by hand from the site's own job lifecycle (its start
    and end columns, not the scheduler's records), as the fairshare paper defines it.

    Section 5.1 [641-647]: historical = completed jobs; active = plus the elapsed time of
    running jobs; predictive = plus each running job's requested wallclock time. Section
    3.2 [460-464] (Maui's FSINTERVAL, FSDEPTH, FSDECAY): ``count`` windows of ``length``
    seconds, window k weighted ``decay**k``. The paper fixes neither where windows start nor
    how the predicted walltime is spread over them; the reading used is the one documented
    in sites/fairshare.py: window k = [now - (k+1)·length, now - k·length) (sliding, not
    aligned to absolute interval boundaries as in Maui), the whole walltime counted in
    window 0. ``window`` None: one infinite window (the simulations' "single usage history
    window" [621-622]): plain processor-seconds.
    """
    n = site.n_local
    start = np.asarray(site.r_start[:n], dtype=float)
    end = np.asarray(site.r_end[:n], dtype=float)
    procs = np.asarray(site.c_procs[:n], dtype=float)
    wall = np.asarray(site.c_walltime[:n], dtype=float)
    entry = [groups[g] for g in site.c_group[:n]]  # grid(): every group path is a leaf's path
    begun = ~np.isnan(start) & (start <= now)
    completed = begun & (end <= now)
    running = begun & ~completed
    # The interval [a, b) of each job that counts against the windows.
    a = np.where(begun, start, 0.0)
    b = np.where(completed, end, np.where(running & (approach == "active"), now, a))
    if window is None:
        timed = b - a  # every interval lies before now: all of it counts
    else:
        length, count, decay = window
        timed = np.zeros(n)
        for k in range(count):  # every window, whether the job overlaps it or not
            lo, hi = now - (k + 1) * length, now - k * length
            timed += decay**k * np.clip(np.minimum(b, hi) - np.maximum(a, lo), 0.0, None)
    used = procs * timed
    if approach == "predictive":
        used = np.where(running, procs * wall, used)
    out: dict[str, float] = {}
    for e, u in zip(entry, used):
        out[e] = out.get(e, 0.0) + float(u)
    return out


@pytest.mark.parametrize("window", [None, (600.0, 3, 0.5), (450.0, 4, 0.7)])
def test_scheduler_usage_is_the_papers_usage(window):
    """The fairshare scheduler's usage per entry (what it schedules and reports with) equals
    the paper's historical, active and predictive usage computed by hand from the site's job
    lifecycle (:func:`hand_usage`), with windows (the scheduler's record path) and with one
    infinite window (its running totals), at two times of a one-site run."""
    policy = {} if window is None else {"window": dict(zip(("length", "count", "decay"), window))}
    data = grid(hours=2, sites=1, exchange="none", approach="active", **policy)
    from gridemu.emulator.engine import build_shard_specs
    from gridemu.emulator.scenario import load_scenario
    from gridemu.emulator.shard import Shard
    from gridemu.scenarios.workload import generate_jobs

    sc = load_scenario(data)
    jobs, groups = generate_jobs(sc)
    shard = Shard(build_shard_specs(sc, jobs, 1, groups=groups)[0])
    site = shard.engine.sites[0]
    sched = site.scheduler
    for now in (3000.5, 4321.7):  # not on a release (every 20 s): no event at now itself
        shard.step(now)  # every event before now is handled
        n = site.n_local
        assert 40 < np.count_nonzero(np.asarray(site.r_end[:n]) <= now)  # many completed, windows cut some
        assert np.count_nonzero(np.asarray(site.r_start[:n]) <= now) > np.count_nonzero(
            np.asarray(site.r_end[:n]) <= now
        )  # and some run
        for approach in ("historical", "active", "predictive"):
            want = hand_usage(site, groups, now, approach, window)
            got = sched.usage(now, approach)
            assert set(got) <= set(want), approach
            assert sum(want.values()) > 0
            for entry, u in want.items():
                assert got.get(entry, 0.0) == pytest.approx(u, rel=1e-12, abs=1e-9), (approach, entry, now)


def test_same_job_table_for_any_backend_and_shard_count(ray_session):
    data = grid(hours=2, sites=3)
    cols = ["job_id", "exec_site", "start", "end", "state"]
    base = emulator.run(data, shards=1)
    for backend, shards in (("inprocess", 3), ("ray", 2)):
        other = emulator.run(data, backend=backend, shards=shards)
        pd.testing.assert_frame_equal(base.jobs[cols], other.jobs[cols])
        assert other.summary["policy"] == base.summary["policy"]


def test_jobs_that_map_nowhere_go_to_the_default_entry_and_are_counted():
    streams = [{"group": g, "interval": 120.0, "size": 600.0} for g in LEAVES + ["VO-C/P-C1"]]
    result = emulator.run(grid(hours=2, streams=streams, default="VO-B/P-B2"))
    assert result.summary["policy"]["jobs_to_default_entry"] == 60  # 7200 / 120 jobs of VO-C
    with pytest.raises(ScenarioError, match=r"policy.default: jobs of group 'VO-C/P-C1' map to no policy entry"):
        emulator.run(grid(hours=2, streams=streams))


def test_xml_policy_files_equal_the_toml_tree(tmp_path):
    resource, vo_a, vo_b = figure_2_xml()
    for name, text in (("resource.xml", resource), ("vo-a.xml", vo_a), ("vo-b.xml", vo_b)):
        (tmp_path / name).write_text(text)
    from gridemu.emulator.scenario import load_scenario
    from gridemu.sites.fairshare_runtime import build

    conf = {
        "file": str(tmp_path / "resource.xml"),
        "providers": {
            "http://vo-a.org/policy-provider": {"file": str(tmp_path / "vo-a.xml")},
            "http://vo-b.org/policy-provider": {"file": str(tmp_path / "vo-b.xml")},
        },
        "default": "Local",
    }
    rt = build(conf, ["VO-A/P-A1/U-A11", "VO-B/P-B3", "Local", "nobody"])
    assert rt.entry_of_group == ["VO-A/P-A1/U-A11", "VO-B/P-B3", "Local", "Local"]
    assert rt.group_unmapped == [False, False, False, True]
    assert rt.targets["VO-B/P-B1"] == 0.6 and rt.depth == 3
    load_scenario(grid(hours=1) | {"policy": conf})  # a scenario takes the files as they are


def test_a_policy_files_errors_name_the_file(tmp_path):
    from gridemu.model.errors import ScenarioError
    from gridemu.sites.fairshare_runtime import build

    resource, vo_a, _ = figure_2_xml()
    (tmp_path / "empty.xml").write_text("")  # read as TOML, it said "no [policy] table"
    (tmp_path / "vo-a.xml").write_text(vo_a.replace('share="50"', 'share="40"', 1))
    with pytest.raises(ScenarioError, match=r"policy.file: .*empty.xml: policy: expected one <policy-entry>"):
        build({"file": str(tmp_path / "empty.xml")}, ["x"])
    (tmp_path / "resource.xml").write_text(resource)
    providers = {"http://vo-a.org/policy-provider": {"file": str(tmp_path / "vo-a.xml")}}
    # The shares' sum is checked as the file is read, so the error says which file.
    where = r"policy.providers.http://vo-a.org/policy-provider.file: .*vo-a.xml: .*add up to 90"
    with pytest.raises(ScenarioError, match=where):
        build({"file": str(tmp_path / "resource.xml"), "providers": providers}, ["x"])


@pytest.mark.parametrize(
    "change,message",
    [
        ({"tree": {**TREE, "children": [{**TREE["children"][0], "share": -30}, TREE["children"][1]]}}, "share"),
        ({"tree": {**TREE, "children": [TREE["children"][0], {**TREE["children"][1], "share": 60}]}}, "add up to 90"),
        (
            {
                "tree": {
                    **TREE,
                    "children": [{"name": "VO-A", "type": "VO", "share": 30, "ref": "nowhere"}, TREE["children"][1]],
                }
            },
            "unknown policy reference 'nowhere'",
        ),
        ({"approach": "recent"}, "policy.approach: unknown value 'recent'"),
        ({"window": {"length": 600.0, "decay": 1.5}}, r"policy.window.decay: must be in \(0, 1\]"),
        ({"default": "VO-Z"}, "policy.default: no entry 'VO-Z'"),
        ({"colour": 1}, "policy.colour: unknown key"),
    ],
)
def test_bad_policies_name_the_key_or_entry(change, message):
    data = grid(hours=1)
    data["policy"].update(change)
    with pytest.raises(ScenarioError, match=message):
        emulator.run(data)


def test_a_policy_reference_cycle_is_an_error():
    data = grid(hours=1)
    data["policy"]["tree"] = {
        **TREE,
        "children": [{"name": "VO-A", "type": "VO", "share": 30, "ref": "A"}, TREE["children"][1]],
    }
    data["policy"]["providers"] = {
        "A": {
            "tree": {
                "name": "A",
                "type": "subpolicy",
                "children": [{"name": "X", "type": "p", "share": 100, "ref": "B"}],
            }
        },
        "B": {
            "tree": {
                "name": "B",
                "type": "subpolicy",
                "children": [{"name": "Y", "type": "p", "share": 100, "ref": "A"}],
            }
        },
    }
    with pytest.raises(ScenarioError, match="cycle"):
        emulator.run(data)


@pytest.mark.parametrize(
    "change,message",
    [
        ({"scheduler": {"name": "fcfs"}}, 'scheduler.name: the fairshare protocol serves the fairshare scheduler'),
        ({"protocol": {"name": "fairshare", "exchange": "rumor"}}, "protocol.exchange: unknown value 'rumor'"),
        ({"protocol": {"name": "fairshare", "refresh": 0}}, "protocol.refresh: must be > 0"),
    ],
)
def test_bad_settings_name_the_key(change, message):
    data = grid(hours=1)
    data.update(change)
    with pytest.raises(ScenarioError, match=message):
        emulator.run(data)


def test_the_fairshare_scheduler_needs_a_policy():
    data = grid(hours=1)
    del data["policy"]
    data["protocol"] = {"name": "local"}
    with pytest.raises(ScenarioError, match=r"scheduler.name: the fairshare scheduler needs a share policy"):
        emulator.run(data)


def served_by_site_1(data: dict) -> None:
    """Mount VO-A's projects from a provider whose subpolicy site 1 serves."""
    import copy

    tree = copy.deepcopy(TREE)
    projects = tree["children"][0].pop("children")
    tree["children"][0].pop("scope")
    tree["children"][0]["ref"] = "A"
    data["policy"]["tree"] = tree
    data["policy"]["providers"] = {
        "A": {"site": 1, "tree": {"name": "A", "type": "subpolicy", "scope": "global", "children": projects}}
    }


def test_subpolicies_reach_the_sites_by_message_and_mount_then(monkeypatch):
    """VO-A's subpolicy is served by site 1. The other sites ask for it at 0 and get it one
    round trip later (2 × latency): only then do VO-A's jobs go to the projects' queues."""
    from gridemu.sites.schedulers import FairshareScheduler

    mounted: list[tuple[int, str, int]] = []
    real = FairshareScheduler.mount

    def record(self, point):
        waiting_at_point = len(self.queues[point])
        real(self, point)
        mounted.append((self.site.site_id, point, waiting_at_point))

    monkeypatch.setattr(FairshareScheduler, "mount", record)
    data = grid(hours=3)
    data["network"]["latency"] = 300.0
    served_by_site_1(data)
    result = emulator.run(data)
    assert sorted((k, p) for k, p, _ in mounted) == [(0, "VO-A"), (2, "VO-A")]
    assert all(n > 0 for _, _, n in mounted)  # VO-A's jobs waited at the mount point until then
    msgs = result.summary["global"]["messages"]
    assert msgs["request"] == 2 * 3  # two sites, at 0, 1 h and 2 h
    assert msgs["offer"] == 2 * 3 * 4  # three projects and a closing row per answer
    assert abs(final(result)["VO-A/P-A1"] - 0.5) < 0.05


def test_subpolicies_travel_hop_by_hop_over_a_ring(monkeypatch):
    """Five sites on a ring, VO-A's subpolicy served by site 1. Sites 0 and 2 ask site 1 and
    mount after one round trip (600 s); sites 3 and 4 are two hops away: they ask 2 and 0,
    whose own requests are on their way, and get the copy forwarded when it comes (900 s)."""
    from gridemu.brokers.fairshare.agent import FairshareAgent

    mounted: dict[int, float] = {}
    real = FairshareAgent.on_offer

    def record(self, now, msg):
        real(self, now, msg)
        if msg.last == 1.0:
            mounted.setdefault(self.site.site_id, now)

    monkeypatch.setattr(FairshareAgent, "on_offer", record)
    data = grid(hours=3)
    data["sites"]["count"] = 5
    data["network"] = {"latency": 300.0, "topology": "ring"}
    data["protocol"]["exchange"] = "none"
    served_by_site_1(data)
    result = emulator.run(data)
    assert mounted == {0: 600.0, 2: 600.0, 3: 900.0, 4: 900.0}
    msgs = result.summary["global"]["messages"]
    assert msgs["request"] == 4 * 3  # four sites at 0, 1 h and 2 h; nobody asks twice
    assert msgs["offer"] == 4 * msgs["request"]  # three projects and a closing row per answer


def test_a_group_that_leaves_the_tree_at_an_inner_entry_is_warned_about(capsys):
    # 'P-A1x' is a typo of 'P-A1': by the paper's rule its jobs count at VO-A; the run says so.
    from gridemu.emulator.scenario import load_scenario
    from gridemu.sites.fairshare_runtime import build

    sc = load_scenario("fairshare-imbalanced")
    rt = build(sc.data["policy"], ["VO-A/P-A1x", "VO-A/P-A1", "VO-B/P-B1/U-B11/x", "VO-A"], sc.folder)
    assert list(rt.partial) == ["VO-A/P-A1x"]  # a leaf, or the entry itself, is no typo
    assert rt.entry_of_group[0] == "VO-A"
    streams = [{"group": "VO-A/P-A1x", "sites": [0, 1], "interval": 30.0, "size": 60.0}]
    emulator.run("fairshare-imbalanced", overrides={"workload.streams": streams, "run.horizon": 600.0})
    err = capsys.readouterr().err
    assert "'P-A1x' is none of its children (P-A1, P-A2, P-A3)" in err


@pytest.mark.parametrize(
    "call",
    [
        lambda v: v.policy_entries(),
        lambda v: v.usage_report(0.0),
        lambda v: v.cache_usage(0, {"VO-A": 1.0}),
        lambda v: v.mount_subpolicy("VO-A"),
    ],
)
def test_the_views_fairshare_methods_name_the_scheduler_they_need(call):
    from gridemu.model.jobs import empty_jobs
    from gridemu.sites.site import Site
    from gridemu.sites.spec import SiteSpec
    from gridemu.sites.view import SiteView

    view = SiteView(Site(SiteSpec(0, "s0", "o0", (1.0,), "fcfs"), empty_jobs(0), 1.0, 0))
    with pytest.raises(
        ScenarioError, match=r"scheduler.name: site s0: \w+ needs the fairshare scheduler .* not 'fcfs'"
    ):
        call(view)


def test_the_views_usage_cache_updates_or_replaces_a_sources_figures(monkeypatch):
    """cache_usage replaces the named entries' figures under a source and keeps the others;
    replace_usage drops what the new figures lack."""
    from gridemu.brokers.fairshare.agent import FairshareAgent

    checked = []
    real = FairshareAgent.on_start

    def check(self, now):
        # During the run: once it is over, the sites are freed (SiteEngine.close) and a view
        # kept from them answers nothing.
        if not checked:
            view = self.site
            entries = view.policy_entries()
            assert entries[:2] == ("VO-A", "VO-A/P-A1") and view.mount_points() == {}
            view.cache_usage(7, {"VO-A": 1.0, "VO-B": 2.0})
            view.cache_usage(7, {"VO-B": 3.0})
            assert view.cached_usage(7) == {"VO-A": 1.0, "VO-B": 3.0}
            view.replace_usage(7, {"VO-B": 4.0})
            assert view.cached_usage(7) == {"VO-B": 4.0} and view.cached_usage(8) == {}
            checked.append(True)
        real(self, now)

    monkeypatch.setattr(FairshareAgent, "on_start", check)
    emulator.run(grid(hours=0.1, sites=2, exchange="none"))
    assert checked


def test_a_bad_policy_file_exits_2_naming_the_key_and_the_file(tmp_path, capsys):
    from gridemu.emulator import cli

    resource, _, _ = figure_2_xml()
    (tmp_path / "bad.xml").write_text(resource.replace('share="50"', 'share="40"', 1))  # 90 in all
    (tmp_path / "empty.xml").write_text("")
    for name, needle in (("bad.xml", "add up to"), ("empty.xml", "expected one <policy-entry>")):
        scenario = tmp_path / f"{name}.toml"
        scenario.write_text(
            '[sites]\ncount = 2\nprocs = 2\n[scheduler]\nname = "fairshare"\n'
            '[workload]\nkind = "poisson"\nrate = 0.5\nuntil = 50\n'
            f'[protocol]\nname = "fairshare"\n[policy]\nfile = "{tmp_path / name}"\n'
        )
        assert cli.main(["validate", str(scenario)]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("gridemu: error: policy.file: ") and name in line and needle in line, line
