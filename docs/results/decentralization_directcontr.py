"""The tables and plot of docs/results/decentralization.md, "DIRECTCONTR", from the sweeps of
decentralization-directcontr.sh: DIRECTCONTR replicated at every site (from broadcasts, on a
clock stretched by 4L per time unit) against DIRECTCONTR decided at each organization's site
from its own key and d sampled sites' (``protocol.mode = "sampled"``), 10 to 1,000
organizations of the shipped ``shapley-scale`` scenario.

    bash docs/results/decentralization-directcontr.sh
    python -m gridemu.experiments.decentralization_directcontr runs/decentralization           # print the tables
    python -m gridemu.experiments.decentralization_directcontr runs/decentralization --write   # and put them in the doc

Every figure is a mean over the sweep's seeds. "Δψ/p_tot": the run's distance to RAND(N)'s
Shapley values at t_end (REF is out of reach past 10 organizations), "central": the same for
centralized DIRECTCONTR on the same jobs (the summary runs it, never through the agents);
"msgs/job": every message over the jobs; "wait": mean time from release to start; "cpu
µs/job": the sites' own CPU seconds per job; "wall s": the run's kernel seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from gridemu.experiments.decentralization_tables import (
    IMG,
    legend_and_save,
    log_axis,
    messages_axis,
    sites_axis,
    table_args,
    write_between,
)  # noqa: E402

BEGIN, END = "<!-- directcontr:begin (decentralization_directcontr.py --write) -->", "<!-- directcontr:end -->"
LAT_BEGIN, LAT_END = (
    "<!-- directcontr-latency:begin (decentralization_directcontr.py --write) -->",
    "<!-- directcontr-latency:end -->",
)
PARTS = (
    "directcontr-replicated",
    "directcontr-replicated-300",
    "directcontr-sampled",
    "directcontr-sampled-300",
    "directcontr-sampled-1000",
)
KEEP = ["jobs", "fairness", "fairness_directcontr", "msgs_per_job", "mean_wait_time", "cpu_us_per_job", "wall_seconds"]


def _derived(df: pd.DataFrame) -> pd.DataFrame:
    df["msgs_per_job"] = df["messages_total"] / df["jobs"]
    df["cpu_us_per_job"] = 1e6 * df["site_cpu_seconds"] / df["jobs"]
    for col in ("fairness", "fairness_directcontr"):
        if col not in df:
            df[col] = float("nan")
    return df


def load(root: Path) -> pd.DataFrame:
    rows = []
    for part in PARTS:
        runs = pd.read_parquet(root / part / "runs.parquet")
        if "replicated" in part:
            runs["variant"] = "replicated (every site, broadcasts)"
        else:
            runs["variant"] = runs["protocol.choices"].map(lambda d: f"sampled d = {int(d)}" if d else "alone (d = 0)")
        runs["organizations"] = runs["sites.count"]
        rows.append(runs)
    df = _derived(pd.concat(rows, ignore_index=True))
    out = df.groupby(["variant", "organizations"])[KEEP].mean().reset_index()
    out["runs"] = df.groupby(["variant", "organizations"]).size().to_numpy()
    rank = {v: i for i, v in enumerate(sorted(out["variant"].unique(), key=_rank))}
    return out.sort_values(
        ["variant", "organizations"], key=lambda c: c.map(rank) if c.name == "variant" else c, ignore_index=True
    )


def _rank(variant: str) -> tuple:
    d = variant.rsplit("= ", 1)[-1].rstrip(")")
    return (not variant.startswith("replicated"), int(d) if d.isdigit() else -1)


def _num(x: float, fmt: str) -> str:
    return format(x, fmt) if x == x else "-"


def table(df: pd.DataFrame) -> str:
    out = [
        "| DIRECTCONTR | organizations | runs | jobs | Δψ/p_tot | central | msgs/job | wait | cpu µs/job | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in df.iterrows():
        out.append(
            f"| {r.variant} | {int(r.organizations):,} | {int(r.runs)} | {r.jobs:,.0f} | {_num(r.fairness, '.2f')} | "
            f"{_num(r.fairness_directcontr, '.2f')} | {r.msgs_per_job:.2f} | {r.mean_wait_time:.1f} | "
            f"{r.cpu_us_per_job:.0f} | {r.wall_seconds:.1f} |"
        )
    return "\n".join(out)


def latency_table(root: Path) -> str:
    df = _derived(pd.read_parquet(root / "directcontr-latency" / "runs.parquet"))
    g = df.groupby(["protocol.mode", "network.latency"])[KEEP].mean().reset_index()
    out = [
        "| mode (30 organizations) | latency L | Δψ/p_tot | central | msgs/job | wait |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for _, r in g.iterrows():
        out.append(
            f"| {r['protocol.mode']} | {r['network.latency']:g} | {r.fairness:.2f} | {r.fairness_directcontr:.2f} | "
            f"{r.msgs_per_job:.2f} | {r.mean_wait_time:.1f} |"
        )
    return "\n".join(out)


def plot(df: pd.DataFrame, fmt: str = "png", dpi: float = 120, folder: Path = IMG) -> Path:
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), constrained_layout=True)
    for variant, g in df.groupby("variant", sort=False):
        rep = variant.startswith("replicated")
        style = dict(marker="o", lw=2.4 if rep else 1.4, color="black" if rep else None)
        axes[0].plot(g["organizations"], g["msgs_per_job"].clip(lower=0.01), label=variant, **style)
        axes[1].plot(g["organizations"], g["fairness"], label=variant, **style)
        axes[2].plot(g["organizations"], g["mean_wait_time"], label=variant, **style)
    central = (
        df[df["variant"].str.startswith("sampled")].groupby("organizations")["fairness_directcontr"].mean().dropna()
    )
    axes[1].plot(central.index, central.to_numpy(), ls="--", color="grey", marker="s", label="centralized DIRECTCONTR")
    for ax in axes:
        sites_axis(ax, sorted(df["organizations"].unique()))
        ax.set_xlabel("organizations (one site of 2 processors each)")
    log_axis(axes[1])
    messages_axis(axes[0], "what the sites send (0 drawn at 0.01)")
    axes[1].set_ylabel("Δψ/p_tot against RAND(N) at t_end")
    axes[1].set_title("unfairness (lower is better)", fontsize=10)
    axes[2].set_ylabel("mean wait (time units)")
    axes[2].set_title("what the jobs get (lower is better)", fontsize=10)
    return legend_and_save(fig, axes[1], "DIRECTCONTR", "directcontr", fmt, dpi, folder)


def main(argv: list[str]) -> int:
    args = table_args(argv, __doc__)
    root = Path(args.root)
    df = load(root)
    text = table(df)
    lat = latency_table(root)
    print(text)
    print(lat)
    print(f"wrote {plot(df, args.format, args.dpi, IMG if args.write else Path(args.root))}")
    if args.write:
        write_between(BEGIN, END, text)
        write_between(LAT_BEGIN, LAT_END, lat)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
