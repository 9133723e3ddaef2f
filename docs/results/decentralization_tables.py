"""Tables and plots of docs/results/decentralization.md from the sweeps of
decentralization-runs.sh: what averaging load balancing (thesis Alg. 4.1) costs and keeps
when each site hears only its neighbors, for N = 16 to 4,096 sites.

    bash docs/results/decentralization-runs.sh
    python docs/results/decentralization_tables.py runs/decentralization           # print the tables
    python docs/results/decentralization_tables.py runs/decentralization --write   # and put them in the doc

Every figure is a mean over the sweep's seeds. "msgs/job": every message (load reports,
gossip and job transfers) over the jobs of the run; "rows/site/t": messages a site sends per
time unit of the run (makespan); "cpu µs/job": the sites' own CPU seconds (their event loops,
decisions included) per job; "flow": mean flow time; "flow/full": against the all-to-all
run of the same size; "local": every organization alone (the counterfactual run);
"S_k sd": the standard deviation over organizations of the score S_k of thesis 4.5.2
(positive: better off than alone), "S_k mean" its mean.
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

DOC = Path(__file__).with_name("decentralization.md")
IMG = Path(__file__).with_name("img")
BEGIN, END = "<!-- tables:begin (decentralization_tables.py --write) -->", "<!-- tables:end -->"


def load(root: Path) -> pd.DataFrame:
    rows = []
    for part in ("full", "neighbors", "gossip"):
        runs = pd.read_parquet(root / part / "runs.parquet")
        orgs = pd.read_parquet(root / part / "orgs.parquet")
        keys = ["network.topology", "sites.count", "seed"]
        spread = orgs.groupby(keys)["score"].agg(["std", "mean"]).rename(columns={"std": "score_sd", "mean": "score_avg"})
        local = orgs.groupby(keys).apply(lambda o: o["sum_flow_time_local"].sum() / o["jobs"].sum(), include_groups=False)
        runs = runs.set_index(keys).join(spread).assign(flow_local=local).reset_index()
        runs["exchange"] = "gossip" if part == "gossip" else "neighbors"
        rows.append(runs)
    df = pd.concat(rows, ignore_index=True)
    df["variant"] = np.where(df["exchange"] == "gossip", "gossip, " + df["network.topology"], df["network.topology"])
    df["sites"] = df["sites.count"]
    df["msgs_per_job"] = df["messages_total"] / df["jobs"]
    df["rows_per_site_t"] = df["messages_total"] / df["sites"] / df["makespan"]
    df["cpu_us_per_job"] = 1e6 * df["site_cpu_seconds"] / df["jobs"]
    return df.groupby(["variant", "sites"], sort=False).mean(numeric_only=True).reset_index()


def tables(df: pd.DataFrame) -> str:
    full = df[df["variant"] == "full"].set_index("sites")["mean_flow_time"]
    out = ["| variant | sites | jobs | msgs/job | rows/site/t | cpu µs/job | flow | flow/full | local | S_k mean | S_k sd |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for _, r in df.iterrows():
        ratio = f"{r.mean_flow_time / full[r.sites]:.2f}" if r.sites in full.index else "-"
        out.append(
            f"| {r.variant} | {int(r.sites):,} | {r.jobs:,.0f} | {r.msgs_per_job:.2f} | {r.rows_per_site_t:.3f} | "
            f"{r.cpu_us_per_job:.0f} | {r.mean_flow_time:.2f} | {ratio} | {r.flow_local:.2f} | {r.score_avg:+.3f} | {r.score_sd:.3f} |"
        )
    growth = ["", "| variant | msgs/job at 16 sites | at the most sites run | largest / smallest over N |", "|---|---:|---:|---:|"]
    for variant, g in df.groupby("variant", sort=False):
        m = g.set_index("sites")["msgs_per_job"]
        growth.append(f"| {variant} | {m.iloc[0]:.2f} | {m.iloc[-1]:.2f} ({int(m.index[-1]):,} sites) | {m.max() / m.min():.2f} |")
    return "\n".join(out + growth)


def plots(df: pd.DataFrame) -> list[Path]:
    IMG.mkdir(exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    colors = plt.get_cmap("tab10").colors
    for k, (variant, g) in enumerate(df.groupby("variant", sort=False)):
        full = variant == "full"
        style = dict(marker="o", lw=2.4 if full else 1.4, color="black" if full else colors[k % 10],
                     ls=":" if variant.startswith("gossip") else "-")
        axes[0].plot(g["sites"], g["msgs_per_job"], label=variant, **style)
        axes[1].plot(g["sites"], g["mean_flow_time"] / g["flow_local"], label=variant, **style)
    axes[1].axhline(1.0, color="grey", ls="--", lw=1, label="every site alone (no balancing)")
    sizes = sorted(df["sites"].unique())
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{int(n):,}" for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("sites N")
        ax.grid(alpha=0.3)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("messages per job (reports + transfers)")
    axes[0].set_title("What the sites send")
    axes[1].set_ylabel("mean flow time / mean flow time alone")
    axes[1].set_ylim(0, 1.1)
    axes[1].set_title("What load balancing keeps (lower is better)")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=8, title="topology (exchange)")
    path = IMG / "decentralization-averaging.png"
    fig.savefig(path, dpi=120)
    return [path]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    df = load(Path(argv[0]))
    text = tables(df)
    print(text)
    for p in plots(df):
        print(f"wrote {p}")
    if "--write" in argv:
        write_between(BEGIN, END, text)
    return 0


def write_between(begin: str, end: str, text: str) -> None:
    """Put ``text`` into the doc between its ``begin`` and ``end`` markers (figures are never typed by hand)."""
    doc = DOC.read_text()
    a, b = doc.index(begin) + len(begin), doc.index(end)
    DOC.write_text(doc[:a] + "\n" + text + "\n" + doc[b:])
    print(f"wrote {DOC}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
