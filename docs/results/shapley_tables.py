"""Tables and figure of docs/results/shapley.md from the sweeps of shapley-runs.sh.

    bash docs/results/shapley-runs.sh && python -m gridemu.experiments.shapley_tables runs/shapley [--write]

Δψ/p_tot per algorithm over the sweep's windows, beside the papers' figures: mean with its
95 % confidence interval (Student t over windows), standard deviation, median, and the
share of windows where some algorithm's schedule differs from REF's ("contended"). Every
run scores every algorithm on the same window, so two algorithms are compared window by
window: the sign test (the share of windows where one is the fairer, exact binomial) and
the paired t-test. Then the number of organizations ([L] Figure 4, drawn to
img/shapley-orgs.png) and what latency costs. ``--write`` puts the text between the
markers of shapley.md instead of printing it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from gridemu.emulator.figures import figure_options, save_figure
from gridemu.experiments.bilb_tables import mean_ci
from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.molba_tables import betainc

DOC = Path(__file__).with_name("shapley.md")
IMG = Path(__file__).with_name("img") / "shapley-orgs.png"
IMG_FIRST = Path(__file__).with_name("img") / "shapley-orgs-first.png"
# [L] section 6.3.1, over all its Figure 4 and 5 runs: the mean Δψ/p_tot of ROUNDROBIN, RAND
# (N = 15) and DIRECTCONTR, and the largest of DIRECTCONTR (RAND's largest is for N = 75).
L_FIGURES = {"roundrobin": 42120, "rand": 91, "directcontr": 480}
L_FIGURES_MAX = {"roundrobin": 6e5, "directcontr": 25608}
ALGOS = ["roundrobin", "rand", "directcontr", "fairshare", "utfairshare", "currfairshare"]
NAMES = {
    "roundrobin": "ROUNDROBIN",
    "rand": "RAND (N = 15)",
    "directcontr": "DIRECTCONTR",
    "fairshare": "FAIRSHARE",
    "utfairshare": "UTFAIRSHARE",
    "currfairshare": "CURRFAIRSHARE",
    "ref": "REF",
    "fairness": "DIRECTCONTR, decentralized (this run)",
    "directcontr_index": "DIRECTCONTR, processors by number",
}
# The papers' figures, (avg, st. dev.): [S] Tables 1 (5·10^4 s) and 2 (5·10^5 s), 5 organizations,
# Zipf and uniform splits not told apart; [L] Table 1 (5·10^5 s, uniform split, 5 organizations).
S_TABLE1 = {
    "lpc-egee": {
        "roundrobin": (238, 353),
        "rand": (8, 21),
        "directcontr": (5, 11),
        "fairshare": (16, 25),
        "utfairshare": (16, 25),
        "currfairshare": (87, 106),
    },
    "ricc": {
        "roundrobin": (2839, 357),
        "rand": (162, 187),
        "directcontr": (537, 303),
        "fairshare": (626, 309),
        "utfairshare": (515, 284),
        "currfairshare": (1231, 243),
    },
}
S_TABLE2 = {
    "lpc-egee": {
        "roundrobin": (4511, 6257),
        "rand": (562, 1670),
        "directcontr": (410, 1083),
        "fairshare": (575, 1404),
        "utfairshare": (888, 2101),
        "currfairshare": (1082, 2091),
    },
    "ricc": {
        "roundrobin": (10850, 13773),
        "rand": (771, 1479),
        "directcontr": (1808, 3397),
        "fairshare": (2746, 4070),
        "utfairshare": (4963, 6080),
        "currfairshare": (5387, 9083),
    },
}
L_TABLE1 = {
    "lpc-egee": {"rand": (161, 435), "directcontr": (218, 659), "roundrobin": (3774, 14244)},
    "ricc": {"rand": (791, 1348), "directcontr": (1520, 3765), "roundrobin": (7560, 9226)},
}
# folder under runs/shapley -> (the page's marker name, title, [S] figures, [L] figures)
CELLS = {
    "lpc-egee": ("table1-lpc", "LPC-EGEE, 70 processors, windows of 5·10⁴ s ([S] Table 1)", S_TABLE1["lpc-egee"], None),
    "lpc-egee-long": (
        "table2-lpc",
        "LPC-EGEE, 70 processors, windows of 5·10⁵ s ([S] Table 2, [L] Table 1)",
        S_TABLE2["lpc-egee"],
        L_TABLE1["lpc-egee"],
    ),
    "lpc-egee-17": (
        "table2-lpc17",
        "LPC-EGEE, 17 processors (contended), windows of 5·10⁵ s (ours: not a cell of the papers)",
        None,
        None,
    ),
    "ricc": ("table1-ricc", "RICC, 8192 processors, windows of 5·10⁴ s ([S] Table 1)", S_TABLE1["ricc"], None),
    "ricc-long": (
        "table2-ricc",
        "RICC, 8192 processors, windows of 5·10⁵ s ([S] Table 2, [L] Table 1)",
        S_TABLE2["ricc"],
        L_TABLE1["ricc"],
    ),
}


def paired_t(d: np.ndarray) -> float:
    """Two-tailed p of the paired t-test that the mean of the differences ``d`` is 0."""
    n, sd = len(d), float(d.std(ddof=1)) if len(d) > 1 else 0.0
    if sd == 0:
        return 1.0 if not d.any() else 0.0
    t, df = abs(float(d.mean())) / (sd / math.sqrt(n)), n - 1
    return betainc(df / 2, 0.5, df / (df + t * t))


def sign_test(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """Windows where ``a`` is below ``b``, windows where they differ, and the exact two-tailed p."""
    lower, n = int((a < b).sum()), int((a != b).sum())
    k = min(lower, n - lower)
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n) if n else 1.0
    return lower, n, p


def fmt(x: float) -> str:
    return "–" if x != x else (f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 1 else f"{x:.2f}")


EMPTY = "has no job to run"  # the error of a window without jobs (shapley-runs.sh)


def read_cell(folder: Path, windows: int, split: str = "uniform") -> tuple[pd.DataFrame, int]:
    """The first ``windows`` windows with jobs, by seed, of each split; and how many windows
    had no job. Any other failure stops the tables: it is not a property of the trace. A
    cell that set the split instead of sweeping it has no split column: ``split`` names it."""
    parts = sorted(folder.glob("part-*/runs.parquet")) or [folder / "runs.parquet"]  # ricc-long: in parts
    runs, empty = pd.concat([pd.read_parquet(f) for f in parts], ignore_index=True), 0
    runs["sites.procs.dist"] = runs.get("sites.procs.dist", pd.Series(index=runs.index, dtype=object)).fillna(split)
    failures = [f.with_name("failures.csv") for f in parts if f.with_name("failures.csv").exists()]
    if failures:
        failed = pd.concat([pd.read_csv(f) for f in failures], ignore_index=True)
        other = failed[~failed["error"].str.contains(EMPTY)]
        if len(other):
            raise SystemExit(f"{folder}: {len(other)} runs failed, first: {other['error'].iloc[0]}")
        empty = int(failed["seed"].nunique())
    return runs.sort_values("seed").groupby("sites.procs.dist", group_keys=False).head(windows), empty


def cell_table(runs: pd.DataFrame, paper_s: dict | None, paper_l: dict | None, empty: int = 0) -> str:
    dists = [d for d in ("zipf", "uniform") if d in set(runs["sites.procs.dist"])]
    head = (
        ["algorithm"]
        + (["[S] avg / st. dev."] if paper_s else [])
        + (["[L] avg / st. dev. (uniform)"] if paper_l else [])
    )
    for d in dists:
        head += [f"{d}: mean [95 % CI]", f"{d}: st. dev. / median"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in ALGOS + ["fairness", "directcontr_index"]:
        col = a if a == "fairness" else f"fairness_{a}"
        row = [NAMES[a]]
        if paper_s:
            row.append(" / ".join(map(str, paper_s[a])) if a in paper_s else "")
        if paper_l:
            row.append(" / ".join(map(str, paper_l[a])) if a in paper_l else "")
        for d in dists:
            x = runs.loc[runs["sites.procs.dist"] == d, col].to_numpy(float)
            m, h = mean_ci(x)
            row += [f"{fmt(m)} [{fmt(m - h)}, {fmt(m + h)}]", f"{fmt(x.std(ddof=1))} / {fmt(float(np.median(x)))}"]
        lines.append("| " + " | ".join(row) + " |")
    notes = []
    for d in dists:
        part = runs[runs["sites.procs.dist"] == d]
        scores = part[[f"fairness_{a}" for a in ALGOS]].to_numpy(float)
        contended = float((scores > 0).any(axis=1).mean())
        ranking = " < ".join(
            f"{NAMES[a]} {fmt(part[f'fairness_{a}'].mean())}"
            for a in sorted(ALGOS, key=lambda a: part[f"fairness_{a}"].mean())
        )
        dc, fs = part["fairness_directcontr"].to_numpy(float), part["fairness_fairshare"].to_numpy(float)
        lower, n, p = sign_test(dc, fs)
        diff = dc - fs
        m, h = mean_ci(diff)
        notes.append(
            f"* **{d}** ({len(part)} windows, {contended:.0%} contended, {int(part['jobs'].mean())} jobs a window on "
            f"average). Ranking by mean: {ranking}. DIRECTCONTR − FAIRSHARE = {fmt(m)} [{fmt(m - h)}, {fmt(m + h)}] "
            f"(paired t p = {paired_t(diff):.2g}); DIRECTCONTR is the fairer in {lower} of the {n} windows where they "
            f"differ (sign test p = {p:.2g})."
        )
    if empty:
        notes.append(f"* {empty} drawn windows held no job (Δψ/p_tot is 0/0 there); the next seeds replaced them.")
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


def orgs_table(runs: pd.DataFrame) -> str:
    algos = [a for a in ALGOS if f"fairness_{a}" in runs and runs[f"fairness_{a}"].notna().any()]
    lines = []
    for (total, dist), part in runs.groupby(["sites.procs.total", "sites.procs.dist"]):
        n = part.groupby("sites.count").size().min()
        how = "one run a point" if n == 1 else f"means over {n} windows, with the 95 % half-width"
        lines += [
            f"**{int(total)} processors, {dist}** ({how})",
            "",
            "| organizations | " + " | ".join(NAMES[a] for a in algos) + " | decentralized |",
            "|---|" + "---|" * (len(algos) + 1),
        ]
        for k, sub in part.groupby("sites.count"):
            stats = [mean_ci(sub[c].to_numpy(float)) for c in [f"fairness_{a}" for a in algos] + ["fairness"]]
            cells = [fmt(m) if n == 1 else f"{fmt(m)} ± {fmt(h)}" for m, h in stats]
            lines.append(f"| {int(k)} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def first_summary(runs: pd.DataFrame) -> str:
    """Our figures over every point of the first-5·10^6-s grid, beside [L]'s over its Figures 4 and 5."""
    lines = [
        "| algorithm | [L] mean over its runs | ours, mean over the points | [L] largest | ours, largest |",
        "|---|---|---|---|---|",
    ]
    for a in ("roundrobin", "rand", "directcontr", "fairshare"):
        col = runs[f"fairness_{a}"]
        lines.append(
            f"| {NAMES[a]} | {L_FIGURES.get(a, '')} | {fmt(col.mean())} | "
            f"{fmt(L_FIGURES_MAX[a]) if a in L_FIGURES_MAX else ''} | {fmt(col.max())} |"
        )
    return "\n".join(lines) + "\n"


def bootstrap_ci(x: np.ndarray, draws: int = 2000) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of the mean: it stays inside the data's range, so
    a heavy-tailed, non-negative Δψ/p_tot never gets a negative lower end (Student's does)."""
    if len(x) < 2:
        return math.nan, math.nan
    means = np.random.default_rng(0).choice(x, size=(draws, len(x))).mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def orgs_figure(runs: pd.DataFrame, path: Path, title: str, fmt: str = "png", dpi: float = 110) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    algos = [a for a in ALGOS if f"fairness_{a}" in runs and runs[f"fairness_{a}"].notna().any()]
    panels = [(30, "uniform"), (17, "uniform"), (30, "zipf"), (17, "zipf")]  # [L] Figure 4's a-d
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
    for ax, (total, dist), letter in zip(axes.flat, panels, "abcd"):
        part = runs[(runs["sites.procs.total"] == total) & (runs["sites.procs.dist"] == dist)]
        for a in algos:
            groups = [sub[f"fairness_{a}"].to_numpy(float) for _, sub in part.groupby("sites.count")]
            means = np.array([g.mean() for g in groups])
            ci = np.array([bootstrap_ci(g) for g in groups])
            ks = sorted(part["sites.count"].unique())
            yerr = None if np.isnan(ci).all() else np.abs(np.vstack([means - ci[:, 0], ci[:, 1] - means]))
            ax.errorbar(ks, np.where(means > 0, means, np.nan), yerr=yerr, marker="o", capsize=3, label=NAMES[a])
        ax.set_yscale("log")
        ax.set_title(f"{letter}) {total} processors, {dist} split")
        ax.set_xlabel("organizations")
        ax.set_ylabel("Δψ/p_tot (time units, log scale)")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(
        title
        + "\nREF itself is 0 by definition and not drawn; nor is a value of 0 (the algorithm gave REF's schedule)",
        fontsize=10,
    )
    fig.tight_layout()
    return save_figure(fig, path, fmt, dpi)


def latency_table(runs: pd.DataFrame) -> str:
    lines = ["| latency (s) | decentralized DIRECTCONTR, mean ± 95 % half-width |", "|---|---|"]
    for lat, sub in runs.groupby("network.latency"):
        m, h = mean_ci(sub["fairness"].to_numpy(float))
        lines.append(f"| {lat:g} | {fmt(m)} ± {fmt(h)} |")
    return "\n".join(lines) + "\n"


def main(root: str, write: bool, windows: int = 100, fmt: str = "png", dpi: float = 110) -> None:
    out: dict[str, str] = {}
    for folder, (marker, title, paper_s, paper_l) in CELLS.items():
        cell = Path(root) / folder
        if (cell / "runs.parquet").exists() or any(cell.glob("part-*/runs.parquet")):
            runs, empty = read_cell(cell, windows)
            out[marker] = f"**{title}**\n\n" + cell_table(runs, paper_s, paper_l, empty)
    orgs = Path(root) / "lpc-egee-orgs" / "runs.parquet"
    if orgs.exists():
        runs = pd.read_parquet(orgs)
        out["orgs"] = orgs_table(runs)
        if write:
            n = runs.groupby(["sites.procs.total", "sites.procs.dist", "sites.count"]).size().min()
            path = orgs_figure(
                runs,
                IMG,
                "LPC-EGEE, random windows of 5·10⁵ s: unfairness against REF by the number of "
                f"organizations (mean of {n} windows, 95 % bootstrap CI)",
                fmt,
                dpi,
            )
            print(f"wrote {path}")
    first = Path(root) / "lpc-egee-first" / "runs.parquet"
    if first.exists():
        runs = pd.read_parquet(first)
        out["first"] = first_summary(runs) + "\n" + orgs_table(runs)
        if write:
            path = orgs_figure(
                runs,
                IMG_FIRST,
                "LPC-EGEE, the first 5·10⁶ s ([L] Figure 4 as written): unfairness against "
                "REF by the number of organizations (one run a point)",
                fmt,
                dpi,
            )
            print(f"wrote {path}")
    latency = Path(root) / "lpc-egee-latency" / "runs.parquet"
    if latency.exists():
        out["latency"] = latency_table(pd.read_parquet(latency))
    for marker, text in out.items():
        if write:
            write_between(f"<!-- {marker}:begin (shapley_tables.py --write) -->", f"<!-- {marker}:end -->", text, DOC)
        else:
            print(text)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", default="runs/shapley", help="the sweeps' folder (default runs/shapley)")
    ap.add_argument("--write", action="store_true", help="put the tables into shapley.md and draw the figures")
    figure_options(ap, dpi=110)
    args = ap.parse_args()
    main(args.root, args.write, fmt=args.format, dpi=args.dpi)
