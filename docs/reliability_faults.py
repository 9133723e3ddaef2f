"""The crash-cost table of docs/reliability.md ("Faults as part of a scenario"): the shipped
``faults`` scenario swept over the mean time between failures, with and without averaging.

    python docs/reliability_faults.py           # runs the sweep (about 5 s) and prints the table
    python docs/reliability_faults.py --write   # and puts it in docs/reliability.md
"""

from __future__ import annotations

import sys
from pathlib import Path

from gridemu.emulator.sweep import sweep

DOC = Path(__file__).with_name("reliability.md")
BEGIN, END = "<!-- faults:begin (reliability_faults.py --write) -->", "<!-- faults:end -->"
MTBF = [1e12, 1600.0, 400.0, 100.0]


def table() -> str:
    _, _, t = sweep(
        "faults",
        [("faults.mtbf", MTBF), ("protocol.name", ["local", "averaging"])],
        repeat=5,
        quiet=True,
        backend="inprocess",
    )
    t = t.reset_index()  # the settings in the grid's order: no faults first, local before averaging
    out = [
        "| mtbf (mttr 40) | protocol | mean flow time | makespan | "
        "crashes | jobs requeued | work lost | reports lost |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in t.iterrows():
        mtbf = "none (1e12)" if r["faults.mtbf"] >= 1e12 else f"{r['faults.mtbf']:,.0f}"
        crashes = (
            f"{r.faults_crashes_mean:.0f}"
            if r.faults_crashes_mean == int(r.faults_crashes_mean)
            else f"{r.faults_crashes_mean:.1f}"
        )
        killed = (
            f"{r.faults_jobs_killed_mean:.0f}"
            if r.faults_jobs_killed_mean == int(r.faults_jobs_killed_mean)
            else f"{r.faults_jobs_killed_mean:.1f}"
        )
        out.append(
            f"| {mtbf} | {r['protocol.name']} | {r.mean_flow_time_mean:.1f} ± {r.mean_flow_time_std:.1f} | "
            f"{r.makespan_mean:,.0f} | {crashes} | {killed} | {r.faults_work_lost_mean:,.0f} | "
            f"{r.faults_messages_lost_mean:,.0f} |"
        )
    return "\n".join(out)


def main(argv: list[str]) -> int:
    text = table()
    print(text)
    if "--write" in argv:
        doc = DOC.read_text()
        a, b = doc.index(BEGIN) + len(BEGIN), doc.index(END)
        DOC.write_text(doc[:a] + "\n" + text + "\n" + doc[b:])
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
