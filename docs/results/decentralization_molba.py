"""The table of docs/results/decentralization.md, "MOLBA", from the sweeps of
decentralization-molba.sh: MOLBA replicated at every site (every job offered to every site,
the central plan computed at each) against MOLBA from published aggregates
(``protocol.mode = "aggregates"``), N = 5 to 500 organizations.

    bash docs/results/decentralization-molba.sh
    python docs/results/decentralization_molba.py runs/decentralization           # print the table
    python docs/results/decentralization_molba.py runs/decentralization --write   # and put it in the doc

Every figure is a mean over the sweep's seeds. Scores are makespan / max(W̄, p_max) (thesis
5.6.1): "local" every organization alone, "MOLBA" and "MOLBA+ILBA" the centralized
algorithms computed by the summary on the whole instance (never by the agents), "run" the
executed schedule. "msgs/job": every message over the jobs; "moved": jobs run away from
home; "wall s": the run's kernel seconds.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from decentralization_tables import write_between  # noqa: E402  (this folder's sibling script)

BEGIN, END = "<!-- molba:begin (decentralization_molba.py --write) -->", "<!-- molba:end -->"
SIZES = (5, 20, 100, 500)


def load(root: Path) -> pd.DataFrame:
    rows = []
    for n in SIZES:
        runs = pd.read_parquet(root / f"molba-{n}" / "runs.parquet")
        runs["organizations"] = n
        rows.append(runs)
    df = pd.concat(rows, ignore_index=True)
    df["msgs_per_job"] = df["messages_total"] / df["jobs"]
    df["moved_share"] = df["jobs_migrated"] / df["jobs"]
    keep = ["jobs", "overloaded", "score_local", "score_molba", "score_molba_ilba", "score", "msgs_per_job", "moved_share", "wall_seconds"]
    out = df.groupby(["protocol.mode", "organizations"])[keep].mean().reset_index()
    return out.sort_values(["protocol.mode", "organizations"], key=lambda c: c.map({"replicated": 0, "aggregates": 1}) if c.name == "protocol.mode" else c)


def table(df: pd.DataFrame) -> str:
    out = ["| MOLBA | organizations | jobs | \\|O'\\| | score local | MOLBA | MOLBA+ILBA | run | msgs/job | moved | wall s |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for _, r in df.iterrows():
        out.append(
            f"| {r['protocol.mode']} | {int(r.organizations)} | {r.jobs:,.0f} | {r.overloaded:.1f} | {r.score_local:.2f} | {r.score_molba:.3f} | "
            f"{r.score_molba_ilba:.3f} | {r.score:.3f} | {r.msgs_per_job:.2f} | {100 * r.moved_share:.0f} % | {r.wall_seconds:.2f} |"
        )
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    text = table(load(Path(argv[0])))
    print(text)
    if "--write" in argv:
        write_between(BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
