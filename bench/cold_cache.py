"""Why the sites' ``cpu_seconds`` are higher on Ray than in one process, for the same work.

A Ray shard runs its sites between barriers; in between, the driver, Ray's own processes
and the other shards run on the same cores and evict its cache lines, and the actor's
process sleeps until its next call. The sites' code then runs slower: their thread CPU
time (``cpu_seconds``, docs/kernel.md) is honest, but it includes that. This script runs
one scenario in one process three ways, and on Ray:

* ``inprocess``        as gridemu runs it;
* ``inprocess+evict``  the same, reading a 64 MiB array before every window (beyond the
                       last-level cache: what other processes do to the shard's cache);
* ``inprocess+yield``  the same, sleeping 0.2 ms before every window (the process gives up
                       its core, as an actor waiting for its next call does);
* ``ray1``, ``ray2``   Ray with 1 and 2 shards (``--no-ray`` leaves them out).

Every run simulates the same events (the job table does not depend on the backend), so
the differences in *site cpu s* are the cost of where the sites ran, not of what they did.

    python bench/cold_cache.py [--scenario bilb --set workload.until=2000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gridemu.emulator import api, backends
from gridemu.emulator.scenario import parse_override

EVICT_BYTES = 64 * 1024 * 1024


def run_once(scenario: str, overrides: dict, mode: str) -> dict:
    original = backends.InProcessBackend.step
    buf = np.ones(EVICT_BYTES // 8) if mode == "inprocess+evict" else None

    def step(self, until, inboxes):
        if mode == "inprocess+evict":
            buf.sum()
        elif mode == "inprocess+yield":
            time.sleep(0.0002)
        return original(self, until, inboxes)

    backend, shards = ("ray", int(mode[3:])) if mode.startswith("ray") else ("inprocess", 1)
    backends.InProcessBackend.step = step
    try:
        g = api.run(scenario, overrides=overrides, backend=backend, shards=shards).summary["global"]
    finally:
        backends.InProcessBackend.step = original
    return {
        "site_cpu_s": g["site_cpu_seconds"],
        "wall_s": g["wall_seconds"],
        "windows": g["windows"],
        "events": g["events"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="bilb")
    ap.add_argument(
        "--set",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="as gridemu run --set (default: workload.until=2000)",
    )
    ap.add_argument("--repeat", type=int, default=2, help="runs per mode; the median is shown")
    ap.add_argument("--no-ray", action="store_true", help="in-process modes only")
    args = ap.parse_args(argv)
    overrides = dict(parse_override(p) for p in (args.set if args.set is not None else ["workload.until=2000"]))
    modes = ["inprocess", "inprocess+evict", "inprocess+yield"] + ([] if args.no_ray else ["ray1", "ray2"])
    if not args.no_ray:
        backends.ensure_ray(num_cpus=2)
    rows = []
    for mode in modes:
        runs = [run_once(args.scenario, overrides, mode) for _ in range(args.repeat)]
        events = {r["events"] for r in runs}
        rows.append(
            {
                "mode": mode,
                "site_cpu_s": statistics.median(r["site_cpu_s"] for r in runs),
                "wall_s": statistics.median(r["wall_s"] for r in runs),
                "windows": runs[0]["windows"],
                "events": events,
            }
        )
    base = rows[0]["site_cpu_s"]
    print(f"{args.scenario} {overrides}, medians of {args.repeat}")
    print(f"{'mode':<17} {'site cpu s':>10} {'vs inprocess':>12} {'wall s':>8} {'windows':>8} {'events':>9}")
    for r in rows:
        print(
            f"{r['mode']:<17} {r['site_cpu_s']:>10.3f} {r['site_cpu_s'] / base:>11.2f}x {r['wall_s']:>8.2f} "
            f"{r['windows']:>8,} {min(r['events']):>9,}"
        )
    if len({e for r in rows for e in r["events"]}) != 1:
        print("warning: the runs handled different event counts; the comparison does not hold")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
