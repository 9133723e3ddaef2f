"""10,000 sites and 1,000,000 jobs on packed shards: does it run, how long, how much memory.

    python bench/many_sites.py [--sites 10000] [--jobs 1000000] [--backend inprocess|ray] [--shards N]

Same per-site workload shape as bench/throughput.py (10 processors per site, FCFS,
gamma(2, 2) sizes, total arrival rate 200), spread over many more sites.
Prints the whole call's time, the kernel's wall seconds, and the driver's peak RSS.
"""
from __future__ import annotations

import argparse
import resource
import time

from harness import imported_run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--backend", choices=["inprocess", "ray"], default="inprocess")
    ap.add_argument("--shards", type=int, default=None)
    args = ap.parse_args()
    scenario = {
        "run": {"seed": 1},
        "sites": {"count": args.sites, "procs": 10},
        "workload": {"kind": "poisson", "rate": 200.0 / args.sites, "alpha": 2.0, "beta": 2.0, "jobs": args.jobs},
        "protocol": {"name": "local"},
    }
    run = imported_run()
    t0 = time.perf_counter()
    result = run(scenario, backend=args.backend, shards=args.shards)
    call = time.perf_counter() - t0
    g = result.summary["global"]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.sites:,} sites, {g['jobs']:,} jobs, {args.backend} with {g['shards']} shard(s): "
        f"call {call:.1f} s, kernel {g['wall_seconds']:.1f} s, windows {g['windows']}, "
        f"states {g['jobs_by_state']}, driver peak RSS {rss:,.0f} MiB"
    )


if __name__ == "__main__":
    main()
