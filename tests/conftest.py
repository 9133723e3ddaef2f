"""Shared fixtures: one local Ray instance for the whole session, with few CPUs."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable

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


def in_threads(
    calls: list[Callable[[], Any]], timeout: float | None = None, errors: list[BaseException] | None = None
) -> list[Any]:
    """Run every call at once, each in a thread of its own (as shards run in processes of
    their own), and return their results in order; the first error raised is raised here.
    ``errors`` (a list the calls may read) gets every error as it is raised, so a call that
    waits for the others can give up; a thread still running after ``timeout`` fails."""
    errors = [] if errors is None else errors
    results: list[Any] = [None] * len(calls)

    def run(i: int, call: Callable[[], Any]) -> None:
        try:
            results[i] = call()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, call), daemon=True) for i, call in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    if any(t.is_alive() for t in threads):
        raise AssertionError(f"a thread was still running after {timeout} s")
    if errors:
        raise errors[0]
    return results
