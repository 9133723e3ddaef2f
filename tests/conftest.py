"""Shared fixtures: one local Ray instance for the whole session, with few CPUs."""

from __future__ import annotations

import os
import signal

import pytest
from hypothesis import settings

# CI runs the same examples every time (a red CI is then reproducible); locally each run
# explores new ones.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# The Ctrl-C tests press Ctrl-C as a terminal would. A shell without job control starts its
# background jobs with SIGINT ignored (`nohup ... &`), and every process under them inherits
# that: a run could then not be interrupted at all, and those tests would fail for the shell.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def ray_session():
    from gridemu.emulator.backends import ensure_ray

    ray = ensure_ray(num_cpus=2)
    yield ray
    ray.shutdown()


def small_grid(protocol: str = "averaging", jobs: int = 600, sites: int = 5, **extra) -> dict:
    """A small scenario dict: one overloaded site, so load balancing has work to do."""
    rate = [1.5] + [0.4] * (sites - 1)
    data = {
        "run": {"seed": 7},
        "network": {"latency": 0.5},
        "sites": {"count": sites, "procs": 3},
        "workload": {"kind": "poisson", "rate": rate, "alpha": 2.0, "beta": 2.0, "jobs": jobs},
        "protocol": {"name": protocol, **({"period": 20.0} if protocol == "averaging" else {})},
    }
    for key, value in extra.items():
        data.setdefault(key, {}).update(value)
    return data
