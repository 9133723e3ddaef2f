"""REF's subcoalitions of one size, scheduled in parallel on Ray (Shapley papers, REF at scale).

REF builds one schedule per subcoalition; the coalitions of one size are independent
(each needs only the finished schedules of smaller ones), so ``brokers.shapley.simulate``
hands each size to a ``level_map``. This one splits a level into one Ray task per chunk of
coalitions (about two per CPU, so a 252-coalition level costs a handful of calls, not 252).
``bench/shapley_ref.py`` measures the speedup.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable


def _run_chunk(fn: Callable, chunk: list) -> list:
    return [fn(item) for item in chunk]


def ray_level_map(fn: Callable, items: Iterable[Any]) -> list:
    from gridemu.emulator.backends import ensure_ray

    ray = ensure_ray()
    items = list(items)
    if len(items) <= 1:
        return [fn(item) for item in items]
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    n_chunks = min(len(items), 2 * cpus)
    size = -(-len(items) // n_chunks)
    remote = ray.remote(_run_chunk)
    refs = [remote.remote(fn, items[i : i + size]) for i in range(0, len(items), size)]
    return [r for part in ray.get(refs) for r in part]
