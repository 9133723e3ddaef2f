"""Setup stays linear in the number of sites (issue 40): validating a scenario, validating it
again as the counterfactual's local run does (its sites then a list of tables), and building
the shard's sites and agents.

A timing would measure the machine; these tests count instead. ``sys.setprofile`` sees every
Python and C function call; the count is the same on any machine and under any load. A
quadratic Python loop makes the count grow 16 times when the sites grow 4 times. A C call
that scans a whole list (``names.count(n)`` for every name: the duplicate-name check that
cost 89 s at 40,000 sites) is one call but costs the list's length, so calls of the list and
tuple methods that scan (count, index, remove, insert) are charged that length.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import pytest

from gridemu.emulator.backends import InProcessBackend
from gridemu.emulator.engine import build_shard_specs
from gridemu.emulator.scenario import load_scenario
from gridemu.scenarios.workload import generate_jobs

#: List and tuple methods whose work is the length of the sequence they scan.
SCANS = {"count", "index", "remove", "insert"}


def grid(n: int) -> dict[str, Any]:
    """averaging-topology's grid (a random graph of degree 8) at n sites with three jobs."""
    return {
        "run": {"seed": 1},
        "network": {"latency": 0.5, "topology": "random:8"},
        "sites": {"count": n, "procs": 4},
        "workload": {
            "kind": "jobs",
            "list": [
                {"release": 0.0, "size": 4.0, "site": 0},
                {"release": 1.0, "size": 2.0, "site": n // 2},
                {"release": 2.0, "size": 3.0, "site": n - 1},
            ],
        },
        "protocol": {"name": "averaging", "period": 20.0, "exchange": "neighbors"},
        "metrics": {"counterfactual": "local"},
    }


def set_up(n: int) -> InProcessBackend:
    """Validation, the counterfactual's validation (api._finish) and the shard's sites."""
    scenario = load_scenario(grid(n))
    local = load_scenario(scenario.data, {"protocol": {"name": "local"}, "run.backend": "inprocess", "run.shards": 1})
    assert len(local.sites) == n and local.sites[-1].name == scenario.sites[-1].name
    jobs, groups = generate_jobs(scenario)
    return InProcessBackend(build_shard_specs(scenario, jobs, 1, groups=groups))


def cost(fn: Callable[[], Any]) -> tuple[int, int]:
    """(function calls, elements scanned by list and tuple scans) while ``fn`` runs."""
    calls = scanned = 0

    def hook(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls, scanned
        if event == "call":
            calls += 1
        elif event == "c_call":
            calls += 1
            owner = getattr(arg, "__self__", None)
            if isinstance(owner, (list, tuple)) and arg.__name__ in SCANS:
                scanned += len(owner)

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls, scanned


def test_setup_costs_grow_as_the_sites():
    set_up(50)  # imports and first-use caches are not part of the count
    small, large = cost(lambda: set_up(2_000)), cost(lambda: set_up(8_000))
    # Linear: a + b n grows less than 4 times; any n^2 term pushes it toward 16.
    assert large[0] <= 4.2 * small[0], f"calls: {small[0]:,} at 2,000 sites, {large[0]:,} at 8,000"
    assert large[1] <= 4.2 * small[1], f"elements scanned: {small[1]:,} at 2,000 sites, {large[1]:,} at 8,000"


def test_setup_costs_count_a_quadratic_step():
    """The counter sees the quadratic duplicate-name check the setup used to make."""

    def quadratic(n: int) -> None:
        names = [f"site{i}" for i in range(n)]
        assert not {x for x in names if names.count(x) > 1}

    small, large = cost(lambda: quadratic(200)), cost(lambda: quadratic(800))
    assert large[1] == 16 * small[1]


@pytest.mark.slow
def test_setup_at_200000_sites():
    """Validation and setup at 200,000 sites with three jobs. Linear, they take seconds; the
    duplicate-name check of old alone (2·10^10 comparisons here) would take the better part
    of an hour, so a quadratic step shows as a test run that does not end."""
    backend = set_up(200_000)
    shard = backend.shards[0]
    sites = shard.engine.sites
    assert len(sites) == 200_000 and shard.n_submitted == 3
    assert sites[-1].name == "site199999" and all(site.agent is not None for site in sites[::1000])
    backend.close()
    assert backend.shards == []
