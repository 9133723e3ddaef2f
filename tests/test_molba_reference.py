"""The ``molba`` test oracle (``brokers/molba/reference.py``, Algorithms 5.1-5.4 written again
from the thesis) by hand, and against the agents' functions (``brokers/molba/algorithm.py``)
on random instances: the two are written apart, so agreement is evidence for both."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridemu.brokers.molba.algorithm import molba_plan, molba_plan_for
from gridemu.brokers.molba.list_scheduling import Job, Placement, check_schedule
from gridemu.brokers.molba.reference import Schedule, ThesisPlan, thesis_plan, thesis_plan_for

WHOLE = (0, 1, 2, 3)


def as_dict(schedule: list[Placement]) -> Schedule:
    return {pl.job: (pl.machine, pl.start, tuple(pl.processors)) for pl in schedule}


def as_placements(schedule: Schedule) -> list[Placement]:
    return [Placement(j, machine, start, procs) for j, (machine, start, procs) in schedule.items()]


def where(schedule: Schedule) -> dict[int, tuple[int, float]]:
    return {j: (machine, start) for j, (machine, start, _) in schedule.items()}


def assert_same(plan, ref: ThesisPlan) -> None:
    """Every intermediate set and schedule of the agents' plan is the oracle's, processors included."""
    assert plan.alpha == ref.alpha
    assert plan.run.overloaded == ref.overloaded  # O'
    assert plan.run.moved == ref.moved  # J'', in Highest-First order
    assert as_dict(plan.local) == ref.local
    assert as_dict(plan.molba) == ref.molba
    assert as_dict(plan.final) == ref.final


# -------------------------------------------------------------------- the oracle by hand


def test_figure_5_2_by_hand():
    # Figure 5.2 as tests/test_molba.py rebuilds it: five whole-machine unit jobs of O_0, N = 5,
    # m = 4. Local: 0..4 at 0..4. MOLBA(2): W̄ = 1, p_max = 1, 5 > 3 so O' = {O_0}; jobs 3 and 4
    # start after 2 and go to M1 and M2 at 0. ILBA: machines by makespan 3, 4, 1, 2, 0: M1's
    # job to M3, M2's to M4, M0's three to M1, M2 and M0, all at 0.
    jobs = [Job(i, 0, 1.0, 4) for i in range(5)]
    ref = thesis_plan(jobs, [4] * 5)
    assert ref.alpha == 2 and ref.overloaded == [0] and ref.moved == [3, 4]
    assert ref.local == {i: (0, float(i), WHOLE) for i in range(5)}
    assert where(ref.molba) == {0: (0, 0), 1: (0, 1), 2: (0, 2), 3: (1, 0), 4: (2, 0)}
    assert where(ref.final) == {3: (3, 0), 4: (4, 0), 0: (1, 0), 1: (2, 0), 2: (0, 0)}
    # MOLBA(3): 5 > 4, only job 4 starts after 3.
    assert thesis_plan(jobs, [4] * 5, 3.0, False).moved == [4]


def test_a_partly_busy_host_by_hand():
    # tests/test_molba.py's instance: N = 3, m = 4. O_0: 11 unit jobs of width 4; O_1 one job
    # q 2 p 2; O_2 one job q 4 p 1. 2W̄ = 52/6 ≈ 8.67: jobs 9 and 10 move, job 9 to M2 at 1 (M1
    # has 2 processors free until 2), job 10 to M1 at 2 (M1 before M2 at time 2).
    jobs = [Job(i, 0, 1.0, 4) for i in range(11)] + [Job(11, 1, 2.0, 2), Job(12, 2, 1.0, 4)]
    ref = thesis_plan(jobs, [4, 4, 4], 2.0, False)
    assert ref.overloaded == [0] and ref.moved == [9, 10]
    assert ref.molba[9] == (2, 1.0, WHOLE) and ref.molba[10] == (1, 2.0, WHOLE)
    assert ref.molba[11] == (1, 0.0, (0, 1)) and ref.molba[12] == (2, 0.0, WHOLE)


def test_the_meta_algorithm_falls_back_to_molba_3_by_hand():
    # tests/test_molba.py's instance off the model: O_0's four jobs of width 2 fit only M0 among
    # ten 1-processor machines. MOLBA(2) puts jobs 2, 3 back on M0: makespan 4 > 3·LB = 3.
    jobs = [Job(i, 0, 1.0, 2) for i in range(4)]
    ref = thesis_plan(jobs, [2] + [1] * 10, None, False)
    assert ref.alpha == 3 and ref.moved == [3] and ref.molba == ref.local
    assert where(ref.local) == {0: (0, 0), 1: (0, 1), 2: (0, 2), 3: (0, 3)}


def test_owners_reading_by_hand():
    # tests/test_molba_machines.py's instance: four machines of one processor, O_0 owns four unit
    # jobs, O_2 one. "owners": M0 and M2 only, W̄ = 2.5, nobody overloaded; ILBA (M2: 1, M0: 4)
    # keeps job 4 on M2 and puts M0's jobs at 0 on M0, 1 on M2, 1 on M0, 2 on M2.
    jobs = [Job(i, 0, 1.0, 1) for i in range(4)] + [Job(4, 2, 1.0, 1)]
    ref = thesis_plan_for("owners", jobs, [1, 1, 1, 1])
    assert ref.overloaded == []
    assert where(ref.final) == {0: (0, 0), 1: (2, 1), 2: (0, 1), 3: (2, 2), 4: (2, 0)}
    # "all": W̄ = 1.25, O_0 is above 2·1.25 + 1, and its jobs reach the idle M1 and M3 too.
    every = thesis_plan_for("all", jobs, [1, 1, 1, 1])
    assert every.overloaded == [0] and {m for m, _ in where(every.final).values()} >= {1, 3}
    with pytest.raises(ValueError, match="machines: expected"):
        thesis_plan_for("some", jobs, [1, 1, 1, 1])


# ------------------------------------------------------------- the oracle against the agents'


@st.composite
def instances(draw, max_orgs: int = 5, max_jobs: int = 12):
    """One organization gets most jobs (so O' is often not empty); machines equal (the thesis's
    model) or not (the documented W / Σ m_k); lengths multiples of 1/2, exact in binary."""
    n = draw(st.integers(1, max_orgs))
    sizes = st.sampled_from([1, 2, 3, 4, 6, 8])
    machines = draw(st.one_of(sizes.map(lambda m: [m] * n), st.lists(sizes, min_size=n, max_size=n)))
    heavy = draw(st.integers(0, n - 1))
    rows = draw(
        st.lists(
            st.tuples(st.one_of(st.just(heavy), st.integers(0, n - 1)), st.integers(1, 24), st.integers(1, 8)),
            min_size=1,
            max_size=max_jobs,
        )
    )
    jobs = [Job(i, k, p2 / 2, min(q, machines[k])) for i, (k, p2, q) in enumerate(rows)]
    return jobs, machines


@settings(max_examples=200, deadline=None)
@given(instances(), st.sampled_from([None, 1.0, 1.5, 2.0, 3.0]), st.booleans())
def test_the_agents_plan_is_the_oracles(case, alpha, balance):
    jobs, machines = case
    ref = thesis_plan(jobs, machines, alpha, balance)
    for schedule in (ref.local, ref.molba, ref.final):
        check_schedule(as_placements(schedule), jobs, machines)
    assert_same(molba_plan(jobs, machines, alpha, balance), ref)


@settings(max_examples=100, deadline=None)
@given(instances(max_orgs=7, max_jobs=8), st.sampled_from([None, 3.0]), st.booleans())
def test_the_agents_plan_is_the_oracles_under_owners(case, alpha, balance):
    jobs, machines = case
    assert_same(
        molba_plan_for("owners", jobs, machines, alpha, balance),
        thesis_plan_for("owners", jobs, machines, alpha, balance),
    )


def threshold_instances() -> list[tuple[list[Job], list[int]]]:
    """Unit jobs, mostly of O_0, on N equal machines: C_loc(O_k) and the starts are integers and
    W̄ = n·q / (N·m) a simple fraction, so C_loc = αW̄ + p_max (MOLBA line 6) and start = αW̄
    (line 15) happen, where a strict test and a non-strict one part (random lengths seldom
    meet them)."""
    out = []
    for n_orgs in (1, 2, 3, 4):
        for m in (1, 2):
            for q in sorted({1, m}):
                for n in range(1, 9):
                    jobs = [Job(i, 0, 1.0, q) for i in range(n)]
                    out.append((jobs, [m] * n_orgs))
                    out.append((jobs + [Job(n + k, k, 1.0, 1) for k in range(1, n_orgs)], [m] * n_orgs))
    return out


@pytest.mark.parametrize("alpha", [None, 1.0, 1.5, 2.0, 3.0])
def test_the_agents_plan_is_the_oracles_at_the_thresholds(alpha):
    for jobs, machines in threshold_instances():
        for balance in (False, True):
            assert_same(molba_plan(jobs, machines, alpha, balance), thesis_plan(jobs, machines, alpha, balance))
