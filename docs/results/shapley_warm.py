"""Tables 1-2 of the Shapley papers, cold and warm, and DIRECTCONTR − FAIRSHARE under every reading.

    python -m gridemu.experiments.shapley_warm run TRACE.swf[.gz] --procs 70 --duration 50000 \\
        --dist zipf --windows 100 --out runs/shapley-warm/lpc-egee-zipf.csv [--same-warmup 50000]
    python -m gridemu.experiments.shapley_warm tables runs/shapley-warm [--write]
    python -m gridemu.experiments.shapley_warm trace-facts TRACE.swf[.gz] ... [--write]

The fast path: the windows are the ones a ``gridemu sweep shapley`` run draws for seeds 1, 2, ...
(the same t_start, user → organization map and processor split, see :func:`Trace.window`), but
each algorithm runs here directly on the pure functions (``brokers.directcontr.policies.simulate``),
with no emulator: so the cold figures are those of the sweeps' centralized algorithms. Windows
without a job are skipped, and the first ``--windows`` with jobs are kept (as shapley_tables.py).

Per window, three instances (``brokers.directcontr.warm``):

* cold: the window's jobs on an empty system (the reading of shapley.md's tables);
* fcfs: the backlog of a global FCFS replay of the whole trace at t_start, then the window's jobs;
* same: each algorithm's own backlog, replayed from an empty system over [t_start − W, t_start)
  (``--same-warmup`` W, default the window's length); only DIRECTCONTR (both readings of
  [S] Algorithm 1 lines 15-16) and FAIRSHARE, each scored against REF on its own instance.

On cold and fcfs every algorithm of Tables 1-2 is scored against REF on the common instance, and
DIRECTCONTR also with lines 15-16 read literally. "Waits" is whether some job of REF's schedule
of the instance starts after its release or not at all before t_end (the contention share).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gridemu.brokers.directcontr.policies import simulate
from gridemu.brokers.directcontr.shapley_value import fairness
from gridemu.brokers.directcontr.simulation import SJob, p_tot
from gridemu.brokers.directcontr.warm import backlog, fcfs_starts, someone_waits, warm_instance
from gridemu.emulator.scenario import _split_total
from gridemu.experiments.bilb_tables import mean_ci
from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.shapley_tables import NAMES, S_TABLE1, S_TABLE2, fmt, paired_t, sign_test
from gridemu.scenarios.swf import _draw_orgs, read_swf

DOC = Path(__file__).with_name("shapley.md")
ALGOS = ["roundrobin", "rand", "directcontr", "fairshare", "utfairshare", "currfairshare"]
SAME = ["directcontr", "directcontr_literal", "fairshare"]
ORGS = 5
SAMPLES = 15  # RAND's N, as the shapley scenario
_WINDOW_SPAWN_KEY = 0x57494E44  # scenarios/swf_workload.py's stream for t_start = "random"


@dataclass
class Trace:
    """An SWF trace prepared as the shapley scenario does: parallel jobs split into sequential
    copies, kept jobs in (submit, line) order, ids 0..n-1 in that order."""

    release: np.ndarray
    size: np.ndarray
    user: np.ndarray
    all_users: np.ndarray
    lo: float
    hi_submit: float

    @classmethod
    def read(cls, path: str) -> "Trace":
        rec = read_swf(path).records
        submit, run, alloc, req = rec["submit_time"], rec["run_time"], rec["allocated_procs"], rec["requested_procs"]
        procs = np.where(alloc > 0, alloc, req)
        keep = (submit >= 0) & (run > 0) & (procs > 0)
        idx = np.flatnonzero(keep)
        idx = idx[np.argsort(submit[idx], kind="stable")]
        rep = procs[idx].astype(np.int64)
        valid = submit[submit >= 0]
        return cls(
            np.repeat(submit[idx], rep).astype(np.int64),
            np.repeat(run[idx], rep).astype(np.int64),
            np.repeat(rec["user_id"][idx], rep),
            np.unique(rec["user_id"]),
            float(valid.min()),
            float(valid.max()),
        )

    def t_start(self, seed: int, duration: int) -> int:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_WINDOW_SPAWN_KEY,)))
        return int(np.floor(rng.uniform(self.lo, self.hi_submit - duration)))

    def jobs(self, lo: int, hi: int, orgs: np.ndarray) -> list[SJob]:
        """The jobs released in [lo, hi) on the trace's clock."""
        a, b = np.searchsorted(self.release, [lo, hi], side="left")
        return [
            SJob(i, int(o), int(r), int(p))
            for i, o, r, p in zip(range(a, b), orgs[a:b].tolist(), self.release[a:b].tolist(), self.size[a:b].tolist())
        ]

    def orgs(self, seed: int) -> np.ndarray:
        table = _draw_orgs(self.all_users, ORGS, seed)
        users, inv = np.unique(self.user, return_inverse=True)
        return np.array([table[int(u)] for u in users], dtype=np.int64)[inv]


def score(inst: list[SJob], procs: list[int], t_end: int, seed: int, algos: list[str]) -> dict[str, float]:
    """Δψ/p_tot of every algorithm against REF on the instance, and whether a job waits in REF's schedule."""
    ref = simulate(inst, procs, "ref", t_end)
    ptot = p_tot(ref, inst, t_end)
    out: dict[str, float] = {"jobs": len(inst), "waits": float(someone_waits(ref, inst, t_end)), "p_tot": ptot}
    for a in algos:
        r = run_algorithm(inst, procs, a, t_end, seed)
        out[a] = float(fairness(r.psi, ref.psi, ptot)) if ptot else 0.0
    return out


def run_algorithm(inst: list[SJob], procs: list[int], name: str, t_end: int, seed: int):
    """``simulate`` one algorithm; ``directcontr_literal`` is DIRECTCONTR with [S] Algorithm 1's
    lines 15-16 as printed (every other name: the prose reading)."""
    literal = name == "directcontr_literal"
    return simulate(
        inst,
        procs,
        "directcontr" if literal else name,
        t_end,
        seed=seed,
        samples=SAMPLES,
        lines_15_16="literal" if literal else "prose",
    )


def run(
    path: str,
    procs_total: int,
    duration: int,
    dist: str,
    windows: int,
    out: Path,
    warmup: int | None,
    seeds: range | None = None,
) -> None:
    """Score the first ``windows`` windows with jobs, by seed, or (``seeds``) exactly those
    seeds; either way a seed already in ``out`` is not run again, so two processes given
    disjoint ``seeds`` may append to one CSV (a row is one short write)."""
    trace = Trace.read(path)
    warmup = duration if warmup is None else warmup
    machines = procs_total
    t0 = time.time()
    fcfs = fcfs_starts(trace.release, trace.size, machines)  # one replay serves every window
    print(f"{path}: {len(trace.release)} sequential jobs, FCFS replay {time.time() - t0:.1f} s", flush=True)
    procs = _split_total("sites.procs", {"dist": dist, "total": procs_total}, dist, ORGS)
    done, kept = set(), 0
    if out.exists():  # resume: the seeds already there are not run again
        old = pd.read_csv(out)
        done, kept = set(old["seed"].tolist()), int((old["empty"] == 0).sum())
    out.parent.mkdir(parents=True, exist_ok=True)
    fields = None
    todo = iter(seeds) if seeds is not None else itertools.count(1)
    for seed in todo:
        if seeds is None and kept >= windows:
            break
        if seed in done:
            continue
        t_start = trace.t_start(seed, duration)
        orgs = trace.orgs(seed)
        window = trace.jobs(t_start, t_start + duration, orgs)
        row: dict[str, float] = {"seed": seed, "t_start": t_start, "dist": dist, "procs": procs_total}
        if not window:
            row["empty"] = 1
        else:
            row["empty"] = 0
            t1 = time.time()
            cold = warm_instance([], window, t_start)
            for k, v in score(cold, procs, duration, seed, ALGOS + ["directcontr_literal"]).items():
                row[f"cold_{k}"] = v
            # FCFS: the jobs released before t_start whose FCFS run is not over at t_start
            a = int(np.searchsorted(trace.release, t_start, side="left"))
            live = np.flatnonzero(fcfs[:a] + trace.size[:a] > t_start)
            present = [SJob(int(i), int(orgs[i]), int(trace.release[i]), int(trace.size[i])) for i in live]
            warm = backlog(present, {j.id: int(fcfs[j.id]) for j in present}, t_start)
            row["fcfs_backlog"] = len(warm)
            for k, v in score(
                warm_instance(warm, window, t_start), procs, duration, seed, ALGOS + ["directcontr_literal"]
            ).items():
                row[f"fcfs_{k}"] = v
            # the same algorithm over [t_start - W, t_start), from an empty system
            before = warm_instance([], trace.jobs(t_start - warmup, t_start, orgs), t_start - warmup)
            for a_name in SAME:
                r = run_algorithm(before, procs, a_name, warmup, seed)
                own = backlog(before, r.start, warmup)
                own = [SJob(j.id, j.org, t_start, j.size) for j in own]
                res = score(warm_instance(own, window, t_start), procs, duration, seed, [a_name])
                row[f"same_{a_name}"] = res[a_name]
                row[f"same_{a_name}_waits"] = res["waits"]
                row[f"same_{a_name}_backlog"] = len(own)
            row["seconds"] = round(time.time() - t1, 2)
            kept += 1
        with out.open("a", newline="") as f:
            if fields is None:
                fields = list(row)
                if f.tell() == 0:
                    csv.DictWriter(f, fields).writeheader()
            csv.DictWriter(f, fields, extrasaction="ignore").writerow(row)
        print(f"seed {seed}: t_start {t_start}, {len(window)} jobs, {row.get('seconds', 0)} s", flush=True)


# ------------------------------------------------------------------------------ tables


def _test(dc: np.ndarray, fs: np.ndarray) -> str:
    d = dc - fs
    m, h = mean_ci(d)
    lower, n, p = sign_test(dc, fs)
    return f"{fmt(m)} [{fmt(m - h)}, {fmt(m + h)}] | {paired_t(d):.2g} | {lower} of {n} | {p:.2g}"


def cell_text(runs: pd.DataFrame, title: str, paper: dict | None = None) -> str:
    """Contention share and means cold and warm, then DIRECTCONTR − FAIRSHARE under every reading."""
    lines = [f"**{title}**", ""]
    for dist, part in runs.groupby("dist", sort=False):
        part = part[part["empty"] == 0]
        n = len(part)
        lines += [
            f"*{dist}* ({n} windows with jobs; {int(part['cold_jobs'].mean())} window jobs and "
            f"{int(part['fcfs_backlog'].mean())} FCFS-backlog jobs on average)",
            "",
            "| | [S] avg | cold | warm (FCFS) | warm (same, DIRECTCONTR) | warm (same, FAIRSHARE) |",
            "|---|---|---|---|---|---|",
            f"| contended (a job waits in REF's schedule) | | {part['cold_waits'].mean():.0%} | "
            f"{part['fcfs_waits'].mean():.0%} | {part['same_directcontr_waits'].mean():.0%} | "
            f"{part['same_fairshare_waits'].mean():.0%} |",
        ]
        for a in ALGOS + ["directcontr_literal"]:
            name = NAMES.get(a, "DIRECTCONTR, lines 15-16 literal")
            cold, warm = part[f"cold_{a}"].to_numpy(float), part[f"fcfs_{a}"].to_numpy(float)
            same = f"same_{a}" if f"same_{a}" in part else None
            s = fmt(part[same].mean()) if same else ""
            ps = str(paper[a][0]) if paper and a in paper else ""
            lines.append(
                f"| {name}, mean | {ps} | {fmt(cold.mean())} | {fmt(warm.mean())} | {s if a != 'fairshare' else ''} | "
                f"{s if a == 'fairshare' else ''} |"
            )
        lines += [
            "",
            "| reading | DIRECTCONTR − FAIRSHARE, mean [95 % CI] | paired t p | DIRECTCONTR fairer in | sign test p |",
            "|---|---|---|---|---|",
        ]
        for label, dc, fs in [
            ("cold, lines 15-16 as the prose", "cold_directcontr", "cold_fairshare"),
            ("cold, lines 15-16 literal", "cold_directcontr_literal", "cold_fairshare"),
            ("warm (FCFS), prose", "fcfs_directcontr", "fcfs_fairshare"),
            ("warm (FCFS), literal", "fcfs_directcontr_literal", "fcfs_fairshare"),
            ("warm (same algorithm), prose", "same_directcontr", "same_fairshare"),
            ("warm (same algorithm), literal", "same_directcontr_literal", "same_fairshare"),
        ]:
            lines.append(f"| {label} | " + _test(part[dc].to_numpy(float), part[fs].to_numpy(float)) + " |")
        lines.append("")
    return "\n".join(lines)


CELLS = {
    "lpc-egee": ("warm-lpc", "LPC-EGEE, 70 processors, windows of 5·10⁴ s ([S] Table 1)", S_TABLE1["lpc-egee"]),
    "ricc": ("warm-ricc", "RICC, 8192 processors, windows of 5·10⁴ s ([S] Table 1)", S_TABLE1["ricc"]),
    "lpc-egee-long": (
        "warm-lpc-long",
        "LPC-EGEE, 70 processors, windows of 5·10⁵ s ([S] Table 2, [L] Table 1)",
        S_TABLE2["lpc-egee"],
    ),
    "ricc-long": (
        "warm-ricc-long",
        "RICC, 8192 processors, windows of 5·10⁵ s ([S] Table 2, [L] Table 1)",
        S_TABLE2["ricc"],
    ),
    "lpc-egee-17": ("warm-lpc17", "LPC-EGEE, 17 processors, windows of 5·10⁵ s (ours, not the papers')", None),
}


def tables(root: str, write: bool) -> None:
    for cell, (marker, title, paper) in CELLS.items():
        files = [f for f in sorted(Path(root).glob(f"{cell}-*.csv")) if f.stem.rsplit("-", 1)[0] == cell]
        if not files:
            continue
        runs = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
        text = cell_text(runs, title, paper)
        if write:
            write_between(
                f"<!-- {marker}:begin (shapley_warm.py tables --write) -->", f"<!-- {marker}:end -->", text, DOC
            )
        else:
            print(text)


# --------------------------------------------------------------------------- trace facts


def trace_facts(paths: list[str], durations: list[int], write: bool) -> None:
    """The active span, the mean busy processors of the work over it, and how many disjoint
    windows fit, per trace (the prose figures of shapley.md)."""
    lines = [
        "| trace | sequential copies | active span (first to last submission) | work / span (processors) | "
        + " | ".join(f"disjoint windows of {d:.0e} s" for d in durations)
        + " |",
        "|---|---|---|---|" + "---|" * len(durations),
    ]
    for path in paths:
        t = Trace.read(path)
        span = t.hi_submit - t.lo
        work = float(t.size.sum())
        fits = [str(math.floor(span / d)) for d in durations]
        lines.append(
            f"| {Path(path).name} | {len(t.size)} | {span:.3g} s | {work / span:.1f} | " + " | ".join(fits) + " |"
        )
    text = "\n".join(lines) + "\n"
    if write:
        write_between(
            "<!-- trace-facts:begin (shapley_warm.py trace-facts --write) -->", "<!-- trace-facts:end -->", text, DOC
        )
    else:
        print(text)


def _fcfs_backlog(trace: Trace, starts: np.ndarray, first: int, t_start: int) -> set[tuple[int, int]]:
    """(id, work left) of the jobs present at t_start in a FCFS replay whose first job is ``first``."""
    a = int(np.searchsorted(trace.release, t_start, side="left"))
    ids = np.arange(first, a)
    s = starts[ids - first]
    live = s + trace.size[ids] > t_start
    left = trace.size[ids] - np.maximum(0, t_start - s)
    return set(zip(ids[live].tolist(), left[live].tolist()))


def warmup_check(path: str, procs_total: int, duration: int, warmup: int, windows: int) -> str:
    """How often a FCFS replay over only [t_start − W, t_start), from an empty system, leaves the
    backlog of the whole-trace replay: the error of the bounded same-algorithm warm-up, measured
    on FCFS, the one algorithm replayed in full."""
    trace = Trace.read(path)
    full = fcfs_starts(trace.release, trace.size, procs_total)
    same = 0
    for seed in range(1, windows + 1):
        t_start = trace.t_start(seed, duration)
        first = int(np.searchsorted(trace.release, t_start - warmup, side="left"))
        a = int(np.searchsorted(trace.release, t_start, side="left"))
        bounded = fcfs_starts(trace.release[first:a], trace.size[first:a], procs_total)
        same += _fcfs_backlog(trace, bounded, first, t_start) == _fcfs_backlog(trace, full[first:], first, t_start)
    return f"| {Path(path).name} | {procs_total} | {duration:.0e} s | {warmup:.0e} s | {same} of {windows} |"


def _seed_range(text: str) -> range:
    lo, _, hi = text.partition("-")
    if not (lo.isdigit() and hi.isdigit()) or int(lo) < 1 or int(hi) < int(lo):
        # ArgumentTypeError: argparse prints this text (a ValueError it replaces with its own)
        raise argparse.ArgumentTypeError(f"LO-HI with 1 <= LO <= HI, got {text!r}")
    return range(int(lo), int(hi) + 1)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="shapley_warm")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("trace")
    r.add_argument("--procs", type=int, required=True)
    r.add_argument("--duration", type=int, required=True)
    r.add_argument("--dist", choices=("zipf", "uniform"), required=True)
    r.add_argument("--windows", type=int, default=100)
    r.add_argument("--same-warmup", type=int, default=None)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument(
        "--seeds",
        type=_seed_range,
        default=None,
        help="LO-HI: exactly these seeds (not --windows), e.g. a second process on another part",
    )
    t = sub.add_parser("tables")
    t.add_argument("root")
    t.add_argument("--write", action="store_true")
    f = sub.add_parser("trace-facts")
    f.add_argument("traces", nargs="+")
    f.add_argument("--write", action="store_true")
    c = sub.add_parser("warmup-check")
    c.add_argument("--write", action="store_true")
    c.add_argument("cells", nargs="+", help="TRACE:PROCS:DURATION:WARMUP")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run(a.trace, a.procs, a.duration, a.dist, a.windows, a.out, a.same_warmup, a.seeds)
    elif a.cmd == "warmup-check":
        head = (
            "| trace | processors | window | W | windows whose bounded FCFS replay leaves the whole-trace backlog |\n"
            "|---|---|---|---|---|\n"
        )
        rows = []
        for cell in a.cells:
            path, procs, duration, warmup = cell.rsplit(":", 3)
            rows.append(warmup_check(path, int(procs), int(duration), int(warmup), 100))
        text = head + "\n".join(rows) + "\n"
        if a.write:
            write_between(
                "<!-- warm-check:begin (shapley_warm.py warmup-check --write) -->", "<!-- warm-check:end -->", text, DOC
            )
        else:
            print(text)
    elif a.cmd == "tables":
        tables(a.root, a.write)
    else:
        trace_facts(a.traces, [50000, 500000], a.write)


if __name__ == "__main__":
    main(sys.argv[1:])
