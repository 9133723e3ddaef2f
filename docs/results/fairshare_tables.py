"""Tables and figures of docs/results/fairshare.md from the runs of fairshare-runs.sh.

    bash docs/results/fairshare-runs.sh && python -m gridemu.experiments.fairshare_tables runs/fairshare [--format pdf]

For each run: every entry's target, final aggregated share, final deviation (percentage
points), mean absolute deviation over the second half of the run, and the time (hours) from
which the share stays within ±2 points of its target; then the staleness sweep. Writes
each run's share figure to docs/results/img/fairshare-<run>.<format> (``--format``, ``--dpi``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pandas as pd

from gridemu.emulator.figures import figure_options
from gridemu.emulator.report import plot_shares

RUNS = [
    ("swegrid-historical", "Figure 4 policy, historical usage (the paper's Figures 5-8)"),
    ("swegrid-active", "active usage (Figure 9)"),
    ("swegrid-predictive", "predictive usage (Figure 10)"),
    ("imbalanced-local", "P-A2 and P-A3 submit to 3 of 6 sites, local usage only (Figure 11)"),
    ("imbalanced-global", "the same with usage reports to every site (Figure 12)"),
    ("imbalanced-service", "the same through per-VO usage services"),
    ("idle", "U-B12 stops after 2 hours, predictive usage (Figures 13-14)"),
]
IMG = Path(__file__).parent / "img"


def hours(x: float | None) -> str:
    return "never" if x is None else f"{x / 3600:.1f}"


def main(root: str, fmt: str = "png", dpi: float = 110) -> None:
    for name, title in RUNS:
        run = Path(root) / name
        if not (run / "summary.json").exists():
            continue
        summary = json.loads((run / "summary.json").read_text())
        policy = summary["policy"]
        print(f"**{name}**: {title}.\n")
        print(
            "| entry | target % | final share % | final deviation (points) | "
            "mean abs deviation, 2nd half | within ±2 points from (h) |"
        )
        print("|---|---|---|---|---|---|")
        for entry, v in policy["entries"].items():
            print(
                f"| {entry} | {100 * v['target']:.0f} | {100 * v['final_share']:.1f} | "
                f"{v['final_deviation_points']:+.1f} | {v['mean_abs_deviation_points']:.2f} | "
                f"{hours(v['within_2_points_from'])} |"
            )
        print(
            f"\nMean absolute deviation over entries: {policy['mean_abs_deviation_points']:.2f} points; "
            f"largest final deviation {policy['max_final_deviation_points']:.1f}.\n"
        )
        ts = pd.read_parquet(run / "timeseries.parquet")
        IMG.mkdir(exist_ok=True)
        shutil.copy(plot_shares(run, ts, f"{name}: {title}", fmt=fmt, dpi=dpi), IMG / f"fairshare-{name}.{fmt}")
    sweep = Path(root) / "staleness" / "runs.parquet"
    if sweep.exists():
        runs = pd.read_parquet(sweep)
        table = runs.groupby(["policy.approach", "protocol.refresh"])[
            ["mean_abs_deviation_points", "max_final_deviation_points"]
        ].agg(["mean", "std"])
        print("| approach | refresh (s) | mean abs deviation (points) | largest final deviation (points) | runs |")
        print("|---|---|---|---|---|")
        counts = runs.groupby(["policy.approach", "protocol.refresh"]).size()
        for (approach, refresh), row in table.iterrows():
            print(
                f"| {approach} | {refresh:g} | "
                f"{row[('mean_abs_deviation_points', 'mean')]:.2f} ± {row[('mean_abs_deviation_points', 'std')]:.2f} | "
                f"{row[('max_final_deviation_points', 'mean')]:.1f} | {counts[(approach, refresh)]} |"
            )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", default="runs/fairshare", help="the runs of fairshare-runs.sh")
    figure_options(ap, dpi=110)
    args = ap.parse_args(sys.argv[1:])
    main(args.root, args.format, args.dpi)
