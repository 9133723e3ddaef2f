"""Measure the costs behind ``gridemu validate``'s memory and wall-time estimate, and write
them to ``emulator/costs.json`` (with the date, machine and Python they were measured on).

    python bench/calibrate.py [--out emulator/costs.json] [--scale 1.0]

Each configuration runs in a fresh process (its peak RSS is its own): small runs that vary
one thing at a time (sites, processors, jobs, protocol messages, windows). A least-squares
fit with non-negative coefficients gives the seconds per site, processor, job, message and
window, and the bytes per site, processor and job (a message or a window is not kept); the
bare process (gridemu imported, the scenario loaded, no run) is the base. Measured on a
shared machine, the seconds are an upper side of the truth: the estimate is an order of
magnitude, meant to refuse what would not fit or end, not a prediction.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ("sites", "procs", "jobs", "messages", "windows")

CHILD = r"""
import json, resource, sys, time
from gridemu.emulator.api import run
from gridemu.emulator.scenario import load_scenario
sets, do_run = json.loads(sys.argv[1]), sys.argv[2] == "1"
name = sets.pop("scenario", "quickstart")
sc = load_scenario(name, ({"workload.rate": 1.0} if name == "quickstart" else {}) | sets)
t0 = time.perf_counter()
g = run(sc).summary["global"] if do_run else {"messages_total": 0, "windows": 0, "jobs": 0}
wall = time.perf_counter() - t0
procs = sum(len(s.speeds) for s in sc.sites)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"sites": len(sc.sites), "procs": procs, "jobs": g["jobs"], "messages": g["messages_total"],
                  "windows": g["windows"], "wall": wall, "rss": rss}))
"""


def configs(scale: float) -> list[dict]:
    def n(x: float) -> int:
        return max(1, int(x * scale))

    local = {"protocol": {"name": "local"}, "metrics.counterfactual": "none", "run.backend": "inprocess"}
    out = []
    for sites in (n(2000), n(8000)):  # sites
        out.append({**local, "sites": {"count": sites, "procs": 1}, "workload.jobs": sites})
    for procs in (n(20000), n(80000)):  # processors
        out.append({**local, "sites": {"count": 4, "procs": procs}, "workload.jobs": 1000})
    for jobs in (n(100000), n(400000)):  # jobs
        out.append({**local, "sites": {"count": 8, "procs": 4}, "workload.jobs": jobs})
    # Messages and windows, apart: averaging's reports vary with the period, its windows with
    # the latency (the lookahead) at about the same messages.
    for period, latency in ((0.5, 0.5), (2.0, 0.5), (2.0, 0.05)):
        out.append(
            {
                "metrics.counterfactual": "none",
                "run.backend": "inprocess",
                "sites": {"count": n(64), "procs": 4},
                "workload.jobs": n(20000),
                "protocol.period": period,
                "network.latency": latency,
            }
        )
    # Windows at about the same messages: gm broadcasts, its windows follow the lookahead.
    for latency in (0.002, 0.02):
        out.append(
            {
                "scenario": "gm-grid",
                "metrics.counterfactual": "none",
                "workload.jobs": n(1000),
                "network.latency": latency,
            }
        )
    return out


def measure(sets: dict, do_run: bool = True) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(sets), "1" if do_run else "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "emulator" / "costs.json"))
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every configuration's size")
    args = parser.parse_args()
    base = measure({"sites": {"count": 1}, "workload.jobs": 1}, do_run=False)
    rows = []
    for sets in configs(args.scale):
        row = measure(sets)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    a = np.array([[row[f] for f in FIGURES] for row in rows], dtype=float)
    # Memory grows with what a run holds (sites, processors, jobs), not with the messages and
    # windows that pass (a message lives one window; this set of runs cannot tell the two apart).
    mem, _ = nnls(a[:, :3], np.array([max(0.0, row["rss"] - base["rss"]) for row in rows]))
    mem = np.append(mem, [0.0, 0.0])
    secs, _ = nnls(np.column_stack([a, np.ones(len(rows))]), np.array([row["wall"] for row in rows]))
    costs = {
        "measured": datetime.date.today().isoformat(),
        "machine": f"{platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "how": "bench/calibrate.py: fresh-process runs of quickstart varying one figure at a time, non-negative fit",
        "memory_bytes": {"base": base["rss"], **{f"per_{f[:-1]}": round(float(v), 1) for f, v in zip(FIGURES, mem)}},
        "seconds": {
            "base": round(float(secs[-1]), 4),
            **{f"per_{f[:-1]}": float(f"{v:.3g}") for f, v in zip(FIGURES, secs[:-1])},
        },
        "runs": rows,
    }
    Path(args.out).write_text(json.dumps(costs, indent=1) + "\n")
    print(json.dumps({k: costs[k] for k in ("memory_bytes", "seconds")}, indent=1))


if __name__ == "__main__":
    main()
