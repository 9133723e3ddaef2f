"""Tables and plots of docs/results/decentralization.md from the sweeps of
decentralization-runs.sh: what averaging load balancing (thesis Alg. 4.1, whole jobs) and
BILB (Alg. 4.3, divisible pieces) cost and keep when each site hears only its neighbors,
for N = 16 to 4,096 sites.

    bash docs/results/decentralization-runs.sh
    python -m gridemu.experiments.decentralization_tables runs/decentralization           # print the tables
    python -m gridemu.experiments.decentralization_tables runs/decentralization --write   # and put them in the doc

Every figure is a mean over the sweep's seeds. "msgs/job": every message (load reports,
gossip and job transfers) over the jobs of the run; "rows/site/t": messages a site sends per
time unit of the run (makespan); "cpu µs/job": the sites' own CPU seconds (their event loops,
decisions included) per job; "flow": mean flow time; "flow/full": against the all-to-all
run of the same size; "local": every organization alone (the counterfactual run);
"S_k sd": the standard deviation over organizations of the score S_k of thesis 4.5.2
(positive: better off than alone), "S_k mean" its mean.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from gridemu.emulator.figures import figure_options, save_figure  # noqa: E402

DOC = Path(__file__).with_name("decentralization.md")
IMG = Path(__file__).with_name("img")
BEGIN, END = "<!-- tables:begin (decentralization_tables.py --write) -->", "<!-- tables:end -->"
BILB_BEGIN, BILB_END = "<!-- bilb:begin (decentralization_tables.py --write) -->", "<!-- bilb:end -->"
GAP_BEGIN, GAP_END = "<!-- bilb-gap:begin (decentralization_tables.py --write) -->", "<!-- bilb-gap:end -->"
#: The sweep folders of each study (decentralization-runs.sh); "gossip" folders hold the gossip exchange.
AVERAGING = ("full", "neighbors", "gossip")
BILB = ("bilb-full", "bilb-neighbors", "bilb-4096", "bilb-gossip")


def per_run(root: Path, part: str) -> pd.DataFrame:
    """One sweep's runs with their organizations' figures: the S_k spread, the flow time alone."""
    runs = pd.read_parquet(root / part / "runs.parquet")
    orgs = pd.read_parquet(root / part / "orgs.parquet")
    keys = list(runs.columns[: runs.columns.get_loc("seed") + 1])  # the sweep's settings and the seed
    by = orgs.groupby(keys)
    figures = by["score"].agg(["std", "mean"]).rename(columns={"std": "score_sd", "mean": "score_avg"})
    figures["flow_local"] = by["sum_flow_time_local"].sum() / by["jobs"].sum()
    figures["sites"] = by.size()
    runs = runs.set_index(keys).join(figures).reset_index()
    runs["msgs_per_job"] = runs["messages_total"] / runs["jobs"]
    runs["rows_per_site_t"] = runs["messages_total"] / runs["sites"] / runs["makespan"]
    runs["cpu_us_per_job"] = 1e6 * runs["site_cpu_seconds"] / runs["jobs"]
    return runs


def load(root: Path, parts: tuple[str, ...]) -> pd.DataFrame:
    rows = []
    for part in parts:
        runs = per_run(root, part)
        runs["variant"] = ("gossip, " if part.endswith("gossip") else "") + runs["network.topology"]
        rows.append(runs)
    df = pd.concat(rows, ignore_index=True)
    df = df.groupby(["variant", "sites"], sort=False).mean(numeric_only=True).reset_index()
    first = {v: i for i, v in enumerate(dict.fromkeys(df["variant"]))}  # the sweeps' order, sizes ascending
    return df.sort_values(
        ["variant", "sites"], key=lambda c: c.map(first) if c.name == "variant" else c, ignore_index=True
    )


def gap_table(root: Path) -> str:
    """BILB over random:8 at 256 sites against the time between rounds (sweep ``bilb-gap``)."""
    df = per_run(root, "bilb-gap").groupby("protocol.min_gap").mean(numeric_only=True).reset_index()
    out = [
        "| min_gap (time units between rounds) | msgs/job | rows/site/t | flow | local | flow/local |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in df.iterrows():
        out.append(
            f"| {r['protocol.min_gap']:g} | {r.msgs_per_job:.2f} | {r.rows_per_site_t:.3f} | {r.mean_flow_time:.2f} | "
            f"{r.flow_local:.2f} | {r.mean_flow_time / r.flow_local:.2f} |"
        )
    return "\n".join(out)


def tables(df: pd.DataFrame) -> str:
    full = df[df["variant"] == "full"].set_index("sites")["mean_flow_time"]
    out = [
        "| variant | sites | jobs | msgs/job | rows/site/t | "
        "cpu µs/job | flow | flow/full | local | S_k mean | S_k sd |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in df.iterrows():
        ratio = f"{r.mean_flow_time / full[r.sites]:.2f}" if r.sites in full.index else "-"
        out.append(
            f"| {r.variant} | {int(r.sites):,} | {r.jobs:,.0f} | {r.msgs_per_job:.2f} | {r.rows_per_site_t:.3f} | "
            f"{r.cpu_us_per_job:.0f} | {r.mean_flow_time:.2f} | {ratio} | "
            f"{r.flow_local:.2f} | {r.score_avg:+.3f} | {r.score_sd:.3f} |"
        )
    growth = [
        "",
        "| variant | msgs/job at 16 sites | at the most sites run | largest / smallest over N |",
        "|---|---:|---:|---:|",
    ]
    for variant, g in df.groupby("variant", sort=False):
        m = g.set_index("sites")["msgs_per_job"]
        growth.append(
            f"| {variant} | {m.iloc[0]:.2f} | {m.iloc[-1]:.2f} ({int(m.index[-1]):,} sites) | {m.max() / m.min():.2f} |"
        )
    return "\n".join(out + growth)


def plots(df: pd.DataFrame, name: str, protocol: str, fmt: str = "png", dpi: float = 120, folder: Path = IMG) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    # One color per topology in every figure; gossip dotted in its topology's color.
    colors = {
        "full": "black",
        "ring": "tab:red",
        "random:8": "tab:green",
        "grid2d": "tab:orange",
        "smallworld:8:0.1": "tab:purple",
        "tree:4": "tab:brown",
    }
    for variant, g in df.groupby("variant", sort=False):
        topology = variant.removeprefix("gossip, ")
        gossip = variant.startswith("gossip")
        style = dict(
            marker="s" if gossip else "o",
            lw=2.4 if variant == "full" else 1.4,
            color=colors.get(topology, "tab:gray"),
            ls=":" if gossip else "-",
        )
        axes[0].plot(g["sites"], g["msgs_per_job"], label=variant, **style)
        axes[1].plot(g["sites"], g["mean_flow_time"] / g["flow_local"], label=variant, **style)
    axes[1].axhline(1.0, color="grey", ls="--", lw=1, label="every site alone (no balancing)")
    for ax in axes:
        sites_axis(ax, sorted(df["sites"].unique()))
    log_axis(axes[0])
    axes[0].set_ylabel("messages per job (every kind)")
    axes[0].set_title(f"{protocol}: what the sites send", fontsize=10)
    axes[1].set_ylabel("mean flow time / mean flow time alone")
    axes[1].set_ylim(0, 1.1)
    axes[1].set_title(f"{protocol}: what load balancing keeps (lower is better)", fontsize=10)
    return legend_and_save(fig, axes[1], "topology (exchange)", name, fmt, dpi, folder)


def legend_and_save(
    fig, legend_from, title: str, name: str, fmt: str = "png", dpi: float = 120, folder: Path = IMG
) -> Path:
    """The legend of ``legend_from``'s lines right of the panels; ``folder``/decentralization-<name>.<fmt>
    (the page's docs/results/img/ only with ``--write``: a look at other runs leaves it as published)."""
    handles, labels = legend_from.get_legend_handles_labels()
    folder.mkdir(parents=True, exist_ok=True)
    fig.legend(handles, labels, loc="outside right center", fontsize=8, title=title)
    return save_figure(fig, folder / f"decentralization-{name}", fmt, dpi)


def messages_axis(ax, title: str) -> None:
    """Messages per job on a log axis (every protocol's first panel)."""
    log_axis(ax)
    ax.set_ylabel("messages per job (every kind)")
    ax.set_title(title, fontsize=10)


def sites_axis(ax, sizes: list) -> None:
    """A log x axis of site counts, ticked at the counts run, with a grid."""
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{int(n):,}" for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("sites N")
    ax.grid(alpha=0.3)


def log_axis(ax) -> None:
    """A log y axis with plain numbers at 1, 2 and 5 of each decade."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def table_args(argv: list[str], doc: str | None) -> argparse.Namespace:
    """The command line of this page's table scripts: the sweeps' folder, ``--write``, and
    ``--format``/``--dpi`` for their figures."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", help="the sweeps' folder (see the run script named above)")
    ap.add_argument("--write", action="store_true", help="put the tables into decentralization.md")
    figure_options(ap, dpi=120)
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = table_args(argv, __doc__)
    root = Path(args.root)
    for parts, name, protocol, markers in (
        (AVERAGING, "averaging", "averaging (Alg. 4.1)", (BEGIN, END)),
        (BILB, "bilb", "BILB (Alg. 4.3)", (BILB_BEGIN, BILB_END)),
    ):
        df = load(root, parts)
        text = tables(df)
        print(text)
        print(f"wrote {plots(df, name, protocol, args.format, args.dpi, IMG if args.write else Path(root))}")
        if args.write:
            write_between(*markers, text)
    text = gap_table(root)
    print(text)
    if args.write:
        write_between(GAP_BEGIN, GAP_END, text)
    return 0


def write_between(begin: str, end: str, text: str, doc_path: Path = DOC) -> None:
    """Put ``text`` into a results page (this folder's decentralization.md by default) between
    its ``begin`` and ``end`` markers (figures are never typed by hand)."""
    doc = doc_path.read_text()
    a, b = doc.index(begin) + len(begin), doc.index(end)
    doc_path.write_text(doc[:a] + "\n" + text + "\n" + doc[b:])
    print(f"wrote {doc_path}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
