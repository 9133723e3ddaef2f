"""How far each reading of thesis chapter 4 lands from its tables (docs/results/bilb.md, "Readings").

    bash docs/results/bilb-readings.sh                        # the runs (OUT=runs/bilb-readings)
    python -m gridemu.experiments.bilb_readings runs/bilb-readings   # print the tables
    python -m gridemu.experiments.bilb_readings runs/bilb-readings --write

A reading is one choice of each setting the text leaves open: ``cut_running`` (whole: a
started piece is never cut), ``round_timing`` (plan / unbounded), time (continuous /
discrete), ``starting`` (queued / running; varied with whole pieces in discrete time only) and
``local_from`` (window / period; "run" is "period" in these one-period runs). Its error is measured on the homogeneous
α = β = 2 cells the issue names: Table 4.2 (averaging game, N = 2, 5, 10, 30), Table 4.3
(BILB, 14 levels × N = 2, 10) and Table 4.5 (BILB, l = 1000, N = 2, 5, 10, 30; N = 2 and
10 are Table 4.3's l = 1000 cells, counted once in "all"). Table 4.2 at α = β = 1 is shown
beside as a check outside the target.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from gridemu.experiments.bilb_tables import LEVELS, T42_HOM, T43, T45_HOM, mean_ci, run_scores
from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.script_args import hand_parsed

DOC = Path(__file__).with_name("bilb.md")
BEGIN, END = "<!-- readings:begin (bilb_readings.py --write) -->", "<!-- readings:end -->"
CELLS_BEGIN, CELLS_END = "<!-- readings-cells:begin (bilb_readings.py --write) -->", "<!-- readings-cells:end -->"


def thesis_score(text: str) -> float:
    """The score of a transcribed cell "score ± half-range / std ± half-range"."""
    return float(text.split("±")[0])


def cells(root: Path, reading: str, local_from: str) -> dict[tuple[str, int, int], tuple[float, float, float, int]]:
    """(table, N, l) -> (thesis, ours, CI half-width, runs) for one reading's folder."""
    cut, timing, time, *running = reading.split("-")
    # l = 1000 and the averaging game: the timing does not matter
    plan = root / "-".join([cut, "plan", time, *running])
    out = {}

    def put(key, thesis, folder, where):
        orgs = pd.read_parquet(folder / "orgs.parquet")
        runs = run_scores(orgs, {"protocol.local_from": local_from, **where})
        out[key] = (thesis, *mean_ci(runs), len(runs))

    for n in (2, 5, 10, 30):
        put(("4.2", n, 0), thesis_score(T42_HOM[n, 2.0]), plan / "t42", {"sites.count": n})
    for lv in LEVELS:
        for i, n in enumerate((2, 10)):
            put(("4.3", n, lv), T43[lv][i][0], root / reading / "t43", {"sites.count": n, "protocol.limit": lv})
    for n in (5, 30):
        put(("4.5", n, 1000), thesis_score(T45_HOM[n, 2.0]), plan / "t45", {"sites.count": n})
    if (plan / "t42a1" / "orgs.parquet").exists():
        for n in (2, 5, 10, 30):
            put(("4.2a1", n, 0), thesis_score(T42_HOM[n, 1.0]), plan / "t42a1", {"sites.count": n})
    for n in (2, 10):
        out["4.5", n, 1000] = out["4.3", n, 1000]
    return out


def rel_error(got: dict, which) -> float:
    errs = [abs(ours - th) / abs(th) for key, (th, ours, _, _) in got.items() if which(key)]
    return float(np.mean(errs)) if errs else math.nan


def readings(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if (p / "t43" / "orgs.parquet").exists())


def main(root: Path, write: bool) -> None:
    summary = [
        "| running piece | round timing | time | starting | F̃ from | Table 4.2 | Table 4.3, l ≤ 4 | "
        "Table 4.3, l ≥ 5 | Table 4.5 | all 34 cells | runs per cell | check: Table 4.2, α = β = 1 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    detail_keys = [
        ("4.2", 10, 0),
        ("4.2", 30, 0),
        ("4.3", 2, 1),
        ("4.3", 10, 1),
        ("4.3", 10, 3),
        ("4.3", 10, 5),
        ("4.3", 10, 1000),
        ("4.5", 30, 1000),
    ]
    names = {("4.2", 10, 0): "4.2 N=10", ("4.2", 30, 0): "4.2 N=30", ("4.5", 30, 1000): "4.5 N=30"}
    detail = [
        "| reading | " + " | ".join(names.get(k, f"4.3 N={k[1]} l={k[2]}") for k in detail_keys) + " |",
        "|---|" + "---|" * len(detail_keys),
        "| thesis | " + " | ".join("" for _ in detail_keys) + " |",
    ]
    first = True
    for reading in readings(root):
        cut, timing, time, *running = reading.split("-")
        starting = "running" if running else "queued"
        for local_from in ("window", "period"):
            got = cells(root, reading, local_from)
            check = {k: v for k, v in got.items() if k[0] == "4.2a1"}
            got = {k: v for k, v in got.items() if k[0] != "4.2a1"}
            if first:
                detail[2] = "| thesis | " + " | ".join(f"{got[k][0]:.3g}" for k in detail_keys) + " |"
                first = False
            unique = {k: v for k, v in got.items() if not (k[0] == "4.5" and k[1] in (2, 10))}
            runs = min(v[3] for v in got.values())
            summary.append(
                f"| {cut} | {timing} | {time} | {starting} | {local_from} | "
                f"{rel_error(got, lambda k: k[0] == '4.2'):.2f} | "
                f"{rel_error(got, lambda k: k[0] == '4.3' and k[2] <= 4):.2f} | "
                f"{rel_error(got, lambda k: k[0] == '4.3' and k[2] >= 5):.2f} | "
                f"{rel_error(got, lambda k: k[0] == '4.5'):.2f} | **{rel_error(unique, lambda k: True):.2f}** | "
                f"{runs} | {rel_error(check, lambda k: True):.2f} |"
            )
            detail.append(
                f"| {cut}, {timing}, {time}, {starting}, {local_from} | "
                + " | ".join(f"{got[k][1]:.3g} ± {got[k][2]:.2g}" for k in detail_keys)
                + " |"
            )
    text = "\n".join(summary)
    cells_text = "\n".join(detail)
    print(text + "\n\n" + cells_text)
    if write:
        write_between(BEGIN, END, text, DOC)
        write_between(CELLS_BEGIN, CELLS_END, cells_text, DOC)


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(__doc__, sys.argv[1:], ('--write',))
    args = [a for a in sys.argv[1:] if a != "--write"]
    main(Path(args[0] if args else "runs/bilb-readings"), "--write" in sys.argv[1:])
