"""Thesis Tables 5.1 and 5.2 beside gridemu's figures, and the t-tests on m of section 5.7.

    PER_N=1 bash docs/results/molba-tables.sh                  # the sweeps (OUT=runs/molba-tables), both readings
    python -m gridemu.experiments.molba_tables runs/molba-tables         # print the tables
    python -m gridemu.experiments.molba_tables runs/molba-tables --write # and put them in molba.md
    bash docs/results/molba-negotiated.sh                      # mode = "negotiated" (OUT=runs/molba-negotiated)
    python -m gridemu.experiments.molba_tables runs/molba-negotiated --negotiated --write

Each (N, n) row pools the 150 instances of its three m (50 each, independent draws: every m
has seeds of its own), as the thesis does ("each row is an aggregation over 150 random
instances"). A cell reads "thesis / ours" for the mean score s = makespan / max(W̄, p_max)
and its standard deviation σ over the row's instances. The thesis's "average" row of an N
is the mean of its four rows: the mean of their means and, as the thesis's figures show
(N = 2: 0.19 = the mean of 0.38, 0.20, 0.13 and 0.06), the mean of their σ, not the σ of
the pooled instances; its last row pools every instance (σ 2.31 on *uni*, above every row's).
"exec" is the makespan the decentralized run executed (from T0), which must equal the
reference's MOLBA+ILBA. Two readings of which organizations bring a machine
(``protocol.machines``): "all" (folders ``uni``, ``swf``) and "owners" (``uni-owners``,
``swf-owners``), the one the thesis's tables agree with; each folder name followed by
``-m<m>``, or with PER_N=1 (seeds per N, as molba.md's tables) by ``-N<N>-m<m>``.

The effect of m (section 5.7): two-tailed Welch ("type 3") t-tests between m = 32 and 128
and between 128 and 512, every other variable pooled, per score. p comes from Student's t
with the Welch-Satterthwaite degrees of freedom (:func:`welch`).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.script_args import hand_parsed

DOC = Path(__file__).with_name("molba.md")
MS = (32, 128, 512)
NS = (2, 5, 10, 20)

# Thesis Tables 5.1 (uni) and 5.2 (swf), transcribed from multi-organization-grid-thesis.txt
# (section 5.6.2): (N, n) -> (local s, σ, MOLBA s, σ, MOLBA+ILBA s, σ); n = 0 is "average",
# (0, 0) the overall average.
T51 = {
    (2, 0): (1.64, 0.19, 1.64, 0.19, 1.19, 0.06),
    (2, 10): (1.85, 0.38, 1.85, 0.38, 1.42, 0.17),
    (2, 50): (1.63, 0.20, 1.63, 0.19, 1.17, 0.04),
    (2, 100): (1.59, 0.13, 1.59, 0.13, 1.12, 0.03),
    (2, 500): (1.50, 0.06, 1.50, 0.06, 1.05, 0.02),
    (5, 0): (2.74, 0.40, 2.03, 0.14, 1.21, 0.09),
    (5, 10): (1.97, 0.53, 1.84, 0.42, 1.29, 0.26),
    (5, 50): (3.11, 0.52, 2.17, 0.09, 1.29, 0.06),
    (5, 100): (3.04, 0.39, 2.09, 0.05, 1.19, 0.03),
    (5, 500): (2.85, 0.17, 2.02, 0.01, 1.08, 0.01),
    (10, 0): (4.19, 0.65, 2.08, 0.18, 1.27, 0.10),
    (10, 10): (1.98, 0.62, 1.76, 0.40, 1.19, 0.22),
    (10, 50): (4.69, 0.96, 2.32, 0.18, 1.46, 0.10),
    (10, 100): (5.10, 0.71, 2.20, 0.10, 1.31, 0.05),
    (10, 500): (5.01, 0.29, 2.04, 0.02, 1.12, 0.02),
    (20, 0): (5.96, 0.97, 2.10, 0.21, 1.32, 0.11),
    (20, 10): (1.78, 0.71, 1.53, 0.44, 1.13, 0.20),
    (20, 50): (5.72, 1.20, 2.44, 0.23, 1.55, 0.12),
    (20, 100): (7.29, 1.30, 2.35, 0.13, 1.43, 0.08),
    (20, 500): (9.05, 0.69, 2.10, 0.03, 1.18, 0.02),
    (0, 0): (3.64, 2.31, 1.96, 0.37, 1.25, 0.19),
}
T52 = {
    (2, 0): (1.22, 0.28, 1.22, 0.28, 1.09, 0.11),
    (2, 10): (1.03, 0.16, 1.03, 0.16, 1.00, 0.00),
    (2, 50): (1.10, 0.27, 1.10, 0.27, 1.02, 0.08),
    (2, 100): (1.21, 0.33, 1.21, 0.33, 1.07, 0.15),
    (2, 500): (1.53, 0.36, 1.53, 0.36, 1.26, 0.20),
    (5, 0): (1.17, 0.29, 1.10, 0.18, 1.02, 0.05),
    (5, 10): (1.02, 0.14, 1.01, 0.08, 1.00, 0.00),
    (5, 50): (1.08, 0.24, 1.02, 0.08, 1.01, 0.04),
    (5, 100): (1.14, 0.28, 1.07, 0.17, 1.01, 0.05),
    (5, 500): (1.46, 0.47, 1.32, 0.38, 1.05, 0.11),
    (10, 0): (1.15, 0.27, 1.03, 0.06, 1.00, 0.01),
    (10, 10): (1.01, 0.08, 1.00, 0.02, 1.00, 0.00),
    (10, 50): (1.06, 0.22, 1.00, 0.03, 1.00, 0.00),
    (10, 100): (1.10, 0.22, 1.01, 0.04, 1.00, 0.00),
    (10, 500): (1.44, 0.55, 1.09, 0.16, 1.01, 0.05),
    (20, 0): (1.12, 0.26, 1.01, 0.03, 1.00, 0.00),
    (20, 10): (1.02, 0.12, 1.00, 0.00, 1.00, 0.00),
    (20, 50): (1.05, 0.18, 1.00, 0.01, 1.00, 0.00),
    (20, 100): (1.10, 0.24, 1.00, 0.01, 1.00, 0.00),
    (20, 500): (1.32, 0.48, 1.03, 0.08, 1.00, 0.02),
    (0, 0): (1.17, 0.35, 1.09, 0.23, 1.03, 0.10),
}
SCORES = ["score_local", "score_molba", "score_molba_ilba"]


def load(root: Path, folder: str) -> pd.DataFrame | None:
    """The runs of one reading: the three per-m sweeps of molba-tables.sh, its per-(N, m)
    sweeps (PER_N=1), or one table."""
    parts = [root / f"{folder}-m{m}" / "runs.parquet" for m in MS]
    if all(p.exists() for p in parts):
        return pd.concat(
            [pd.read_parquet(p).assign(**{"sites.procs": m}) for p, m in zip(parts, MS)], ignore_index=True
        )
    per_n = load_per_n(root, folder)
    if per_n is not None:
        return per_n
    path = root / folder / "runs.parquet"
    return pd.read_parquet(path) if path.exists() else None


def rows(runs: pd.DataFrame) -> dict[tuple[int, int], tuple[float, ...]]:
    """(N, n) -> (local s, σ, MOLBA s, σ, MOLBA+ILBA s, σ, exec s, runs), aggregated like the thesis."""
    out = {}
    for (n_orgs, n), part in runs.groupby(["sites.count", "workload.jobs"]):
        cells: list[float] = []
        for col in SCORES:
            cells += [part[col].mean(), part[col].std(ddof=0)]
        out[(int(n_orgs), int(n))] = (*cells, part["score"].mean(), len(part))
    for n_orgs, part in runs.groupby("sites.count"):
        mine = [v for (a, _), v in out.items() if a == n_orgs]  # its four rows: means of means and of σ
        cells = [float(np.mean([r[i] for r in mine])) for i in range(6)]
        out[(int(n_orgs), 0)] = (*cells, part["score"].mean(), len(part))
    cells = []
    for col in SCORES:
        cells += [runs[col].mean(), runs[col].std(ddof=0)]
    out[(0, 0)] = (*cells, runs["score"].mean(), len(runs))
    return out


def table(thesis: dict, ours: dict) -> str:
    lines = [
        "| N | n | local s | local σ | MOLBA s | MOLBA σ | MOLBA+ILBA s | MOLBA+ILBA σ | exec s | instances |",
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
            cells = [f"{a:.2f} / {b:.2f}" for a, b in zip(t, o[:6])] + [
                f"{o[6]:.2f}" if o[6] == o[6] else "-",
                str(o[7]),
            ]
        bold = "**" if key[1] == 0 else ""
        lines.append(f"| {bold}{label_N}{bold} | {bold}{label_n}{bold} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def welch(a: np.ndarray, b: np.ndarray) -> float:
    """Two-tailed p of Welch's t-test (unequal variances) for the means of ``a`` and ``b``."""
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        return 1.0 if a.mean() == b.mean() else 0.0
    t = abs(a.mean() - b.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return betainc(df / 2, 0.5, df / (df + t * t))  # P(|T| > t) = I_{df/(df+t²)}(df/2, 1/2)


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction (modified Lentz)."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast below the mean; use the symmetry above it
        return 1.0 - betainc(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny, f, c, d = 1e-300, 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2:
            num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        else:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + num / c
        c = c if abs(c) > tiny else tiny
        f *= c * d
        if abs(1.0 - c * d) < 1e-15:
            break
    return front * (f - 1.0)


#: Section 5.7: p of the t-tests on m, (32 vs 128, 128 vs 512) for local, MOLBA, MOLBA+ILBA (uni).
THESIS_P = {(32, 128): (0.35, 0.17, 0.53), (128, 512): (0.56, 0.62, 0.35)}


def by_m(runs: pd.DataFrame, thesis: bool) -> str:
    """Mean scores per m, and the t-tests of section 5.7 (the thesis reports them for uni)."""
    means = runs.groupby("sites.procs")[SCORES].mean()
    lines = ["| m | instances | local | MOLBA | MOLBA+ILBA |", "|---|---|---|---|---|"]
    count = runs.groupby("sites.procs").size()
    lines += [
        f"| {int(m)} | {int(count[m])} | " + " | ".join(f"{v:.3f}" for v in row) + " |" for m, row in means.iterrows()
    ]
    lines += ["", "| Welch t-test, two-tailed p | local | MOLBA | MOLBA+ILBA |", "|---|---|---|---|"]
    for lo, hi in THESIS_P:
        a, b = (runs[runs["sites.procs"] == m] for m in (lo, hi))
        ps = [welch(a[c].to_numpy(float), b[c].to_numpy(float)) for c in SCORES]
        ref = THESIS_P[(lo, hi)] if thesis else (None,) * 3
        lines.append(
            f"| m = {lo} vs {hi} | "
            + " | ".join(f"{t} / {p:.2g}" if t is not None else f"{p:.2g}" for t, p in zip(ref, ps))
            + " |"
        )
    return "\n".join(lines) + "\n"


def worst(runs: pd.DataFrame) -> str:
    lines = []
    for col in SCORES:
        r = runs.loc[runs[col].idxmax()]
        lines.append(
            f"- worst {col.removeprefix('score_')}: {r[col]:.2f} (N = {int(r['sites.count'])}, n = "
            f"{int(r['workload.jobs'])}, m = {int(r['sites.procs'])}, seed {int(r['seed'])})"
        )
    return "\n".join(lines) + "\n"


def gaps(thesis: dict, ours: dict, instances: int = 150) -> str:
    """How far the (N, n) cells of means are from the thesis's, in standard errors of the
    difference of two means of ``instances`` each, √((σ_thesis² + σ_ours²) / instances), from
    the figures as printed (two decimals: a z past 3 with a standard error below 0.005, the
    rounding, says nothing). With 48 cells about 2 are past 2 standard errors by chance."""
    zs = []
    for key in sorted(k for k in thesis if k[1] != 0 and k in ours):
        for i, name in enumerate(("local", "MOLBA", "MOLBA+ILBA")):
            t_mean, t_sd = thesis[key][2 * i], thesis[key][2 * i + 1]
            o_mean, o_sd = (round(float(v), 2) for v in ours[key][2 * i : 2 * i + 2])
            se = math.sqrt((t_sd**2 + o_sd**2) / instances)
            z = abs(o_mean - t_mean) / se if se > 0 else (0.0 if o_mean == t_mean else math.inf)
            zs.append((z, key, name, t_mean, o_mean, se))
    past2 = sorted((g for g in zs if g[0] > 2), reverse=True)
    lines = [
        f"Cells of means more than 2 standard errors from the thesis's: {len(past2)} of {len(zs)} "
        f"(more than 3: {sum(g[0] > 3 for g in zs)}; by chance about {0.0455 * len(zs):.1f} past 2)"
        + (":" if past2 else ".")
    ]
    lines += [
        f"- N = {key[0]}, n = {key[1]}, {name}: {o:.2f} against {t:.2f}, s.e. {se:.3f}, z = {z:.1f}"
        for z, key, name, t, o, se in past2
    ]
    return "\n".join(lines) + "\n"


def section(name: str, runs: pd.DataFrame, thesis: dict, tests_in_thesis: bool) -> str:
    ours = rows(runs)
    out = [table(thesis, ours), gaps(thesis, ours)]
    if runs["score"].notna().any():
        mismatch = (runs["score"] - runs["score_molba_ilba"]).abs().max()
        refusals = int(runs["messages_refuse"].fillna(0).sum()) if "messages_refuse" in runs else 0
        out.append(
            f"Executed vs reference MOLBA+ILBA score, largest difference over {len(runs)} runs: {mismatch:.2g}; "
            f"refusals: {refusals}.\n"
        )
    out.append(
        f"MOLBA(3) chosen by the meta-algorithm in {int((runs['alpha'] == 3).sum())} of {len(runs)} instances.\n"
    )
    out.append(
        "Mean score per m (all N and n), and the t-tests of section 5.7"
        + (" (thesis / gridemu):\n" if tests_in_thesis else " (the thesis reports them for *uni* only):\n")
    )
    out.append(by_m(runs, tests_in_thesis))
    out.append(worst(runs))
    return "\n".join(out)


def load_per_n(root: Path, dataset: str) -> pd.DataFrame | None:
    """Runs swept one (N, m) at a time, each with seeds of its own (molba-negotiated.sh, or
    molba-tables.sh with PER_N=1): folders ``<dataset>-N<N>-m<m>``."""
    parts = [
        pd.read_parquet(path).assign(**{"sites.count": n_orgs, "sites.procs": m})
        for n_orgs in NS
        for m in MS
        if (path := root / f"{dataset}-N{n_orgs}-m{m}" / "runs.parquet").exists()
    ]
    return pd.concat(parts, ignore_index=True) if parts else None


def negotiated_table(runs: pd.DataFrame, thesis: dict) -> str:
    """Per (N, n): the thesis's MOLBA+ILBA score, the central reference's (what the replicated
    mode executes), the negotiated run's with its standard error, the mean gap to the
    reference, the runs within MOLBA's (α + 1) bound, refusals and messages per job."""
    lines = [
        "| N | n | thesis MOLBA+ILBA s | central MOLBA+ILBA s (replicated) | negotiated s ± s.e. | gap to central "
        "(mean, max) | within (α+1)·LB | refusals per run | messages per job | instances |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    runs = runs.assign(per_job=runs["messages_total"] / runs["workload.jobs"])
    refused = runs["messages_refused"].fillna(0) if "messages_refused" in runs else pd.Series(0, index=runs.index)
    runs = runs.assign(refused=refused)
    for (n_orgs, n), part in runs.groupby(["sites.count", "workload.jobs"]):
        se = part["score"].std(ddof=1) / math.sqrt(len(part)) if len(part) > 1 else float("nan")
        lines.append(
            f"| {int(n_orgs)} | {int(n)} | {thesis[(int(n_orgs), int(n))][4]:.2f} "
            f"| {part['score_reference'].mean():.2f} | {part['score'].mean():.2f} ± {se:.2f} "
            f"| {part['gap_to_reference'].mean():+.1%}, "
            f"{part['gap_to_reference'].max():+.1%} | {int(part['within_molba_bound'].sum())} of {len(part)} "
            f"| {part['refused'].mean():.1f} | {part['per_job'].mean():.1f} | {len(part)} |"
        )
    gap = runs["gap_to_reference"]
    lines.append(
        f"| **all** | | {thesis[(0, 0)][4]:.2f} | {runs['score_reference'].mean():.2f} | {runs['score'].mean():.2f} ± "
        f"{runs['score'].std(ddof=1) / math.sqrt(len(runs)):.2f} | {gap.mean():+.1%}, {gap.max():+.1%} | "
        f"{int(runs['within_molba_bound'].sum())} of {len(runs)} | {runs['refused'].mean():.1f} | "
        f"{runs['per_job'].mean():.1f} | {len(runs)} |"
    )
    return "\n".join(lines) + "\n"


def main_negotiated(root: Path, write: bool) -> int:
    for dataset, thesis in (("uni", T51), ("swf", T52)):
        runs = load_per_n(root, dataset)
        if runs is None:
            print(f"{root}: no negotiated runs for {dataset}")
            continue
        text = negotiated_table(runs, thesis)
        print(f"**{dataset}, mode = negotiated, machines = owners**\n\n{text}")
        if write:
            begin = f"<!-- molba-negotiated-{dataset}:begin (molba_tables.py --negotiated --write) -->"
            write_between(begin, f"<!-- molba-negotiated-{dataset}:end -->", text, DOC)
    return 0


def main(argv: list[str]) -> int:
    if "--negotiated" in argv:
        root = Path(argv[0]) if argv and not argv[0].startswith("--") else Path("runs/molba-negotiated")
        return main_negotiated(root, "--write" in argv)
    root = Path(argv[0]) if argv and not argv[0].startswith("--") else Path("runs/molba-tables")
    readings = (
        ("Table 5.1, uni, machines = all", "uni", T51, True),
        ("Table 5.1, uni, machines = owners", "uni-owners", T51, True),
        ("Table 5.2, swf, machines = all", "swf", T52, False),
        ("Table 5.2, swf, machines = owners", "swf-owners", T52, False),
    )
    for name, folder, thesis, tests in readings:
        runs = load(root, folder)
        if runs is None:
            print(f"{root}: no runs for {folder}")
            continue
        text = section(name, runs, thesis, tests)
        print(f"**{name}** (thesis / gridemu)\n\n{text}")
        if "--write" in argv:
            write_between(
                f"<!-- molba-{folder}:begin (molba_tables.py --write) -->", f"<!-- molba-{folder}:end -->", text, DOC
            )
    return 0


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(__doc__, sys.argv[1:], ('--write', '--negotiated'))
    sys.exit(main(sys.argv[1:]))
