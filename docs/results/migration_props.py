"""Propositions 1-3 of the migration-fairness paper, run by the emulator (docs/results/migration.md).

    python -m gridemu.experiments.migration_props [X ...]

Runs the shipped scenarios gm-prop1, gm-prop2 and gm-prop3 under each busy scheduler
(``fcfs``: FCFS to the fastest free processor; ``fcfs_any``: to the lowest-numbered free
one; ``preempt``: priority preemption without migration) and under the ``gm`` protocol, and
prints the completion times d_j with the property each run keeps or breaks.
"""

from __future__ import annotations

import gridemu.emulator as emulator

SCHEDULERS = ("fcfs", "fcfs_any", "preempt", "gm")
GROUP = {"fcfs": 2, "fcfs_any": 1, "preempt": 2, "gm": 2}  # where each puts j1: group 1 = slow n1


def run(name: str, scheduler: str, **workload) -> tuple[dict[str, float], dict]:
    sets = {f"workload.{k}": v for k, v in workload.items()}
    if scheduler == "gm":
        sets.update({"scheduler.name": "planned", "protocol.name": "gm"})
    else:
        sets["scheduler.name"] = scheduler
    result = emulator.run(name, overrides=sets)
    return dict(zip(result.jobs["group"].astype(str), result.jobs["end"])), result.summary


def fmt(d: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(d.items(), key=lambda kv: int(kv[0][1:])))


def main(xs: list[int]) -> None:
    for X in xs:
        print(f"**Proposition 1 (EF), X = {X}**: j4 ≻ j5, so d4 ≤ d5 is required.\n")
        print("| scheduler | group (j1 on) | d_j | EF violations |\n|---|---|---|---|")
        for s in SCHEDULERS:
            for group in (1, 2):
                d, summary = run("gm-prop1", s, X=X, group=group)
                print(
                    f"| {s} | {group} ({'n1' if group == 1 else 'n2'}) | {fmt(d)} | "
                    f"{summary['fairness']['ef_violations']} |"
                )
        print(f"\n**Proposition 2 (WPM), X = {X}**: releasing j4 later (X + 2) must not make it finish earlier.\n")
        print("| scheduler | group | d4, released at X | d4, released at X + 2 | WPM |\n|---|---|---|---|---|")
        for s in SCHEDULERS:
            for group in (1, 2):
                base, _ = run("gm-prop2", s, X=X, group=group)
                late, _ = run("gm-prop2", s, X=X, group=group, variant="late")
                print(
                    f"| {s} | {group} | {base['j4']:g} | {late['j4']:g} | "
                    f"{'broken' if late['j4'] < base['j4'] else 'kept'} |"
                )
        print()
    print("**Proposition 3 (ILV)**, n = 3 machines: j4 (v0 = 2) alone must finish as with the low jobs present.\n")
    print("| scheduler | d_j with J | d4 with J' = {j4} | ILV |\n|---|---|---|---|")
    for s in SCHEDULERS:
        full, _ = run("gm-prop3", s)
        alone, _ = run("gm-prop3", s, variant="alone")
        print(f"| {s} | {fmt(full)} | {alone['j4']:g} | {'kept' if full['j4'] == alone['j4'] else 'broken'} |")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("X", type=int, nargs="*", default=[10], help="the propositions' X (10 by default)")
    main(ap.parse_args().X)
