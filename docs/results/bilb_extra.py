"""The studies of docs/results/bilb.md beyond the thesis's tables: stale offers and round spacing.

bash docs/results/bilb-extra.sh                            # the runs (OUT=runs/bilb-extra)
python -m gridemu.experiments.bilb_extra runs/bilb-extra          # print the tables
python -m gridemu.experiments.bilb_extra runs/bilb-extra --write  # into bilb.md
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from gridemu.experiments.bilb_tables import mean_ci, scores
from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.script_args import hand_parsed

DOC = Path(__file__).with_name("bilb.md")
STALE = ("<!-- staleness:begin (bilb_extra.py --write) -->", "<!-- staleness:end -->")
GAP = ("<!-- gap:begin (bilb_extra.py --write) -->", "<!-- gap:end -->")


def staleness(folder: Path) -> str:
    """Typical and overloaded scores, refusals and messages per run, against the link latency."""
    table = scores(folder)
    runs = pd.read_parquet(folder / "runs.parquet")
    per_run = runs.groupby("network.latency")[["messages_refuse", "messages_total"]].mean()
    lines = [
        "| link latency | typical score | overloaded score | refusals per run | messages per run |",
        "|---|---|---|---|---|",
    ]
    for _, row in table.sort_values("network.latency").iterrows():
        lat = row["network.latency"]
        typical, ci = mean_ci(row["typical_runs"])
        refused = per_run.loc[lat, "messages_refuse"]
        lines.append(
            f"| {lat:g} | {typical:.2f} ± {ci:.2f} | {row['org0_score']:.2f} | "
            f"{0 if refused != refused else refused:,.0f} | {per_run.loc[lat, 'messages_total']:,.0f} |"
        )
    return "\n".join(lines)


def gap(folder: Path) -> str:
    """BILB's score against the least time between rounds, at l = 1 and l = 1000."""
    table = scores(folder)
    lines = ["| least time between rounds | l = 1 | l = 1000 |", "|---|---|---|"]
    for g, part in table.groupby("protocol.min_gap"):
        by_level = {lv: mean_ci(r["all_runs"]) for lv, r in part.set_index("protocol.limit").iterrows()}
        lines.append(
            f"| {g:g} | " + " | ".join(f"{by_level[lv][0]:.2f} ± {by_level[lv][1]:.2f}" for lv in (1, 1000)) + " |"
        )
    return "\n".join(lines)


def main(root: Path, write: bool) -> None:
    stale, spacing = staleness(root / "staleness"), gap(root / "gap")
    print(stale + "\n\n" + spacing)
    if write:
        write_between(*STALE, stale, DOC)
        write_between(*GAP, spacing, DOC)


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(__doc__, sys.argv[1:], ('--write',))
    args = [a for a in sys.argv[1:] if a != "--write"]
    main(Path(args[0] if args else "runs/bilb-extra"), "--write" in sys.argv[1:])
