"""Tables of docs/results/shapley.md from the sweeps of shapley-runs.sh.

    bash docs/results/shapley-runs.sh && python docs/results/shapley_tables.py runs/shapley

Δψ/p_tot per algorithm (mean and standard deviation over the sweep's instances) beside the
short paper's Table 1 where the workload matches, then the effect of the number of
organizations and of latency.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ALGOS = ["roundrobin", "rand", "directcontr", "fairshare", "utfairshare", "currfairshare"]
NAMES = {"roundrobin": "ROUNDROBIN", "rand": "RAND (N = 15)", "directcontr": "DIRECTCONTR", "fairshare": "FAIRSHARE",
         "utfairshare": "UTFAIRSHARE", "currfairshare": "CURRFAIRSHARE"}
# [S] Table 1 (duration 5·10^4, 100 instances): (avg, st. dev.)
TABLE1 = {
    "lpc-egee": {"roundrobin": (238, 353), "rand": (8, 21), "directcontr": (5, 11), "fairshare": (16, 25),
                 "utfairshare": (16, 25), "currfairshare": (87, 106)},
    "lpc-egee-long": {"roundrobin": (4511, 6257), "rand": (562, 1670), "directcontr": (410, 1083), "fairshare": (575, 1404),
                      "utfairshare": (888, 2101), "currfairshare": (1082, 2091)},  # [S] Table 2 (5·10^5)
    "ricc": {"roundrobin": (2839, 357), "rand": (162, 187), "directcontr": (537, 303), "fairshare": (626, 309),
             "utfairshare": (515, 284), "currfairshare": (1231, 243)},
}


def main(root: str) -> None:
    for name in ("lpc-egee", "lpc-egee-long", "ricc"):
        path = Path(root) / name / "runs.parquet"
        if not path.exists():
            continue
        runs = pd.read_parquet(path)
        print(f"**{name}** ({len(runs)} instances)\n")
        print("| algorithm | paper avg | paper st. dev. | ours avg | ours st. dev. | ours median |")
        print("|---|---|---|---|---|---|")
        for a in ALGOS:
            col = runs[f"fairness_{a}"]
            p = TABLE1[name][a]
            print(f"| {NAMES[a]} | {p[0]} | {p[1]} | {col.mean():.1f} | {col.std():.1f} | {col.median():.1f} |")
        for extra, label in (("fairness", "DIRECTCONTR, decentralized (this run)"),
                             ("fairness_directcontr_index", "DIRECTCONTR, processors by number")):
            col = runs[extra]
            print(f"| {label} | | | {col.mean():.1f} | {col.std():.1f} | {col.median():.1f} |")
        print()
    for name, key, label in (("lpc-egee-orgs", "sites.count", "organizations"),
                             ("lpc-egee-latency", "network.latency", "latency (s)")):
        path = Path(root) / name / "runs.parquet"
        if not path.exists():
            continue
        runs = pd.read_parquet(path)
        cols = [c for c in ["fairness"] + [f"fairness_{a}" for a in ALGOS] if c in runs and runs[c].notna().any()]
        table = runs.groupby(key)[cols].mean()
        print(f"| {label} | " + " | ".join(NAMES.get(c.removeprefix("fairness_"), "decentralized") for c in cols) + " |")
        print("|---|" + "---|" * len(cols))
        for k, row in table.iterrows():
            print(f"| {k:g} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
        print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/shapley")
