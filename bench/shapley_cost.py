"""What Shapley-fair scheduling costs per window, by the number of organizations.

    python bench/shapley_cost.py [--trace PATH] [--orgs 2 4 6 8 10] [--windows 2] [--write] > cost.log
    python bench/shapley_cost.py --from cost.log --write     # the table and plot of a saved run

The windows are those of docs/results/shapley.md's contended cell: LPC-EGEE, 17 processors
split uniformly, 5·10^5 s (the ``shapley`` scenario with its seeds 1, 2, ...), the jobs
built by the scenario's own workload code. For each number of organizations k it times, on
one process, the centralized REF (2^k − 1 subcoalition schedules), RAND(N = 15) (N sampled
permutations, at most N·k subcoalitions) and DIRECTCONTR (one schedule); then REF with its
coalitions of each size spread over Ray tasks (``shapley_parallel.ray_level_map``) for the
speed-up, checking that both give the same schedule. Prints the median seconds per window;
``--write`` puts the table into shapley.md and draws img/shapley-cost.png.
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
import time
from pathlib import Path

from gridemu.brokers.directcontr.policies import simulate
from gridemu.brokers.directcontr.protocol import instance
from gridemu.emulator.scenario import load_scenario
from gridemu.scenarios.workload import generate_jobs

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "results" / "shapley.md"
IMG = ROOT / "docs" / "results" / "img" / "shapley-cost.png"
MARKERS = ("<!-- cost:begin (bench/shapley_cost.py --write) -->", "<!-- cost:end -->")
POLICIES = ("ref", "rand", "directcontr")


def window(trace: str, k: int, seed: int) -> tuple[list, list[int], int]:
    sc = load_scenario(
        "shapley",
        {
            "workload.path": trace,
            "sites.count": k,
            "sites.procs": {"dist": "uniform", "total": 17},
            "workload.duration": 500000.0,
            "run.horizon": 500000.0,
            "run.seed": seed,
        },
    )
    jobs, _groups = generate_jobs(sc)
    return instance(jobs), [s.procs for s in sc.sites], 500000


def timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default=str(ROOT.parent / "shared" / "traces" / "LPC-EGEE-2004-1.2-cln.swf.gz"))
    ap.add_argument("--orgs", type=int, nargs="+", default=[2, 3, 4, 5, 6, 7, 8, 9, 10])
    ap.add_argument("--ray-orgs", type=int, nargs="+", default=[6, 8, 10], help="k for the REF speed-up on Ray")
    ap.add_argument("--windows", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=None)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--from", dest="saved", help="a saved output of this script: format it, measure nothing")
    args = ap.parse_args()
    if args.saved:
        text = Path(args.saved).read_text()
        rows = [ast.literal_eval(line) for line in text.splitlines() if line.startswith("{'k'")]
        found = re.search(r"over (\d+) windows .* with (\S+) CPUs", text)
        if not rows or not found:
            raise SystemExit(f"{args.saved}: no rows or no header line of bench/shapley_cost.py")
        report(rows, int(found.group(1)), None if found.group(2) == "None" else int(found.group(2)), args.write)
        return
    from gridemu.brokers.directcontr.parallel import ray_level_map
    from gridemu.emulator.backends import ensure_ray

    rows, ray = [], None
    for k in args.orgs:
        per: dict[str, list[float]] = {p: [] for p in POLICIES + ("ref_ray",)}
        jobs_n = []
        for seed in range(1, args.windows + 1):
            jobs, procs, t_end = window(args.trace, k, seed)
            jobs_n.append(len(jobs))
            results = {}
            for p in POLICIES:
                seconds, results[p] = timed(lambda: simulate(jobs, procs, p, t_end, seed=seed, samples=15))
                per[p].append(seconds)
            if k in args.ray_orgs:
                if ray is None:  # started, and its workers warmed by a small REF, outside the timings
                    ray = ensure_ray(num_cpus=args.cpus)
                    simulate(jobs[:200], procs, "ref", t_end, level_map=ray_level_map)
                seconds, res = timed(lambda: simulate(jobs, procs, "ref", t_end, level_map=ray_level_map))
                assert res.start == results["ref"].start, "Ray changed REF's schedule"
                per["ref_ray"].append(seconds)
        row = {
            "k": k,
            "jobs": statistics.mean(jobs_n),
            **{p: statistics.median(v) if v else None for p, v in per.items()},
        }
        rows.append(row)
        print(row, flush=True)
    cpus = None
    if ray is not None:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        ray.shutdown()
    report(rows, args.windows, cpus, args.write)


def report(rows: list[dict], windows: int, cpus: int | None, write: bool) -> None:
    lines = [
        f"Median seconds per window over {windows} windows (LPC-EGEE, 17 processors, 5·10⁵ s), one process; "
        f"REF on Ray with {cpus} CPUs where given.",
        "",
        "| organizations | jobs a window | REF coalitions | REF (s) | "
        "RAND, N = 15 (s) | DIRECTCONTR (s) | REF on Ray (s) | speed-up |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ray_s = f"{r['ref_ray']:.2f} | {r['ref'] / r['ref_ray']:.2f}×" if r["ref_ray"] else "– | –"
        lines.append(
            f"| {r['k']} | {r['jobs']:.0f} | {2 ** r['k'] - 1} | {r['ref']:.2f} | {r['rand']:.2f} | "
            f"{r['directcontr']:.3f} | {ray_s} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if write:
        from gridemu.experiments.decentralization_tables import write_between

        write_between(*MARKERS, text, DOC)
        figure(rows, IMG, cpus)


def figure(rows: list[dict], path: Path, cpus: int | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ks = [r["k"] for r in rows]
    for key, label in (("ref", "REF (one process)"), ("rand", "RAND, N = 15"), ("directcontr", "DIRECTCONTR")):
        ax.plot(ks, [r[key] for r in rows], marker="o", label=label)
    ray_rows = [r for r in rows if r["ref_ray"]]
    if ray_rows:
        ax.plot(
            [r["k"] for r in ray_rows],
            [r["ref_ray"] for r in ray_rows],
            marker="s",
            ls="--",
            label=f"REF on Ray ({cpus} CPUs)",
        )
    ax.set_yscale("log")
    ax.set_xlabel("organizations")
    ax.set_ylabel("seconds per window (log scale)")
    ax.set_title("Cost of one 5·10⁵ s LPC-EGEE window, 17 processors", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
