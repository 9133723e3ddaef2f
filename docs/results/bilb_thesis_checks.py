"""Evidence about the printed thesis Table 4.5, as markdown (for docs/results/bilb.md).

    python -m gridemu.experiments.bilb_thesis_checks            # print
    python -m gridemu.experiments.bilb_thesis_checks --write    # and put it into bilb.md (t45-checks markers)

Two questions, answered from the thesis's own numbers (transcribed once, in bilb_tables.py)
and a little queueing theory, with no emulator run (a few seconds):

(a) Are the heterogeneous rows of Table 4.5 made of cells printed elsewhere (Tables 4.2-4.4
    for the same N and l), put into other fields? Each printed number is compared with every
    number of the same setting; named readings (same fields, typical and overloaded
    swapped, overloaded first) and the best one-to-one assignment, searched exhaustively,
    are scored, and the same fit against Table 4.4's rows at the other levels l tells how
    well a wrong row fits by chance. Rows without a counterpart are checked for plausibility
    against the ranges every row of Tables 4.2-4.4 keeps.
(b) Are the α = β = 1 homogeneous rows copies of the α = β = 2 rows? Their differences are
    set against the printed half-ranges and against Table 4.2's α = 1 / α = 2 ratio, and the
    scores against the largest score that removing all waiting (M/G/1, load 0.2) could give.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from itertools import permutations
from typing import NamedTuple

import numpy as np

from gridemu.experiments.bilb_table41 import emit, md_table
from gridemu.experiments.bilb_tables import LEVELS, T42_HET, T42_HOM, T43, T44, T45_HET, T45_HOM
from gridemu.experiments.script_args import hand_parsed

MARKERS = ("<!-- t45-checks:begin (bilb_thesis_checks.py --write) -->", "<!-- t45-checks:end -->")
RATE = 0.2  # λ of every table of chapter 4
WINDOW = (200.0, 800.0)  # the scored releases 0.2T-0.8T of a period T = 1000 (4.5.2); later jobs never matter
PERIODS, SEED = 2000, 45  # the simulated per-period bound: 2000 periods, a fixed seed

# The fields of one heterogeneous row of Tables 4.4 and 4.5, in print order.
ROW6 = ("typical score", "typical score ±", "typical std", "typical std ±", "overloaded score", "overloaded std")
TWO4 = ("typical score", "typical std", "overloaded score", "overloaded std")  # Table 4.4, N = 2: no ±
HOM4 = ("score", "score ±", "std", "std ±")  # Tables 4.2 (homogeneous), 4.3 and 4.5 (homogeneous)
# Readings of a printed row: printed field -> the field of the source row it would hold.
SAME = {f: f for f in ROW6}
# "typical and overloaded swapped": the two groups changed places, the ± left out
SWAPPED = {
    "typical score": "overloaded score",
    "typical std": "overloaded std",
    "overloaded score": "typical score",
    "overloaded std": "typical std",
}
# "overloaded first": the source row read as overloaded (score, std), then typical (score, ±,
# std, ±), and poured in that order into the printed template's six slots
OVERLOADED_FIRST = dict(
    zip(
        ROW6, ("overloaded score", "overloaded std", "typical score", "typical score ±", "typical std", "typical std ±")
    )
)
READINGS = {"same fields": SAME, "typical ↔ overloaded swapped": SWAPPED, "overloaded first": OVERLOADED_FIRST}
RUNS = 1000  # runs per row of Tables 4.3-4.5 ("each row is an average over 1000 runs")


class Printed(NamedTuple):
    field: str
    value: float
    decimals: int  # how many decimals the thesis prints: the rounding a match must survive


class Source(NamedTuple):
    table: str
    row: str
    field: str
    value: float


# ---------------------------------------------------------------- reading the printed cells
def numbers(text: str) -> list[tuple[float, int]]:
    """The numbers of a printed cell ("1.12 ± 0.82 / 1.80 ± 0.10"), each with its decimals."""
    return [(float(m), len(m.split(".")[1]) if "." in m else 0) for m in re.findall(r"-?\d+(?:\.\d+)?", text)]


def printed_het(n: int, ab: float) -> tuple[int, list[Printed]]:
    """Table 4.5's heterogeneous row (N, α = β): its level l and its six printed numbers."""
    level, typical, overloaded = T45_HET[n, ab]
    vals = numbers(typical) + numbers(overloaded)
    return level, [Printed(f, v, d) for f, (v, d) in zip(ROW6, vals)]


def t44_row(n: int, level: int) -> list[Source]:
    """Table 4.4's row at level l for N = 2 or 10, as six fields. At N = 2 the thesis prints no
    half-range: with one typical organization it is 0 by definition (Table 4.2 prints 0.00 in
    its N = 2 heterogeneous rows), so the two ± fields are added as 0 (table "4.4*")."""
    two, ten = T44[level]
    if n == 10:
        return [Source("4.4", f"N=10, l={level}", f, v) for f, v in zip(ROW6, ten)]
    printed = dict(zip(TWO4, two))
    return [
        Source("4.4", f"N=2, l={level}", f, printed[f]) if f in printed else Source("4.4*", f"N=2, l={level}", f, 0.0)
        for f in ROW6
    ]


def same_setting(n: int, ab: float, level: int) -> list[Source]:
    """Every number printed in Tables 4.2-4.4 for the same N (and, in 4.3-4.4, the same l; 4.3
    and 4.4 exist for α = β = 2 and N = 2, 10 only). Table 4.2 has no l: its same-(N, α)
    rows are there as a wider pool, a different algorithm (the averaging game)."""
    pool: list[Source] = []
    if ab == 2.0 and n in (2, 10):
        pool += [s for s in t44_row(n, level) if s.table == "4.4"]
        pool += [Source("4.3", f"N={n}, l={level}", f, v) for f, v in zip(HOM4, T43[level][n == 10])]
    het_typ, het_ovl = T42_HET[n, ab]
    pool += [
        Source("4.2 het", f"N={n}, α={ab:g}", f, v) for f, (v, _) in zip(ROW6, numbers(het_typ) + numbers(het_ovl))
    ]
    pool += [Source("4.2 hom", f"N={n}, α={ab:g}", f, v) for f, (v, _) in zip(HOM4, numbers(T42_HOM[n, ab]))]
    return pool


# ---------------------------------------------------------------- matching
def units(cell: Printed, value: float) -> float:
    """|value - printed| in units of the printed last digit (≤ 0.5: the value prints as it)."""
    return abs(value - cell.value) * 10**cell.decimals


def rounds_to(cell: Printed, value: float) -> bool:
    """Whether ``value``, rounded to the thesis's printed decimals, reads as ``cell``."""
    return units(cell, value) <= 0.5 + 1e-9  # the tolerance only absorbs float error


def truncates_to(cell: Printed, value: float) -> bool:
    """Whether ``value`` cut (not rounded) to the printed decimals reads as ``cell``."""
    return math.isclose(math.trunc(value * 10**cell.decimals) / 10**cell.decimals, cell.value, abs_tol=1e-9)


def fit(cells: Sequence[Printed], source: Sequence[Source], pairs: Sequence[tuple[int, int]]) -> tuple[int, float]:
    """How an assignment (printed index, source index) fits: (values that round to the
    printed cell, total distance in last-digit units)."""
    return (
        sum(rounds_to(cells[i], source[j].value) for i, j in pairs),
        sum(units(cells[i], source[j].value) for i, j in pairs),
    )


def best_assignment(cells: Sequence[Printed], source: Sequence[Source]) -> list[tuple[int, int]]:
    """The one-to-one assignment of source fields to printed fields (each used once) with the
    most exact matches (to the printed rounding), then the least total distance. Exhaustive
    (6! = 720 assignments for a six-field row), so no heuristic can miss the best one."""
    k = min(len(cells), len(source))
    best: tuple[tuple[int, float], list[tuple[int, int]]] | None = None
    for printed_idx in permutations(range(len(cells)), k):
        for source_idx in permutations(range(len(source)), k) if len(source) > k else [tuple(range(k))]:
            pairs = list(zip(printed_idx, source_idx))
            hits, dist = fit(cells, source, pairs)
            if best is None or (hits, -dist) > (best[0][0], -best[0][1]):
                best = ((hits, dist), pairs)
    assert best is not None
    return sorted(best[1])


def named(cells: Sequence[Printed], source: Sequence[Source], mapping: dict[str, str]) -> list[tuple[int, int]]:
    """The assignment a reading names: printed field -> source field (fields it leaves out are
    not compared)."""
    where = {s.field: j for j, s in enumerate(source)}
    return [(i, where[mapping[c.field]]) for i, c in enumerate(cells) if mapping.get(c.field) in where]


def level_control(
    cells: Sequence[Printed], n: int, mapping: dict[str, str] | None = None
) -> list[tuple[int, int, float]]:
    """The fit of a reading (``mapping``; None: the best assignment, searched anew per row)
    against Table 4.4's row at every level: (l, exact matches, total distance). A row made
    from level l fits there far better than anywhere else."""
    rows = []
    for level in LEVELS:
        source = t44_row(n, level)
        pairs = best_assignment(cells, source) if mapping is None else named(cells, source, mapping)
        rows.append((level, *fit(cells, source, pairs)))
    return rows


def rerun_z(cell: Printed, source: Source, std: float, orgs: int, runs: int = RUNS) -> float:
    """How many standard errors of a ``runs``-run mean (over ``orgs`` organizations) separate a
    printed score from the source's: what a rerun of the same setting could explain."""
    return abs(cell.value - source.value) / (std / math.sqrt(runs * orgs))


def true_fields(cells: Sequence[Printed], mapping: dict[str, str]) -> dict[str, float]:
    """The row's six numbers under a reading: source field -> printed value."""
    return {mapping[c.field]: c.value for c in cells if c.field in mapping}


def reference_ranges() -> tuple[float, float, float]:
    """What Tables 4.2-4.4 show everywhere: the largest typical half-range relative to its
    score (rows with |score| ≥ 0.05), and the least and largest overloaded std / score."""
    typical: list[tuple[float, float]] = []
    overloaded: list[tuple[float, float]] = []
    for t, o in T42_HET.values():
        typical.append(tuple(v for v, _ in numbers(t)[:2]))  # type: ignore[arg-type]
        overloaded.append(tuple(v for v, _ in numbers(o)))  # type: ignore[arg-type]
    typical += [tuple(v for v, _ in numbers(t)[:2]) for t in T42_HOM.values()]  # type: ignore[misc]
    typical += [row[:2] for two, ten in T43.values() for row in (two, ten)]
    typical += [ten[:2] for _, ten in T44.values()]
    overloaded += [two[2:] for two, _ in T44.values()] + [ten[4:] for _, ten in T44.values()]
    half = max(abs(h) / abs(s) for s, h in typical if abs(s) >= 0.05)
    ratios = [d / s for s, d in overloaded if s > 0]
    return half, min(ratios), max(ratios)


def plausibility(
    cells: Sequence[Printed], n: int, mapping: dict[str, str]
) -> tuple[float | None, float | None, bool | None]:
    """A row under a reading, against what every row of Tables 4.2-4.4 shows: typical
    half-range / |typical score| (None below |score| 0.05), overloaded std / score (None at
    score 0), and, at N = 2, whether both typical half-ranges are 0 (one typical organization)."""
    row = true_fields(cells, mapping)
    score, half = row["typical score"], row["typical score ±"]
    ovl, ovl_std = row["overloaded score"], row["overloaded std"]
    return (
        abs(half) / abs(score) if abs(score) >= 0.05 else None,
        ovl_std / ovl if ovl > 0 else None,
        (half == 0 and row["typical std ±"] == 0) if n == 2 else None,
    )


# ---------------------------------------------------------------- queueing bound (part b)
def gamma_moments(alpha: float, beta: float) -> tuple[float, float]:
    """E[S] and E[S²] of gamma(shape α, scale β) job sizes: αβ and α(α+1)β²."""
    return alpha * beta, alpha * (alpha + 1) * beta**2


def mg1_wait(rate: float, mean: float, second: float) -> float:
    """The Pollaczek-Khinchine mean waiting time of an M/G/1 FCFS queue: λE[S²] / (2(1 - ρ))."""
    rho = rate * mean
    if rho >= 1:
        raise ValueError(f"mg1_wait: load {rho} >= 1 has no steady state")
    return rate * second / (2 * (1 - rho))


def score_bound(rate: float, alpha: float, beta: float, processors: int = 1) -> float:
    """The largest steady-state score F̃/F - 1 (section 4.5.2) when local flow F̃ = n(W + E[S])
    and balancing can at best make F = n E[S] / processors: 1 when no job's work ever runs
    on two processors at once (removing all waiting), N when a job may be spread over all N."""
    mean, second = gamma_moments(alpha, beta)
    return processors * (mg1_wait(rate, mean, second) + mean) / mean - 1


def spread_bound(whole: float, processors: int) -> float:
    """A whole-job bound ``whole`` = mean(F̃/Σp) - 1 turned into the bound when F ≥ Σp / N:
    mean(N F̃/Σp) - 1 = N (whole + 1) - 1."""
    return processors * (whole + 1) - 1


def period_bound(
    rate: float, alpha: float, beta: float, periods: int = PERIODS, seed: int = SEED, discrete: bool = False
) -> tuple[float, float]:
    """The whole-job bound as the thesis scores: per period T = 1000 from an empty queue, the
    jobs released in [0.2T, 0.8T], F̃ by Algorithm 4.2 lines 1-5 from the period's start, and
    the mean over periods of F̃/Σp - 1 (a mean of ratios, as the thesis averages per-period
    scores), with its 95 % half-width. ``discrete`` floors the releases to whole time units,
    as the thesis's discrete simulator does (section 4.7.4)."""
    rng = np.random.default_rng(seed)
    # enough arrivals to pass the window's end in every period (Poisson mean 160, + 10 sd)
    slots = int(rate * WINDOW[1] + 10 * math.sqrt(rate * WINDOW[1]) + 10)
    release = np.cumsum(rng.exponential(1.0 / rate, (periods, slots)), axis=1)
    if (release[:, -1] < WINDOW[1]).any():
        raise RuntimeError("period_bound: too few arrival slots")
    if discrete:
        release = np.floor(release)
    size = rng.gamma(alpha, beta, (periods, slots))
    scored = (release >= WINDOW[0]) & (release <= WINDOW[1])
    end, local = np.zeros(periods), np.zeros(periods)
    for j in range(slots):  # Lindley's recursion, vectorized over the periods
        end = np.where(release[:, j] <= WINDOW[1], np.maximum(end, release[:, j]) + size[:, j], end)
        local += np.where(scored[:, j], end - release[:, j], 0.0)
    ratio = local / (size * scored).sum(axis=1) - 1
    return float(ratio.mean()), 1.96 * float(ratio.std(ddof=1)) / math.sqrt(periods)


# ---------------------------------------------------------------- part (a)
def fmt(value: float) -> str:
    """A source value as the thesis prints it (up to three decimals, no trailing zeros)."""
    return f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"


def cell_table(n: int, ab: float) -> tuple[str, dict[str, object]]:
    """Part (a) for one checkable row: cell by cell, and the figures its verdict rests on."""
    level, cells = printed_het(n, ab)
    source, pool = t44_row(n, level), same_setting(n, ab, level)
    hyps = {name: named(cells, source, m) for name, m in READINGS.items()}
    hyps["best one-to-one assignment"] = best_assignment(cells, source)
    rows = []
    for i, c in enumerate(cells):
        row = [c.field, f"{c.value:.{c.decimals}f}"]
        for pairs in hyps.values():
            j = dict(pairs).get(i)
            if j is None:
                row.append("—")
                continue
            s = source[j]
            mark = " ✓" if rounds_to(c, s.value) else (" (cut ✓)" if truncates_to(c, s.value) else "")
            row.append(f"{s.field} {fmt(s.value)}{'*' if s.table == '4.4*' else ''} ({units(c, s.value):.1f}){mark}")
        hits = [f"{s.table} {s.row} {s.field} {fmt(s.value)}" for s in pool if rounds_to(c, s.value)]
        rows.append(row + ["; ".join(hits) if hits else "none"])
    table = md_table(
        [
            "printed field",
            "printed",
            *hyps,
            "every number of Tables 4.2-4.4 (same N; 4.3-4.4 also same l) that rounds to it",
        ],
        rows,
    )
    typical = next(s for s in source if s.field == "typical score")
    typical_std = next(s for s in source if s.field == "typical std").value
    figures = {
        "level": level,
        "cells": cells,
        "source": source,
        "hyps": hyps,
        "fits": {name: (*fit(cells, source, pairs), len(pairs)) for name, pairs in hyps.items()},
        "z": rerun_z(cells[0], typical, typical_std, n - 1),
        "control_best": level_control(cells, n),
        "control_first": level_control(cells, n, OVERLOADED_FIRST),
    }
    return table, figures


def control_table(figs: dict[tuple[int, float], dict[str, object]]) -> str:
    """The fits against Table 4.4 at every level, two columns per checked row."""
    cols, rows = [], [[level] for level in LEVELS]
    for (n, ab), f in figs.items():
        for key, name in (("control_best", "best assignment"), ("control_first", "overloaded first")):
            cols.append(f"N = {n}, {name}")
            for row, (lv, hits, dist) in zip(rows, f[key]):  # type: ignore[arg-type]
                text = f"{hits}, {dist:.1f}"
                row.append(f"**{text}**" if lv == f["level"] else text)
    return md_table(["Table 4.4 level l", *cols], rows)


def calibration() -> list[tuple[str, float, float]]:
    """Table 4.5's homogeneous l = 1000 rows against Table 4.3's l = 1000 rows, the same
    setting printed twice: (field, difference, the score's difference in standard errors of
    a 1000-run mean over N organizations)."""
    out = []
    for n in (2, 10):
        ours = [v for v, _ in numbers(T45_HOM[n, 2.0])]
        theirs = T43[1000][n == 10]
        z = abs(ours[0] - theirs[0]) / (theirs[2] / math.sqrt(RUNS * n))
        out += [(f"N={n} {f}", abs(a - b), z) for f, a, b in zip(HOM4, ours, theirs)]
    return out


def plausibility_table() -> tuple[str, dict[str, int]]:
    """Every heterogeneous row of Table 4.5, as printed and read overloaded first, against the
    ranges every row of Tables 4.2-4.4 keeps; with the count of rows inside them per reading."""
    half_max, ratio_min, ratio_max = reference_ranges()
    inside = {"as printed": 0, "overloaded first": 0}
    rows = []
    for n, ab in sorted(T45_HET, key=lambda k: (-k[1], k[0])):
        level, cells = printed_het(n, ab)
        for name, mapping in (("as printed", SAME), ("overloaded first", OVERLOADED_FIRST)):
            half, ratio, zero = plausibility(cells, n, mapping)
            ok = (
                (half is None or half <= half_max)
                and (ratio is None or ratio_min <= ratio <= ratio_max)
                and zero is not False
            )
            inside[name] += ok
            rows.append(
                [
                    f"N = {n}, α = β = {ab:g}, l = {level}",
                    name,
                    "—" if half is None else f"{half:.2f}",
                    "—" if ratio is None else f"{ratio:.2f}",
                    {None: "—", True: "yes", False: "**no**"}[zero],
                    "yes" if ok else "**no**",
                ]
            )
    table = md_table(
        [
            "Table 4.5 row",
            "reading",
            f"typical ± / abs(score) (elsewhere ≤ {half_max:.2f})",
            f"overloaded std / score (elsewhere {ratio_min:.2f} to {ratio_max:.2f})",
            "N = 2: typical half-ranges 0 (one typical organization)",
            "inside every range",
        ],
        rows,
    )
    return table, inside


def part_a() -> str:
    """Part (a): the heterogeneous rows against Tables 4.2-4.4."""
    tables, figs = [], {}
    for key in ((2, 2.0), (10, 2.0)):
        table, figs[key] = cell_table(*key)
        tables.append((key, table))
    calib = calibration()
    worst = max(calib, key=lambda c: c[1])
    zs = sorted({round(z, 1) for _, _, z in calib})
    plaus, inside = plausibility_table()
    lines = [
        f"""**(a) The heterogeneous rows.** Only two of them have a printed counterpart of the same
setting: Table 4.4 has α = β = 2 and N = 2 and 10 only, so Table 4.5's heterogeneous N = 2,
l = 1 and N = 10, l = 5 rows (the levels the text says were taken from Table 4.4) are set
against Table 4.4's rows at those levels; the N = 5 and 30 rows and every α = β = 1 row
have no counterpart and are only checked for plausibility (last table). Four readings of a
printed row: the same fields; typical and overloaded swapped; **overloaded first**, i.e. the
source row read as overloaded (score, std) then typical (score, ±, std, ±) and poured in
that order into the six printed slots; and the best one-to-one assignment, searched
exhaustively. A cell gives the source field, its value, and the distance in units of the
printed last digit (✓: it rounds to the printed number; "cut ✓": it does if cut instead;
`*`: a half-range Table 4.4 leaves out at N = 2, 0 by definition with one typical
organization). Two printings of one setting in the thesis (Table 4.5's homogeneous l = 1000
rows and Table 4.3's l = 1000 rows, N = 2 and 10) differ by up to {worst[1]:.3f} ({worst[0]}),
their scores by {zs[0]} and {zs[-1]} standard errors of a {RUNS}-run mean: those rows were rerun, not copied,
so even a correct row need not match Table 4.4 to the last digit."""
    ]
    for (n, ab), table in tables:
        lines.append(
            f"Table 4.5, N = {n}, α = β = {ab:g}, l = {figs[n, ab]['level']}, against Table 4.4, "
            f"N = {n}, l = {figs[n, ab]['level']}:"
        )
        lines.append(table)
    lines.append(
        "The fit of the best assignment and of the overloaded-first reading against Table 4.4's row at "
        "every level (exact matches, total distance in last-digit units; the level Table 4.5 names in bold):"
    )
    lines.append(control_table(figs))
    lines.append(verdict_a(figs))
    lines.append("""Plausibility of every heterogeneous row, as printed and read overloaded first, against
what all rows of Tables 4.2-4.4 keep (a typical half-range small beside its score; an
overloaded organization's std of the order of its score; no typical half-range at N = 2):""")
    lines.append(plaus)
    first = [true_fields(printed_het(*key)[1], OVERLOADED_FIRST) for key in T45_HET]
    typical, overloaded = [r["typical score"] for r in first], [r["overloaded score"] for r in first]
    swap = [
        f"{f['fits']['typical ↔ overloaded swapped'][0]} of {f['fits']['typical ↔ overloaded swapped'][2]}"  # type: ignore[index]
        for f in figs.values()
    ]
    lines.append(f"""As printed, {inside['as printed']} of the {len(T45_HET)} rows keep those ranges; read overloaded \
first,
{inside['overloaded first']} of {len(T45_HET)} do. Read that way no score is negative (typical {min(typical):.2f} to \
{max(typical):.2f},
overloaded {min(overloaded):.2f} to {max(overloaded):.2f}), which is what the text claims of the table ("it allows
positive gains for all the organizations even when one of the resources is overloaded").

**Verdict (a):** the heterogeneous rows are not "typical and overloaded swapped" (that
reading matches {" and ".join(swap)} numbers in the two checkable rows). Each row's six numbers are in
the order overloaded score, overloaded std, typical score, ±, typical std, ±, poured into
the template's typical "score ± / std ±" and overloaded "score / std" slots: a copy
(ordering) error in the printed table. The evidence is strong for N = 2 and 10 (the rows
above) and circumstantial for the six rows without a counterpart (plausibility only).""")
    return "\n\n".join(lines)


def verdict_a(figs: dict[tuple[int, float], dict[str, object]]) -> str:
    """The per-row verdicts of part (a), from the computed fits."""
    out = ["Verdicts on the two checkable rows:"]
    for (n, ab), f in figs.items():
        fits = f["fits"]  # type: ignore[assignment]
        parts = [f"{name} {hits} of {k} exact ({dist:.1f} units)" for name, (hits, dist, k) in fits.items()]  # type: ignore[union-attr]
        control = sorted(f["control_first"], key=lambda r: r[2])  # type: ignore[arg-type]
        own = next(r for r in control if r[0] == f["level"])
        runner = next(r for r in control if r[0] != f["level"])
        place = (
            "better than at any other level"
            if control[0] is own
            else f"only {ordinal(control.index(own) + 1)} best of the 14 levels"
        )
        hits, dist, k = fits["overloaded first"]  # type: ignore[index]
        cells, source = f["cells"], f["source"]
        main = [
            units(cells[i], source[j].value)
            for i, j in f["hyps"]["overloaded first"]  # type: ignore[index]
            if "±" not in source[j].field
        ]
        if hits == k:
            what = (
                f"every number is Table 4.4's l = {f['level']} cell to the printed rounding: **copied cells, "
                f"entered overloaded first**"
            )
        else:
            what = (
                f"only {hits} of {k} numbers are Table 4.4's l = {f['level']} cells to the printed rounding, the "
                f"scores and standard deviations within {max(main):.1f} units: **not copied cells but, most likely, "
                f"a rerun of that setting entered overloaded first** (its two half-ranges are too alike to "
                f"tell which is which: the best assignment swaps them at the same total distance)"
            )
        out.append(
            f"- **N = {n}, l = {f['level']}**: " + "; ".join(parts) + f". As a rerun of the same fields, the "
            f"printed typical score would be {f['z']:.0f} standard errors of a {RUNS}-run mean off Table 4.4's. "
            f"Read overloaded first, the row fits Table 4.4 at l = {f['level']} {place} ({own[2]:.1f} units; "
            f"next l = {runner[0]}, {runner[2]:.1f}); {what}."
        )
    return "\n".join(out)


def ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


# ---------------------------------------------------------------- part (b)
def part_b() -> str:
    """Part (b): the α = β = 1 homogeneous rows against the α = β = 2 rows and the M/G/1 bound."""
    mean1, second1 = gamma_moments(1, 1)
    wait1 = mg1_wait(RATE, mean1, second1)
    steady1, steady2 = score_bound(RATE, 1, 1), score_bound(RATE, 2, 2)
    cont1, disc1 = period_bound(RATE, 1, 1), period_bound(RATE, 1, 1, discrete=True)
    cont2, disc2 = period_bound(RATE, 2, 2), period_bound(RATE, 2, 2, discrete=True)
    bound1, bound2 = max(cont1[0], disc1[0]), max(cont2[0], disc2[0])  # the looser of the two time models
    rows, facts = [], {"within": [], "ratio42": [], "over": [], "over2": []}
    for n in (2, 5, 10, 30):
        a2, a1 = [v for v, _ in numbers(T45_HOM[n, 2.0])], [v for v, _ in numbers(T45_HOM[n, 1.0])]
        r42 = numbers(T42_HOM[n, 1.0])[0][0] / numbers(T42_HOM[n, 2.0])[0][0]
        facts["ratio42"].append(r42)
        if abs(a1[0] - a2[0]) <= a1[1] + a2[1]:
            facts["within"].append(n)
        if a1[0] > bound1:
            facts["over"].append(n)
        if a2[0] > bound2:
            facts["over2"].append(n)
        rows.append(
            [
                n,
                T45_HOM[n, 2.0],
                T45_HOM[n, 1.0],
                f"{a1[0] - a2[0]:+.2f} ({a1[1] + a2[1]:.2f})",
                f"{a1[2] - a2[2]:+.2f} ({a1[3] + a2[3]:.2f})",
                f"{a1[0] / a2[0]:.2f}",
                f"{r42:.2f}",
                f"{a2[0] * r42:.2f}",
                f"{a1[0] / bound1:.1f}",
                f"{spread_bound(bound1, n):.2f}",
            ]
        )
    table = md_table(
        [
            "N",
            "α = β = 2 (printed)",
            "α = β = 1 (printed)",
            "score difference (sum of the two ±)",
            "std difference (sum of the two ±)",
            "score ratio α=1 / α=2, Table 4.5",
            "same ratio, Table 4.2",
            "α = 2 score × Table 4.2's ratio",
            f"α = 1 score / whole-job bound {bound1:.2f}",
            "bound if a job may run on all N processors at once",
        ],
        rows,
    )
    t42 = [numbers(T42_HOM[n, 1.0])[0][0] for n in (2, 5, 10, 30)]
    text = f"""**(b) The homogeneous α = β = 1 rows.** At α = β = 1 (gamma(1, 1) sizes: E[S] = {mean1:g},
E[S²] = {second1:g}) and λ = {RATE:g} each site alone is an M/G/1 queue at load ρ = {RATE * mean1:g}, with mean
wait W = λE[S²]/(2(1 − ρ)) = {wait1:.3f}. Alone a job's mean flow is W + E[S]; balanced, it is at
least E[S] as long as no job's work ever runs on two processors at once, so balancing the
queued work can raise the score F̃/F − 1 to W/E[S] = {steady1:.3f} at most, in steady state.
Scored as the thesis scores (one period T = 1000 from empty queues, jobs released in
0.2T-0.8T, F̃ from the period's start, mean of per-period ratios; {PERIODS} simulated periods)
the bound is {cont1[0]:.3f} ± {cont1[1]:.3f}, or {disc1[0]:.3f} ± {disc1[1]:.3f} with releases at whole time units
(the thesis's simulator is discrete); we take the larger, **{bound1:.2f}**. The same bound at
α = β = 2 (load 0.8) is {steady2:.2f} in steady state and {bound2:.2f} per period. If a job may instead
run on all N processors at once, F can fall to Σp/N and the bound becomes N·(F̃/Σp) − 1."""
    t42_2 = [numbers(T42_HOM[n, 2.0])[0][0] for n in (2, 5, 10, 30)]
    return "\n\n".join([text, table, verdict_b(facts, bound1, bound2, t42, t42_2)])


def verdict_b(facts: dict[str, list], bound1: float, bound2: float, t42: list[float], t42_2: list[float]) -> str:
    """Part (b)'s verdict, from the printed numbers and the bounds."""
    s1 = {n: numbers(T45_HOM[n, 1.0])[0][0] for n in (2, 5, 10, 30)}
    s2 = {n: numbers(T45_HOM[n, 2.0])[0][0] for n in (2, 5, 10, 30)}
    apart = [n for n in s1 if n not in facts["within"]]
    smaller = [1 / r for r in facts["ratio42"]]
    same = [n for n in s1 if s1[n] == s2[n]]
    listing = lambda ns: ", ".join(str(n) for n in ns) or "none"  # noqa: E731
    return f"""Every printed α = β = 1 score ({", ".join(f"{v:.2f}" for v in s1.values())}) is above the whole-job \
bound {bound1:.2f}
(N = {listing(facts["over"])}), by a factor {min(s1.values()) / bound1:.1f} to {max(s1.values()) / bound1:.1f}: \
reaching them needs one job's work to
run on several processors at once (a job divided over idle processors as it arrives, or
while it runs). Table 4.2's own α = β = 1 scores ({", ".join(f"{v:.2f}" for v in t42)}) are at most
{max(t42) / bound1:.1f} times the bound, and its α = 2 scores ({", ".join(f"{v:.2f}" for v in t42_2)}) stay under \
theirs ({bound2:.2f}):
the thesis's averaging game gains about what removing all waiting gives, not a multiple of
it. The α = 1 scores of Table 4.5 equal its α = 2 ones within the sum of the printed
half-ranges at N = {listing(facts["within"])} (to the last digit at N = {listing(same)}), where Table 4.2's ratio would
make them {min(smaller):.0f} to {max(smaller):.0f} times smaller; they are not literal copies, though: N = \
{listing(apart)} differs
beyond the half-ranges ({", ".join(f"{s1[n]:.2f} against {s2[n]:.2f}" for n in apart)}), and the half-ranges and \
standard
deviations differ in every row. Nor does the bound settle it: Table 4.5's α = 2 scores
already exceed their whole-job bound ({bound2:.2f}) at N = {listing(facts["over2"])}, so the thesis's BILB runs,
unlike its averaging-game runs, let work run on several processors at once, and a
simulator that does so can gain a multiple of the bound at load 0.2 too (up to the last
column). **Verdict (b): not conclusive.** The α = 1 rows look like the α = 2 rows entered
again ({len(facts["within"])} scores of 4 within the half-ranges, {len(same)} to the last digit), which fits a copy
error, and they are {min(s1.values()) / bound1:.1f} to {max(s1.values()) / bound1:.1f} times what balancing queued \
work alone could give; but
nothing printed excludes a BILB simulator that divides jobs over idle processors and
gains that much at light load."""


def render() -> str:
    """The whole t45-checks section of bilb.md."""
    return (
        f"Regenerate with `python -m gridemu.experiments.bilb_thesis_checks --write` (the thesis's numbers "
        f"from `bilb_tables.py`; no emulator run, a few seconds).\n\n{part_a()}\n\n{part_b()}"
    )


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(__doc__, sys.argv[1:], ('--write',))
    emit(render(), MARKERS, sys.argv[1:])
