"""Print thesis Tables 5.1 and 5.2 beside gridemu's figures, as markdown (for docs/results/molba.md).

    bash docs/results/molba-tables.sh                  # the two sweeps (OUT=runs/molba-tables)
    python docs/results/molba_tables.py runs/molba-tables > tables.md

Each row pools the 3 x R instances of one (N, n) (every m), as the thesis does ("each row
is an aggregation over 150 random instances"); "average" rows pool every n of one N, the
last row everything. A cell reads "thesis / ours" for the mean score s = makespan /
max(W̄, p_max) and its standard deviation σ over instances. "exec" is the makespan the
decentralized run executed (from T0), which must equal the reference's MOLBA+ILBA.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

# Thesis Tables 5.1 (uni) and 5.2 (swf), transcribed from multi-organization-grid-thesis.txt
# (section 5.6.2): (N, n) -> (local s, σ, MOLBA s, σ, MOLBA+ILBA s, σ); n = 0 is "average",
# (0, 0) the overall average.
T51 = {
    (2, 0): (1.64, 0.19, 1.64, 0.19, 1.19, 0.06), (2, 10): (1.85, 0.38, 1.85, 0.38, 1.42, 0.17),
    (2, 50): (1.63, 0.20, 1.63, 0.19, 1.17, 0.04), (2, 100): (1.59, 0.13, 1.59, 0.13, 1.12, 0.03),
    (2, 500): (1.50, 0.06, 1.50, 0.06, 1.05, 0.02),
    (5, 0): (2.74, 0.40, 2.03, 0.14, 1.21, 0.09), (5, 10): (1.97, 0.53, 1.84, 0.42, 1.29, 0.26),
    (5, 50): (3.11, 0.52, 2.17, 0.09, 1.29, 0.06), (5, 100): (3.04, 0.39, 2.09, 0.05, 1.19, 0.03),
    (5, 500): (2.85, 0.17, 2.02, 0.01, 1.08, 0.01),
    (10, 0): (4.19, 0.65, 2.08, 0.18, 1.27, 0.10), (10, 10): (1.98, 0.62, 1.76, 0.40, 1.19, 0.22),
    (10, 50): (4.69, 0.96, 2.32, 0.18, 1.46, 0.10), (10, 100): (5.10, 0.71, 2.20, 0.10, 1.31, 0.05),
    (10, 500): (5.01, 0.29, 2.04, 0.02, 1.12, 0.02),
    (20, 0): (5.96, 0.97, 2.10, 0.21, 1.32, 0.11), (20, 10): (1.78, 0.71, 1.53, 0.44, 1.13, 0.20),
    (20, 50): (5.72, 1.20, 2.44, 0.23, 1.55, 0.12), (20, 100): (7.29, 1.30, 2.35, 0.13, 1.43, 0.08),
    (20, 500): (9.05, 0.69, 2.10, 0.03, 1.18, 0.02),
    (0, 0): (3.64, 2.31, 1.96, 0.37, 1.25, 0.19),
}
T52 = {
    (2, 0): (1.22, 0.28, 1.22, 0.28, 1.09, 0.11), (2, 10): (1.03, 0.16, 1.03, 0.16, 1.00, 0.00),
    (2, 50): (1.10, 0.27, 1.10, 0.27, 1.02, 0.08), (2, 100): (1.21, 0.33, 1.21, 0.33, 1.07, 0.15),
    (2, 500): (1.53, 0.36, 1.53, 0.36, 1.26, 0.20),
    (5, 0): (1.17, 0.29, 1.10, 0.18, 1.02, 0.05), (5, 10): (1.02, 0.14, 1.01, 0.08, 1.00, 0.00),
    (5, 50): (1.08, 0.24, 1.02, 0.08, 1.01, 0.04), (5, 100): (1.14, 0.28, 1.07, 0.17, 1.01, 0.05),
    (5, 500): (1.46, 0.47, 1.32, 0.38, 1.05, 0.11),
    (10, 0): (1.15, 0.27, 1.03, 0.06, 1.00, 0.01), (10, 10): (1.01, 0.08, 1.00, 0.02, 1.00, 0.00),
    (10, 50): (1.06, 0.22, 1.00, 0.03, 1.00, 0.00), (10, 100): (1.10, 0.22, 1.01, 0.04, 1.00, 0.00),
    (10, 500): (1.44, 0.55, 1.09, 0.16, 1.01, 0.05),
    (20, 0): (1.12, 0.26, 1.01, 0.03, 1.00, 0.00), (20, 10): (1.02, 0.12, 1.00, 0.00, 1.00, 0.00),
    (20, 50): (1.05, 0.18, 1.00, 0.01, 1.00, 0.00), (20, 100): (1.10, 0.24, 1.00, 0.01, 1.00, 0.00),
    (20, 500): (1.32, 0.48, 1.03, 0.08, 1.00, 0.02),
    (0, 0): (1.17, 0.35, 1.09, 0.23, 1.03, 0.10),
}
SCORES = ["score_local", "score_molba", "score_molba_ilba"]


def rows(runs: pd.DataFrame) -> dict[tuple[int, int], tuple[float, ...]]:
    """(N, n) -> (local s, σ, MOLBA s, σ, MOLBA+ILBA s, σ, exec s, runs), pooled like the thesis."""
    out = {}
    groups = [((n_orgs, 0), part) for n_orgs, part in runs.groupby("sites.count")]
    groups += [((n_orgs, n), part) for (n_orgs, n), part in runs.groupby(["sites.count", "workload.jobs"])]
    groups.append(((0, 0), runs))
    for key, part in groups:
        cells: list[float] = []
        for col in SCORES:
            cells += [part[col].mean(), part[col].std(ddof=0)]
        out[(int(key[0]), int(key[1]))] = (*cells, part["score"].mean(), len(part))
    return out


def table(name: str, thesis: dict, ours: dict) -> str:
    lines = [
        f"| N | n | local s | local σ | MOLBA s | MOLBA σ | MOLBA+ILBA s | MOLBA+ILBA σ | exec s | instances |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = sorted((k for k in thesis if k != (0, 0)), key=lambda k: (k[0], k[1])) + [(0, 0)]
    for key in order:
        t, o = thesis[key], ours.get(key)
        label_n = "average" if key[1] == 0 else str(key[1])
        label_N = "all" if key[0] == 0 else str(key[0])
        if o is None:
            cells = [f"{a:.2f} / -" for a in t] + ["-", "0"]
        else:
            cells = [f"{a:.2f} / {b:.2f}" for a, b in zip(t, o[:6])] + [f"{o[6]:.2f}" if o[6] == o[6] else "-", str(o[7])]
        bold = "**" if key[1] == 0 else ""
        lines.append(f"| {bold}{label_N}{bold} | {bold}{label_n}{bold} | " + " | ".join(cells) + " |")
    return f"**{name}** (thesis / gridemu)\n\n" + "\n".join(lines) + "\n"


def by_m(runs: pd.DataFrame) -> str:
    """Mean scores per m: the thesis found no effect of m (t-test p-values 0.17 to 0.62)."""
    means = runs.groupby("sites.procs")[SCORES].mean()
    lines = ["| m | local | MOLBA | MOLBA+ILBA |", "|---|---|---|---|"]
    lines += [f"| {int(m)} | " + " | ".join(f"{v:.3f}" for v in row) + " |" for m, row in means.iterrows()]
    return "\n".join(lines) + "\n"


def worst(runs: pd.DataFrame) -> str:
    lines = []
    for col in SCORES:
        r = runs.loc[runs[col].idxmax()]
        lines.append(f"- worst {col.removeprefix('score_')}: {r[col]:.2f} (N = {int(r['sites.count'])}, n = {int(r['workload.jobs'])}, "
                     f"m = {int(r['sites.procs'])}, seed {int(r['seed'])})")
    return "\n".join(lines) + "\n"


def main(root: str) -> None:
    readings = (
        ("Table 5.1, uni", "uni", T51), ("Table 5.1, uni, machines only for organizations owning a job", "uni-owners", T51),
        ("Table 5.2, swf", "swf", T52), ("Table 5.2, swf, machines only for organizations owning a job", "swf-owners", T52),
    )
    for name, folder, thesis in readings:
        path = Path(root) / folder / "runs.parquet"
        if not path.exists():
            continue
        runs = pd.read_parquet(path)
        print(table(name, thesis, rows(runs)))
        if runs["score"].notna().any():
            mismatch = (runs["score"] - runs["score_molba_ilba"]).abs().max()
            refusals = int(runs["messages_refuse"].fillna(0).sum()) if "messages_refuse" in runs else 0
            print(f"Executed vs reference MOLBA+ILBA score, largest difference over {len(runs)} runs: {mismatch:.2g}; "
                  f"refusals: {refusals}.\n")
        print(f"MOLBA(3) chosen by the meta-algorithm in {int((runs['alpha'] == 3).sum())} of {len(runs)} instances.\n")
        print(by_m(runs))
        print(worst(runs))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/molba-tables")
