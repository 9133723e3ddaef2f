"""How useful is old information? The power of d choices against the age of the loads it
uses: the table and figure of docs/results/decentralization.md, "The power of d choices with
stale loads".

The shipped scenario ``power-of-d`` at 100 single-processor sites in a random graph of
degree 8, Poisson arrivals at 0.9 a site, 54,000 jobs (released over about 600 time
units), exponential sizes
of mean 1 (so times are in mean service times), latency 0.1. For d = 1, 2, 3 and each
report period T, gridemu runs the ``power_of_d`` protocol (``emulator.run``, in-process);
the full-information rows come from ``brokers/power_of_d/reference.py`` with ``period =
None`` (exact loads now, jobs in flight counted where they go), on the same jobs and
samples. Every figure is the mean flow time over every job (the grid starts empty), averaged
over the seeds, with the standard deviation between seeds.

    python -m gridemu.experiments.power_of_d_staleness                 # run, print the table, draw the figure
    python -m gridemu.experiments.power_of_d_staleness --write         # and put the table in the doc
    python -m gridemu.experiments.power_of_d_staleness --seeds 1 --periods 1,10   # a quick look

About 3 CPU minutes (two worker processes; 20 minutes of wall time on 2 cores shared
with other work). Imports gridemu only (and
matplotlib for the figure).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from gridemu.emulator.figures import figure_options, save_figure

HERE = Path(__file__).resolve().parent
DOC = HERE / "decentralization.md"
FIGURE = HERE / "img" / "decentralization-power-of-d.png"
BEGIN, END = "<!-- power-of-d:begin (power_of_d_staleness.py --write) -->", "<!-- power-of-d:end -->"
SITES, JOBS, LATENCY = 100, 54_000, 0.1
PERIODS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
DS = (1, 2, 3)
SEEDS = (1, 2, 3)


def overrides(seed: int, d: int, period: float) -> dict:
    return {
        "run.seed": seed,
        "sites.count": SITES,
        "workload.jobs": JOBS,
        "network.latency": LATENCY,
        "protocol.d": d,
        "protocol.period": period,
        "metrics.counterfactual": "none",
    }


def stale_point(args: tuple[int, int, float]) -> tuple[int, int, float, float, float]:
    """(seed, d, period, mean flow time, messages per job) of one gridemu run."""
    import gridemu.emulator as emulator

    seed, d, period = args
    res = emulator.run("power-of-d", overrides=overrides(seed, d, period))
    g = res.summary["global"]
    return seed, d, period, float(g["mean_flow_time"]), g["messages_total"] / len(res.jobs)


def full_point(args: tuple[int, int]) -> tuple[int, int, float]:
    """(seed, d, mean flow time) with full information: the reference on the same jobs."""
    import numpy as np

    from gridemu.brokers.power_of_d.reference import simulate
    from gridemu.emulator.scenario import load_scenario
    from gridemu.scenarios.workload import generate_jobs

    seed, d = args
    scenario = load_scenario("power-of-d", overrides(seed, d, 1.0))
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
        LATENCY,
        scenario.seed,
    )
    return seed, d, float(np.mean(r.end - jobs["release"]))


def run(seeds: tuple[int, ...], periods: tuple[float, ...], workers: int) -> tuple[list, list]:
    stale_args = [(s, d, p) for s in seeds for d in DS for p in periods]
    full_args = [(s, d) for s in seeds for d in DS]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        full = list(pool.map(full_point, full_args))
        stale = list(pool.map(stale_point, stale_args))
    return stale, full


def _mean_sd(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else math.nan
    return f"{statistics.mean(values):.2f}" + (f" ± {sd:.2f}" if not math.isnan(sd) else "")


def table(stale: list, full: list, periods: tuple[float, ...]) -> str:
    head = "| d | " + " | ".join(f"T = {p:g}" for p in periods) + " | full information |"
    lines = [head, "|---" * (len(periods) + 2) + "|"]
    for d in DS:
        cells = [_mean_sd([f for _, dd, p, f, _ in stale if dd == d and p == period]) for period in periods]
        lines.append(f"| {d} | " + " | ".join(cells) + f" | {_mean_sd([f for _, dd, f in full if dd == d])} |")
    msgs = [statistics.mean(m for _, _, p, _, m in stale if p == period) for period in periods]
    lines.append("| messages a job | " + " | ".join(f"{m:.1f}" for m in msgs) + " | - |")
    return "\n".join(lines)


def figure(
    stale: list, full: list, periods: tuple[float, ...], seeds: tuple[int, ...], fmt: str = "png", dpi: float = 120
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colors = {1: "tab:blue", 2: "tab:orange", 3: "tab:green"}
    for d in DS:
        means = [statistics.mean(f for _, dd, p, f, _ in stale if dd == d and p == period) for period in periods]
        ax.plot(periods, means, marker="o", color=colors[d], label=f"d = {d}, reports every T")
        ax.axhline(
            statistics.mean(f for _, dd, f in full if dd == d),
            color=colors[d],
            linestyle="--",
            linewidth=1,
            label=f"d = {d}, full information",
        )
    ax.set_xscale("log")
    ax.set_xticks(periods)
    ax.set_xticklabels([f"{p:g}" for p in periods])
    ax.set_xlabel("report period T (mean service times)")
    ax.set_ylabel("mean flow time (mean service times)")
    ax.set_title(f"Power of d choices with stale loads: {SITES} sites, random:8, load 0.9 ({len(seeds)} seeds)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2, loc="upper left")
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(fig, FIGURE, fmt, dpi)


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOC}: no {BEGIN} ... {END} block to replace")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="how many seeds (1, 2, ...)")
    parser.add_argument("--periods", default=",".join(f"{p:g}" for p in PERIODS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="put the table in decentralization.md")
    figure_options(parser, dpi=120)
    args = parser.parse_args(argv)
    seeds = tuple(range(1, args.seeds + 1))
    periods = tuple(float(p) for p in args.periods.split(","))
    stale, full = run(seeds, periods, args.workers)
    text = table(stale, full, periods)
    print(text)
    print(f"figure: {figure(stale, full, periods, seeds, args.format, args.dpi)}")
    if args.write:
        write_doc(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
