"""How useful is old information? The power of d choices against the age of the loads it
uses: the tables and figures of docs/results/decentralization.md, "The power of d choices
with stale loads", in two settings and the steps between them.

* ``paper``: Mitzenmacher's own (IEEE TPDS 11(1), 2000, the periodic update model): 100
  single-processor servers, each job placed by a dispatcher that has no home: it draws d
  distinct servers from all 100 (the submitting site included) and sends the job to the one
  whose posted load is least (ties: the earliest drawn), with no correction for the jobs sent
  since the post; every server posts its load to all others every T (``network.topology =
  "full"``), heard 0.01 later. In the ``power_of_d`` protocol: ``home = false``, ``correct =
  false``, ``replace = false``; d = 100 is the shortest posted queue of all, d = 1 random
  placement.
* ``ours``: the shipped scenario ``power-of-d`` as it is: 100 sites in a random graph of
  degree 8, each job compared with its own site (counted exactly, now) and d neighbors drawn
  with replacement, each judged by its last report plus the jobs sent to it since; latency 0.1.
* ``ablation``: the paper's setting with ours' differences added one at a time (d = 3 and
  100, T = 10 and 50): which of them tames the herd.

Both: Poisson arrivals at 0.9 a site, 54,000 jobs (released over about 600 time units),
exponential sizes of mean 1 (so times are in mean service times). For each d and report
period T, gridemu runs the ``power_of_d`` protocol (``emulator.run``, in-process); the
full-information rows come from ``brokers/power_of_d/reference.py`` with ``period = None``
(exact loads now, jobs in flight counted where they go), on the same jobs and samples.
Every figure is the mean flow time over every job (the grid starts empty), averaged over
the seeds, with the standard deviation between seeds.

    python -m gridemu.experiments.power_of_d_staleness                 # both settings and the steps between
    python -m gridemu.experiments.power_of_d_staleness --write         # and put the tables and figures in the doc

Without ``--write`` the figures go to runs/power_of_d_staleness/, not over the page's.
    python -m gridemu.experiments.power_of_d_staleness --setting paper --seeds 1 --periods 1,10   # a quick look

About 12 CPU minutes in all (two worker processes). Imports gridemu only (and matplotlib
for the figures).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gridemu.emulator.figures import figure_options, save_figure
from gridemu.experiments.decentralization_tables import write_between

HERE = Path(__file__).resolve().parent
DOC = HERE / "decentralization.md"
SITES, JOBS = 100, 54_000
PERIODS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
SEEDS = (1, 2, 3)


@dataclass(frozen=True)
class Setting:
    name: str
    ds: tuple[int, ...]
    latency: float
    keys: dict  # the scenario keys of the setting, beside the shipped ``power-of-d``
    title: str  # of the figure
    image: str  # the figure's file under img/
    block: str  # the name of its table's block in the doc


SETTINGS = {
    "paper": Setting(
        "paper",
        (1, 2, 3, 10, 100),
        0.01,
        {"network.topology": "full", "protocol.home": False, "protocol.correct": False, "protocol.replace": False},
        f"Mitzenmacher's setting: {SITES} servers, loads posted every T, load 0.9",
        "decentralization-power-of-d-paper.png",
        "power-of-d-paper",
    ),
    "ours": Setting(
        "ours",
        (1, 2, 3),
        0.1,
        {},
        f"Our setting: {SITES} sites of random:8, own site counted exactly, load 0.9",
        "decentralization-power-of-d.png",
        "power-of-d",
    ),
}


#: From the paper's setting towards ours, one difference at a time (the ablation's rows).
STEPS = {
    "the paper's setting": {},
    "+ `home`": {"protocol.home": True},
    "+ `correct`": {"protocol.correct": True},
    "+ `replace`": {"protocol.replace": True},
    "+ `random:8`": {"network.topology": "random:8"},
    "+ `home` + `correct`": {"protocol.home": True, "protocol.correct": True},
    "+ `home` + `correct` + `random:8`": {
        "protocol.home": True,
        "protocol.correct": True,
        "network.topology": "random:8",
    },
}
STEP_DS, STEP_PERIODS = (3, 100), (10.0, 50.0)


def overrides(setting: Setting, seed: int, d: int, period: float) -> dict:
    return {
        "run.seed": seed,
        "sites.count": SITES,
        "workload.jobs": JOBS,
        "network.latency": setting.latency,
        "protocol.d": d,
        "protocol.period": period,
        "metrics.counterfactual": "none",
        **setting.keys,
    }


def stale_point(args: tuple) -> tuple[int, int, float, float, float]:
    """(seed, d, period, mean flow time, messages per job) of one gridemu run (``args``:
    setting, seed, d, period, and the name of an ablation step where there is one)."""
    import gridemu.emulator as emulator

    name, seed, d, period, *step = args
    keys = overrides(SETTINGS[name], seed, d, period) | (STEPS[step[0]] if step else {})
    res = emulator.run("power-of-d", overrides=keys)
    g = res.summary["global"]
    return seed, d, period, float(g["mean_flow_time"]), g["messages_total"] / len(res.jobs)


def full_point(args: tuple[str, int, int]) -> tuple[int, int, float]:
    """(seed, d, mean flow time) with full information: the reference on the same jobs."""
    import numpy as np

    from gridemu.brokers.power_of_d.reference import simulate
    from gridemu.emulator.scenario import load_scenario
    from gridemu.scenarios.workload import generate_jobs

    name, seed, d = args
    setting = SETTINGS[name]
    scenario = load_scenario("power-of-d", overrides(setting, seed, d, 1.0))
    p = scenario.data["protocol"]
    jobs, _ = generate_jobs(scenario)
    r = simulate(
        jobs["release"],
        jobs["size"],
        jobs["submit_site"],
        len(scenario.sites),
        scenario.topology.neighbors,
        1,
        d,
        None,
        setting.latency,
        scenario.seed,
        home=p["home"],
        correct=p["correct"],
        replace=p["replace"],
    )
    return seed, d, float(np.mean(r.end - jobs["release"]))


def run(setting: Setting, seeds: tuple[int, ...], periods: tuple[float, ...], workers: int) -> tuple[list, list]:
    stale_args = [(setting.name, s, d, p) for s in seeds for d in setting.ds for p in periods]
    full_args = [(setting.name, s, d) for s in seeds for d in setting.ds]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        full = list(pool.map(full_point, full_args))
        stale = list(pool.map(stale_point, stale_args))
    return stale, full


def ablation(seeds: tuple[int, ...], workers: int) -> str:
    """The paper's setting with ours' differences added one at a time: d = 3 and 100 (the
    closed neighborhood where there is a topology), T = 10 and 50; a Markdown table."""
    args = [("paper", s, d, p, step) for step in STEPS for d in STEP_DS for p in STEP_PERIODS for s in seeds]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        flows = [r[3] for r in pool.map(stale_point, args)]
    by = {}
    for (_, _, d, p, step), f in zip(args, flows):
        by.setdefault((step, d, p), []).append(f)
    cols = [(d, p) for d in STEP_DS for p in STEP_PERIODS]
    lines = [
        "| from the paper's setting | " + " | ".join(f"d = {d}, T = {p:g}" for d, p in cols) + " |",
        "|---" * (len(cols) + 1) + "|",
    ]
    for step in STEPS:
        lines.append(f"| {step} | " + " | ".join(_mean_sd(by[step, d, p]) for d, p in cols) + " |")
    return "\n".join(lines)


def _mean_sd(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else math.nan
    return f"{statistics.mean(values):.2f}" + (f" ± {sd:.2f}" if not math.isnan(sd) else "")


def _label(d: int) -> str:
    return f"{d} (all: the shortest posted queue)" if d >= SITES else str(d)


def table(setting: Setting, stale: list, full: list, periods: tuple[float, ...]) -> str:
    head = "| d | " + " | ".join(f"T = {p:g}" for p in periods) + " | full information |"
    lines = [head, "|---" * (len(periods) + 2) + "|"]
    for d in setting.ds:
        cells = [_mean_sd([f for _, dd, p, f, _ in stale if dd == d and p == period]) for period in periods]
        lines.append(f"| {_label(d)} | " + " | ".join(cells) + f" | {_mean_sd([f for _, dd, f in full if dd == d])} |")
    msgs = [statistics.mean(m for _, _, p, _, m in stale if p == period) for period in periods]
    lines.append("| messages a job (mean over the d) | " + " | ".join(f"{m:.1f}" for m in msgs) + " | - |")
    return "\n".join(lines)


def figure(
    setting: Setting,
    stale: list,
    full: list,
    periods: tuple[float, ...],
    seeds: tuple[int, ...],
    fmt: str = "png",
    dpi: float = 120,
    folder: Path = HERE / "img",
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.0, 5.0))
    colors = dict(zip(setting.ds, ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")))
    for d in setting.ds:
        means = [statistics.mean(f for _, dd, p, f, _ in stale if dd == d and p == period) for period in periods]
        ax.plot(periods, means, marker="o", color=colors[d], label=f"d = {_label(d)}, reports every T")
        ax.axhline(
            statistics.mean(f for _, dd, f in full if dd == d),
            color=colors[d],
            linestyle="--",
            linewidth=1,
            label=f"d = {d}, full information",
        )
    if setting.name == "paper":  # d = 1 places at random: each server an M/M/1 queue at 0.9
        ax.axhline(1 / (1 - 0.9), color="black", linestyle=":", linewidth=1, label="M/M/1 at 0.9: 10")
        # From 1 (every job served at once) to hundreds (the herd at T = 50): a log scale.
        ax.set_yscale("log")
        ticks = [1, 2, 5, 10, 20, 50, 100, 200, 500]
        ax.set_yticks(ticks, [str(t) for t in ticks])
    ax.set_xscale("log")
    ax.set_xticks(periods)
    ax.set_xticklabels([f"{p:g}" for p in periods])
    ax.set_xlabel("report period T (mean service times)")
    ax.set_ylabel("mean flow time (mean service times)")
    ax.set_title(f"{setting.title} ({len(seeds)} seed{'' if len(seeds) == 1 else 's'})", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    path = folder / setting.image
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(fig, path, fmt, dpi)


def write_block(block: str, text: str) -> None:
    """The table between the doc's markers of ``block``."""
    write_between(f"<!-- {block}:begin (power_of_d_staleness.py --write) -->", f"<!-- {block}:end -->", text, DOC)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--setting",
        choices=("all", *SETTINGS, "ablation"),
        default="all",
        help="the paper's setting, ours, the steps from one to the other, or all three",
    )
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="how many seeds (1, 2, ...)")
    parser.add_argument("--periods", default=",".join(f"{p:g}" for p in PERIODS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="put the tables in decentralization.md")
    figure_options(parser, dpi=120)
    args = parser.parse_args(argv)
    seeds = tuple(range(1, args.seeds + 1))
    periods = tuple(float(p) for p in args.periods.split(","))
    for name in [*SETTINGS, "ablation"] if args.setting == "all" else [args.setting]:
        if name == "ablation":
            text = ablation(seeds, args.workers)
            print(f"ablation:\n{text}")
            if args.write:
                write_block("power-of-d-ablation", text)
            continue
        setting = SETTINGS[name]
        stale, full = run(setting, seeds, periods, args.workers)
        text = table(setting, stale, full, periods)
        print(f"{setting.name}:\n{text}")
        # The page's figure only with --write: a quick look (one seed) leaves the published one.
        folder = HERE / "img" if args.write else Path("runs") / "power_of_d_staleness"
        print(f"figure: {figure(setting, stale, full, periods, seeds, args.format, args.dpi, folder)}")
        if args.write:
            write_block(setting.block, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
