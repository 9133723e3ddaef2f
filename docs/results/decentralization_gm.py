"""The table and plot of docs/results/decentralization.md, "Greedy migration", from the sweeps
of decentralization-gm.sh: GM replicated at every site (from broadcasts) against GM decided
per site from d sampled sites (``protocol.mode = "sampled"``), N = 16 to 1,024 sites.

    bash docs/results/decentralization-gm.sh
    python -m gridemu.experiments.decentralization_gm runs/decentralization           # print the table
    python -m gridemu.experiments.decentralization_gm runs/decentralization --write   # and put it in the doc

Every figure is a mean over the sweep's seeds. "msgs/job": every message (broadcasts,
probes, bids, steals and job transfers) over the jobs; "moves/job": the job table's
``migrations`` (moves between sites, and between processors of a site after a start);
"cpu µs/job": the sites' own CPU seconds per job; "EF/1000": EF violations (Definition 2)
per 1,000 comparable pairs; "vs central": the largest difference of a completion time from
the centralized GM simulator's (not computed past 5·10^6 jobs × processors).
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

BEGIN, END = "<!-- gm:begin (decentralization_gm.py --write) -->", "<!-- gm:end -->"
CENTRAL_BEGIN, CENTRAL_END = "<!-- gm-central:begin (decentralization_gm.py --write) -->", "<!-- gm-central:end -->"
PARTS = ("gm-replicated", "gm-sampled", "gm-sampled-1024", "gm-sampled-random8")


def load(root: Path) -> pd.DataFrame:
    rows = []
    for part in PARTS:
        runs = pd.read_parquet(root / part / "runs.parquet")
        if part == "gm-replicated":
            runs["variant"] = "replicated (full graph)"
        else:
            where = "random:8" if part.endswith("random8") else "full graph"
            runs["variant"] = runs["protocol.samples"].map(
                lambda d: f"sampled d = {int(d)} ({where})" if d else "local GM only (d = 0)"
            )
        runs["sites"] = runs["sites.count"] if "sites.count" in runs else runs["sites"]
        rows.append(runs)
    df = pd.concat(rows, ignore_index=True)
    df["msgs_per_job"] = df["messages_total"] / df["jobs"]
    df["moves_per_job"] = df["migrations"] / df["jobs"]
    df["cpu_us_per_job"] = 1e6 * df["site_cpu_seconds"] / df["jobs"]
    if "reference_max_diff" not in df:
        df["reference_max_diff"] = float("nan")
    keep = [
        "jobs",
        "mean_flow_time",
        "msgs_per_job",
        "moves_per_job",
        "cpu_us_per_job",
        "ef_per_1000_pairs",
        "reference_max_diff",
        "wall_seconds",
    ]
    order = {v: i for i, v in enumerate(dict.fromkeys(sorted(df["variant"], key=_rank)))}
    out = df.groupby(["variant", "sites"])[keep].mean().reset_index()
    return out.sort_values(
        ["variant", "sites"], key=lambda c: c.map(order) if c.name == "variant" else c, ignore_index=True
    )


def _rank(variant: str) -> tuple:
    return (not variant.startswith("replicated"), "random" in variant, variant)


def table(df: pd.DataFrame) -> str:
    out = [
        "| GM | sites | jobs | flow | msgs/job | moves/job | cpu µs/job | EF/1000 | vs central | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in df.iterrows():
        ref = f"{r.reference_max_diff:.1f}" if r.reference_max_diff == r.reference_max_diff else "-"
        out.append(
            f"| {r.variant} | {int(r.sites):,} | {r.jobs:,.0f} | {r.mean_flow_time:.2f} | {r.msgs_per_job:.2f} | "
            f"{r.moves_per_job:.2f} | {r.cpu_us_per_job:.0f} | "
            f"{r.ef_per_1000_pairs:.2f} | {ref} | {r.wall_seconds:.1f} |"
        )
    return "\n".join(out)


def plot(df: pd.DataFrame, fmt: str = "png", dpi: float = 120, folder: Path = IMG) -> Path:
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), constrained_layout=True)
    for variant, g in df.groupby("variant", sort=False):
        style = dict(
            marker="o",
            lw=2.4 if variant.startswith("replicated") else 1.4,
            color="black" if variant.startswith("replicated") else None,
            ls=":" if "random" in variant else "-",
        )
        axes[0].plot(g["sites"], g["msgs_per_job"].clip(lower=0.01), label=variant, **style)
        axes[1].plot(g["sites"], g["mean_flow_time"], label=variant, **style)
        axes[2].plot(g["sites"], g["ef_per_1000_pairs"].clip(lower=0.001), label=variant, **style)
    for ax in axes:
        sites_axis(ax, sorted(df["sites"].unique()))
        log_axis(ax)
    messages_axis(axes[0], "what the sites send (0 drawn at 0.01)")
    axes[1].set_ylabel("mean flow time (time units)")
    axes[1].set_title("what the jobs get (lower is better)", fontsize=10)
    axes[2].set_ylabel("EF violations per 1,000 comparable pairs")
    axes[2].set_title("envy-freeness (0 drawn at 0.001)", fontsize=10)
    return legend_and_save(fig, axes[0], "GM", "gm", fmt, dpi, folder)


def central(sizes: tuple[int, ...] = (16, 64), seeds: tuple[int, ...] = (1, 2)) -> str:
    """The centralized GM simulator (no latency, no cost) on the sweep's jobs: its mean flow
    time and migrations per job, means over the seeds (the replicated sweep's sizes)."""
    import numpy as np

    from gridemu.brokers.gm.algorithm import simulate
    from gridemu.brokers.gm.metrics import instance
    from gridemu.emulator.scenario import load_scenario
    from gridemu.scenarios.workload import generate_jobs

    out = ["| sites | central GM flow | migrations/job |", "|---:|---:|---:|"]
    for n in sizes:
        flows, moves = [], []
        for seed in seeds:
            sc = load_scenario("gm-scale", overrides={"sites.count": n, "run.seed": seed})
            jobs = instance(generate_jobs(sc)[0])
            speeds = [v for s in sc.sites for v in s.speeds]
            res = simulate(jobs, speeds, "gm", sites=[k for k, s in enumerate(sc.sites) for _ in s.speeds])
            flows.append(np.mean([res.completion[j.id] - j.r for j in jobs]))
            moves.append(sum(res.migrations.values()) / len(jobs))
        out.append(f"| {n:,} | {np.mean(flows):.2f} | {np.mean(moves):.0f} |")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    args = table_args(argv, __doc__)
    df = load(Path(args.root))
    text = table(df)
    print(text)
    print(f"wrote {plot(df, args.format, args.dpi, IMG if args.write else Path(args.root))}")
    reference = central()
    print(reference)
    if args.write:
        write_between(BEGIN, END, text)
        write_between(CENTRAL_BEGIN, CENTRAL_END, reference)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
