"""Measure the costs behind ``gridemu validate``'s memory and wall-time estimate, and write
them to ``emulator/costs.json`` (with the date, machine and Python they were measured on).

    python bench/calibrate.py [--out emulator/costs.json] [--scale 1.0]
    python bench/calibrate.py --refit emulator/costs.json   # no runs: fit the stored ones again

Each configuration runs in a fresh process (its peak RSS is its own), on the general path
(``recurrence=False``: a site, view and agent per site, the dearer path): small runs that
vary one thing at a time (sites, processors, jobs, protocol messages, windows, BILB's pieces
and rounds, and each protocol's own work: MOLBA's plans, the divisible-job rounds, the
Shapley schedules). A least-squares fit with non-negative coefficients gives the seconds per
site, processor, job, message and window, the seconds per unit of each protocol's
``Protocol.work``, and the bytes per site, processor, job, job-carrying message (a piece
left at its receiver) and site-round (a periodic agent's state and records: ``estimate.py``
counts both as this script does); a message or a window that passes is not kept. The bare
process (gridemu imported, the scenario loaded, no run) is the memory's base; the CPU time
of the ``gridemu`` command running a five-job scenario is the time's.

Time is the process's CPU time (``time.process_time``), not the wall clock: on a shared,
loaded machine the wall clock counts the other processes' turns too (a run measured at 15 s
wall used 3.8 s of CPU). The estimate is an order of magnitude, meant to refuse what would
not fit or end and announce what takes long, not a prediction.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ("sites", "procs", "jobs", "messages", "windows")
#: What a run holds until its end, the memory fit's figures: each site, processor and job; each
#: piece a job-carrying message leaves at its receiver (a slot, its result row); each site's
#: state and records of each protocol round (estimate.py counts them the same way).
HELD = ("sites", "procs", "jobs", "job_messages", "site_rounds")
#: The gridemu command beside this Python (its run in a child process, as a user starts it).
_SCRIPT = Path(sys.executable).with_name("gridemu")
GRIDEMU = (
    [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from gridemu.emulator.cli import main; main()"]
)

CHILD = r"""
import json, resource, sys, time
from gridemu.emulator.api import run
from gridemu.emulator.estimate import estimate, job_messages
from gridemu.emulator.scenario import load_scenario
sets, do_run = json.loads(sys.argv[1]), sys.argv[2] == "1"
name = sets.pop("scenario", "quickstart")
sc = load_scenario(name, ({"workload.rate": 1.0} if name == "quickstart" else {}) | sets)
est = estimate(sc)
t0 = time.process_time()
# The general path (a site, view and agent per site), the dearer one: the costs are an upper side.
g = run(sc, recurrence=False).summary["global"] if do_run else {"messages_total": 0, "windows": 0, "jobs": 0}
cpu = time.process_time() - t0
procs = sum(len(s.speeds) for s in sc.sites)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"sites": len(sc.sites), "procs": procs, "jobs": g["jobs"], "messages": g["messages_total"],
                  "windows": g["windows"], "job_messages": job_messages(sc, g.get("messages", {})),
                  "site_rounds": len(sc.sites) * (est.rounds or 0.0), "protocol": sc.plugin.name,
                  "work": est.work.units, "cpu": cpu, "rss": rss}))
"""


def configs(scale: float) -> list[dict]:
    def n(x: float) -> int:
        return max(1, int(x * scale))

    local = {"protocol": {"name": "local"}, "metrics.counterfactual": "none", "run.backend": "inprocess"}
    out = []
    # Sites: averaging over random:8 with about one job a site (an agent that talks, its
    # links, a report round): a site of a talking protocol, the upper side of a local one's.
    for sites in (n(2000), n(8000)):
        out.append(
            {
                "scenario": "averaging-topology",
                "metrics.counterfactual": "none",
                "sites.count": sites,
                "workload.until": 1.0,
            }
        )
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
    # Messages that carry pieces of jobs, and rounds: BILB over random:8 keeps a slot per piece
    # it receives and a record per site and round (at 64 sites, 3 to 4 times the jobs' memory).
    for sites, gap in ((n(64), 0.5), (n(64), 2.0), (n(256), 2.0)):
        out.append(
            {
                "scenario": "bilb-topology",
                "metrics.counterfactual": "none",
                "sites.count": sites,
                "protocol.min_gap": gap,
                "workload.until": 100.0,
            }
        )
    # Each protocol's own work (``Protocol.work``), varied along what it grows with: MOLBA's
    # plans with the jobs and the sites, the divisible-job rounds with their count, the
    # Shapley schedules with the organizations (REF: 2^k coalitions) and the jobs.
    for sets in ({"workload.jobs": n(300)}, {"workload.jobs": n(600)}, {"sites.count": n(40)}, {"sites.count": n(100)}):
        out.append({"scenario": "molba", "metrics.counterfactual": "none", **sets})
    for name in ("bilb", "averaging-game"):
        for until, gap in ((n(2000), 1.0), (n(2000), 4.0)):
            out.append({"scenario": name, "workload.until": float(until), "protocol.min_gap": gap})
    for sites in (4, 8):  # REF: 16 and 256 coalitions
        out.append({"scenario": "shapley", "sites.count": sites, "sites.procs.total": 12})
    out.append({"scenario": "shapley-scale", "sites.count": n(30), "run.horizon": float(n(300))})
    for sets in out:
        sets.setdefault("run.backend", "inprocess")  # the run's CPU time is this process's
    return out


def measure(sets: dict, do_run: bool = True) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(sets), "1" if do_run else "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "sets": sets}


def own_work(sets: dict) -> float:
    """A configuration's ``Protocol.work`` units, as ``estimate.py`` counts them (CHILD's)."""
    from gridemu.emulator.estimate import estimate
    from gridemu.emulator.scenario import load_scenario

    sets = dict(sets)
    name = sets.pop("scenario", "quickstart")
    return estimate(load_scenario(name, ({"workload.rate": 1.0} if name == "quickstart" else {}) | sets)).work.units


def command_cpu(repeat: int = 3) -> float:
    """The CPU time of ``gridemu run gm-prop1`` (five jobs on one site), the command's processes
    together (the least of a few: what the machine's load adds is not the command's)."""
    with tempfile.TemporaryDirectory() as tmp:
        spent = []
        for i in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(
                [*GRIDEMU, "run", "gm-prop1", "--quiet", "--out", f"{tmp}/{i}"],
                check=True,
                capture_output=True,
            )
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            spent.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return min(spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "emulator" / "costs.json"))
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every configuration's size")
    parser.add_argument(
        "--refit",
        metavar="COSTS",
        help="no runs: fit again the runs a costs.json holds, with the protocols' work as estimate.py counts it now",
    )
    args = parser.parse_args()
    if args.refit:
        old = json.loads(Path(args.refit).read_text())
        rows = [{**row, "work": own_work(row["sets"])} for row in old["runs"]]
        base_rss, base_cpu = old["memory_bytes"]["base"], old["seconds"]["base"]
    else:
        base_rss = measure({"sites": {"count": 1}, "workload.jobs": 1}, do_run=False)["rss"]
        rows = []
        for sets in configs(args.scale):
            rows.append(measure(sets))
            print(json.dumps(rows[-1]), file=sys.stderr)
        base_cpu = command_cpu()
    a = np.array([[row[f] for f in FIGURES] for row in rows], dtype=float)
    # Memory grows with what a run holds (HELD), not with the messages and windows that pass (a
    # message lives one window: estimate.py counts a round's or a window's messages apart).
    held = np.array([[row[f] for f in HELD] for row in rows], dtype=float)
    mem, _ = nnls(held, np.array([max(0.0, row["rss"] - base_rss) for row in rows]))
    # One column per protocol whose own work the runs measure: its units in its rows, 0 elsewhere.
    protocols = sorted({row["protocol"] for row in rows if row["work"] > 0})
    own = np.array([[row["work"] if row["protocol"] == p else 0.0 for p in protocols] for row in rows])
    # Each run weighs by its relative error (rows divided by their CPU time): a fit of the
    # absolute seconds would be the longest runs' alone (the others then cost 0 a job).
    cpu = np.array([row["cpu"] for row in rows])
    secs, _ = nnls(np.column_stack([a, own, np.ones(len(rows))]) / cpu[:, None], np.ones(len(rows)))
    costs = {
        "measured": datetime.date.today().isoformat(),
        "machine": f"{platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "how": "bench/calibrate.py: fresh-process runs of quickstart, averaging-topology, gm-grid, bilb-topology, "
        "bilb, averaging-game, molba and shapley on the general path, varying one figure at a time, non-negative "
        "fit of process CPU time; base: the CPU time of the gridemu command running one job",
        "memory_bytes": {"base": base_rss, **{f"per_{f[:-1]}": round(float(v), 1) for f, v in zip(HELD, mem)}},
        # The fit's intercept (a run's fixed cost) is inside the command's own run of one job.
        "seconds": {
            "base": round(base_cpu, 3),
            **{f"per_{f[:-1]}": float(f"{v:.3g}") for f, v in zip(FIGURES, secs)},
        },
        "work_seconds": {p: float(f"{v:.3g}") for p, v in zip(protocols, secs[len(FIGURES) : -1])},
        "runs": rows,
    }
    Path(args.out).write_text(json.dumps(costs, indent=1) + "\n")
    print(json.dumps({k: costs[k] for k in ("memory_bytes", "seconds", "work_seconds")}, indent=1))


if __name__ == "__main__":
    main()
