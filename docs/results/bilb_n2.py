"""Table 4.3 at N = 2, low levels: what sets them (docs/results/bilb.md, "Table 4.3 at N = 2:
how fast idle sites are fed").

    python -m gridemu.experiments.bilb_n2                  # print the tables (about 15 minutes on 1 busy core)
    python -m gridemu.experiments.bilb_n2 --write          # into bilb.md
    python -m gridemu.experiments.bilb_n2 --runs 40        # fewer runs per cell
    python -m gridemu.experiments.bilb_n2 --t44-n10 [--write]   # Table 4.4 at N = 10 only (about 3 minutes)
    python -m gridemu.experiments.bilb_n2 --t43-n10 [--write]   # Table 4.3 at N = 10, 200 runs (1.5 minutes)

Each cell runs the shipped ``bilb`` scenario's jobs (seeds 1..R, one period T = 1000, λ = 0.2,
α = β = 2, releases at whole units) through the centralized reference
(``brokers/bilb/reference.py: reference_run``) under the tables' reading (whole pieces,
``unbounded`` timing, discrete, ``starting = "running"``, the tail sent, F̃ from the run's
start) and one change at a time, and scores it as Table 4.3 does (jobs of 0.2T-0.8T). The
reference equals the agents at negligible latency (``tests/test_divisible.py``) and runs
more than ten times faster; the tables' latency is 0.001, and the reference's scores equal the
emulator's within the noise (the last table, from ``bilb-n2.sh``'s sweeps when they are
there; ``--emulator DIR``, default runs/bilb-n2).

Two kinds of change: the scenario settings any run can set (``send``, ``starting``,
``cut_running``, ``discrete``, ``round_order``, ``round_timing``, ``min_gap``,
``workload.integral``), and three diagnostics that are not options, written here as a plan
function handed to the reference (what a receiver's l_l bounds; loads rounded down to whole
units) or a copy of the reference that also rounds at releases.
"""

from __future__ import annotations

import copy
import functools
import math
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

import gridemu.brokers.bilb.reference as ref
from gridemu.brokers.bilb.strategies import alone_finish_times
from gridemu.brokers.metrics import score
from gridemu.emulator.scenario import load_scenario, read_scenario_file
from gridemu.experiments.bilb_table41 import md_table
from gridemu.experiments.bilb_tables import T43, T44, mean_ci, orgs_of, parts_of, run_scores
from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.script_args import hand_parsed
from gridemu.scenarios.workload import generate_jobs

DOC = Path(__file__).with_name("bilb.md")
BEGIN, END = "<!-- n2:begin (bilb_n2.py --write) -->", "<!-- n2:end -->"
T44_N10_MARKERS = ("<!-- t44-n10:begin (bilb_n2.py --t44-n10 --write) -->", "<!-- t44-n10:end -->")
T44_N10_LEVELS = (1, 3, 5, 10, 1000)
T43_N10_MARKERS = ("<!-- t43-n10:begin (bilb_n2.py --t43-n10 --write) -->", "<!-- t43-n10:end -->")
LEVELS = (1, 2, 3, 4, 5, 10, 1000)
LOW, HIGH = (1, 2, 3, 4, 5), (10, 1000)
N10_LEVELS = (1, 3, 5, 1000)
#: The tables' reading (docs/results/bilb.md, "The reading the tables use"), the tail sent.
TABLES = dict(
    cut_running=False,
    round_timing="unbounded",
    discrete=True,
    starting="running",
    round_order="after_releases",
    send="tail",
    min_gap=1.0,
)


# ---------------------------------------------------------------- diagnostics (not options)
#: l_l bounds the foreign load a receiver takes in a round (Φ_l ≤ l_l), not its queue.
FOREIGN = functools.partial(
    ref.thesis_bilb, space_of=lambda mean, queue, level, received, queued: min(mean - queue, level - received)
)
#: l_l bounds the receiver's queued work only (its running piece not counted).
QUEUED_ONLY = functools.partial(
    ref.thesis_bilb, space_of=lambda mean, queue, level, received, queued: min(mean - queue, level - queued)
)


_THESIS_BILB = ref.thesis_bilb


def _floored(loads, limits, movable):
    """The plan from loads rounded down to whole time units (a discrete simulator's counters)."""
    return _THESIS_BILB([math.floor(x + 1e-9) for x in loads], limits, movable)


@contextmanager
def patched(plan=None, carry_limits: bool = True) -> Iterator[None]:
    """Run the reference with another plan function (and, for plans that read loads
    otherwise, receivers that test only the piece's deadline, the plan bounding their queue)."""
    saved_plan, saved_carry = ref.thesis_bilb, ref._carry_out
    if plan is not None:
        ref.thesis_bilb = plan
    if not carry_limits:

        def carry(t, sites, loads, plan_, limits, *args, **kwargs):
            return saved_carry(t, sites, loads, plan_, [math.inf] * len(sites), *args, **kwargs)

        ref._carry_out = carry
    try:
        yield
    finally:
        ref.thesis_bilb, ref._carry_out = saved_plan, saved_carry


# ---------------------------------------------------------------- the variants
#: (label, reference_run settings over TABLES, workload settings, plan, receivers test l, release rounds, at N = 10)
VARIANTS: list[tuple[str, dict[str, Any], dict[str, Any], Any, bool, bool, bool]] = [
    ("the tables' reading", {}, {}, None, True, False, True),
    ('`send = "head"` (shipped)', {"send": "head"}, {}, None, True, False, False),
    ('`starting = "queued"`', {"starting": "queued"}, {}, None, True, False, True),
    ("`cut_running = true`", {"cut_running": True}, {}, None, True, False, True),
    ("`discrete = false`", {"discrete": False}, {}, None, True, False, True),
    ('`round_order = "before_releases"`', {"round_order": "before_releases"}, {}, None, True, False, False),
    ("`workload.integral = true` (whole sizes)", {}, {"integral": True}, None, True, False, False),
    ("diagnostic: l_l bounds the load received per round", {}, {}, FOREIGN, False, False, True),
    ("diagnostic: l_l bounds the queued work, not the running piece", {}, {}, QUEUED_ONLY, False, False, True),
    ("diagnostic: loads rounded down to whole units", {}, {}, _floored, False, False, True),
    ("diagnostic: a round at every release too", {}, {}, None, True, True, True),
    ('`round_timing = "unbounded"`, `min_gap = 5`', {"min_gap": 5.0}, {}, None, True, False, False),
    ('`round_timing = "plan"` (the text\'s timing)', {"round_timing": "plan"}, {}, None, True, False, True),
    ('`round_timing = "plan"`, `min_gap = 3`', {"round_timing": "plan", "min_gap": 3.0}, {}, None, True, False, True),
    ('`round_timing = "plan"`, `min_gap = 5`', {"round_timing": "plan", "min_gap": 5.0}, {}, None, True, False, True),
    ('`round_timing = "plan"`, `min_gap = 8`', {"round_timing": "plan", "min_gap": 8.0}, {}, None, True, False, False),
]


def jobs_for(seed: int, n: int, workload: dict[str, Any]) -> np.ndarray:
    data = copy.deepcopy(read_scenario_file("bilb")[0])
    data["run"]["seed"] = seed
    data["sites"]["count"] = n
    data["workload"]["until"] = 1000.0
    data["workload"].update(workload)
    return generate_jobs(load_scenario(data))[0]


def scores_of(jobs: np.ndarray, n: int, pieces: dict[str, np.ndarray]) -> list[float]:
    """S_k of each organization, Table 4.3's way: jobs released in [200, 800], F̃ alone from the run's start."""
    ends: dict[int, float] = {}
    for job, end in zip(pieces["job_id"].tolist(), pieces["end"].tolist()):
        ends[job] = max(ends.get(job, -math.inf), end)
    out = []
    for org in range(n):
        own = jobs[jobs["submit_site"] == org]
        own = own[np.lexsort((own["job_id"], own["release"]))]
        alone = np.array(alone_finish_times(own["release"].tolist(), own["size"].tolist()))
        release = own["release"]
        inside = (release >= 200.0) & (release <= 800.0)
        flow = sum(ends[int(j)] - float(r) for j, r in zip(own["job_id"][inside], release[inside]))
        out.append(score(flow, float((alone[inside] - release[inside]).sum())))
    return out


def run_cell(variant, n: int, level: float, runs: int) -> dict[str, Any]:
    _, settings, workload, plan, carry_limits, release_rounds, _ = variant
    runner = functools.partial(ref.reference_run, round_at_releases=True) if release_rounds else ref.reference_run
    per_run, per_org, rounds, moved = [], [], [], []
    for seed in range(1, runs + 1):
        jobs = jobs_for(seed, n, workload)
        count = {"rounds": 0, "moved": 0.0}

        def hook(t, loads, plan_, after, count=count):
            count["rounds"] += 1
            count["moved"] += sum(amount for _, _, amount in plan_)

        with patched(plan, carry_limits):
            pieces = runner(jobs, n, protocol="bilb", limits=[float(level)] * n, on_round=hook, **(TABLES | settings))
        s = scores_of(jobs, n, pieces)
        per_run.append(float(np.mean(s)))
        per_org.append(s)
        rounds.append(count["rounds"])
        moved.append(count["moved"])
    mean, ci = mean_ci(np.array(per_run))
    return {
        "mean": mean,
        "ci": ci,
        "median": float(np.median(per_run)),
        "std": float(np.array(per_org).std(axis=0, ddof=1).mean()),  # each organization's std over runs, averaged
        "rounds": float(np.mean(rounds)),
        "moved": float(np.mean(moved)),
        "runs": runs,
        "per_run": per_run,  # seeds 1..runs
    }


#: Table 4.4 at N = 2 (organization 0 overloaded, α₁ = β₁ = 3, l_1 = 1000): l -> (typical, overloaded) score.
T44_N2 = {1: (0.003, 0.034), 2: (-0.005, 0.074), 5: (-0.098, 0.185), 1000: (-7.054, 0.949)}
OVERLOADED = {"alpha": {"default": 2.0, "0": 3.0}, "beta": {"default": 2.0, "0": 3.0}}
#: The readings Table 4.4's N = 2 cells are checked under.
T44_READINGS = (
    "the tables' reading",
    "diagnostic: l_l bounds the load received per round",
    '`round_timing = "plan"`, `min_gap = 5`',
)


def overloaded_cell(variant, level: float, runs: int) -> tuple[float, float, float, float]:
    """Table 4.4 at N = 2: (typical, its CI half-width, overloaded, its CI half-width) over ``runs`` runs."""
    _, settings, workload, plan, carry_limits, _, _ = variant
    per_run = []
    for seed in range(1, runs + 1):
        jobs = jobs_for(seed, 2, workload | OVERLOADED)
        with patched(plan, carry_limits):
            pieces = ref.reference_run(jobs, 2, protocol="bilb", limits=[1000.0, float(level)], **(TABLES | settings))
        per_run.append(scores_of(jobs, 2, pieces))
    got = np.array(per_run)
    (typical, ci_t), (over, ci_o) = mean_ci(got[:, 1]), mean_ci(got[:, 0])
    return typical, ci_t, over, ci_o


def overloaded_n10(variant, level: float, runs: int) -> dict[str, float]:
    """Table 4.4 at N = 10 (organization 0 overloaded, l_1 = 1000, the nine others at ``level``):
    the typical and overloaded scores over ``runs`` runs, and per run the rounds and the load the
    plans moved out of organization 0 and among the nine others."""
    _, settings, workload, plan, carry_limits, release_rounds, _ = variant
    runner = functools.partial(ref.reference_run, round_at_releases=True) if release_rounds else ref.reference_run
    n, per_run = 10, []
    count = {"rounds": 0, "out": 0.0, "among": 0.0}

    def hook(t, loads, plan_, after):
        count["rounds"] += 1
        for src, dst, amount in plan_:
            if src == 0:
                count["out"] += amount
            elif dst != 0:
                count["among"] += amount

    for seed in range(1, runs + 1):
        jobs = jobs_for(seed, n, workload | OVERLOADED)
        limits = [1000.0] + [float(level)] * (n - 1)
        with patched(plan, carry_limits):
            pieces = runner(jobs, n, protocol="bilb", limits=limits, on_round=hook, **(TABLES | settings))
        s = scores_of(jobs, n, pieces)
        per_run.append((float(np.mean(s[1:])), s[0]))
    got = np.array(per_run)
    return {
        "typical": mean_ci(got[:, 0]),
        "overloaded": mean_ci(got[:, 1]),
        "rounds": count["rounds"] / runs,
        "out": count["out"] / runs,
        "among": count["among"] / runs,
    }


def table44_n10(runs: int) -> str:
    """Every reading on Table 4.4's N = 10 column, with what the plans did at l = 5."""
    rows = [["thesis", *(f"{T44[lv][1][0]:g} / {T44[lv][1][4]:g}" for lv in T44_N10_LEVELS), ""]]
    fives = []
    for variant in VARIANTS:
        cells = {lv: overloaded_n10(variant, lv, runs) for lv in T44_N10_LEVELS}
        five = cells[5]
        fives.append(five)
        rows.append(
            [
                variant[0],
                *(f"{c['typical'][0]:.3f} / {c['overloaded'][0]:.2f}" for c in cells.values()),
                f"{five['rounds']:.0f}, {five['out']:.0f}, {five['among']:.0f}",
            ]
        )
    base = fives[0]  # the tables' reading
    header = ["reading", *(f"l = {lv}" for lv in T44_N10_LEVELS), "l = 5: rounds, out of 0, among the others"]
    return "\n".join(
        [
            f"Table 4.4 at N = 10 (organization 0 overloaded, α₁ = β₁ = 3, l_1 = 1000, the nine others at l; "
            f"{runs} runs per cell, the centralized reference), typical / overloaded score, and at l = 5 what a "
            "run's plans did: rounds, load moved out of organization 0, load moved among the nine others:",
            "",
            md_table(header, rows),
            "",
            f"Without the overloaded organization (Table 4.3's N = 10, l = 5, the tables' reading, the same "
            f"{runs} seeds), for comparison: "
            + _homogeneous_l5(runs)
            + f"; with it: {base['rounds']:.0f} rounds, {base['among']:.0f} moved among the nine others.",
        ]
    )


def table43_n10(runs: int) -> str:
    """Table 4.3's N = 10 column under the tables' reading, through the reference, with the
    confidence half-widths of ``runs`` runs: whether the low levels' distance to the thesis
    is noise."""
    levels = (1, 2, 3, 4, 5, 10, 1000)
    cells = {lv: run_cell(VARIANTS[0], 10, lv, runs) for lv in levels}
    rows = [["thesis", *(f"{T43[lv][1][0]:g} ± {T43[lv][1][1]:g}" for lv in levels)]]
    rows.append(["the tables' reading", *(f"{c['mean']:.3f} ± {c['ci']:.3f}" for c in cells.values())])
    rows.append(
        [
            "relative distance (in half-widths)",
            *(
                f"{(c['mean'] - T43[lv][1][0]) / T43[lv][1][0]:+.2f} ({(c['mean'] - T43[lv][1][0]) / c['ci']:+.1f})"
                for lv, c in cells.items()
            ),
        ]
    )
    low = [abs(c["mean"] - T43[lv][1][0]) / T43[lv][1][0] for lv, c in cells.items() if lv <= 4]
    return "\n".join(
        [
            f"Table 4.3 at N = 10 under the tables' reading ({runs} runs per cell, seeds 1-{runs}, the centralized "
            "reference; mean ± the 95 % confidence half-width, the thesis's ± as printed):",
            "",
            md_table(["", *(f"l = {lv}" for lv in levels)], rows),
            "",
            f"Mean relative error over l = 1-4 at N = 10: {np.mean(low):.2f}.",
        ]
    )


def _homogeneous_l5(runs: int) -> str:
    rounds, among = 0, 0.0
    for seed in range(1, runs + 1):
        jobs = jobs_for(seed, 10, {})
        count = {"rounds": 0, "among": 0.0}

        def hook(t, loads, plan_, after, count=count):
            count["rounds"] += 1
            count["among"] += sum(amount for src, dst, amount in plan_ if src != 0 and dst != 0)

        ref.reference_run(jobs, 10, protocol="bilb", limits=[5.0] * 10, on_round=hook, **TABLES)
        rounds += count["rounds"]
        among += count["among"]
    return f"{rounds / runs:.0f} rounds, {among / runs:.0f} moved among organizations 1-9"


def thesis(n: int, level: int) -> tuple[float, float]:
    row = T43[level][0 if n == 2 else 1]
    return row[0], row[2]


def rel(ours: float, level: int, n: int = 2) -> float:
    return abs(ours - thesis(n, level)[0]) / thesis(n, level)[0]


def tables(runs: int, runs10: int, emulator_root: Path | None) -> str:
    cells = {v[0]: {lv: run_cell(v, 2, lv, runs) for lv in LEVELS} for v in VARIANTS}
    cells10 = {v[0]: {lv: run_cell(v, 10, lv, runs10) for lv in N10_LEVELS} for v in VARIANTS if v[6]}
    out = [
        f"Table 4.3 at N = 2 (mean over {runs} runs ± the 95 % confidence half-width), the mean relative "
        "error |ours − thesis| / thesis over l = 1-5 and over l = 10, 1000, and what a run at l = 1 does "
        "(rounds, and the load its plans move, per run of T = 1000):",
        "",
        "| reading | "
        + " | ".join(f"l = {lv}" for lv in LEVELS)
        + " | error l ≤ 5 | error l ≥ 10 | l = 1: rounds, moved |",
        "|---|" + "---|" * (len(LEVELS) + 3),
        "| thesis | " + " | ".join(f"{thesis(2, lv)[0]:g}" for lv in LEVELS) + " | | | |",
    ]
    for name, row in cells.items():
        low = np.mean([rel(row[lv]["mean"], lv) for lv in LOW])
        high = np.mean([rel(row[lv]["mean"], lv) for lv in HIGH])
        out.append(
            f"| {name} | "
            + " | ".join(f"{row[lv]['mean']:.3f} ± {row[lv]['ci']:.3f}" for lv in LEVELS)
            + f" | **{low:.2f}** | {high:.2f} | {row[1]['rounds']:.0f}, {row[1]['moved']:.0f} |"
        )
    out += [
        "",
        f"The readings that move the N = 2 cells most, at N = 10 (mean over {runs10} runs ± the 95 % "
        "confidence half-width; the thesis's beside):",
        "",
        "| reading | "
        + " | ".join(f"N = 10, l = {lv}" for lv in N10_LEVELS)
        + " | mean relative error | N = 10 over N = 2 at l = 1, 3 |",
        "|---|" + "---|" * (len(N10_LEVELS) + 2),
        "| thesis | "
        + " | ".join(f"{thesis(10, lv)[0]:g}" for lv in N10_LEVELS)
        + f" | | {thesis(10, 1)[0] / thesis(2, 1)[0]:.2f}, {thesis(10, 3)[0] / thesis(2, 3)[0]:.2f} |",
    ]
    for name, row in cells10.items():
        err = np.mean([rel(row[lv]["mean"], lv, 10) for lv in N10_LEVELS])
        out.append(
            f"| {name} | "
            + " | ".join(f"{row[lv]['mean']:.3f} ± {row[lv]['ci']:.3f}" for lv in N10_LEVELS)
            + f" | **{err:.2f}** | {row[1]['mean'] / cells[name][1]['mean']:.2f}, "
            f"{row[3]['mean'] / cells[name][3]['mean']:.2f} |"
        )
    base = cells[VARIANTS[0][0]]
    gap5 = cells['`round_timing = "plan"`, `min_gap = 5`']
    out += [
        "",
        "The spread of the per-run scores at N = 2 (the tables' reading and the plan timed reading with "
        "`min_gap = 5`): mean and median of the runs' scores, and each organization's standard deviation "
        "over the runs (averaged over the two), beside the thesis's score and standard deviation:",
        "",
        "| l | thesis: score / std | tables' reading: mean / median / std | plan, `min_gap = 5`: mean / median / std |",
        "|---|---|---|---|",
    ]
    for lv in LEVELS:
        s, d = thesis(2, lv)
        b, g = base[lv], gap5[lv]
        out.append(
            f"| {lv} | {s:g} / {d:g} | {b['mean']:.3f} / {b['median']:.3f} / {b['std']:.3f} | "
            f"{g['mean']:.3f} / {g['median']:.3f} / {g['std']:.3f} |"
        )
    runs44 = max(2, runs // 5)
    out += [
        "",
        f"Table 4.4 at N = 2 (organization 0 overloaded, l_1 = 1000, the other at l; {runs44} runs per cell, "
        "mean ± the 95 % confidence half-width), typical / overloaded:",
        "",
        "| reading | " + " | ".join(f"l = {lv}" for lv in T44_N2) + " |",
        "|---|" + "---|" * len(T44_N2),
        "| thesis | " + " | ".join(f"{t:g} / {o:g}" for t, o in T44_N2.values()) + " |",
    ]
    for variant in VARIANTS:
        if variant[0] in T44_READINGS:
            row = [overloaded_cell(variant, lv, runs44) for lv in T44_N2]
            out.append(
                f"| {variant[0]} | "
                + " | ".join(f"{t:.3f} ± {ct:.3f} / {o:.3f} ± {co:.3f}" for t, ct, o, co in row)
                + " |"
            )
    if emulator_root is not None:
        out += ["", *emulator_check(emulator_root, cells)]
    return "\n".join(out)


def emulator_check(root: Path, cells: dict[str, dict[int, dict[str, Any]]]) -> list[str]:
    """The same cells from the emulator's sweeps (``bilb-n2.sh``), where they were run."""
    folders = [
        ("the tables' reading", root / "tail"),
        ('`round_timing = "plan"`, `min_gap = 5`', root / "plan-gap5"),
    ]
    lines = [
        "The emulator (agents over messages, latency 0.001; `bash docs/results/bilb-n2.sh`, seeds 1-40), "
        "mean ± the 95 % confidence half-width, beside the reference's mean over the same seeds:",
        "",
        "| reading | " + " | ".join(f"l = {lv}" for lv in LEVELS) + " |",
        "|---|" + "---|" * len(LEVELS),
    ]
    found = False
    for name, folder in folders:
        if not parts_of(folder):
            continue
        orgs = orgs_of(folder)
        row = []
        for lv in LEVELS:
            got = run_scores(orgs, {"protocol.limit": float(lv)})
            seeds = sorted(orgs.loc[orgs["protocol.limit"] == float(lv), "seed"].unique())
            same = [cells[name][lv]["per_run"][seed - 1] for seed in seeds if seed <= len(cells[name][lv]["per_run"])]
            if len(got) and len(same) == len(got):
                mean, ci = mean_ci(got)
                row.append(f"{mean:.3f} ± {ci:.3f} (reference {np.mean(same):.3f})")
            else:
                row.append("not run")
        lines.append(f"| {name} | " + " | ".join(row) + " |")
        found = True
    return lines if found else []


#: The one-table modes: flag -> (table, runs by default, its markers in bilb.md).
ONE_TABLE = {
    "--t43-n10": (table43_n10, 200, T43_N10_MARKERS),
    "--t44-n10": (table44_n10, 20, T44_N10_MARKERS),
}


def main(argv: list[str]) -> int:
    for flag, (table, default, markers) in ONE_TABLE.items():
        if flag in argv:
            text = table(int(argv[argv.index("--runs") + 1]) if "--runs" in argv else default)
            print(text)
            if "--write" in argv:
                write_between(*markers, text, DOC)
            return 0
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 200
    runs10 = int(argv[argv.index("--runs10") + 1]) if "--runs10" in argv else 20
    root = Path(argv[argv.index("--emulator") + 1]) if "--emulator" in argv else Path("runs/bilb-n2")
    text = tables(runs, runs10, root if root.exists() else None)
    print(text)
    if "--write" in argv:
        write_between(BEGIN, END, text, DOC)
    return 0


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(
        __doc__, sys.argv[1:], ('--write', '--emulator', '--runs', '--runs10', '--t44-n10', '--t43-n10')
    )
    sys.exit(main(sys.argv[1:]))
