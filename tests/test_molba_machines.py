"""``protocol.machines``: which organizations bring a machine to a molba instance (thesis
section 5.6.1; the "owners" reading is the one Tables 5.1 and 5.2 agree with)."""

from __future__ import annotations

import pytest

import gridemu.emulator as emulator
from gridemu.brokers.molba.algorithm import lower_bound, molba_plan, molba_plan_for, owners_only
from gridemu.brokers.molba.list_scheduling import Job, check_schedule
from gridemu.brokers.molba.reference import thesis_plan_for
from gridemu.emulator.scenario import load_scenario
from gridemu.model.errors import ScenarioError

# Four organizations of one processor; O_0 owns four unit jobs, O_2 one, O_1 and O_3 none.
JOBS = [Job(0, 0, 1.0, 1), Job(1, 0, 1.0, 1), Job(2, 0, 1.0, 1), Job(3, 0, 1.0, 1), Job(4, 2, 1.0, 1)]
MACHINES = [1, 1, 1, 1]


def placed(plan) -> dict[int, tuple[int, float]]:
    return {pl.job: (pl.machine, pl.start) for pl in plan.final}


def test_owners_only_drops_the_machines_of_organizations_without_jobs():
    jobs, machines, orgs = owners_only(JOBS, MACHINES)
    assert orgs == [0, 2] and machines == [1, 1]
    assert [j.org for j in jobs] == [0, 0, 0, 0, 1]  # O_2 is the instance's second organization
    # W̄ = 5 / 2 over the owners' two processors (5 / 4 with every machine)
    assert lower_bound(jobs, machines) == 2.5 and lower_bound(JOBS, MACHINES) == 1.25


def test_an_organization_that_owns_no_job_gets_no_machine_by_hand():
    # "all": W̄ = 1.25, p_max = 1, so O_0 (C_loc = 4 > 2·1.25 + 1) is overloaded and MOLBA+ILBA
    # spreads its jobs over the idle M_1 and M_3 as well: makespan 2.
    every = molba_plan(JOBS, MACHINES)
    assert every.run.overloaded == [0] and {m for m, _ in placed(every).values()} >= {1, 3}
    # "owners": only M_0 and M_2 exist, W̄ = 2.5, so O_0 (4 ≤ 2·2.5 + 1) is not overloaded and
    # MOLBA keeps the local schedule. ILBA takes the machines by makespan (M_2: 1, M_0: 4); M_2
    # keeps job 4 at 0, and M_0's jobs, by start, go to the earliest room on M_2 or M_0 (ties
    # to the less loaded M_2): job 0 -> M_0 at 0, 1 -> M_2 at 1, 2 -> M_0 at 1, 3 -> M_2 at 2.
    owners = molba_plan_for("owners", JOBS, MACHINES)
    assert owners.run.overloaded == [] and owners.run.local_makespans == [4.0, 0.0, 1.0, 0.0]
    assert placed(owners) == {0: (0, 0.0), 1: (2, 1.0), 2: (0, 1.0), 3: (2, 2.0), 4: (2, 0.0)}
    check_schedule(owners.final, JOBS, MACHINES)
    assert placed(molba_plan_for("all", JOBS, MACHINES)) == placed(every)
    with pytest.raises(ValueError, match="machines: expected one of"):
        molba_plan_for("some", JOBS, MACHINES)


def rigid(n_sites: int, m: int, jobs: int, seed: int, **protocol) -> dict:
    return {
        "run": {"seed": seed},
        "network": {"latency": 0.01},
        "sites": {"count": n_sites, "procs": m},
        "scheduler": {"name": "planned"},
        "workload": {"kind": "rigid", "model": "uni", "jobs": jobs},
        "protocol": {"name": "molba", "machines": "owners", **protocol},
    }


@pytest.mark.parametrize("protocol", [{}, {"ilba": False}, {"alpha": 3}])
@pytest.mark.parametrize("n_sites,jobs,seed", [(10, 12, 1), (20, 30, 4), (5, 6, 2)])
def test_decentralized_run_is_the_reference_under_owners(n_sites, jobs, seed, protocol):
    """Zipf leaves some of the N organizations without a job: the run executes the oracle's
    plan (``brokers/molba/reference.py``) of the owners' machines job by job, and no job runs
    on a site that owns none."""
    result = emulator.run(rigid(n_sites, 8, jobs, seed, **protocol))
    table = result.jobs.sort_values("job_id")
    inst = [Job(int(r.job_id), int(r.submit_site), float(r.size), int(r.procs)) for r in table.itertuples()]
    owning = {j.org for j in inst}
    assert len(owning) < n_sites  # the instance exercises the reading
    alpha = protocol.get("alpha")
    ref = thesis_plan_for(
        "owners", inst, [8] * n_sites, None if alpha is None else float(alpha), protocol.get("ilba", True)
    )
    proto = result.summary["protocol"]
    got = {int(r.job_id): (int(r.exec_site), float(r.start) - proto["plan_time"]) for r in table.itertuples()}
    assert {j: (m, pytest.approx(s, abs=1e-9)) for j, (m, s, _) in ref.final.items()} == got
    assert set(table["exec_site"]) <= owning
    assert proto["machines"] == "owners" and proto["machines_in_plan"] == len(owning)
    assert proto["score"] == pytest.approx(proto["score_reference"])
    p = {j.id: j.p for j in inst}
    assert proto["makespan_reference"] == pytest.approx(max(s + p[j] for j, (_, s, _) in ref.final.items()))
    sub_jobs, sub_machines, _ = owners_only(inst, [8] * n_sites)
    assert proto["lower_bound"] == pytest.approx(lower_bound(sub_jobs, sub_machines))


def test_aggregates_mode_under_owners_hosts_only_on_owners():
    result = emulator.run(rigid(10, 8, 40, 1, mode="aggregates"))
    owning = set(result.jobs["submit_site"])
    assert len(owning) < 10 and set(result.jobs["exec_site"]) <= owning
    assert result.summary["protocol"]["machines_in_plan"] == len(owning)


def test_bad_machines_value_names_the_key():
    with pytest.raises(ScenarioError, match=r"protocol.machines: unknown value 'some' \(allowed: all, owners\)"):
        load_scenario(rigid(3, 4, 10, 1, machines="some"))


@pytest.mark.parametrize("command", ["validate", "run"])
def test_cli_exits_2_on_a_bad_machines_value(command, capsys):
    from gridemu.emulator.cli import main

    assert main([command, "molba", "--set", "protocol.machines=some"]) == 2
    err = capsys.readouterr().err
    assert "protocol.machines" in err and len(err.strip().splitlines()) == 1
