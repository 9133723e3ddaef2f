"""REF at scale: its subcoalition schedules, one coalition size at a time, on Ray.

    python bench/shapley_ref.py [--orgs 6 8] [--jobs 300] [--procs 20] [--cpus N] [--repeat 2]

REF builds a schedule for every subcoalition of the organizations (2^k of them); those of one
size are independent, so ``brokers.algorithms.shapley_policies.simulate`` hands each size to a
``level_map``. This compares the built-in ``map`` (one process) with
``brokers.algorithms.shapley_parallel.ray_level_map`` (Ray tasks, one per chunk of
coalitions, about two per CPU) on a random instance of sequential
jobs, and checks that both give the same schedule. Prints the median wall seconds and the
speedup. On a 2-core machine the speedup is bounded by 2; use --cpus on a bigger one.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gridemu.brokers.algorithms.shapley_policies import simulate
from gridemu.brokers.algorithms.shapley_simulation import SJob


def instance(k: int, n: int, seed: int = 1) -> list[SJob]:
    rng = np.random.default_rng(seed)
    release = np.sort(rng.integers(0, 20 * n, size=n))
    return [SJob(i, int(rng.integers(0, k)), int(r), int(rng.integers(1, 200))) for i, r in enumerate(release)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orgs", type=int, nargs="+", default=[6, 8])
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--procs", type=int, default=20)
    ap.add_argument("--cpus", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    from gridemu.emulator.backends import ensure_ray
    from gridemu.brokers.algorithms.shapley_parallel import ray_level_map

    ray = ensure_ray(num_cpus=args.cpus)
    print(f"Ray CPUs: {int(ray.cluster_resources().get('CPU', 1))}")
    print(f"{'orgs':>4} {'coalitions':>10} {'map s':>8} {'ray s':>8} {'speedup':>8}")
    for k in args.orgs:
        jobs = instance(k, args.jobs)
        procs = [max(1, args.procs // k)] * k
        t_end = 20 * args.jobs
        times = {}
        results = {}
        for name, level_map in (("map", map), ("ray", ray_level_map)):
            runs = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                results[name] = simulate(jobs, procs, "ref", t_end, level_map=level_map)
                runs.append(time.perf_counter() - t)
            times[name] = statistics.median(runs)
        assert results["map"].start == results["ray"].start, "the Ray map changed REF's schedule"
        print(f"{k:>4} {2 ** k - 1:>10} {times['map']:>8.2f} {times['ray']:>8.2f} {times['map'] / times['ray']:>7.2f}x")
    ray.shutdown()


if __name__ == "__main__":
    main()
