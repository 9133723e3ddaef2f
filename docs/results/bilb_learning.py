"""Figures 4.3-4.5 of the thesis: where the learned strategies settle (docs/results/bilb.md).

    bash docs/results/bilb-learning.sh                               # the runs (OUT=runs/bilb-learning)
    python -m gridemu.experiments.bilb_learning runs/bilb-learning          # print the table
    python -m gridemu.experiments.bilb_learning runs/bilb-learning --write  # into bilb.md
    # the local_from = "period" runs, into bilb.md:
    python -m gridemu.experiments.bilb_learning runs/bilb-learning-period --write=period

Each figure is one continuous run whose organizations learn their strategy once per period
(p_k by Algorithm 4.2, l_k by section 4.7.3). A strategy has *settled* from the first period
after which the mean of every later window of W periods stays within 10 % of the mean of the
last W periods (W = 20); the table gives that period (the latest over the organizations), the
final means and their range over the periods after settling.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.script_args import hand_parsed

DOC = Path(__file__).with_name("bilb.md")


def markers(tag: str) -> tuple[str, str]:
    name = f"learning-{tag}" if tag else "learning"
    return f"<!-- {name}:begin (bilb_learning.py --write{'=' + tag if tag else ''}) -->", f"<!-- {name}:end -->"


WINDOW = 20
TOLERANCE = 0.10

#: folder -> (figure, what the thesis says)
FIGURES = {
    "fig43a": ("4.3 (a) averaging game, homogeneous, N = 10", 'p_k "oscillates between 0.8 and 0.9 with a few peaks"'),
    "fig43b": (
        "4.3 (b) averaging game, organization 0 overloaded, N = 10",
        'p_1 "slightly higher" than in (a); the others "oscillate around 0.1"',
    ),
    "fig44a": ("4.4 (a) BILB, homogeneous, N = 2", 'l_k "quickly reach the upper bound" (1000)'),
    "fig44b": ("4.4 (b) BILB, homogeneous, N = 10", "l_k reach the upper bound"),
    "fig45a": (
        "4.5 (a) BILB, organization 0 overloaded, N = 2",
        "the other organization's l_2 falls below 1.5 (rounded to 1)",
    ),
    "fig45b": ("4.5 (b) BILB, organization 0 overloaded, N = 10", "every l_k eventually reaches the upper bound"),
}


def settled_from(levels: np.ndarray, window: int = WINDOW, tolerance: float = TOLERANCE) -> int | None:
    """First period p such that every window of ``window`` periods starting at p or later has a
    mean within ``tolerance`` (relative) of the last window's; None if the run is too short."""
    n = len(levels)
    if n < 2 * window:
        return None
    means = np.convolve(levels, np.ones(window) / window, mode="valid")  # means[i]: periods i..i+window-1
    final = means[-1]
    off = np.abs(means - final) > tolerance * abs(final)
    if not off.any():
        return 0
    last_off = int(np.flatnonzero(off)[-1])
    return last_off + 1 if last_off + 1 < len(means) - window else None


def figure_row(folder: Path) -> dict[str, object]:
    ts = pd.read_parquet(folder / "timeseries.parquet")
    scenario = tomllib.loads((folder / "scenario.toml").read_text())
    # Periods after the last arrival (an overloaded grid drains its backlog for long) learn nothing.
    with_jobs = scenario["workload"]["until"] / scenario["protocol"]["period"]
    wide = ts[ts["period"] < with_jobs].pivot_table(index="period", columns="site", values="level").sort_index()
    settle = [settled_from(wide[s].to_numpy()) for s in wide.columns]
    done = None if any(s is None for s in settle) else max(settle)
    tail = wide.iloc[-WINDOW:]
    first = wide.columns[0]
    after = wide.iloc[done:] if done is not None else tail
    return {
        "periods": len(wide),
        "settled": done,
        "org0": float(tail[first].mean()),
        "others": (float(tail.drop(columns=first).mean().min()), float(tail.drop(columns=first).mean().max())),
        "range": (float(after.to_numpy().min()), float(after.to_numpy().max())),
    }


def main(root: Path, write: bool, tag: str = "") -> None:
    lines = [
        f"| figure | thesis | periods run | settled from period | organization 0, last {WINDOW} periods | "
        f"the others, last {WINDOW} periods | range once settled |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (figure, thesis) in FIGURES.items():
        folder = root / name
        if not (folder / "timeseries.parquet").exists():
            continue
        r = figure_row(folder)
        settled = "not settled" if r["settled"] is None else str(r["settled"])
        lo, hi = r["others"]
        others = f"{lo:.3g}" if abs(hi - lo) < 5e-4 * max(1.0, abs(hi)) else f"{lo:.3g} to {hi:.3g}"
        lines.append(
            f"| {figure} | {thesis} | {r['periods']} | {settled} | {r['org0']:.3g} | {others} | "
            f"{r['range'][0]:.3g} to {r['range'][1]:.3g} |"
        )
    text = "\n".join(lines)
    print(text)
    if write:
        write_between(*markers(tag), text, DOC)


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(__doc__, sys.argv[1:], ('--write',))
    args = [a for a in sys.argv[1:] if not a.startswith("--write")]
    writes = [a for a in sys.argv[1:] if a.startswith("--write")]
    main(Path(args[0] if args else "runs/bilb-learning"), bool(writes), writes[0].partition("=")[2] if writes else "")
