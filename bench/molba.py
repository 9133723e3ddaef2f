"""Chapter-5 protocol (molba): what the plan costs beside the run that executes it.

    python bench/molba.py [--sites 5 20] [--jobs 100 500] [--procs 512] [--repeat 3]

For each setting, the shipped ``molba`` scenario (uni jobs) is run in-process with one
shard: every site computes the same plan itself (nothing is shared between the sites of a
process, so each site's cost is its own). The reference pipeline alone (local → MOLBA →
ILBA, ``brokers.molba.algorithm.molba_plan``) is timed on the same instance, and ILBA's
share of it. Prints medians of ``--repeat``: the run's kernel wall seconds, windows and
messages, and the plan's seconds (a run computes it once per site; on a Ray cluster the
shards' sites compute theirs in parallel).
"""

from __future__ import annotations

import argparse
import statistics
import time

import gridemu.emulator as emulator
from gridemu.brokers.molba.algorithm import ilba, molba_plan
from gridemu.brokers.molba.protocol import instance
from gridemu.emulator.scenario import load_scenario
from gridemu.scenarios.workload import generate_jobs


def measure(sites: int, jobs: int, procs: int, repeat: int) -> dict:
    sets = {"sites.count": sites, "workload.jobs": jobs, "sites.procs": procs}
    inst = instance(generate_jobs(load_scenario("molba", sets))[0], [procs] * sites)
    machines = [procs] * sites
    walls, plans, ilbas, last = [], [], [], None
    for _ in range(repeat):
        last = emulator.run("molba", overrides=sets).summary["global"]
        walls.append(last["wall_seconds"])
        t = time.perf_counter()
        plan = molba_plan(inst, machines, balance=False)
        mid = time.perf_counter()
        ilba(plan.molba, inst, machines)
        plans.append(time.perf_counter() - t)
        ilbas.append(time.perf_counter() - mid)
    return {
        "wall": statistics.median(walls),
        "plan": statistics.median(plans),
        "ilba": statistics.median(ilbas),
        "windows": last["windows"],
        "messages": last["messages_total"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites", type=int, nargs="+", default=[5, 20])
    ap.add_argument("--jobs", type=int, nargs="+", default=[100, 500])
    ap.add_argument("--procs", type=int, nargs="+", default=[32, 512])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'sites':>5} {'jobs':>5} {'m':>4} {'run s':>8} {'plan s':>8} {'ILBA s':>8} {'windows':>8} {'messages':>9}")
    for sites in args.sites:
        for jobs in args.jobs:
            for procs in args.procs:
                r = measure(sites, jobs, procs, args.repeat)
                print(
                    f"{sites:>5} {jobs:>5} {procs:>4} {r['wall']:>8.3f} {r['plan']:>8.3f} {r['ilba']:>8.3f} "
                    f"{r['windows']:>8} {r['messages']:>9}"
                )


if __name__ == "__main__":
    main()
