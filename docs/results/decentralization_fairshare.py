"""Grid-wide fairshare usage exchange against the number of sites: all-to-all reports, per-VO
usage services, an aggregation tree, push-sum gossip, and none (local usage only). For
docs/results/decentralization.md, section "Fairshare usage".

    python -m gridemu.experiments.decentralization_fairshare            # ~23 minutes on 2 cores
    python -m gridemu.experiments.decentralization_fairshare --write    # and put the table in the doc

The policy is the fairshare paper's two-VO tree (fairshare_grid.py: VO-A 30 % with
projects 50/30/20, VO-B 70 % with 60/40, global scope below the resource), 10 processors a
site, usage reported every 60 s, three hours of streams of 600 s jobs from the 5 project
groups, each submitting one job every 180/N s somewhere in the grid (the load per site is
the same at every N: about 1.7 times the capacity, so queues hold every group's jobs).
"rows/refresh": usage messages per refresh period; "dev": the mean absolute deviation of
the entries' shares from their targets over the second half of the run (percentage
points); "entries settled": how many policy entries' shares stay within ±2 points of their
targets from some time on, and the latest such time (the time to converge). All-to-all is
run in full up to 64 sites; beyond, a run of 3 refresh periods
measures its rows per refresh only (every site sends every entry it has usage for to the
N - 1 others: 1,024 sites make about 8 million rows a refresh).
"""

from __future__ import annotations

import sys
import time

import gridemu.emulator as emulator
from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.fairshare_grid import LEAVES, grid
from gridemu.experiments.script_args import hand_parsed

BEGIN, END = "<!-- fairshare:begin (decentralization_fairshare.py --write) -->", "<!-- fairshare:end -->"
HOURS = 3.0
SIZES = (16, 64, 256, 1024, 4096)
SHORT = 180.0  # seconds: the all-to-all runs that only count rows (3 refreshes)


def scenario(n: int, exchange: str, seconds: float) -> dict:
    streams = [
        {"group": g, "interval": 180.0 / n, "size": 600.0, "spread": 0.4, "overestimate": [0.2, 0.4]} for g in LEAVES
    ]
    return grid(hours=seconds / 3600.0, sites=n, exchange=exchange, streams=streams)


def main(argv: list[str]) -> int:
    rows = [
        "| exchange | sites | jobs | usage rows | rows/refresh | "
        "rows/site/refresh | dev (points) | entries settled | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    per_refresh: dict[tuple[str, int], float] = {}
    for n in SIZES:
        for exchange in ("all", "service", "tree", "gossip", "none"):
            seconds = HOURS * 3600.0 if exchange != "all" or n <= 64 else SHORT
            t0 = time.perf_counter()
            res = emulator.run(scenario(n, exchange, seconds))
            wall = time.perf_counter() - t0
            msgs = res.summary["global"]["messages"]
            usage = sum(v for k, v in msgs.items() if k.startswith("usage") or k == "push")
            refreshes = seconds / 60.0
            per_refresh[exchange, n] = usage / refreshes
            pol = res.summary["policy"]
            dev = f"{pol['mean_abs_deviation_points']:.2f}" if seconds > SHORT else f"- ({seconds:.0f} s run)"
            settled = [e["within_2_points_from"] for e in pol["entries"].values()]
            done = [t for t in settled if t is not None]
            when = f"{len(done)} of {len(settled)}, last at {max(done):,.0f} s" if done and seconds > SHORT else "-"
            rows.append(
                f"| {exchange} | {n:,} | {len(res.jobs):,} | {usage:,} | {usage / refreshes:,.0f} | "
                f"{usage / refreshes / n:.1f} | {dev} | {when} | {wall:.1f} |"
            )
            print(rows[-1], flush=True)
    ratio = [f"| {n:,} | {per_refresh['all', n] / per_refresh['tree', n]:.0f}× |" for n in SIZES]
    text = "\n".join(rows + ["", "| sites | all-to-all rows / tree rows |", "|---:|---:|", *ratio])
    print(text)
    if "--write" in argv:
        write_between(BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(__doc__, sys.argv[1:], ('--write',))
    sys.exit(main(sys.argv[1:]))
