"""Print thesis Tables 4.2-4.5 beside gridemu's figures, as markdown (for docs/results/bilb.md).

    bash docs/results/bilb-tables.sh                 # the sweeps (OUT=runs/bilb-tables)
    OUT=runs/bilb-whole EXTRA="--set protocol.cut_running=false" bash docs/results/bilb-tables.sh
    python -m gridemu.experiments.bilb_tables "cut=runs/bilb-tables" "whole=runs/bilb-whole" --write   # into bilb.md
    python -m gridemu.experiments.bilb_tables runs/bilb-tables --write --tables 4.3,4.5 --before REV
    python -m gridemu.experiments.bilb_tables --t42-shipped runs/bilb-t42-shipped [--write]   # bilb-t42-shipped.sh

``--tables`` rewrites only those tables' sections of the page; a row whose sweep folder is
missing reads "not rerun". ``--before REV`` adds the mean relative errors of the tables as
the page had them at git revision REV beside those written now (``mean_errors``).

The thesis's values are transcribed from multi-organization-grid-thesis.txt (section 4.5.2
and 4.7.4). A cell reads "score ± half-range / std ± half-range": the mean over
organizations of each organization's mean per-period score, with half the range of those
means, then the same for each organization's standard deviation, as the thesis reports them.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from gridemu.emulator.report import sweep_scores
from gridemu.experiments.bilb_table41 import md_table
from gridemu.experiments.molba_tables import betainc

# ---------------------------------------------------------------- the thesis's values
# Table 4.2: (N, alpha) -> typical "score ± / std ±", overloaded "score / std" (heterogeneous only)
T42_HOM = {
    (2, 2.0): "0.50 ± 0.00 / 0.65 ± 0.00",
    (5, 2.0): "1.25 ± 0.06 / 1.29 ± 0.10",
    (10, 2.0): "1.76 ± 0.12 / 1.64 ± 0.11",
    (30, 2.0): "2.37 ± 0.11 / 2.06 ± 0.20",
    (2, 1.0): "0.13 ± 0.00 / 0.06 ± 0.005",
    (5, 1.0): "0.23 ± 0.00 / 0.10 ± 0.00",
    (10, 1.0): "0.28 ± 0.01 / 0.11 ± 0.01",
    (30, 1.0): "0.30 ± 0.01 / 0.12 ± 0.01",
}
T42_HET = {
    (2, 2.0): ("-7.13 ± 0.00 / 3.66 ± 0.00", "0.93 / 0.24"),
    (5, 2.0): ("-1.98 ± 0.06 / 1.53 ± 0.04", "5.11 / 2.05"),
    (10, 2.0): ("-0.14 ± 0.03 / 0.93 ± 0.04", "14.23 / 5.53"),
    (30, 2.0): ("1.55 ± 0.11 / 1.57 ± 1.17", "36.99 / 9.29"),
    (2, 1.0): ("-24.21 ± 0.00 / 12.29 ± 0.00", "4.45 / 2.14"),
    (5, 1.0): ("-0.55 ± 0.01 / 0.27 ± 0.01", "62.42 / 11.92"),
    (10, 1.0): ("0.01 ± 0.00 / 0.10 ± 0.01", "98.67 / 18.96"),
    (30, 1.0): ("0.23 ± 0.01 / 0.11 ± 0.01", "131.99 / 25.42"),
}
LEVELS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 50, 100, 1000]
# Table 4.3: l -> (two organizations: score, ±, std, ±), (ten organizations: score, ±, std, ±)
T43 = dict(
    zip(
        LEVELS,
        [
            ((0.125, 0.006, 0.123, 0.014), (0.076, 0.006, 0.055, 0.006)),
            ((0.258, 0.003, 0.251, 0.012), (0.261, 0.016, 0.190, 0.016)),
            ((0.387, 0.01, 0.364, 0.001), (0.710, 0.043, 0.515, 0.039)),
            ((0.48, 0.006, 0.467, 0.004), (1.429, 0.072, 1.059, 0.131)),
            ((0.574, 0.006, 0.568, 0.008), (2.148, 0.092, 1.541, 0.153)),
            ((0.587, 0.018, 0.587, 0.021), (2.334, 0.085, 1.701, 0.054)),
            ((0.609, 0.013, 0.642, 0.033), (2.518, 0.124, 1.878, 0.150)),
            ((0.606, 0.017, 0.639, 0.019), (2.661, 0.095, 1.999, 0.174)),
            ((0.608, 0.011, 0.617, 0.007), (2.793, 0.114, 2.095, 0.184)),
            ((0.592, 0.017, 0.648, 0.026), (2.912, 0.083, 2.197, 0.155)),
            ((0.613, 0.007, 0.713, 0.019), (3.116, 0.140, 2.413, 0.195)),
            ((0.623, 0.004, 0.737, 0.031), (3.134, 0.230, 2.372, 0.253)),
            ((0.636, 0.039, 0.774, 0.035), (3.135, 0.153, 2.427, 0.169)),
            ((0.628, 0.011, 0.729, 0.006), (3.123, 0.139, 2.393, 0.212)),
        ],
    )
)
# Table 4.4: l -> two organizations (typical score, std, overloaded score, std),
#               ten organizations (typical score, ±, std, ±, overloaded score, std)
T44 = dict(
    zip(
        LEVELS,
        [
            ((0.003, 0.017, 0.034, 0.022), (0.079, 0.006, 0.057, 0.006, 0.003, 0.004)),
            ((-0.005, 0.047, 0.074, 0.046), (0.267, 0.014, 0.196, 0.021, 0.019, 0.017)),
            ((-0.03, 0.058, 0.12, 0.078), (0.687, 0.033, 0.510, 0.050, 0.097, 0.069)),
            ((-0.062, 0.062, 0.152, 0.106), (1.290, 0.055, 0.946, 0.084, 0.382, 0.251)),
            ((-0.098, 0.081, 0.185, 0.146), (1.807, 0.058, 1.343, 0.098, 1.116, 0.855)),
            ((-0.138, 0.101, 0.194, 0.144), (1.748, 0.069, 1.370, 0.152, 1.921, 1.737)),
            ((-0.167, 0.116, 0.192, 0.141), (1.696, 0.066, 1.375, 0.098, 3.086, 2.823)),
            ((-0.202, 0.128, 0.195, 0.133), (1.605, 0.049, 1.363, 0.088, 4.201, 3.845)),
            ((-0.233, 0.152, 0.202, 0.159), (1.545, 0.086, 1.315, 0.128, 5.664, 5.116)),
            ((-0.278, 0.167, 0.203, 0.149), (1.448, 0.071, 1.290, 0.108, 6.651, 5.938)),
            ((-0.661, 0.353, 0.232, 0.166), (0.887, 0.059, 1.181, 0.081, 13.635, 10.712)),
            ((-1.822, 0.903, 0.316, 0.189), (0.607, 0.026, 1.226, 0.126, 20.841, 10.551)),
            ((-3.753, 2.005, 0.501, 0.272), (0.591, 0.057, 1.226, 0.089, 21.845, 9.602)),
            ((-7.054, 3.641, 0.949, 0.253), (0.609, 0.104, 1.229, 0.161, 22.018, 9.423)),
        ],
    )
)
# Table 4.5: (N, alpha) -> homogeneous "score ± / std ±" (l = 1000);
#            heterogeneous (l, typical "score ± / std ±", overloaded "score / std")
T45_HOM = {
    (2, 2.0): "0.65 ± 0.00 / 0.73 ± 0.010",
    (5, 2.0): "2.00 ± 0.10 / 1.72 ± 0.14",
    (10, 2.0): "3.15 ± 0.17 / 2.45 ± 0.22",
    (30, 2.0): "4.56 ± 0.30 / 3.36 ± 0.24",
    (2, 1.0): "0.64 ± 0.02 / 0.79 ± 0.01",
    (5, 1.0): "1.65 ± 0.07 / 1.64 ± 0.12",
    (10, 1.0): "3.15 ± 0.01 / 2.41 ± 0.14",
    (30, 1.0): "4.55 ± 0.40 / 3.32 ± 0.60",
}
T45_HET = {
    (2, 2.0): (1, "0.03 ± 0.02 / 0.00 ± 0.00", "0.02 / 0.00"),
    (5, 2.0): (3, "0.11 ± 0.07 / 0.56 ± 0.02", "0.44 / 0.03"),
    (10, 2.0): (5, "1.12 ± 0.82 / 1.80 ± 0.10", "1.33 / 0.15"),
    (30, 2.0): (10, "29.77 ± 8.73 / 3.40 ± 0.15", "2.52 / 0.23"),
    (2, 1.0): (1, "0.18 ± 0.05 / 0.00 ± 0.00", "0.00 / 0.00"),
    (5, 1.0): (3, "1.90 ± 1.14 / 0.14 ± 0.00", "0.07 / 0.00"),
    (10, 1.0): (5, "8.75 ± 4.55 / 0.21 ± 0.01", "0.10 / 0.00"),
    (30, 1.0): (10, "40.36 ± 10.87 / 0.31 ± 0.02", "0.12 / 0.03"),
}


# ---------------------------------------------------------------- our figures
def parts_of(folder: Path) -> list[Path]:
    """A sweep's folders: FOLDER, its N = 30 companion ``FOLDER-n30`` and the parts ``FOLDER-part-*``
    it was split into (``bilb-tables-movable.sh``), those that exist."""
    found = [folder, *folder.parent.glob(folder.name + "-n30"), *folder.parent.glob(folder.name + "-part-*")]
    return sorted(p for p in found if (p / "orgs.parquet").exists())


def orgs_of(folder: Path) -> pd.DataFrame:
    """A sweep's orgs.parquet, its parts (``parts_of``) put together."""
    return pd.concat([pd.read_parquet(p / "orgs.parquet") for p in parts_of(folder)], ignore_index=True)


def scores(folder: Path) -> pd.DataFrame:
    """The sweep's rows (emulator.report.sweep_scores), each with the per-run scores it pools."""
    orgs = orgs_of(folder)
    settings = list(orgs.columns[: orgs.columns.get_loc("seed")])
    table = sweep_scores(orgs, settings)
    runs = {label: [] for label in ("all", "typical", "org0")}
    for _, row in table.iterrows():
        where = {k: row[k] for k in settings}
        for label, first in (("all", None), ("typical", False), ("org0", True)):
            runs[label].append(run_scores(orgs, where, first))
    return table.assign(**{f"{label}_runs": values for label, values in runs.items()})


def run_scores(orgs: pd.DataFrame, where: dict[str, object], first_org: bool | None = None) -> np.ndarray:
    """One score per run (seed): the mean over the organizations of their period scores.

    ``first_org`` None takes every organization, True organization 0 only, False the others.
    """
    sel = orgs[orgs["periods_scored"] > 0]
    for key, value in where.items():
        sel = sel[sel[key] == value]
    if first_org is not None:
        first = sel["organization"] == sorted(sel["organization"].unique())[0]
        sel = sel[first if first_org else ~first]
    return sel.groupby("seed")["score_period_mean"].mean().to_numpy(dtype=float)


def t_quantile(df: float, level: float = 0.95) -> float:
    """Two-sided Student t quantile: P(|T| > t) = 1 - level, by bisection on the tail."""
    lo, hi = 0.0, 1e3
    for _ in range(100):
        mid = (lo + hi) / 2
        if betainc(df / 2, 0.5, df / (df + mid * mid)) > 1 - level:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mean_ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95 % Student t confidence interval (over runs)."""
    n = len(values)
    if n < 2:
        return (float(values.mean()) if n else math.nan), math.nan
    return float(values.mean()), t_quantile(n - 1) * float(values.std(ddof=1)) / math.sqrt(n)


def cell(row: pd.Series, label: str, digits: int = 2) -> str:
    """'score ± half-range / std ± half-range (CI ± c, n)' for all or typical organizations:
    the thesis's aggregation, then the 95 % confidence half-width of the score over n runs."""
    s, d = row[f"{label}_score"], row[f"{label}_std"]
    hs = (row[f"{label}_score_max"] - row[f"{label}_score_min"]) / 2
    hd = (row[f"{label}_std_max"] - row[f"{label}_std_min"]) / 2
    runs = row[f"{label}_runs"]
    return (
        f"{s:.{digits}f} ± {hs:.{digits}f} / {d:.{digits}f} ± {hd:.{digits}f} "
        f"(CI ± {mean_ci(runs)[1]:.{digits}f}, {len(runs)})"
    )


def over(row: pd.Series, digits: int = 2) -> str:
    return (
        f"{row['org0_score']:.{digits}f} / {row['org0_std']:.{digits}f} "
        f"(CI ± {mean_ci(row['org0_runs'])[1]:.{digits}f})"
    )


def one(df: pd.DataFrame | None, **where: float) -> pd.Series | None:
    if df is None:
        return None
    sel = df
    for key, value in where.items():
        sel = sel[sel[key] == value]
    if len(sel) > 1:
        raise SystemExit(f"expected one row for {where}, found {len(sel)}")
    return sel.iloc[0] if len(sel) else None  # a setting the sweep did not run: MISSING


MISSING = "not rerun"


def loaded(folder: Path) -> pd.DataFrame | None:
    """``scores(folder)``, or None when the sweep is not there (its cells read MISSING)."""
    return scores(folder) if parts_of(folder) else None


def main(variants: list[tuple[str, Path]], only: tuple[str, ...] = ("4.2", "4.3", "4.4", "4.5")) -> None:
    """Each table in ``only``: the thesis's cells, then one column per variant (label, sweep folder root)."""
    names = [label for label, _ in variants]
    load = lambda name: [loaded(root / name) for _, root in variants]  # noqa: E731
    # a row without its sweep: every cell of ours reads MISSING
    cell_ = lambda r, *a: MISSING if r is None else cell(r, *a)  # noqa: E731
    over_ = lambda r, *a: MISSING if r is None else over(r, *a)  # noqa: E731

    def head(*cols: str) -> None:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))

    if "4.2" in only:
        table42(load, names, head, cell_, over_)
    if "4.3" in only:
        table43(load, names, head, cell_)
    if "4.4" in only:
        table44(load, names, head)
    if "4.5" in only:
        table45(load, names, head, cell_, over_)


def table42(load, names, head, cell, over) -> None:
    print("### Table 4.2: averaging game, p_k = 1\n")
    head(
        "N",
        "α = β",
        "typical, thesis",
        *[f"typical, {n}" for n in names],
        "overloaded, thesis",
        *[f"overloaded, {n}" for n in names],
    )
    for ab in (2.0, 1.0):
        hom, het = load(f"t42-hom-{ab}"), load(f"t42-het-{ab}")
        for n in (2, 5, 10, 30):
            ours = [cell(one(t, **{"sites.count": n}), "all") for t in hom]
            print(f"| {n} | {ab} | {T42_HOM[n, ab]} | " + " | ".join(ours) + " | |" + " |" * len(names))
        for n in (2, 5, 10, 30):
            rows = [one(t, **{"sites.count": n}) for t in het]
            typ, ovl = T42_HET[n, ab]
            print(
                f"| {n} (α₁ = β₁ = 3) | {ab} | {typ} | "
                + " | ".join(cell(r, "typical") for r in rows)
                + f" | {ovl} | "
                + " | ".join(over(r) for r in rows)
                + " |"
            )


def table43(load, names, head, cell) -> None:
    print("\n### Table 4.3: BILB, homogeneous, every l_k the same (α = β = 2)\n")
    head("l_k", "N = 2, thesis", *[f"N = 2, {n}" for n in names], "N = 10, thesis", *[f"N = 10, {n}" for n in names])
    t43 = load("t43")
    fmt = lambda t: f"{t[0]} ± {t[1]} / {t[2]} ± {t[3]}"  # noqa: E731
    for lv in LEVELS:
        two, ten = T43[lv]
        a = [cell(one(t, **{"protocol.limit": lv, "sites.count": 2}), "all", 3) for t in t43]
        b = [cell(one(t, **{"protocol.limit": lv, "sites.count": 10}), "all", 3) for t in t43]
        print(f"| {lv} | {fmt(two)} | " + " | ".join(a) + f" | {fmt(ten)} | " + " | ".join(b) + " |")


def table44(load, names, head) -> None:
    print("\n### Table 4.4: BILB, organization 0 overloaded (α₁ = β₁ = 3, l_1 = 1000), the others at l_k\n")
    print("N = 2: typical and overloaded score / std; N = 10: typical score ± / std ±, overloaded score / std.\n")
    head("l_k", "N = 2, thesis", *[f"N = 2, {n}" for n in names], "N = 10, thesis", *[f"N = 10, {n}" for n in names])
    t44 = load("t44")
    if any(t is None for t in t44):
        raise SystemExit("Table 4.4 needs its sweep folder t44 in every variant")
    for lv in LEVELS:
        two, ten = T44[lv]
        a = [one(t, **{"protocol.limit.default": lv, "sites.count": 2}) for t in t44]
        b = [one(t, **{"protocol.limit.default": lv, "sites.count": 10}) for t in t44]
        print(
            f"| {lv} | {two[0]} / {two[1]}; {two[2]} / {two[3]} | "
            + " | ".join(f"{r['typical_score']:.3f} / {r['typical_std']:.3f}; {over(r, 3)}" for r in a)
            + f" | {ten[0]} ± {ten[1]} / {ten[2]} ± {ten[3]}; {ten[4]} / {ten[5]} | "
            + " | ".join(f"{cell(r, 'typical', 3)}; {over(r, 3)}" for r in b)
            + " |"
        )


def table45(load, names, head, cell, over) -> None:
    print("\n### Table 4.5: BILB\n")
    head(
        "N",
        "α = β",
        "l",
        "typical, thesis",
        *[f"typical, {n}" for n in names],
        "overloaded, thesis",
        *[f"overloaded, {n}" for n in names],
    )
    for ab in (2.0, 1.0):
        hom = load(f"t45-hom-{ab}")
        for n in (2, 5, 10, 30):
            ours = [cell(one(t, **{"sites.count": n}), "all") for t in hom]
            print(f"| {n} | {ab} | 1000 | {T45_HOM[n, ab]} | " + " | ".join(ours) + " | |" + " |" * len(names))
        for n in (2, 5, 10, 30):
            lv, typ, ovl = T45_HET[n, ab]
            rows = [None if t is None else t.iloc[0] for t in load(f"t45-het-{ab}-{n}")]
            print(
                f"| {n} (α₁ = β₁ = 3) | {ab} | {lv} (l₁ = 1000) | {typ} | "
                + " | ".join(cell(r, "typical") for r in rows)
                + f" | {ovl} | "
                + " | ".join(over(r) for r in rows)
                + " |"
            )


# ---------------------------------------------------------------- how far from the thesis
def _first_number(text: str) -> float:
    found = re.match(r"\s*(-?\d+(?:\.\d+)?)", text)
    return float(found.group(1)) if found else math.nan


def _sections(block: str) -> dict[str, list[list[str]]]:
    """A tables block's rows, by table ("4.2" ...): each row's cells, header rows left out."""
    rows: dict[str, list[list[str]]] = {}
    table = None
    for line in block.splitlines():
        if line.startswith("### Table "):
            table = line[len("### Table ") :].split(":")[0]
            rows[table] = []
        elif table and line.startswith("| ") and not line.startswith(("| N |", "| l_k |")):
            rows[table].append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def mean_errors(block: str) -> dict[str, float]:
    """Mean relative error |ours - thesis| / |thesis| of the scores of a written tables block, on
    the homogeneous α = β = 2 rows (first variant): Table 4.2, Table 4.3 at l ≤ 4 and at l ≥ 5
    (N = 2 and 10), Table 4.5. A cell that was not rerun is left out."""
    rows = _sections(block)
    pairs: dict[str, list[tuple[float, float]]] = {k: [] for k in ("4.2", "4.3, l ≤ 4", "4.3, l ≥ 5", "4.5")}
    for r in rows.get("4.2", []):
        if r[1] == "2.0" and "α₁" not in r[0]:
            pairs["4.2"].append((_first_number(r[2]), _first_number(r[3])))
    ours = 2 + (len(rows["4.3"][0]) - 3) // 2 if rows.get("4.3") else 3  # column of N = 10, thesis
    for r in rows.get("4.3", []):
        key = "4.3, l ≤ 4" if int(r[0]) <= 4 else "4.3, l ≥ 5"
        pairs[key] += [(_first_number(r[1]), _first_number(r[2])), (_first_number(r[ours]), _first_number(r[ours + 1]))]
    for r in rows.get("4.5", []):
        if r[1] == "2.0" and "α₁" not in r[0]:
            pairs["4.5"].append((_first_number(r[3]), _first_number(r[4])))
    out = {}
    for key, got in pairs.items():
        errs = [abs(o - t) / abs(t) for t, o in got if not math.isnan(o)]
        out[key] = float(np.mean(errs)) if errs else math.nan
    return out


def splice(block: str, new: str) -> str:
    """``block`` with each table section that ``new`` holds replaced by ``new``'s."""
    parts = lambda text: [x.strip("\n") for x in re.split(r"(?m)^(?=### Table )", text) if x.strip()]  # noqa: E731
    fresh = {x.split(":")[0]: x for x in parts(new)}
    return "\n\n".join(fresh.get(x.split(":")[0], x) for x in parts(block))


def errors_table(before: dict[str, float] | None, now: dict[str, float], rev: str | None) -> str:
    head = ["table (α = β = 2, homogeneous rows)", *([f"before ({rev})"] if before else []), "now"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, value in now.items():
        lines.append(f"| {key} | " + (f"{before[key]:.2f} | " if before else "") + f"{value:.2f} |")
    return "\n".join(lines)


DOC = Path(__file__).with_name("bilb.md")
BEGIN, END = "<!-- tables:begin (bilb_tables.py --write) -->", "<!-- tables:end -->"
T42_SHIPPED = ("<!-- t42-shipped:begin (bilb_tables.py --t42-shipped --write) -->", "<!-- t42-shipped:end -->")


def t42_shipped(folder: Path) -> str:
    """Table 4.2's homogeneous α = β = 2 rows from the shipped ``averaging-game`` (the head sent),
    beside the thesis and the page's tables (the tail sent), with each column's mean relative error."""
    df = scores(folder)
    tail_rows = {
        int(r[0]): r[3]
        for r in _sections(block_of(DOC.read_text())).get("4.2", [])
        if r[1] == "2.0" and "α₁" not in r[0]
    }
    rows, errors = [], {"tail": [], "head": []}
    for n in (2, 5, 10, 30):
        thesis, row = T42_HOM[n, 2.0], one(df, **{"sites.count": n})
        ours = MISSING if row is None else cell(row, "all")
        for key, text in (("tail", tail_rows.get(n, MISSING)), ("head", ours)):
            value, target = _first_number(text), _first_number(thesis)
            if not math.isnan(value):
                errors[key].append(abs(value - target) / target)
        rows.append([n, thesis, tail_rows.get(n, MISSING), ours])
    mean = {k: f"**{np.mean(v):.2f}** ({len(v)} rows)" if v else "–" for k, v in errors.items()}
    rows.append(["mean relative error of the score", "", mean["tail"], mean["head"]])
    header = ["N", "thesis", "the tables' reading (the tail sent; above)", "shipped `averaging-game` (the head sent)"]
    return md_table(header, rows)


ERRORS_BEGIN, ERRORS_END = "<!-- table-errors:begin (bilb_tables.py --write) -->", "<!-- table-errors:end -->"


def block_of(doc: str) -> str:
    return doc[doc.index(BEGIN) + len(BEGIN) : doc.index(END)]


def write(variants: list[tuple[str, Path]], only: tuple[str, ...], rev: str | None) -> None:
    from gridemu.experiments.decentralization_tables import write_between  # noqa: PLC0415

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(variants, only)
    block = splice(block_of(DOC.read_text()), out.getvalue())
    write_between(BEGIN, END, block, DOC)
    before = None
    if rev:
        old = subprocess.run(
            ["git", "show", f"{rev}:docs/results/bilb.md"], capture_output=True, text=True, check=True, cwd=DOC.parent
        ).stdout
        before = mean_errors(block_of(old))
    write_between(ERRORS_BEGIN, ERRORS_END, errors_table(before, mean_errors(block), rev), DOC)


if __name__ == "__main__":
    # python bilb_tables.py LABEL=DIR [LABEL=DIR ...] [--write] [--tables 4.3,4.5] [--before REV]
    argv = sys.argv[1:]
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        sys.exit(0)
    unknown = [a for a in argv if a.startswith("-") and a not in ("--write", "--tables", "--before", "--t42-shipped")]
    if unknown:
        sys.exit(f"bilb_tables: unknown option {unknown[0]} (--help lists them)")
    if "--t42-shipped" in argv:
        text = t42_shipped(Path(argv[argv.index("--t42-shipped") + 1]))
        print(text)
        if "--write" in argv:
            from gridemu.experiments.decentralization_tables import write_between  # noqa: PLC0415

            write_between(*T42_SHIPPED, text, DOC)
        sys.exit(0)
    opts = {}
    for flag in ("--tables", "--before"):
        if flag in argv:
            i = argv.index(flag)
            opts[flag] = argv[i + 1]
            del argv[i : i + 2]
    only = tuple(opts.get("--tables", "4.2,4.3,4.4,4.5").split(","))
    args = [a for a in argv if a != "--write"] or ["runs/bilb-tables"]
    variants = [(a.split("=", 1)[0], Path(a.split("=", 1)[1])) if "=" in a else ("gridemu", Path(a)) for a in args]
    if "--write" in argv:
        write(variants, only, opts.get("--before"))
    else:
        main(variants, only)
