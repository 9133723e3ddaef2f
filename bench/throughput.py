"""Throughput benchmark: gridemu against a bare heapq event loop and a SimPy model.

The workload (the "throughput" issue): 100 sites of 10 identical processors, FCFS,
Poisson arrivals at rate 2.0 per site (200 jobs per time unit in all), gamma(shape 2,
scale 2) sizes, single-processor jobs; 20,000 / 200,000 / 1,000,000 jobs; seed 1.
Every engine simulates the very same jobs: the arrays come from gridemu's own
generator (``scenarios.workload.generate_jobs``), and the start/end times each engine
computes are compared, bit for bit, with gridemu's job table at every size ("same sched.").

Engines (every run is a fresh subprocess, so peak memory is its own; each (size, engine)
runs ``--repeat`` times, 3 by default, and the run with the median wall time is shown):

* ``heapq``  a bare event loop: one global ``heapq`` of (time, kind, site, seq, job)
  events, a ``deque`` FCFS queue and a free-processor count per site; completions rank
  before arrivals at equal times, as in gridemu. Arrivals are pushed lazily: each site
  has one pending arrival in the heap, the next one is pushed when it is handled.
* ``simpy``  SimPy 4: one ``simpy.Resource(capacity=10)`` per site and one process per
  job, all created at t=0; a job process waits until its release, requests a processor
  and holds it for its size. (``simpy_lazy``, only on request: a source process per site
  creates each job's process at its release instead.)
* ``rec`` / ``loop``  ``emulator.run(backend="inprocess", shards=1)`` with the vectorized
  FCFS recurrence (the default) or with ``recurrence=False`` (the event loop).
* ``ray1`` / ``ray2``  ``emulator.run(backend="ray", shards=1|2)`` after
  ``ensure_ray(num_cpus=2)``, on a private local Ray instance (``RAY_ADDRESS=local``).

Times: for gridemu, "wall s" is ``summary["global"]["wall_seconds"]`` (shard building,
actor start-up, the window loop, result gathering); "startup s" and "loop s" split it
(shards built and answering their first status call / the window loop), "call s" is the
whole ``emulator.run`` call (also workload generation, result tables and checks). For
the heapq loop and SimPy, "wall s" covers building their structures from the job array,
the simulation and the start/end arrays; workload generation is excluded everywhere.

Memory: "peak MiB" is the peak resident set of everything the run involves. In-process
engines: the fresh subprocess's own peak (VmHWM, ``harness.peak_rss_mib``). Ray: the
subprocess (driver) and all its descendants (GCS, raylet, agents, worker and actor processes), proportional set
sizes (PSS: a page shared by k processes counts 1/k in each) summed and sampled every
250 ms by a thread of the parent (RSS every 50 ms), maximum of the sum ("tree pss"). The JSON also keeps the
summed RSS (``tree_peak_mib``), which counts shared pages (libraries, the object store)
once per process and so overstates the total; tables before 2026-11-25 show that one.

"other CPU": the cores that processes outside the benchmark kept busy while a run's
process was alive (machine busy time minus the run's process tree and the parent). On a
shared 2-core machine this is what makes figures noisy; ``--quiet-wait S`` waits up to S
seconds before each run for the machine to calm down.

    python bench/throughput.py [--sizes 20000,200000,1000000] [--quick] [--json PATH]
                               [--repeat N] [--quiet-wait S] [--engines heapq,simpy,...]

Figures are informational: the exit status is 0 whatever the targets say.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

import harness
import numpy as np
from harness import (
    aggregate,
    environment,
    fmt,
    imported_run,
    instrument,
    projected_too_slow,
    run_worker,
    tree_rss,
    wait_quiet,
)

N_SITES, PROCS, RATE, ALPHA, BETA, SEED = 100, 10, 2.0, 2.0, 2.0, 1
DEFAULT_SIZES = (20_000, 200_000, 1_000_000)

ENGINES: dict[str, str] = {
    "heapq": "bare heapq loop",
    "simpy": "SimPy model",
    "rec": "gridemu inprocess 1 shard (recurrence)",
    "loop": "gridemu inprocess 1 shard (event loop)",
    "ray1": "gridemu ray 1 shard",
    "ray2": "gridemu ray 2 shards",
    # Not in the default list (--engines simpy_lazy): SimPy with lazily created job processes.
    "simpy_lazy": "SimPy model, lazy arrivals",
}
DEFAULT_ENGINES = ("heapq", "simpy", "rec", "loop", "ray1", "ray2")
SHORT = {
    "heapq": "bare heapq loop",
    "simpy": "SimPy model",
    "rec": "in-process, recurrence",
    "loop": "in-process, event loop",
    "ray1": "ray, 1 shard",
    "ray2": "ray, 2 shards",
    "simpy_lazy": "SimPy, lazy arrivals",
}
RAY_ENGINES = ("ray1", "ray2")
GRIDEMU_ENGINES = ("rec", "loop", "ray1", "ray2")

# Targets (DESIGN.md "Performance rules" and the issue).
TARGET_VS_HEAPQ = 0.5
TARGET_VS_SIMPY = 2.0
TARGET_RAY_MEM_MIB = 4 * 1024


def scenario_dict(n_jobs: int) -> dict[str, Any]:
    return {
        "run": {"seed": SEED},
        "sites": {"count": N_SITES, "procs": PROCS},
        "scheduler": {"name": "fcfs"},
        "workload": {"kind": "poisson", "rate": RATE, "alpha": ALPHA, "beta": BETA, "jobs": n_jobs},
        "protocol": {"name": "local"},
    }


# ---------------------------------------------------------------------------- reference engines

COMPLETE, ARRIVAL = 0, 1  # completions first at equal times, as gridemu's kind rank


def bare_heapq(
    release: np.ndarray, size: np.ndarray, site: np.ndarray, n_sites: int, m: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """FCFS on ``n_sites`` sites of ``m`` speed-1 processors, single-processor jobs.

    One global heap of (time, kind, site, seq, job); arrivals pushed lazily (one pending
    arrival per site). Returns start and end per job (indexed like the inputs) and the
    number of events handled (arrivals + completions).
    """
    n = len(release)
    order = np.argsort(site, kind="stable")  # per site, in job order = release order
    bounds = np.searchsorted(site[order], np.arange(n_sites + 1)).tolist()
    order_l = order.tolist()
    per_site = [order_l[bounds[s] : bounds[s + 1]] for s in range(n_sites)]
    rel = release.tolist()
    sz = size.tolist()
    start = [math.nan] * n
    end = [math.nan] * n
    free = [m] * n_sites
    queues = [deque() for _ in range(n_sites)]
    nxt = [0] * n_sites
    heap: list[tuple] = []
    seq = 0
    for s in range(n_sites):
        if per_site[s]:
            j = per_site[s][0]
            heap.append((rel[j], ARRIVAL, s, seq, j))
            seq += 1
    heapq.heapify(heap)
    push, pop = heapq.heappush, heapq.heappop
    events = 0
    # Starting a job is written out in both branches below on purpose: this is the bare
    # baseline, and a helper call per job would slow exactly what it is meant to measure.
    while heap:
        t, kind, s, _, j = pop(heap)
        events += 1
        if kind == ARRIVAL:
            jobs_s = per_site[s]
            k = nxt[s] + 1
            nxt[s] = k
            if k < len(jobs_s):
                j2 = jobs_s[k]
                push(heap, (rel[j2], ARRIVAL, s, seq, j2))
                seq += 1
            if free[s] and not queues[s]:
                free[s] -= 1
                e = t + sz[j]
                start[j] = t
                end[j] = e
                push(heap, (e, COMPLETE, s, seq, j))
                seq += 1
            else:
                queues[s].append(j)
        else:
            q = queues[s]
            if q:
                j2 = q.popleft()
                e = t + sz[j2]
                start[j2] = t
                end[j2] = e
                push(heap, (e, COMPLETE, s, seq, j2))
                seq += 1
            else:
                free[s] += 1
    return np.array(start), np.array(end), events


def simpy_model(
    release: np.ndarray, size: np.ndarray, site: np.ndarray, n_sites: int, m: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """The same model in SimPy: a Resource(capacity=m) per site, one process per job."""
    import simpy

    n = len(release)
    env = simpy.Environment()
    resources = [simpy.Resource(env, capacity=m) for _ in range(n_sites)]
    start = [math.nan] * n
    end = [math.nan] * n

    def job(j: int, r: float, s: float, res: Any):
        yield env.timeout(r)
        with res.request() as req:
            yield req
            start[j] = env.now
            yield env.timeout(s)
            end[j] = env.now

    for j, (r, s, k) in enumerate(zip(release.tolist(), size.tolist(), site.tolist())):
        env.process(job(j, r, s, resources[k]))
    env.run()
    # Model events (arrivals + completions), not SimPy's internal events.
    return np.array(start), np.array(end), 2 * n


def simpy_lazy_model(
    release: np.ndarray, size: np.ndarray, site: np.ndarray, n_sites: int, m: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Variant: one source process per site creates each job's process at its release.

    The event queue then holds at most one pending arrival per site, as in the heapq loop.
    SimPy only takes relative delays, so the arrival lands on ``now + (r - now)``: exactly ``r``
    when r <= 2 now (Sterbenz) or now = 0, and otherwise off by at most an ulp in principle
    (the "same sched." column shows whether that ever happened).
    """
    import simpy

    n = len(release)
    env = simpy.Environment()
    start = [math.nan] * n
    end = [math.nan] * n
    rel = release.tolist()
    sz = size.tolist()

    def job(j: int, res: Any):
        with res.request() as req:
            yield req
            start[j] = env.now
            yield env.timeout(sz[j])
            end[j] = env.now

    def source(ids: list[int], res: Any):
        for j in ids:
            yield env.timeout(rel[j] - env.now)
            env.process(job(j, res))

    order = np.argsort(site, kind="stable")
    bounds = np.searchsorted(site[order], np.arange(n_sites + 1)).tolist()
    order_l = order.tolist()
    for s in range(n_sites):
        env.process(source(order_l[bounds[s] : bounds[s + 1]], simpy.Resource(env, capacity=m)))
    env.run()
    return np.array(start), np.array(end), 2 * n


# ---------------------------------------------------------------------------- worker side


def worker(engine: str, n_jobs: int, out_dir: Path, tag: str) -> None:
    import resource

    from gridemu.emulator.scenario import load_scenario
    from gridemu.scenarios.workload import generate_jobs

    rec: dict[str, Any] = {"engine": engine, "label": ENGINES[engine], "jobs": n_jobs}
    if engine in ("heapq", "simpy", "simpy_lazy"):
        jobs, _ = generate_jobs(load_scenario(scenario_dict(n_jobs)))
        args = (jobs["release"], jobs["size"], jobs["submit_site"].astype(np.int64), N_SITES, PROCS)
        rec["rss_before_mib"] = tree_rss() / 2**20
        t = time.perf_counter()
        model = {"heapq": bare_heapq, "simpy": simpy_model, "simpy_lazy": simpy_lazy_model}[engine]
        start, end, events = model(*args)
        rec["wall_s"] = time.perf_counter() - t
        rec["events"] = events
        job_ids = jobs["job_id"]
    else:
        backend = "ray" if engine in RAY_ENGINES else "inprocess"
        shards = 2 if engine == "ray2" else 1
        if backend == "ray":
            from gridemu.emulator.backends import ensure_ray

            t = time.perf_counter()
            ensure_ray(num_cpus=2)
            rec["ray_init_s"] = time.perf_counter() - t
        marks: dict[str, Any] = {}
        instrument(marks, backend)
        rec["rss_before_mib"] = tree_rss() / 2**20
        run = imported_run()
        t = time.perf_counter()
        result = run(scenario_dict(n_jobs), backend=backend, shards=shards, seed=SEED, recurrence=engine != "loop")
        rec["call_s"] = time.perf_counter() - t
        g = result.summary["global"]
        rec.update(wall_s=float(g["wall_seconds"]), events=int(g["events"]), windows=int(g["windows"]))
        if "setup_seconds" in g:  # the kernel's own split (newer gridemu); ours below agrees with it
            rec["setup_s_summary"] = float(g["setup_seconds"])
        if "instrument_error" in marks:
            rec["instrument_error"] = marks["instrument_error"]
        elif all(k in marks for k in ("specs_start", "ready", "results_start")):
            rec["startup_s"] = marks["ready"] - marks["specs_start"]
            rec["loop_s"] = marks["results_start"] - marks["ready"]
        table = result.jobs
        job_ids = table["job_id"].to_numpy()
        start = table["start"].to_numpy(dtype=float)
        end = table["end"].to_numpy(dtype=float)
        if backend == "ray":
            import ray

            ray.shutdown()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rec["maxrss_mib"] = harness.peak_rss_mib()  # the worker's own peak (not its driver's)
    rec["self_cpu_s"] = usage.ru_utime + usage.ru_stime
    np.save(out_dir / f"{tag}.npy", np.stack([np.asarray(job_ids, dtype=float), start, end]))
    (out_dir / f"{tag}.json").write_text(json.dumps(rec))


# ---------------------------------------------------------------------------- parent side


def run_one(engine: str, n_jobs: int, out_dir: Path, timeout: float, tag: str) -> dict[str, Any]:
    """One run in a fresh subprocess; its start/end arrays are left in ``out_dir/tag.npy``."""
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--_worker",
        engine,
        "--_jobs",
        str(n_jobs),
        "--_out",
        str(out_dir),
        "--_tag",
        tag,
    ]
    rec = run_worker(
        cmd, {"engine": engine, "label": ENGINES[engine], "jobs": n_jobs}, engine in RAY_ENGINES, out_dir, tag, timeout
    )
    if "error" not in rec:
        rec["jobs_per_s"] = n_jobs / rec["wall_s"]
        rec["events_per_s"] = rec["events"] / rec["wall_s"]
    return rec


def compare_schedules(group: list[dict[str, Any]], out_dir: Path) -> None:
    """For one size: set row["same_schedule"], every repeat's start/end arrays against gridemu's.

    The reference is the first gridemu engine of the group (normally the in-process
    recurrence; the heapq loop when no gridemu engine ran); arrays must be equal bit for
    bit (NaN where a job never ran).
    """
    ok = [r for r in group if "tags" in r]
    ref_row = next((r for e in (*GRIDEMU_ENGINES, "heapq") for r in ok if r["engine"] == e), None)
    if ref_row is None:
        return
    ref = np.load(out_dir / f"{ref_row['tags'][0]}.npy")
    for r in ok:
        r["schedule_ref"] = ref_row["engine"]
        problems = []
        for tag in r["tags"]:
            d = np.load(out_dir / f"{tag}.npy")
            if d.shape != ref.shape or not np.array_equal(d[0], ref[0]):
                problems.append("different job ids")
                continue
            if not np.array_equal(d[1:], ref[1:], equal_nan=True):
                diff = np.abs(d[1:] - ref[1:])
                problems.append(f"{int((diff != 0).sum())} start/end values differ, max |diff| {np.nanmax(diff):.3g}")
        r["same_schedule"] = not problems
        if problems:
            r["schedule_diff"] = problems[0]


COLUMNS = [
    "jobs",
    "engine",
    "wall s",
    "min-max",
    "jobs/s",
    "events/s",
    "startup s",
    "loop s",
    "call s",
    "peak MiB",
    "mem",
    "windows",
    "same sched.",
    "other CPU",
]


def table_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        if "error" in r or "skipped" in r:
            note = "FAILED (below)" if "error" in r else "not run (below)"
            out.append([f"{r['jobs']:,}", SHORT[r["engine"]], note] + ["-"] * (len(COLUMNS) - 3))
            continue
        same = {True: "yes", False: "NO"}.get(r.get("same_schedule"), "-")
        out.append(
            [
                f"{r['jobs']:,}",
                SHORT[r["engine"]],
                fmt(r["wall_s"], ".3f"),
                f"{r['wall_min']:.2f}-{r['wall_max']:.2f}" if r.get("repeats", 1) > 1 else "-",
                fmt(r["jobs_per_s"], ",.0f"),
                fmt(r["events_per_s"], ",.0f"),
                fmt(r.get("startup_s"), ".3f"),
                fmt(r.get("loop_s"), ".3f"),
                fmt(r.get("call_s"), ".3f"),
                fmt(r["peak_mib"], ",.0f"),
                r["mem_method"],
                fmt(r.get("windows"), "d"),
                same,
                fmt(r.get("other_cores"), ".2f"),
            ]
        )
    return out


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    body = table_rows(rows)
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(COLUMNS)]
        print(title)
        print("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)))
        print("  ".join("-" * w for w in widths))
        for b in body:
            print("  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(b, widths))))
        return
    table = Table(title=title, show_lines=False)
    for i, c in enumerate(COLUMNS):
        table.add_column(c, justify="left" if c in ("engine", "mem") else "right", no_wrap=c != "engine")
    last = None
    for r, b in zip(rows, body):
        if last is not None and r["jobs"] != last:
            table.add_section()
        last = r["jobs"]
        table.add_row(*b)
    Console(width=max(170, _term_width())).print(table)


def _term_width() -> int:
    import shutil

    return shutil.get_terminal_size((160, 40)).columns


def find(rows: list[dict[str, Any]], engine: str, n: int) -> dict[str, Any] | None:
    for r in rows:
        if r["engine"] == engine and r["jobs"] == n and "error" not in r and "skipped" not in r:
            return r
    return None


def ratios(rows: list[dict[str, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    """The figures the targets are stated in, with PASS/MISS (informational)."""
    out: list[dict[str, Any]] = []
    mid = 200_000 if 200_000 in sizes else max(sizes)
    big = 1_000_000 if 1_000_000 in sizes else max(sizes)

    def add(name: str, value: float | None, target: str, ok: bool | None, note: str = "") -> None:
        out.append(
            {
                "ratio": name,
                "value": value,
                "target": target,
                "verdict": None if ok is None else ("PASS" if ok else "MISS"),
                "note": note,
            }
        )

    def best(a: dict[str, Any], b: dict[str, Any]) -> float:
        """jobs/s of a over jobs/s of b, each at its fastest run (noise only ever adds time)."""
        return b.get("wall_min", b["wall_s"]) / a.get("wall_min", a["wall_s"])

    rec, bare, simpy = find(rows, "rec", mid), find(rows, "heapq", mid), find(rows, "simpy", mid)
    loop = find(rows, "loop", mid)
    at = f"at {mid:,} jobs"
    for g, gname in ((rec, "recurrence"), (loop, "event loop")):
        primary = gname == "recurrence"
        for ref, rname, target, spec in (
            (bare, "bare heapq", TARGET_VS_HEAPQ, ".0%"),
            (simpy, "SimPy", TARGET_VS_SIMPY, ".2f"),
        ):
            if not (g and ref):
                continue
            v = g["jobs_per_s"] / ref["jobs_per_s"]
            unit = "" if spec.endswith("%") else "x"
            note = f"fastest runs: {best(g, ref):{spec}}{unit}"
            if g.get("call_s"):
                note += f"; whole emulator.run call (median run): {mid / g['call_s'] / ref['jobs_per_s']:{spec}}{unit}"
            tgt = f">= {target:.0%}" if spec.endswith("%") else f">= {target:g}x"
            add(f"in-process 1 shard ({gname}) / {rname}, jobs/s {at}", v, tgt, v >= target if primary else None, note)
    ray2, rec_big = find(rows, "ray2", big), find(rows, "rec", big)
    at = f"at {big:,} jobs"
    if ray2 and rec_big:
        v = ray2["jobs_per_s"] / rec_big["jobs_per_s"]
        note = f"fastest runs: {best(ray2, rec_big):.2f}x"
        if ray2.get("loop_s") and rec_big.get("loop_s"):
            ray_after = ray2["wall_s"] - ray2["startup_s"]
            rec_after = rec_big["wall_s"] - rec_big["startup_s"]
            note += (
                f"\n         start-up: ray 2 shards {ray2['startup_s']:.2f} s (actors, imports, shards built in them) "
                f"vs in-process {rec_big['startup_s']:.2f} s (shards built); after start-up: {ray_after:.2f} s vs "
                f"{rec_after:.2f} s ({rec_after / ray_after:.2f}x); window loop alone: {ray2['loop_s']:.2f} s vs "
                f"{rec_big['loop_s']:.2f} s ({ray2.get('windows', 0)} windows)"
            )
        add(f"ray 2 shards / in-process 1 shard (recurrence), jobs/s {at}", v, "> 1 (faster)", v > 1.0, note)
    ray1 = find(rows, "ray1", big)
    if ray2 and ray1:
        add(
            f"ray 2 shards / ray 1 shard, jobs/s {at}",
            ray2["jobs_per_s"] / ray1["jobs_per_s"],
            "(scaling, no target)",
            None,
        )
    ray_rows = [r for r in (ray1, ray2) if r]
    for r in ray_rows:
        parts = r.get("tree_peak_parts_mib", {})
        note = ", ".join(f"{k} {v:,.0f}" for k, v in parts.items())
        add(
            f"{r['label']} peak memory (MiB, driver + Ray processes) {at}",
            r["peak_mib"],
            f"< {TARGET_RAY_MEM_MIB:,} MiB",
            r["peak_mib"] < TARGET_RAY_MEM_MIB,
            note,
        )
    return out


def print_ratios(rs: list[dict[str, Any]]) -> None:
    print("\nTargets (informational; the exit status is 0 either way):")
    if not rs:
        print("  (no figures: the engines the targets compare did not run)")
    for r in rs:
        v = r["value"]
        val = (
            "-"
            if v is None
            else (f"{v:,.0f}" if "MiB" in r["ratio"] else (f"{v:.0%}" if "%" in r["target"] else f"{v:.2f}x"))
        )
        verdict = r["verdict"] or "info"
        print(f"  [{verdict:>4}] {r['ratio']}: {val}  (target {r['target']})")
        if r["note"]:
            print(f"         {r['note']}")


def main(argv: list[str] | None = None) -> int:  # noqa: C901
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES), help="job counts, comma-separated")
    ap.add_argument("--quick", action="store_true", help=f"only {DEFAULT_SIZES[0]:,} jobs (smoke test)")
    ap.add_argument(
        "--engines",
        default=",".join(DEFAULT_ENGINES),
        help=f"comma-separated, from {','.join(ENGINES)} (default: all but simpy_lazy)",
    )
    ap.add_argument("--json", metavar="PATH", help="write the rows and ratios as JSON")
    ap.add_argument(
        "--repeat",
        type=int,
        help="runs per (size, engine), each in a fresh process; the median is shown (default 3, --quick 1)",
    )
    ap.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        metavar="S",
        help="before each run, wait up to S seconds for other processes to use < 0.25 cores (shared machines)",
    )
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per run (default 300)")
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_jobs", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--_out", help=argparse.SUPPRESS)
    ap.add_argument("--_tag", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._worker:
        worker(args._worker, args._jobs, Path(args._out), args._tag)
        return 0

    sizes = (
        [DEFAULT_SIZES[0]]
        if args.quick
        else sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    )
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    repeat = max(1, args.repeat if args.repeat is not None else (1 if args.quick else 3))
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        ap.error(f"unknown engine(s) {unknown}; choose from {', '.join(ENGINES)}")
    env = environment()
    print(
        f"gridemu throughput: {N_SITES} sites x {PROCS} processors, FCFS, Poisson rate {RATE}/site, gamma({ALPHA:g}, "
        f"{BETA:g}) sizes, 1-processor jobs, seed {SEED}; {repeat} "
        "run(s) per engine and size, each in a fresh process\n"
        f"{env['summary']}"
    )
    rows: list[dict[str, Any]] = []
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gridemu-bench-") as tmp:
        out_dir = Path(tmp)
        for n in sizes:
            # Rounds: every engine once, then again, so a slow spell of the machine
            # touches all engines rather than one engine's consecutive runs.
            skipped: dict[str, dict[str, Any]] = {}
            for e in engines:
                skip = projected_too_slow(rows, e, n, args.timeout)
                if skip:
                    skipped[e] = {"engine": e, "label": ENGINES[e], "jobs": n, "skipped": skip}
                    print(f"  {n:>9,} {ENGINES[e]:<40} {skip}", flush=True)
            active = [e for e in engines if e not in skipped]
            runs: dict[str, list[dict[str, Any]]] = {e: [] for e in active}
            failed: set[str] = set()
            retries = {e: 1 for e in active}  # one more try after a crash (e.g. Ray not starting on a busy machine)
            for k in range(repeat):
                for e in active:
                    while e not in failed:
                        if args.quiet_wait > 0:
                            busy = wait_quiet(args.quiet_wait)
                            if busy >= 0.25:
                                print(
                                    f"  (machine still busy after {args.quiet_wait:.0f} "
                                    f"s: {busy:.2f} cores used by others)",
                                    flush=True,
                                )
                        r = run_one(e, n, out_dir, args.timeout, f"{e}-{n}-{k}")
                        msg = (
                            r.get("error")
                            or f"wall {r['wall_s']:.3f} s, {r['jobs_per_s']:,.0f} jobs/s, peak {r['peak_mib']:,.0f} MiB"
                        )
                        print(f"  {n:>9,} {ENGINES[e]:<40} run {k + 1}/{repeat}: {msg}", flush=True)
                        if "error" not in r:
                            runs[e].append(r)
                            break
                        if retries[e] and not r.get("timed_out"):
                            retries[e] -= 1
                            continue
                        runs[e].append(r)
                        failed.add(e)
            group = [skipped[e] if e in skipped else aggregate(runs[e]) for e in engines]
            compare_schedules(group, out_dir)
            for f in out_dir.glob("*.npy"):
                f.unlink()
            rows.extend(group)
    total = time.perf_counter() - t_all
    env["load_after"] = os.getloadavg()
    print()
    print_table(rows, f"Throughput on {env['cpus']} CPUs (benchmark took {total:.0f} s)")
    print(
        "in-process / ray = gridemu emulator.run(backend=...), 1 or 2 "
        "shards; in-process with the FCFS recurrence or recurrence=False.\n"
        "wall s: median of the runs; gridemu summary wall_seconds (shards built -> results gathered); heapq/SimPy: "
        "simulation from the job arrays.\n"
        "startup s: shards built and answering (Ray: actors started); "
        "loop s: window loop; call s: whole emulator.run call.\n"
        "peak MiB: maxrss = the fresh subprocess's own peak (VmHWM); tree = "
        "driver + every Ray process (GCS, raylet, agents, workers),\n"
        "RSS summed, sampled every 50 ms, max of the sum. events = arrivals + completions.\n"
        "other CPU: cores used by processes outside the benchmark while "
        "the run's process was alive (noise; 2 = the whole machine)."
    )
    for r in rows:
        if "error" in r or "skipped" in r:
            print(f"{r['label']}, {r['jobs']:,} jobs: {r.get('error') or r.get('skipped')}")
        elif r.get("failed_repeats"):
            print(
                f"{r['label']}, {r['jobs']:,} jobs: {len(r['failed_repeats'])} run(s) failed: {r['failed_repeats'][0]}"
            )
    for n in sizes:
        group = [r for r in rows if r["jobs"] == n and "same_schedule" in r]
        if group:
            same = all(r["same_schedule"] for r in group)
            ref = ENGINES[group[0]["schedule_ref"]]
            details = "; ".join(f"{r['label']}: {r['schedule_diff']}" for r in group if not r["same_schedule"])
            print(
                f"schedules identical ({n:,} jobs, {len(group)} engines vs {ref}): {'yes' if same else 'no'}"
                + (f" ({details})" if details else "")
            )
    rs = ratios(rows, sizes)
    print_ratios(rs)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"environment": env, "sizes": sizes, "rows": rows, "ratios": rs, "total_s": total}, indent=2)
            + "\n"
        )
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
