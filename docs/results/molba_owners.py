"""The thesis's instances read the other way: machines only for organizations that own a job.

Section 5.6.1 draws each job's owner by Zipf over N organizations; with few jobs and many
organizations some own nothing. gridemu gives every organization its machine (the model of
section 5.1). This script recomputes the scores of the same instances (the sweeps' seeds)
with the organizations that own no job left out, machine included, using the reference
functions (``brokers.algorithms.molba``), which the decentralized protocol matches on every run of
``molba-tables.sh``. It writes ``OUT/{uni,swf}-owners/runs.parquet`` for molba_tables.py.

    python docs/results/molba_owners.py runs/molba-tables      # about 15 minutes on 2 cores
"""
from __future__ import annotations

import itertools
import sys
from multiprocessing import Pool
from pathlib import Path

import pandas as pd

from gridemu.brokers.algorithms.list_scheduling import Job, makespan
from gridemu.brokers.algorithms.molba import lower_bound, molba_plan
from gridemu.brokers.protocols.molba import instance
from gridemu.emulator.scenario import load_scenario
from gridemu.scenarios.workload import generate_jobs

#: The instances of molba-tables.sh: every m has seeds of its own (m = 32: 1..50, 128: 1001.., 512: 2001..).
GRID = [(n_orgs, n, m, 1 + 1000 * i + r) for n_orgs, n in itertools.product((2, 5, 10, 20), (10, 50, 100, 500))
        for i, m in enumerate((32, 128, 512)) for r in range(50)]


def one(args: tuple[str, int, int, int, int]) -> dict:
    scenario, n_orgs, n, m, seed = args
    sc = load_scenario(scenario, {"sites.count": n_orgs, "sites.procs": m, "workload.jobs": n, "run.seed": seed})
    jobs = instance(generate_jobs(sc)[0], [m] * n_orgs)
    owners = {o: k for k, o in enumerate(sorted({j.org for j in jobs}))}
    jobs = [Job(j.id, owners[j.org], j.p, j.q) for j in jobs]
    machines = [m] * len(owners)
    plan = molba_plan(jobs, machines)
    lb = lower_bound(jobs, machines)
    row = {"sites.count": n_orgs, "workload.jobs": n, "sites.procs": m, "seed": seed, "owning": len(owners), "alpha": plan.alpha}
    for name, sched in (("local", plan.local), ("molba", plan.molba), ("molba_ilba", plan.final)):
        row[f"score_{name}"] = makespan(sched, jobs) / lb
    row["score"] = float("nan")  # no emulator run behind this reading
    return row


def main(root: str) -> None:
    with Pool(2) as pool:
        for scenario, folder in (("molba", "uni"), ("molba-swf", "swf")):
            rows = pool.map(one, [(scenario, *g) for g in GRID], chunksize=8)
            out = Path(root) / f"{folder}-owners"
            out.mkdir(parents=True, exist_ok=True)
            pd.DataFrame(rows).to_parquet(out / "runs.parquet", index=False)
            print(f"{out}/runs.parquet: {len(rows)} instances")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/molba-tables")
