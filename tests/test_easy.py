"""The ``easy`` local scheduler (EASY backfilling) against a one-cluster simulator written
from the definition (Lifka, JSSPP 1995; Mu'alem and Feitelson, IEEE TPDS 12(6), 2001,
section 2), not through sites/schedulers.py."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pandas as pd
import pytest

import gridemu.emulator as emulator
from gridemu.model.errors import ScenarioError


def easy_reference(release, size, procs, walltime, m):
    """Start times of the jobs on one cluster of ``m`` identical processors of speed 1 under
    EASY: at each instant, the completions first (every one of the instant), then each
    arrival in (release, index) order, and after each of those steps one scheduling pass:
    queue heads start while they fit; then the head's shadow time is the earliest estimated
    end e at which the free processors and those of the running jobs estimated to end by e
    cover it, the extra processors what is left of them then, and each later job (queue
    order) that fits starts if it ends by the shadow time, by its estimate, or fits in the
    extra processors (which it then uses up). An estimate is the requested time where there
    is one, else the size; a running job past it ends, by estimate, now."""
    n = len(release)
    estimate = [walltime[j] if not math.isnan(walltime[j]) else size[j] for j in range(n)]
    start = [math.nan] * n
    running: list[tuple[float, int]] = []  # (end, job)
    queue: list[int] = []
    free = m

    def run(j: int, t: float) -> None:
        nonlocal free
        start[j] = t
        free -= procs[j]
        heapq.heappush(running, (t + size[j], j))

    def estimated_end(j: int, t: float) -> float:
        return max(t, start[j] + walltime[j]) if not math.isnan(walltime[j]) else start[j] + size[j]

    def schedule(t: float) -> None:
        nonlocal free
        while queue and procs[queue[0]] <= free:
            run(queue.pop(0), t)
        if not queue:
            return
        need = procs[queue[0]]
        ends = [(estimated_end(j, t), procs[j]) for _, j in running]
        shadow, extra = math.inf, 0
        for e in sorted({e for e, _ in ends}):
            avail = free + sum(p for ee, p in ends if ee <= e)
            if avail >= need:
                shadow, extra = e, avail - need
                break
        for j in list(queue[1:]):
            if procs[j] > free:
                continue
            ends_in_time = t + estimate[j] <= shadow
            if ends_in_time or procs[j] <= extra:
                queue.remove(j)
                run(j, t)
                if not ends_in_time:
                    extra -= procs[j]

    order = sorted(range(n), key=lambda j: (release[j], j))
    i = 0
    while i < n or running:
        arrival = release[order[i]] if i < n else math.inf
        if running and running[0][0] <= arrival:
            t = running[0][0]
            while running and running[0][0] == t:
                _, j = heapq.heappop(running)
                free += procs[j]
            schedule(t)
        else:
            queue.append(order[i])
            i += 1
            schedule(arrival)
    return start


def instance(seed: int, m: int, n: int) -> dict:
    """Whole-number releases (distinct) and sizes, so that ends, arrivals and estimates meet
    at the same instants; requested times missing, over and under the size."""
    rng = np.random.default_rng(seed)
    release = np.sort(rng.choice(np.arange(4 * n), size=n, replace=False)).astype(float).tolist()
    size = rng.integers(1, 25, size=n).astype(float).tolist()
    procs = rng.integers(1, m + 1, size=n).tolist()
    kind = rng.integers(0, 4, size=n)
    factor = np.where(kind == 3, rng.uniform(0.3, 1.0, size=n), rng.uniform(1.0, 3.0, size=n))
    walltime = np.where(kind == 0, np.nan, np.round(np.asarray(size) * factor)).tolist()
    walltime = [w if (math.isnan(w) or w > 0) else 1.0 for w in walltime]
    return {"release": release, "size": size, "procs": procs, "walltime": walltime}


def scenario(cases: list[dict], m: int, scheduler: str = "easy") -> dict:
    rows = []
    for k, case in enumerate(cases):
        for r, z, q, w in zip(case["release"], case["size"], case["procs"], case["walltime"]):
            rows.append(
                {"site": f"s{k}", "release": r, "size": z, "procs": q} | ({} if math.isnan(w) else {"walltime": w})
            )
    return {
        "sites": [{"name": f"s{k}", "procs": m} for k in range(len(cases))],
        "scheduler": {"name": scheduler},
        "workload": {"kind": "jobs", "list": rows},
        "protocol": {"name": "local"},
    }


@pytest.mark.parametrize("seed", range(12))
def test_easy_starts_every_job_when_the_definition_does(seed):
    m = 6
    cases = [instance(seed * 3 + k, m, 70) for k in range(3)]
    jobs = emulator.run(scenario(cases, m)).jobs
    for k, case in enumerate(cases):
        mine = jobs[jobs["submit_site"] == k].sort_values("release", kind="stable")
        assert mine["release"].tolist() == case["release"]
        ref = easy_reference(case["release"], case["size"], case["procs"], case["walltime"], m)
        assert mine["start"].tolist() == ref
        assert (mine["exec_site"] == k).all()


def test_the_reference_backfills_and_fcfs_does_not():
    # The reference is no FCFS in disguise: a short job overtakes a blocked head, a long one
    # does not (4 processors; 0: 3 of them until 10; 1: all 4, waits for 10).
    release, size, procs, wall = [0.0, 1.0, 2.0, 3.0], [10.0, 5.0, 5.0, 30.0], [3, 4, 1, 1], [math.nan] * 4
    # Job 1 (index 1) is the head at 1 with shadow 10; job 2 (1 proc, ends at 7) backfills;
    # job 3 (1 proc, ends past 10, no extra processor) waits for 1 to start.
    ref = easy_reference(release, size, procs, wall, 4)
    assert ref == [0.0, 10.0, 2.0, 15.0]
    case = {"release": release, "size": size, "procs": procs, "walltime": wall}
    easy = emulator.run(scenario([case], 4)).jobs.sort_values("release")
    fcfs = emulator.run(scenario([case], 4, "fcfs")).jobs.sort_values("release")
    assert easy["start"].tolist() == ref
    assert fcfs["start"].tolist() == [0.0, 10.0, 15.0, 15.0]


def test_a_requested_time_decides_the_backfill():
    # The same jobs, the head's blocker asking for 6 instead of running 10: the shadow moves
    # to max(now, 6) = 6 and the 5-long job (ends at 7) no longer fits before it.
    case = {
        "release": [0.0, 1.0, 2.0],
        "size": [10.0, 5.0, 5.0],
        "procs": [3, 4, 1],
        "walltime": [6.0, math.nan, math.nan],
    }
    ref = easy_reference(case["release"], case["size"], case["procs"], case["walltime"], 4)
    assert ref == [0.0, 10.0, 15.0]
    jobs = emulator.run(scenario([case], 4)).jobs.sort_values("release")
    assert jobs["start"].tolist() == ref


def test_easy_gives_the_same_jobs_on_any_shard_count():
    m = 6
    data = scenario([instance(100 + k, m, 60) for k in range(4)], m)
    one = emulator.run(data).jobs
    pd.testing.assert_frame_equal(one, emulator.run(data, shards=3).jobs)


def test_easy_needs_identical_processors_at_a_site():
    data = scenario([instance(1, 4, 10)], 4)
    data["sites"] = [{"name": "s0", "speeds": [1.0, 1.0, 2.0, 2.0]}]
    with pytest.raises(ScenarioError, match="the easy scheduler needs identical processors at a site") as exc:
        emulator.run(data)
    assert exc.value.key == "scheduler.name" and "s0" in str(exc.value)
