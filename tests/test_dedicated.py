"""The ``dedicated`` protocol (thesis ch. 3): the workload, the game over messages, and what
the summary checks. The expected figures are computed here from the job table and from
explicit job lists, not from the agents' records, with the oracle written from the text apart
from the agents' code (``brokers/scheduling_game/reference.py``)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import gridemu.emulator as emulator
from gridemu.brokers.scheduling_game import reference as ref
from gridemu.brokers.scheduling_game.game import MOVES
from gridemu.brokers.scheduling_game.protocol import MAX_STEPS
from gridemu.emulator.cli import main
from gridemu.model.errors import ScenarioError
from gridemu.scenarios.dedicated import check_dedicated, dedicated_jobs
from gridemu.sites.spec import SiteSpec


def game(strategy, rounds: int = 6, sites: int = 3, n: int = 6, **protocol) -> dict:
    return {
        "run": {"seed": 5, "backend": "inprocess"},
        "network": {"latency": 0.01},
        "sites": {"count": sites, "procs": 1},
        "scheduler": {"name": "planned"},
        "workload": {"kind": "dedicated", "jobs_per_machine": n, "max_size": 10, "rounds": rounds},
        "protocol": {"name": "scheduling_game", "strategy": strategy, **protocol},
    }


def rounds_of(result) -> list[dict]:
    return result.summary["protocol"]["per_round"]


def payoffs(result) -> np.ndarray:
    """u[r, k] from summary.json."""
    rows = rounds_of(result)
    out = np.zeros((max(r["round"] for r in rows) + 1, max(r["org"] for r in rows) + 1))
    for r in rows:
        out[r["round"], r["org"]] = r["u"]
    return out


def test_a_round_holds_n_jobs_per_machine_split_among_the_owners():
    sites = [SiteSpec(i, f"s{i}", f"o{i}", (1.0,), "planned") for i in range(3)]
    wl = {"kind": "dedicated", "jobs_per_machine": 7, "rounds": 2}
    jobs, groups = dedicated_jobs(wl, sites, seed=3)
    assert wl["period"] == 2 * 7 * 10 and groups == ["o0", "o1", "o2"]
    assert len(jobs) == 2 * 3 * 7 and set(jobs["release"]) == {0.0, 140.0}
    for r in (0.0, 140.0):
        per_machine = Counter(jobs["target_site"][jobs["release"] == r].tolist())
        assert per_machine == {0: 7, 1: 7, 2: 7}
    assert set(jobs["size"]) <= set(range(1, 11)) and (jobs["owner"] == jobs["submit_site"]).all()


def test_two_organizations_own_a_uniform_share_of_each_machine():
    # Section 3.7.1: n_{1,l} is uniform over {0, ..., n}.
    sites = [SiteSpec(i, f"s{i}", f"o{i}", (1.0,), "planned") for i in range(2)]
    counts = Counter()
    for seed in range(300):
        jobs, _ = dedicated_jobs({"kind": "dedicated", "jobs_per_machine": 4, "rounds": 1}, sites, seed)
        for l in (0, 1):
            counts[int(((jobs["target_site"] == l) & (jobs["owner"] == 0)).sum())] += 1
    assert set(counts) == {0, 1, 2, 3, 4}
    assert all(abs(c - 120) < 45 for c in counts.values()), counts  # 600 draws, 120 expected each


@pytest.mark.parametrize(
    "wl, key",
    [
        ({"kind": "dedicated"}, "workload.jobs_per_machine"),
        ({"kind": "dedicated", "jobs_per_machine": -2}, "workload.jobs_per_machine"),
        ({"kind": "dedicated", "jobs_per_machine": 3, "instance": "pareto"}, "workload.instance"),
        ({"kind": "dedicated", "jobs_per_machine": 3, "period": 0}, "workload.period"),
    ],
)
def test_bad_dedicated_workloads_name_the_key(wl, key):
    sites = [SiteSpec(i, f"s{i}", f"o{i}", (1.0,), "planned") for i in range(2)]
    with pytest.raises(ScenarioError, match=key.replace(".", r"\.")):
        check_dedicated(wl, sites)


def round_jobs(result, r: int):
    """Round r's rows of jobs.parquet (organization k submits at site k)."""
    jobs = result.jobs
    return jobs[np.isclose(jobs["release"], r * result.summary["protocol"]["period"])]


def executed_sums(result, r: int, n: int) -> np.ndarray:
    """C_{k,l} of round r from jobs.parquet: ends minus the first start on each machine
    (every machine starts its round at the same instant S and never idles within it)."""
    mine = round_jobs(result, r)
    s0 = mine["start"].min()
    out = np.zeros((n, n))
    for (owner, machine), part in mine.groupby(["submit_site", "exec_site"]):
        out[owner, machine] = (part["end"] - s0).sum()
    return out


def machines_and_runs(result, r: int, n: int) -> tuple[list[list[ref.Job]], list[ref.Order]]:
    """Round r from jobs.parquet alone: each machine's jobs as (owner, size), and the order it
    ran them in (by start time)."""
    mine = round_jobs(result, r).sort_values(["start", "job_id"])
    machines: list[list[ref.Job]] = [[] for _ in range(n)]
    for owner, machine, size in zip(mine["submit_site"], mine["exec_site"], mine["size"]):
        machines[int(machine)].append((int(owner), float(size)))
    return machines, [tuple(jobs) for jobs in machines]


def oracle_proposal(machines: list[list[ref.Job]], proposal: str, pick: str) -> list[ref.Grid]:
    """Every σ* the text allows the grid scheduler: by exhaustive search for the exact
    proposal (``dyn``), among the oracle's own AEW walk for ``aew`` (as long as the agents'
    walks: the protocol's declared MAX_STEPS)."""
    if proposal == "dyn":
        return ref.brute_force_proposal(machines, pick)
    assert proposal == "aew"
    return ref.proposal_among(machines, ref.thesis_aew(machines, MAX_STEPS), pick)


def replay(result, strategies: list[str], pick: str, proposal: str = "dyn") -> dict[tuple[int, int], dict]:
    """The game as the oracle (``brokers/scheduling_game/reference.py``) plays it over the
    run's own jobs, round by round: σ* (:func:`oracle_proposal`), each machine's move from
    its owner's strategy and the promises broken before, and what each organization saw and
    gained. Per (round, org): ``move``, ``broken``, ``u``.

    The run must match it: every machine ran the order of its move (for ``follow``, one of
    the σ* the text allows: ties in the pick are left open by section 3.7.1, and one σ* is
    proposed to all machines). Where such a tie decides whether a promise was broken, the
    oracle accepts each count the tie allows and goes on with the one the run took."""
    n = len(strategies)
    agents = {(int(row.period), int(row.site)): row for row in result.timeseries.itertuples()}
    history: list[list[int]] = [[] for _ in range(n)]
    out = {}
    for r in range(result.summary["protocol"]["rounds_scored"]):
        machines, ran = machines_and_runs(result, r, n)
        c_exec = executed_sums(result, r, n)
        best = oracle_proposal(machines, proposal, pick)
        moves = [ref.thesis_next_move(strategies[l], history[l]) for l in range(n)]
        for l, move in enumerate(moves):
            allowed = {
                "follow": {grid[l] for grid in best},
                "mjf": {ref.thesis_mjf(machines[l], l)},
                "spt": {ref.thesis_spt(machines[l])},
            }[move]
            assert ran[l] in allowed, (r, l, move, ran[l], allowed)
        proposed = [grid for grid in best if all(grid[l] == ran[l] for l in range(n) if moves[l] == "follow")]
        assert proposed, (r, "the followers ran parts of different proposals")
        c_mjf = ref.grid_costs(ref.mjf_grid(machines), n)
        for k in range(n):
            has = [l for l in range(n) if any(owner == k for owner, _ in machines[l])]
            u = float(c_mjf[k].sum() - c_exec[k].sum())
            out[(r, k)] = {"move": moves[k], "u": u, "broken": None}
            if not has:
                continue
            counts = {
                sum(ref.thesis_broke_promise(c_exec[k, l], ref.owner_sums(grid[l], n)[k]) for l in has if l != k)
                for grid in proposed
            }
            agent = agents.get((r, k))  # the last round's may be missing: its news came after the run
            if len(counts) > 1:
                assert agent is not None and int(agent.broken) in counts, (r, k, agent, counts)
                counts = {int(agent.broken)}
            out[(r, k)]["broken"] = counts.pop()
            history[k].append(out[(r, k)]["broken"])
    return out


def check_against_the_oracle(
    result, strategies: list[str], pick: str, proposal: str = "dyn"
) -> dict[tuple[int, int], dict]:
    """The agents' records (timeseries) and summary.json's rows against :func:`replay`."""
    want = replay(result, strategies, pick, proposal)
    agents = {(int(row.period), int(row.site)): row for row in result.timeseries.itertuples()}
    for row in rounds_of(result):
        key = (row["round"], row["org"])
        assert row["move"] == want[key]["move"], (key, row, want[key])
        assert row["u"] == pytest.approx(want[key]["u"], abs=1e-6), (key, row, want[key])
        agent = agents.get(key)
        if want[key]["broken"] is not None and agent is not None:
            assert (MOVES[int(agent.move)], int(agent.broken)) == (want[key]["move"], want[key]["broken"]), key
            assert row["broken"] == want[key]["broken"] and agent.level == pytest.approx(want[key]["u"], abs=1e-6)
    scored = sum(w["broken"] is not None for w in want.values())
    assert len(agents) >= scored - len(strategies), "the agents recorded too few rounds"
    return want


def test_followers_run_the_proposal_and_every_promise_holds():
    result = emulator.run(game("follow"))
    rows = rounds_of(result)
    assert {r["move"] for r in rows} == {"follow"} and all(r["broken"] == 0 for r in rows)
    for r in rows:
        assert r["C"] == pytest.approx(r["C_proposal"], abs=1e-6)
    # AEW's proposal, recomputed by the oracle from the job table alone, is what the machines
    # ran: SPT-consistent (Proposition 3.1) and acceptable to every organization (section 3.6).
    want = check_against_the_oracle(result, ["follow"] * 3, "min-max", "aew")
    assert all(w["broken"] in (0, None) and w["u"] >= -1e-6 for w in want.values())
    for r in range(6):
        machines, ran = machines_and_runs(result, r, 3)
        assert all(ran[l] in ref.spt_consistent_orders(machines[l]) for l in range(3))
    assert result.summary["protocol"]["sum_score_executed"] == pytest.approx(
        result.summary["protocol"]["sum_score_proposal"]
    )


@pytest.mark.parametrize("seed, sites, n, pick", [(1, 3, 4, "min-max"), (4, 3, 4, "min-sum"), (5, 2, 6, "min-max")])
def test_followers_run_the_exhaustive_searchs_proposal(seed, sites, n, pick):
    """The exact proposal (DYN's constrained set, section 3.6) on the run's own jobs is a σ*
    of the oracle's exhaustive search: every machine ran it, and every promise held."""
    data = game("follow", rounds=4, sites=sites, n=n, proposal="dyn", pick=pick)
    data["run"]["seed"] = seed
    result = emulator.run(data)
    want = check_against_the_oracle(result, ["follow"] * sites, pick)
    assert all(w["broken"] in (0, None) and w["u"] >= -1e-6 for w in want.values())
    # The run's instances tell the two picks apart (else this could not see which one it ran).
    other = "min-sum" if pick == "min-max" else "min-max"
    assert any(
        not set(ref.brute_force_proposal(machines, pick)) & set(ref.brute_force_proposal(machines, other))
        for machines in (machines_and_runs(result, r, sites)[0] for r in range(4))
    )


def test_one_defector_gains_and_the_others_lose():
    # Proposition 3.8 in the repeated game: playing MJF against followers never lowers the
    # defector's payoff. What the others lose is not a theorem round by round (MJF on the
    # defector's machine runs the foreign jobs in SPT order, which may suit one of them better
    # than the proposal did), but over these ten rounds they lose together: the Prisoner's
    # Dilemma of section 3.5.
    cooperate = payoffs(emulator.run(game("follow", rounds=10)))
    defect = payoffs(emulator.run(game({"default": "follow", 1: "mjf"}, rounds=10)))
    assert (defect[:, 1] >= cooperate[:, 1] - 1e-6).all() and (defect[:, 1] > cooperate[:, 1] + 1e-6).any()
    others = [0, 2]
    assert defect[:, others].sum() < cooperate[:, others].sum() - 1.0


def test_when_everyone_plays_mjf_every_payoff_is_zero():
    u = payoffs(emulator.run(game("mjf")))
    assert np.abs(u).max() < 1e-6


@pytest.mark.parametrize("strategy", ["tit-for-tat", "grim"])
@pytest.mark.parametrize(
    "seed, n, proposal, pick", [(13, 4, "dyn", "min-max"), (6, 4, "dyn", "min-sum"), (5, 6, "aew", "min-max")]
)
def test_tit_for_tat_punishes_the_round_after_a_broken_promise_and_grim_for_ever(strategy, seed, n, proposal, pick):
    """Section 3.5's repeated game against one defector (organization 1 plays MJF): every
    move, broken promise and payoff is the oracle's (:func:`replay`)."""
    data = game({"default": strategy, 1: "mjf"}, rounds=8, n=n, proposal=proposal, pick=pick)
    data["run"]["seed"] = seed
    want = check_against_the_oracle(emulator.run(data), [strategy, "mjf", strategy], pick, proposal)
    punished = [r for (r, k), w in want.items() if k != 1 and w["move"] == "mjf"]
    assert punished, f"{strategy} never punished"
    if strategy == "grim":
        for k in (0, 2):
            moves = [want[(r, k)]["move"] for r in range(8)]
            assert moves == sorted(moves, key=lambda m: m == "mjf"), moves  # MJF for ever once it starts


def test_the_job_table_is_the_same_for_any_backend_and_shard_count(ray_session):
    data = game({"default": "tit-for-tat", 2: "mjf"}, rounds=4)
    base = emulator.run(data, shards=1)
    for backend, shards in (("inprocess", 3), ("ray", 2)):
        other = emulator.run(data, backend=backend, shards=shards)
        assert base.jobs.equals(other.jobs), (backend, shards)


FIGURE_3_4 = """\
release,size,site,target
0,1,0,0
0,1,0,0
0,1,1,0
0,1,0,1
0,10,1,1
"""


def test_a_job_list_with_targets_runs_figure_3_4_by_hand(tmp_path):
    # Figure 3.4: O_1 has two unit jobs on M_1 and one on M_2; O_2 one unit job on M_1 and
    # one of size 10 on M_2. SPT (ties by owner): M_1 runs O_1, O_1, O_2 (C = [3, 3]),
    # M_2 runs O_1's 1 then O_2's 10: C = [3 + 1, 3 + 11] = [4, 14], the text's figures.
    path = tmp_path / "fig34.csv"
    path.write_text(FIGURE_3_4)
    data = game("follow", proposal="spt")
    data["workload"] = {"kind": "csv", "path": str(path)}
    data["sites"]["count"] = 2
    rows = rounds_of(emulator.run(data))
    assert [r["C"] for r in rows] == pytest.approx([4.0, 14.0], abs=1e-9)


def expect_exit_2(capsys, tmp_path, text: str, *needles: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    code = main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err


BASE = """\
[run]
seed = 1
backend = "inprocess"
[network]
latency = 0.01
[sites]
count = 2
procs = {procs}
[scheduler]
name = "{scheduler}"
[workload]
{workload}
[protocol]
name = "{protocol}"
{protocol_extra}
"""
DEDICATED = 'kind = "dedicated"\njobs_per_machine = 3'


@pytest.mark.parametrize(
    "procs, workload, protocol, extra, needles",
    [
        (1, 'kind = "poisson"\njobs = 10', "scheduling_game", "", ("workload.kind", "dedicated")),
        (1, DEDICATED, "scheduling_game", 'strategy = "nice"', ("protocol.strategy", "tit-for-tat")),
        (1, DEDICATED, "scheduling_game", 'strategy = {default = "follow", 5 = "mjf"}', ("protocol.strategy.5",)),
        (1, DEDICATED, "scheduling_game", "coordinator = 2", ("protocol.coordinator",)),
        (1, DEDICATED, "scheduling_game", 'proposal = "es"', ("protocol.proposal", "aew")),
        (2, DEDICATED, "scheduling_game", "", ("sites.procs",)),
        (1, DEDICATED + "\nrounds = 2\nperiod = 5", "scheduling_game", "", ("workload.period", "at least")),
        (1, DEDICATED, "random", "", ("target site", "scheduling_game")),
    ],
)
def test_bad_dedicated_scenarios_exit_2_naming_the_key(capsys, tmp_path, procs, workload, protocol, extra, needles):
    scheduler = "planned" if protocol == "scheduling_game" else "fcfs"
    expect_exit_2(
        capsys,
        tmp_path,
        BASE.format(procs=procs, workload=workload, protocol=protocol, protocol_extra=extra, scheduler=scheduler),
        *needles,
    )


def test_a_job_without_a_target_or_a_bad_target_exits_2(capsys, tmp_path):
    (tmp_path / "jobs.csv").write_text("release,size,site,target\n0,1,0,1\n0,2,1,\n")
    workload = f'kind = "csv"\npath = "{tmp_path / "jobs.csv"}"'
    expect_exit_2(
        capsys,
        tmp_path,
        BASE.format(procs=1, workload=workload, protocol="scheduling_game", protocol_extra="", scheduler="planned"),
        "job 1",
        "no target",
    )
    (tmp_path / "jobs.csv").write_text("release,size,site,target\n0,1,0,7\n")
    expect_exit_2(
        capsys,
        tmp_path,
        BASE.format(procs=1, workload=workload, protocol="scheduling_game", protocol_extra="", scheduler="planned"),
        ":2.target",
        "unknown site",
    )


# Two rounds (P = 40): in round 0 organization 0 has jobs on both machines; in round 1 only a
# job on machine 1. An agent that read its whole job list at t = 0 would know at round 0's
# timers that it has a round-1 job on machine 1.
TWO_ROUNDS = """\
release,size,site,target
0,2,0,0
0,3,0,1
0,1,1,0
0,4,1,1
40,5,0,1
40,2,1,0
40,1,1,1
"""


def test_an_organization_learns_a_rounds_jobs_only_when_they_are_released(tmp_path, monkeypatch):
    from gridemu.brokers.scheduling_game.agent import DedicatedAgent

    path = tmp_path / "two.csv"
    path.write_text(TWO_ROUNDS)
    jobs = np.array([tuple(map(float, line.split(","))) for line in TWO_ROUNDS.splitlines()[1:]])
    seen: list[tuple[int, float, dict]] = []
    on_timer = DedicatedAgent.on_timer

    def spy(self, now, tag):
        seen.append((self.site.site_id, now, {r: dict(m) for r, m in self.mine.items()}))
        on_timer(self, now, tag)

    monkeypatch.setattr(DedicatedAgent, "on_timer", spy)
    data = game({"default": "follow", 1: "mjf"}, proposal="spt")
    data["workload"] = {"kind": "csv", "path": str(path)}
    data["sites"]["count"] = 2
    rows = rounds_of(emulator.run(data))
    assert {r["round"] for r in rows} == {0, 1}  # both rounds were played and scored
    assert any(now < 40 for _, now, _ in seen) and any(now > 40 for _, now, _ in seen)
    for site, now, mine in seen:
        released = jobs[(jobs[:, 2] == site) & (jobs[:, 0] <= now)]
        known = {}
        for release, _, _, target in released:
            per_machine = known.setdefault(int(release // 40), {})
            per_machine[int(target)] = per_machine.get(int(target), 0) + 1
        # A finished round is forgotten; what is left is exactly what was released by now.
        assert all(known.get(r) == m for r, m in mine.items()), (site, now, mine)
        assert now >= 40 or 1 not in mine, (site, now, mine)
