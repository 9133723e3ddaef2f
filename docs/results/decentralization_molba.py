"""The table and plot of docs/results/decentralization.md, "MOLBA", from the sweeps of
decentralization-molba.sh: MOLBA replicated at every site (every job offered to every site,
the central plan computed at each) against MOLBA from published aggregates
(``protocol.mode = "aggregates"``), N = 5 to 500 organizations.

    bash docs/results/decentralization-molba.sh
    python -m gridemu.experiments.decentralization_molba runs/decentralization           # print the table
    python -m gridemu.experiments.decentralization_molba runs/decentralization --write   # and put it in the doc

Every figure is a mean over the sweep's seeds. Scores are makespan / max(W̄, p_max) (thesis
5.6.1): "local" every organization alone, "MOLBA" and "MOLBA+ILBA" the centralized
algorithms computed by the summary on the whole instance (never by the agents), "run" the
executed schedule. "msgs/job": every message over the jobs; "moved": jobs run away from
home; "wall s": the run's kernel seconds.
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
    messages_axis,
    sites_axis,
    table_args,
    write_between,
)  # noqa: E402

BEGIN, END = "<!-- molba:begin (decentralization_molba.py --write) -->", "<!-- molba:end -->"
SIZES = (5, 20, 100, 500)


def load(root: Path) -> pd.DataFrame:
    rows = []
    for n in SIZES:
        runs = pd.read_parquet(root / f"molba-{n}" / "runs.parquet")
        runs["organizations"] = n
        rows.append(runs)
    df = pd.concat(rows, ignore_index=True)
    df["msgs_per_job"] = df["messages_total"] / df["jobs"]
    df["moved_share"] = df["jobs_migrated"] / df["jobs"]
    keep = [
        "jobs",
        "overloaded",
        "score_local",
        "score_molba",
        "score_molba_ilba",
        "score",
        "msgs_per_job",
        "moved_share",
        "wall_seconds",
    ]
    out = df.groupby(["protocol.mode", "organizations"])[keep].mean().reset_index()
    return out.sort_values(
        ["protocol.mode", "organizations"],
        key=lambda c: c.map({"replicated": 0, "aggregates": 1}) if c.name == "protocol.mode" else c,
    )


def table(df: pd.DataFrame) -> str:
    out = [
        "| MOLBA | organizations | jobs | \\|O'\\| | score local | "
        "MOLBA | MOLBA+ILBA | run | msgs/job | moved | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in df.iterrows():
        out.append(
            f"| {r['protocol.mode']} | {int(r.organizations)} | {r.jobs:,.0f} | {r.overloaded:.1f} | "
            f"{r.score_local:.2f} | {r.score_molba:.3f} | {r.score_molba_ilba:.3f} | {r.score:.3f} | "
            f"{r.msgs_per_job:.2f} | {100 * r.moved_share:.0f} % | {r.wall_seconds:.2f} |"
        )
    return "\n".join(out)


def plot(df: pd.DataFrame, fmt: str = "png", dpi: float = 120, folder: Path = IMG) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for mode, g in df.groupby("protocol.mode", sort=False):
        rep = mode == "replicated"
        style = dict(marker="o", lw=2.4 if rep else 1.4, color="black" if rep else "tab:green")
        label = "replicated (every job offered to every site)" if rep else "aggregates (four numbers a site)"
        axes[0].plot(g["organizations"], g["msgs_per_job"], label=label, **style)
        axes[1].plot(g["organizations"], g["score"], label=f"run: {label}", **style)
    central = df.groupby("organizations")[["score_molba", "score_molba_ilba"]].mean()
    axes[1].plot(central.index, central["score_molba"], ls="--", color="grey", marker="s", label="centralized MOLBA")
    axes[1].plot(
        central.index, central["score_molba_ilba"], ls=":", color="grey", marker="^", label="centralized MOLBA+ILBA"
    )
    for ax in axes:
        sites_axis(ax, sorted(df["organizations"].unique()))
        ax.set_xlabel("organizations (one site of 128 processors each)")
    messages_axis(axes[0], "what the sites send")
    axes[1].set_ylabel("makespan / max(W̄, p_max)")
    axes[1].set_title("schedule score (lower is better; alone: 3.3 to 184)", fontsize=10)
    return legend_and_save(fig, axes[1], "MOLBA", "molba", fmt, dpi, folder)


def main(argv: list[str]) -> int:
    args = table_args(argv, __doc__)
    df = load(Path(args.root))
    text = table(df)
    print(text)
    print(f"wrote {plot(df, args.format, args.dpi, IMG if args.write else Path(args.root))}")
    if args.write:
        write_between(BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
