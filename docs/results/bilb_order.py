"""The round order and the sent end (docs/results/bilb.md, "Round order and the sent end").

    bash docs/results/bilb-order.sh a & bash docs/results/bilb-order.sh b; wait
    python -m gridemu.experiments.bilb_order runs/bilb-order          # print the table
    python -m gridemu.experiments.bilb_order runs/bilb-order --write  # into bilb.md

Table 4.2 (averaging game) and Table 4.3 (BILB, l = 1, 3, 5) at N = 2, α = β = 2, under the
tables' reading, for each value of ``protocol.round_order`` and ``protocol.send``: the score
(mean over runs of the mean over organizations) ± its 95 % confidence half-width, the thesis's
beside it, and the mean relative error |ours − thesis| / thesis over the four cells; then
each setting's difference from ``after_releases``/``tail``, paired by seed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from gridemu.experiments.bilb_readings import thesis_score
from gridemu.experiments.bilb_tables import T42_HOM, T43, mean_ci, orgs_of, parts_of, run_scores
from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.script_args import hand_parsed

DOC = Path(__file__).with_name("bilb.md")
BEGIN, END = "<!-- order:begin (bilb_order.py --write) -->", "<!-- order:end -->"
ORDERS = ("after_releases", "before_releases")
SENDS = ("tail", "head")
LEVELS = (1, 3, 5)


def thesis() -> list[tuple[str, float]]:
    """(column, thesis score) of the four cells, in table order."""
    return [("Table 4.2, N = 2", thesis_score(T42_HOM[(2, 2.0)]))] + [
        (f"Table 4.3, N = 2, l = {level}", T43[level][0][0]) for level in LEVELS
    ]


def ours(root: Path, order: str, send: str) -> list[tuple[float, float, int] | None]:
    """(score, CI half-width, runs) of the four cells for one setting; None where not run."""
    out: list[tuple[float, float, int] | None] = []
    t42, t43 = root / f"t42-{order}-{send}", root / f"t43-{order}-{send}"
    if parts_of(t42):
        runs = run_scores(orgs_of(t42), {})
        out.append((*mean_ci(runs), len(runs)))
    else:
        out.append(None)
    orgs = orgs_of(t43) if parts_of(t43) else None
    for level in LEVELS:
        if orgs is None:
            out.append(None)
            continue
        runs = run_scores(orgs, {"protocol.limit": float(level)})
        out.append((*mean_ci(runs), len(runs)) if len(runs) else None)
    return out


def per_seed(root: Path, order: str, send: str, column: int) -> pd.Series | None:
    """One cell's score per run (seed), for the paired differences."""
    if column == 0:
        folder, where = root / f"t42-{order}-{send}", {}
    else:
        folder, where = root / f"t43-{order}-{send}", {"protocol.limit": float(LEVELS[column - 1])}
    if not parts_of(folder):
        return None
    orgs = orgs_of(folder)
    orgs = orgs[orgs["periods_scored"] > 0]
    for key, value in where.items():
        orgs = orgs[orgs[key] == value]
    return orgs.groupby("seed")["score_period_mean"].mean()


def differences(root: Path) -> str:
    """Each setting's score minus after_releases/tail's, run by run (the same seeds, so the same jobs)."""
    cols = thesis()
    lines = [
        "| round order | sent end | " + " | ".join(name for name, _ in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for order in ORDERS:
        for send in SENDS:
            if (order, send) == (ORDERS[0], SENDS[0]):
                continue
            text = []
            for column in range(len(cols)):
                base, other = per_seed(root, ORDERS[0], SENDS[0], column), per_seed(root, order, send, column)
                if base is None or other is None:
                    text.append("not run")
                    continue
                mean, half = mean_ci((other - base).dropna().to_numpy())
                text.append(f"{mean:+.3f} ± {half:.3f}")
            lines.append(f"| {order} | {send} | " + " | ".join(text) + " |")
    return "\n".join(lines) + "\n"


def table(root: Path) -> str:
    cols = thesis()
    lines = [
        "| round order | sent end | "
        + " | ".join(f"{name} (thesis {value:g})" for name, value in cols)
        + " | mean relative error |",
        "|---|---|" + "---|" * (len(cols) + 1),
    ]
    for order in ORDERS:
        for send in SENDS:
            cells = ours(root, order, send)
            text = [f"{c[0]:.3f} ± {c[1]:.3f} ({c[2]})" if c else "not run" for c in cells]
            errs = [abs(c[0] - t) / t for c, (_, t) in zip(cells, cols) if c]
            err = f"**{sum(errs) / len(errs):.2f}**" if len(errs) == len(cols) else "—"
            lines.append(f"| {order} | {send} | " + " | ".join(text) + f" | {err} |")
    paired = (
        "The same cells, each setting minus `after_releases`, `tail` run by run (the same seeds draw the\n"
        "same jobs), ± the 95 % confidence half-width of the mean difference:"
    )
    return "\n".join(lines) + "\n\n" + paired + "\n\n" + differences(root)


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(__doc__, sys.argv[1:], ('--write',))
    args = [a for a in sys.argv[1:] if a != "--write"]
    root = Path(args[0] if args else "runs/bilb-order")
    text = table(root)
    if "--write" in sys.argv:
        write_between(BEGIN, END, text, DOC)
    else:
        pd.set_option("display.width", 200)
        print(text)
