"""REF's subcoalitions of one size, scheduled in parallel on Ray (REF at scale).

REF (Skowron and Rządca, "Non-monetary fair scheduling — a cooperative game theory
approach", Algorithms 1-2; :mod:`.coalitions`) builds one schedule per
subcoalition; the coalitions of one size are independent (each needs only the finished
schedules of smaller ones), so ``brokers.directcontr.policies.simulate`` hands each
size to a ``level_map``. This one splits a level into one Ray task per chunk of
coalitions (about two per CPU, so a 252-coalition level costs a handful of calls, not 252).
``bench/shapley_cost.py`` measures the speedup on trace windows.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable


def _run_chunk(fn: Callable, chunk: list) -> list:
    return [fn(item) for item in chunk]


def ray_level_map(fn: Callable, items: Iterable[Any]) -> list:
    """``map(fn, items)`` as Ray tasks, in order. Ray must be up: the caller starts it
    (``emulator.backends.ensure_ray``; a run with the Ray backend has)."""
    import ray

    if not ray.is_initialized():
        raise RuntimeError("ray_level_map: Ray is not started; call gridemu.emulator.backends.ensure_ray() first")
    items = list(items)
    if len(items) <= 1:
        return [fn(item) for item in items]
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    n_chunks = min(len(items), 2 * cpus)
    size = -(-len(items) // n_chunks)
    remote = ray.remote(_run_chunk)
    refs = [remote.remote(fn, items[i : i + size]) for i in range(0, len(items), size)]
    return [r for part in ray.get(refs) for r in part]
