"""Thesis Tables 3.1-3.22 (ch. 3, resource sharing on dedicated machines) beside gridemu's
figures, as markdown for docs/results/dedicated.md.

    python -m gridemu.experiments.dedicated_tables --write                  # compute, print, write into dedicated.md
    python -m gridemu.experiments.dedicated_tables --quick                  # a small subset (about a minute)
    python -m gridemu.experiments.dedicated_tables --from runs/dedicated-tables --write   # re-format saved results

Every instance is run once in a pool of (at most) two processes; the per-instance results are
saved as JSON lines under ``--out`` (runs/dedicated-tables), so ``--from`` formats them again
without computing. The algorithms are brokers/scheduling_game/*.py (ES, DYN, EW, AEW); the
data sets are section 3.7.1's (``SMALL``, ``SMALL_3``, ``LARGE``, ``exponential_instance``).

Run times are the CPU seconds of the process running the instance (``time.process_time``; a
second job on the machine then inflates them less than wall time). The thesis ran Python with
Psyco on a Pentium 4 (exact algorithms) and on Xeons (the *large* data set): only ratios
between algorithms compare, and each table prints them beside the thesis's.

A cell reads "thesis / gridemu". Scores are percentages (1 - ΣC/ΣC(MJF), 1 - max C/max C(MJF),
section 3.7.1), σ the standard deviation over instances (percentage points); Δ-scores are the
exact method's score minus the heuristic's.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gridemu.brokers.scheduling_game.dedicated import (
    DedicatedInstance,
    completion_sums,
    constrained_equitable,
    exhaustive_search,
    min_max,
    min_sum,
    mjf_grid,
    schedule_count,
    scores,
)
from gridemu.brokers.scheduling_game.equitable import cumulative_ordered, equitably_optimal_subset
from gridemu.brokers.scheduling_game.search import adjusted_equitable_walk, dynamic_programming, equitable_walk
from gridemu.scenarios.dedicated import LARGE, SMALL, SMALL_3, DataSet, composition, exponential_instance

DOC = Path(__file__).with_name("dedicated.md")
SETS = {"small": SMALL, "small-3": SMALL_3, "large": LARGE}


# ---------------------------------------------------------------------------- one instance
def _cpu(f, *args, **kw):
    t = time.process_time()
    out = f(*args, **kw)
    return out, time.process_time() - t


def _choices(costs: np.ndarray, mjf: np.ndarray, constrained: bool) -> dict:
    """Scores (in %) of the min-sum and min-max solutions of a set (None where none is feasible)."""
    out = {}
    for name, choose in (("minsum", min_sum), ("minmax", min_max)):
        i = choose(costs, mjf if constrained else None)
        s = (None, None) if i is None else tuple(100 * x for x in scores(costs[i], mjf))
        out[f"{name}_sum"], out[f"{name}_max"] = s
    return out


def _eq_dominated(exact: np.ndarray, found: np.ndarray) -> float | None:
    """% of the rows of ``found`` equitably dominated by a row of ``exact`` (Theorem 1.1)."""
    if len(found) == 0:
        return None
    x, f = cumulative_ordered(exact)[:, None, :], cumulative_ordered(found)[None, :, :]
    dom = np.all(x <= f, axis=2) & np.any(x < f, axis=2)
    return 100.0 * dom.any(axis=0).mean()


def run_exact(task: tuple) -> dict:
    """ES, DYN, EW and AEW on one instance of *small* / *small-3* (Tables 3.1-3.2, 3.4-3.12, 3.14-3.19)."""
    name, n_orgs, n, pmax, index = task
    inst = DedicatedInstance.of(SETS[name].instance(n_orgs, n, pmax, index))
    mjf = completion_sums(inst, mjf_grid(inst))
    rec = dict(set=name, N=n_orgs, n=n, max=pmax, index=index, all=schedule_count(inst))
    es, rec["t_es"] = _cpu(exhaustive_search, inst)
    dyn, rec["t_dyn"] = _cpu(dynamic_programming, inst)
    ew, rec["t_ew"] = _cpu(equitable_walk, inst)
    aew, rec["t_aew"] = _cpu(adjusted_equitable_walk, inst)
    pareto = dyn.extra["pareto"]
    cons = constrained_equitable(pareto, mjf)
    rec.update(
        pareto=len(pareto),
        eq=len(dyn),
        eq_cons=len(cons),
        agree=set(es.schedules) == set(dyn.schedules),
        eq_u=len(equitably_optimal_subset(pareto.costs - mjf[None, :])),
        ew_visited=ew.extra["visited"],
        aew_visited=aew.extra["visited"],
    )
    rec.update({f"ex_{k}": v for k, v in _choices(dyn.costs, mjf, False).items()})
    rec.update({f"exc_{k}": v for k, v in _choices(cons.costs, mjf, True).items()})
    rec.update({f"ew_{k}": v for k, v in _choices(ew.costs, mjf, False).items()})
    rec.update({f"aew_{k}": v for k, v in _choices(aew.costs, mjf, True).items()})
    ok = np.all(mjf[None, :] - aew.costs >= 0, axis=1)
    acceptable = set(s for s, good in zip(aew.schedules, ok) if good)
    rec.update(
        ew_dom=_eq_dominated(dyn.costs, ew.costs),
        ew_found=100.0 * len(set(ew.schedules) & set(dyn.schedules)) / len(dyn),
        aew_acceptable=bool(ok.any()),
        aew_dom=_eq_dominated(-(mjf[None, :] - cons.costs), -(mjf[None, :] - aew.costs[ok])),
        aew_found=100.0 * len(acceptable & set(cons.schedules)) / len(cons),
    )
    return rec


def run_large(task: tuple) -> dict:
    """EW and AEW on one instance of *large* (Tables 3.13, 3.20-3.22), each walk capped."""
    name, n_orgs, n, pmax, index, max_steps = task
    inst = DedicatedInstance.of(SETS[name].instance(n_orgs, n, pmax, index))
    mjf = completion_sums(inst, mjf_grid(inst))
    ew, t_ew = _cpu(equitable_walk, inst, max_steps=max_steps)
    aew, t_aew = _cpu(adjusted_equitable_walk, inst, max_steps=max_steps)
    rec = dict(
        set=name,
        N=n_orgs,
        n=n,
        max=pmax,
        index=index,
        t_ew=t_ew,
        t_aew=t_aew,
        ew_visited=ew.extra["visited"],
        aew_visited=aew.extra["visited"],
        ew_finished=ew.extra["finished"],
        aew_finished=aew.extra["finished"],
        aew_acceptable=bool(np.all(mjf[None, :] - aew.costs >= 0, axis=1).any()),
    )
    rec.update({f"ew_{k}": v for k, v in _choices(ew.costs, mjf, False).items()})
    rec.update({f"aew_{k}": v for k, v in _choices(aew.costs, mjf, True).items()})
    return rec


def run_exponential(n: int) -> dict:
    """ES and DYN on Figure 3.2's instance (Table 3.3)."""
    inst = DedicatedInstance.of(exponential_instance(n))
    es, t_es = _cpu(exhaustive_search, inst)
    dyn, t_dyn = _cpu(dynamic_programming, inst)
    return dict(
        set="exponential",
        n=n,
        t_es=t_es,
        t_dyn=t_dyn,
        all=es.extra["all"],
        pareto=len(dyn.extra["pareto"]),
        eq=len(dyn),
        agree=set(es.schedules) == set(dyn.schedules),
    )


#: Readings of section 3.7.1's split of a machine's n jobs among the N owners, each with the
#: thesis's sizes (uniform over {1..max p}). The text: "The number of jobs of each organization
#: on each processor is distributed uniformly: e.g. in a two-organizational grid, n_{1,k} is
#: uniformly distributed over {0, 1, ..., n_{.,k}}, and n_{2,k} = n_{.,k} - n_{1,k}."
#: * composition: every machine's split uniform over the compositions of n (the data sets');
#: * per-job: every job's owner uniform over the N (binomial / multinomial counts);
#: * same: one composition drawn per instance, the same on every machine (n_{k,l} = n_{k,1});
#: * rotated: one composition c per instance, machine l gets it rotated by l (n_{k,l} =
#:   c_{(k-l) mod N}; for N = 2, n_{1,2} = n_{2,1}: each organization has n jobs in all);
#: * sequential: n_{1,l} uniform over {0..n}, n_{2,l} uniform over {0..n - n_{1,l}}, ..., the
#:   last the rest (the N = 2 rule applied owner by owner; for N = 2 it is "composition").
READINGS = ("composition", "per-job", "same", "rotated", "sequential")


def _split(rng: np.random.Generator, reading: str, n_orgs: int, n: int) -> np.ndarray:
    """counts[k, l]: how many of machine l's n jobs organization k owns, under ``reading``."""
    if reading == "per-job":
        return np.stack([np.bincount(rng.integers(0, n_orgs, size=n), minlength=n_orgs) for _ in range(n_orgs)], 1)
    if reading == "composition":
        return np.stack([composition(rng, n_orgs, n) for _ in range(n_orgs)], 1)
    if reading == "sequential":
        out = np.zeros((n_orgs, n_orgs), dtype=np.int64)
        for l in range(n_orgs):
            left = n
            for k in range(n_orgs - 1):
                out[k, l] = rng.integers(0, left + 1)
                left -= out[k, l]
            out[-1, l] = left
        return out
    c = composition(rng, n_orgs, n)
    return np.stack([c if reading == "same" else np.roll(c, l) for l in range(n_orgs)], 1)


def reading_instance(reading: str, n_orgs: int, n: int, pmax: int, index: int) -> DedicatedInstance:
    """The ``index``-th instance of a cell under a reading of the split (its own stream)."""
    if reading == "composition":  # the data set's own instance (Tables 3.5-3.11 use the same ones)
        return DedicatedInstance.of((SMALL if n_orgs == 2 else SMALL_3).instance(n_orgs, n, pmax, index))
    rng = np.random.default_rng([7, READINGS.index(reading), n_orgs, n, pmax, index])
    counts = _split(rng, reading, n_orgs, n)
    return DedicatedInstance.of(
        [
            [tuple(sorted(int(p) for p in rng.integers(1, pmax + 1, size=int(counts[k, l])))) for l in range(n_orgs)]
            for k in range(n_orgs)
        ]
    )


def run_reading(task: tuple) -> dict:
    """Tables 3.5-3.11's counts and exact scores of one instance under one reading of the split
    (DYN only: |Π^SPT| is a product of multinomials, ES is not needed)."""
    reading, n_orgs, n, pmax, index = task
    inst = reading_instance(reading, n_orgs, n, pmax, index)
    mjf = completion_sums(inst, mjf_grid(inst))
    dyn = dynamic_programming(inst)
    pareto = dyn.extra["pareto"]
    cons = constrained_equitable(pareto, mjf)
    rec = dict(reading=reading, N=n_orgs, n=n, max=pmax, index=index, all=schedule_count(inst))
    rec.update(pareto=len(pareto), eq=len(dyn), eq_cons=len(cons))
    rec.update({f"ex_{k}": v for k, v in _choices(dyn.costs, mjf, False).items()})
    rec.update({f"exc_{k}": v for k, v in _choices(cons.costs, mjf, True).items()})
    return rec


# ---------------------------------------------------------------------------- the runs
def plan(
    quick: bool,
    large_per_cell: int,
    max_steps: int | None,
    sets: tuple[str, ...] = ("small", "small-3", "exponential", "readings", "large"),
    orgs: tuple[int, ...] = LARGE.n_orgs,
    jobs: tuple[int, ...] = LARGE.jobs_per_machine,
    readings_per_cell: int = 50,
) -> dict[str, list]:
    def cells(ds: DataSet, per_cell: int, only=None) -> list:
        return [
            (ds.name, big_n, n, p, i)
            for big_n, n, p in ds.cells()
            if only is None or n in only
            for i in range(per_cell)
        ]

    per = 5 if quick else readings_per_cell
    readings = [
        (reading,) + t[1:]
        for reading in READINGS
        for t in cells(SMALL, per) + cells(SMALL_3, 5 if quick else SMALL_3.per_cell)
        if reading != "sequential" or t[1] > 2  # for N = 2 sequential is composition
    ]
    large = DataSet("large", orgs, jobs, LARGE.max_size)
    if quick:
        out = {
            "small": cells(SMALL, 5, (5, 8, 10)),
            "small-3": cells(SMALL_3, 5, (4, 5)),
            "exponential": list(range(3, 10)),
            "readings": readings,
            "large": [t + (max_steps,) for t in cells(large, 2, (10, 15)) if t[1] <= 4],
        }
    else:
        out = {
            "small": cells(SMALL, SMALL.per_cell),
            "small-3": cells(SMALL_3, SMALL_3.per_cell),
            "exponential": list(range(3, 12)),
            "readings": readings,
            "large": [t + (max_steps,) for t in cells(large, large_per_cell)],
        }
    return {name: todo for name, todo in out.items() if name in sets}


def compute(tasks: dict[str, list], out: Path, workers: int, meta: dict) -> tuple[dict[str, pd.DataFrame], dict]:
    out.mkdir(parents=True, exist_ok=True)
    runners = {
        "small": run_exact,
        "small-3": run_exact,
        "exponential": run_exponential,
        "large": run_large,
        "readings": run_reading,
    }
    frames, meta = {}, dict(meta, wall={}, workers=min(2, workers))
    with mp.Pool(meta["workers"]) as pool:
        for name, todo in tasks.items():
            start = time.time()
            # the biggest first, so the two workers finish together
            todo = sorted(
                todo,
                key=lambda t: t if isinstance(t, int) else (t[1], t[2]),
                reverse=True,
            )
            rows = list(pool.imap_unordered(runners[name], todo, chunksize=1))
            with open(out / f"{name}.jsonl", "w") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in rows)
            meta["wall"][name] = time.time() - start
            print(f"{name}: {len(rows)} instances in {meta['wall'][name]:.0f} s wall", file=sys.stderr)
            frames[name] = pd.DataFrame(rows)
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    return frames, meta


def _workers_in(command: str) -> int:
    """The pool size a saved command line ran with (``--workers``, at most 2; default 2)."""
    words = command.split()
    given = words[words.index("--workers") + 1] if "--workers" in words[:-1] else "2"
    return min(2, int(given)) if given.isdigit() else 2


def _workers(meta: dict) -> str:
    """The worker processes the runs used, in words (a list when several runs are formatted)."""
    n = meta.get("workers", 2)
    n = n if isinstance(n, list) else [n]
    words = " or ".join({1: "one", 2: "two"}.get(k, str(k)) for k in n)
    return f"{words} worker process{'' if n == [1] else 'es'}"


def load(sources: list[Path]) -> tuple[dict[str, pd.DataFrame], dict]:
    """Saved results of one or more runs (their rows concatenated, data set by data set; the
    first run's settings, with every run's wall time and command)."""
    frames: dict[str, list[pd.DataFrame]] = {}
    metas = [json.loads((src / "meta.json").read_text()) for src in sources]
    for src in sources:
        for p in sorted(src.glob("*.jsonl")):
            frames.setdefault(p.stem, []).append(pd.read_json(p, lines=True))
    # Runs saved before the worker count was recorded: their command's --workers (default 2).
    workers = sorted({m.get("workers") or _workers_in(m.get("command") or "") for m in metas})
    meta = dict(metas[0], wall={}, commands=[m.get("command", "") for m in metas], workers=workers)
    for m in metas:
        for name, wall in m.get("wall", {}).items():
            meta["wall"][name] = meta["wall"].get(name, 0.0) + wall
    return {name: pd.concat(parts, ignore_index=True) for name, parts in frames.items()}, meta


# ------------------------------------------------------------------ the thesis's values
def _rows(text: str) -> dict:
    """Whitespace-separated rows as printed: the first field is the key."""
    out = {}
    for line in text.strip().splitlines():
        key, *vals = line.split()
        out[key] = vals
    return out


T31 = _rows("5 0.01 0\n8 0.16 0.05\n10 0.87 1.18\n11 1.83 5.3\n12 3.91 36.78\naverage 1.36 8.66")
T32 = _rows("5 1.39 6.54\n10 1.23 8.03\n20 1.31 9.96\n50 1.5 10.11\naverage 1.36 8.66")  # average: Table 3.1's
T33 = _rows("""3 0.01 0.01 20 16\n4 0 0.01 70 44\n5 0.01 0.03 252 116\n6 0.04 0.15 924 278\n7 0.15 0.69 3432 620
8 0.65 3.8 12870 1324\n9 2.8 33.38 48620 2752\n10 12.56 275.09 184756 5628\n11 70.61 2126.75 705432 11400""")
T34 = _rows("4 1.68 0.27\n5 19.69 4.05")
# Tables 3.5-3.7: all (mean, σ), pareto (mean, σ), equitable unconstrained (mean, σ), constrained (mean, σ)
T35 = _rows("""5 57.3 32.4 19.4 7.8 4.8 3.8 3.5 2.5\n8 1630.7 1501.4 82.0 44.3 12.1 10.9 7.3 6.8
10 18998.6 19852.4 210.0 184.1 22.7 20.6 11.3 11.1\n11 59359.9 66803.4 341.0 442.1 26.7 27.5 16.3 21.8
12 225004.9 261132.4 531.9 803.1 42.5 63.3 19.3 21.4\naverage 61010.3 147442.1 236.9 456.7 21.8 35.0 11.5 15.9""")
T36 = _rows("""5 63070.1 153116.6 416.6 845.2 24.1 50.7 12.4 20.4\n10 63544.8 145851.6 183.6 183.6 19.4 34.1 8.8 13.5
20 64030.6 148650.7 165.1 142.0 20.6 23.4 11.2 13.3\n50 53395.5 142569.5 182.2 158.6 22.9 25.2 13.8 15.1
average 61010.3 147442.1 236.9 456.7 21.8 35.0 11.5 15.9""")
T37 = _rows("""4 1264.8 1174.5 198.2 114.8 7.2 7.4 4.4 3.3\n5 13251.2 21163.1 581.4 377.0 18.3 25.4 7.2 6.8
6 n.a. n.a. 1766.3 1036.4 29.5 38.6 12.9 17.3\naverage 7258.0 16082.3 848.6 923.5 18.4 28.3 8.2 11.4""")
# Tables 3.8-3.11 as printed: group "min-max" (sum mean, σ, max mean, σ), then group "min-sum" (the same)
T38 = _rows("""5 11.1 7.3 7.8 14.5 5.1 9.7 18.6 10.4\n8 11.7 6.7 9.0 14.1 6.4 8.9 20.4 10.7
10 12.5 6.3 10.7 12.2 6.9 9.0 22.2 9.9\n11 11.9 5.7 10.1 13.0 7.0 8.4 21.1 9.9
12 13.1 6.1 11.5 13.5 8.2 9.2 22.6 10.3\naverage 12.1 6.5 9.8 13.5 6.7 9.1 21.0 10.3""")
T39 = _rows("""5 9.1 8.1 7.4 9.1 8.1 7.4 6.8 6.5\n8 10.0 7.6 7.6 8.1 9.1 7.2 7.6 6.4
10 11.7 7.0 9.5 8.2 10.9 6.7 8.9 5.8\n11 10.8 6.3 8.4 7.6 9.9 6.0 8.3 5.4
12 11.8 7.4 9.6 8.7 11.0 7.1 9.3 6.5\naverage 10.7 7.4 8.5 8.4 9.8 7.0 8.2 6.2""")
T310 = _rows("""4 3.1 9.7 22.4 11.1 9.5 6.5 9.0 14.6\n5 2.2 9.1 25.5 9.1 9.6 6.2 8.8 14.1
6 3.0 7.5 24.4 9.2 9.8 6.4 8.6 13.6\naverage 2.8 8.8 24.1 9.9 9.6 6.3 8.8 14.0""")
T311 = _rows("""4 6.4 5.8 4.6 4.8 7.5 7.1 5.4 7.9\n5 6.6 5.7 5.1 5.1 7.7 6.6 6.0 7.3
6 7.0 5.6 4.9 4.1 8.2 6.3 5.5 5.3\naverage 6.6 5.7 4.9 4.6 7.8 6.7 5.6 6.9""")
#: Which printed group of Tables 3.8-3.11 is the min-sum solution. min-sum has the largest sum
#: score of an equitable set (and, unconstrained, min-max the largest max score); the printed
#: "min-max" group has the larger sum score in every row of 3.8 and 3.9, the printed
#: "min-sum" group in every row of 3.10 and 3.11.
MIN_SUM_GROUP = {"3.8": 0, "3.9": 0, "3.10": 1, "3.11": 1}
T312 = _rows(
    "5 0.01 0.00 0.00\n"
    "8 0.16 0.01 0.01\n"
    "10 0.88 0.03 0.03\n"
    "11 1.84 0.04 0.06\n"
    "12 4.04 0.06 0.08\n"
    "average 1.39 0.03 0.04"
)
# Table 3.13: N -> EW, AEW for the average, then n = 10, 15, 20, 25
T313 = _rows("""2 11.69 19.99 0.06 0.05 1.23 1.24 20.43 26.29 25.05 52.40
3 89.43 80.12 8.20 2.79 58.29 58.62 124.41 107.24 166.84 151.86
4 149.24 125.44 52.04 30.14 133.41 103.09 184.80 168.67 226.72 199.87
5 189.80 159.56 93.89 56.02 161.00 142.49 216.32 199.68 288.02 240.04
6 285.72 238.35 142.45 104.74 237.98 204.19 332.12 282.27 430.32 362.21
7 303.00 261.42 163.87 139.96 249.78 223.58 344.04 296.76 454.31 385.39
8 324.42 275.97 174.12 145.44 269.91 243.39 374.69 331.06 478.96 383.99
average 193.33 165.84 90.66 68.45 158.80 139.51 228.12 201.71 295.75 253.68""")
# Tables 3.14-3.15: % equitably dominated (EW, AEW), % found (EW, AEW)
T314 = _rows("""5 2.27 1.50 89.38 94.49\n8 9.99 5.46 74.51 84.72\n10 17.78 8.95 61.59 77.52\n11 18.52 10.72 60.47 75.83
12 22.20 13.61 54.57 70.24\naverage 14.15 8.05 68.10 80.56""")
T315 = _rows(
    "4 4.57 5.87 70.92 77.45\n5 12.57 14.16 53.13 68.66\n6 15.64 9.08 39.41 61.11\naverage 10.92 9.70 54.49 69.07"
)
# Tables 3.16-3.19: Δ min-sum (sum mean, σ, max mean, σ), Δ min-max (the same)
T316 = _rows("""5 0 0 0 0 -0.08 0.70 0.11 0.49\n8 0 0 0 0 0.01 0.31 0.07 0.24\n10 0 0 0 0 0.04 0.18 0.04 0.13
11 0 0 0 0 0.04 0.28 0.06 0.21\n12 0 0 0 0 0.04 0.19 0.04 0.11\naverage 0 0 0 0 0.01 0.39 0.06 0.27""")
T317 = _rows("""5 0.06 0.40 0.01 1.31 -0.03 0.28 0.00 0.65\n8 0.09 0.58 0.07 0.98 0.01 0.21 0.03 0.36
10 0.03 0.12 0.03 0.34 0.02 0.09 0.02 0.20\n11 0.06 0.26 0.01 0.32 0.02 0.11 0.01 0.20
12 0.04 0.16 0.01 0.25 0.03 0.12 0.04 0.14\naverage 0.06 0.35 0.03 0.77 0.01 0.18 0.02 0.36""")
T318 = _rows("""4 0 0 0 0 -1.48 2.67 0.87 1.70\n5 0 0 0 0 -1.13 2.46 0.69 1.38\n6 0 0 0 0 -0.99 2.52 0.80 1.90
average 0 0 0 0 -1.20 2.54 0.78 1.66""")
T319 = _rows("""4 0.22 0.80 0.43 1.57 -0.05 1.37 0.28 1.56\n5 0.29 0.67 -0.08 2.44 -0.15 0.95 0.05 1.02
6 0.28 1.00 0.29 1.79 0.17 0.91 0.19 1.34\naverage 0.26 0.83 0.21 1.97 -0.01 1.10 0.17 1.32""")
# Tables 3.20-3.21: min-sum (sum mean, σ, max mean, σ), min-max (the same)
T320 = _rows("""2 12.51 5.05 11.71 11.22 8.47 7.26 21.68 9.54\n3 12.18 4.36 15.74 10.82 8.89 6.44 27.84 8.63
4 10.96 3.64 15.65 9.84 8.74 4.61 28.23 8.07\n5 10.16 3.28 14.42 9.58 8.37 3.79 28.05 7.89
6 8.79 2.72 14.69 8.54 7.16 3.07 29.06 7.66\n7 8.14 2.57 14.76 8.05 6.97 2.92 27.54 7.26
8 7.33 2.24 14.19 7.02 6.33 2.53 26.75 6.93\naverage 10.01 3.99 14.45 9.46 7.85 4.77 27.02 8.34""")
T321 = _rows("""2 11.71 5.94 9.72 6.85 10.94 5.83 9.24 5.40\n3 11.81 4.63 10.41 8.15 10.91 4.40 8.37 4.30
4 10.67 3.75 8.63 6.54 10.03 3.53 7.28 3.38\n5 10.00 3.33 7.60 6.07 9.51 3.20 7.17 3.93
6 8.62 2.83 6.81 5.24 8.24 2.75 6.04 3.13\n7 8.07 2.60 6.52 5.26 7.75 2.49 6.02 3.36
8 7.17 2.36 5.34 4.44 6.89 2.28 5.06 2.52\naverage 9.72 4.17 7.86 6.40 9.18 3.96 7.03 4.04""")
# Table 3.22: instances (of 50) in which AEW found an acceptable result, n = 10, 15, 20, 25, sum
T322 = _rows("""2 44 45 48 47 184\n3 48 49 50 50 197\n4 50 49 50 50 199\n5 50 50 50 50 200\n6 50 50 50 49 199
7 50 50 50 50 200\n8 49 50 50 49 198\nsum 341 343 348 345 1377""")


# ------------------------------------------------------------------ formatting
def _f(x, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    return f"{x:,.{digits}f}" if abs(x) >= 1000 else f"{x:.{digits}f}"


def _pair(thesis: str | None, ours, digits: int = 2) -> str:
    return f"{thesis if thesis is not None else '–'} / {_f(ours, digits)}"


def _ratio(a, b):
    a, b = float(a), float(b)
    return a / b if b > 0 else float("nan")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _groups(df: pd.DataFrame, by: str, keys: list) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows) per key of ``by`` present, then ("average", all rows)."""
    out = [(str(k), df[df[by] == k]) for k in keys if (df[by] == k).any()]
    return out + [("average", df)]


def _mean_sd(d: pd.DataFrame, col: str) -> tuple[float, float]:
    x = pd.to_numeric(d[col], errors="coerce").dropna()
    return (x.mean(), x.std()) if len(x) else (float("nan"), float("nan"))


def _runtime_table(df, by, keys, thesis, cols, ratios, caption, digits=2) -> str:
    """Mean CPU seconds per algorithm; ``ratios``: (name, numerator index, denominator index)."""
    head = [by] + [f"{c} [s]" for c, _ in cols] + [name for name, _, _ in ratios]
    rows = []
    for label, d in _groups(df, by, keys):
        th = thesis.get(label)
        means = [d[col].mean() for _, col in cols]
        row = [label] + [_pair(th[i] if th else None, m, digits) for i, m in enumerate(means)]
        for _, a, b in ratios:
            tr = _f(_ratio(th[a], th[b])) if th and float(th[b]) > 0 else "–"
            row.append(f"{tr} / {_f(_ratio(means[a], means[b]))}")
        rows.append(row)
    return caption + "\n\n" + _table(head, rows)


def _stats_table(df, by, keys, thesis, cols, heads, caption, digits=1, th_order=None) -> str:
    """Mean and σ of each column; ``th_order`` maps our column i to the thesis's (mean, σ) fields."""
    head = [by] + [h for c in heads for h in (f"{c} mean", "σ")]
    rows = []
    for label, d in _groups(df, by, keys):
        th = thesis.get(label)
        row = [label]
        for i, col in enumerate(cols):
            m, sd = _mean_sd(d, col)
            j = th_order[i] if th_order else i
            has = th is not None and j is not None and 2 * j + 1 < len(th)
            row += [_pair(th[2 * j] if has else None, m, digits), _pair(th[2 * j + 1] if has else None, sd, digits)]
        rows.append(row)
    return caption + "\n\n" + _table(head, rows)


def _mean_table(df, by, keys, thesis, cols, heads, caption, digits=2) -> str:
    rows = []
    for label, d in _groups(df, by, keys):
        th = thesis.get(label)
        rows.append([label] + [_pair(th[i] if th else None, _mean_sd(d, c)[0], digits) for i, c in enumerate(cols)])
    return caption + "\n\n" + _table([by] + heads, rows)


SCORE_COLS = ["minsum_sum", "minsum_max", "minmax_sum", "minmax_max"]
SCORE_HEADS = ["min-sum sum", "min-sum max", "min-max sum", "min-max max"]


def _marker(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin (dedicated_tables.py --write) -->", f"<!-- {name}:end -->"


def _per_row(d: pd.DataFrame, by: str) -> str:
    sizes = sorted(set(d.groupby(by).size().tolist()))
    return "/".join(str(x) for x in sizes)


def tables(frames: dict[str, pd.DataFrame], meta: dict) -> list[tuple[str, str, str]]:
    """(begin marker, end marker, markdown) for each table that the results cover."""
    out: list[tuple[str, str, str]] = []

    def add(name: str, text: str) -> None:
        out.append((*_marker(name), text))

    small, small3 = frames.get("small"), frames.get("small-3")
    expo, large = frames.get("exponential"), frames.get("large")
    run = [["data set", "instances", "wall [s]", "ES = DYN (equitable sets)"]]
    for name, d in frames.items():
        agree = f"{int(d['agree'].sum())} of {len(d)}" if "agree" in d else "–"
        run.append([name, str(len(d)), _f(meta.get("wall", {}).get(name), 0), agree])
    total = sum(meta.get("wall", {}).values())
    steps = meta.get("max_steps", 0)
    walks = f"uncapped (given up after {meta.get('give_up'):,})" if steps is None else f"capped at {steps:,}"
    commands = "".join(f"\n* `{c}`" for c in meta.get("commands", [meta.get("command")]) if c)
    add(
        f"run-{meta['tag']}" if meta.get("tag") else "run-readings" if set(frames) == {"readings"} else "run",
        f"Computed {'with --quick' if meta.get('quick') else 'in full'}; {total:.0f} s wall on {_workers(meta)}; "
        f"EW and AEW on *large* {walks} steps per walk."
        + (f" Commands (`python -m gridemu.experiments.dedicated_tables ...`):{commands}" if commands else "")
        + "\n\n"
        + _table(run[0], run[1:]),
    )
    if small is not None:
        ns, ps = sorted(small.n.unique()), sorted(small["max"].unique())
        rt = [("DYN", "t_dyn"), ("ES", "t_es")]
        add(
            "table-3.1",
            _runtime_table(
                small,
                "n",
                ns,
                T31,
                rt,
                [("DYN/ES", 0, 1)],
                f"**Table 3.1** Mean run time of DYN and ES by n_{{.,k}}, *small* data set "
                f"({_per_row(small, 'n')} instances per row; thesis 200).",
                3,
            ),
        )
        add(
            "table-3.2",
            _runtime_table(
                small,
                "max",
                ps,
                T32,
                rt,
                [("DYN/ES", 0, 1)],
                "**Table 3.2** Mean run time by max p, *small* data "
                f"set ({_per_row(small, 'max')} per row; thesis 200).",
                3,
            ),
        )
        cnt = ["all", "pareto", "eq", "eq_cons", "eq_u"]
        heads = [
            "all solutions",
            "pareto-optimal",
            "equitable unconstrained",
            "equitable constrained",
            "equitable in u, feasibility not applied",
        ]
        add(
            "table-3.5",
            _stats_table(
                small, "n", ns, T35, cnt, heads, "**Table 3.5** Number of solutions by n_{.,k}, *small* data set."
            ),
        )
        add(
            "table-3.6",
            _stats_table(
                small, "max", ps, T36, cnt, heads, "**Table 3.6** Number of solutions by max p, *small* data set."
            ),
        )
        for num, prefix, th, what in (
            ("3.8", "ex_", T38, "unconstrained optimization of [C_k]"),
            ("3.9", "exc_", T39, "constrained optimization of [u_k]"),
        ):
            order = [0, 1, 2, 3] if MIN_SUM_GROUP[num] == 0 else [2, 3, 0, 1]
            add(
                f"table-{num}",
                _stats_table(
                    small,
                    "n",
                    ns,
                    th,
                    [prefix + c for c in SCORE_COLS],
                    SCORE_HEADS,
                    f"**Table {num}** Scores (%) of the exact solutions, {what}, *small* data set. The thesis's "
                    f"printed \"{'min-max' if MIN_SUM_GROUP[num] == 0 else 'min-sum'}\" group is shown under min-sum.",
                    th_order=order,
                ),
            )
        add(
            "table-3.12",
            _runtime_table(
                small,
                "n",
                ns,
                T312,
                [("DYN", "t_dyn"), ("EW", "t_ew"), ("AEW", "t_aew")],
                [("EW/DYN", 1, 0), ("AEW/EW", 2, 1)],
                "**Table 3.12** Mean run time of DYN (with its equitable filter), EW and AEW, *small* data set.",
                3,
            ),
        )
        add(
            "table-3.14",
            _mean_table(
                small,
                "n",
                ns,
                T314,
                ["ew_dom", "aew_dom", "ew_found", "aew_found"],
                ["EW % eq. dominated", "AEW % eq. dominated", "EW % found", "AEW % found"],
                "**Table 3.14** EW's and AEW's solutions against the exact sets, *small* data set.",
            ),
        )
    if small3 is not None:
        ns = sorted(small3.n.unique())
        add(
            "table-3.4",
            _runtime_table(
                small3,
                "n",
                ns,
                T34,
                [("DYN", "t_dyn"), ("ES", "t_es")],
                [("DYN/ES", 0, 1)],
                f"**Table 3.4** Mean run time of DYN and ES, *small-3* data set ({_per_row(small3, 'n')} per row; "
                "the thesis has no n = 6 row: ES did not finish).",
                3,
            ),
        )
        add(
            "table-3.7",
            _stats_table(
                small3,
                "n",
                ns,
                T37,
                ["all", "pareto", "eq", "eq_cons", "eq_u"],
                [
                    "all solutions",
                    "pareto-optimal",
                    "equitable unconstrained",
                    "equitable constrained",
                    "equitable in u, feasibility not applied",
                ],
                "**Table 3.7** Number of solutions, *small-3* data set.",
            ),
        )
        for num, prefix, th, what in (("3.10", "ex_", T310, "unconstrained"), ("3.11", "exc_", T311, "constrained")):
            order = [0, 1, 2, 3] if MIN_SUM_GROUP[num] == 0 else [2, 3, 0, 1]
            add(
                f"table-{num}",
                _stats_table(
                    small3,
                    "n",
                    ns,
                    th,
                    [prefix + c for c in SCORE_COLS],
                    SCORE_HEADS,
                    f"**Table {num}** Scores (%) of the exact solutions, {what} optimization, *small-3* data set "
                    f"(the thesis's groups as printed).",
                    th_order=order,
                ),
            )
        add(
            "table-3.15",
            _mean_table(
                small3,
                "n",
                ns,
                T315,
                ["ew_dom", "aew_dom", "ew_found", "aew_found"],
                ["EW % eq. dominated", "AEW % eq. dominated", "EW % found", "AEW % found"],
                "**Table 3.15** EW's and AEW's solutions against the exact sets, *small-3* data set.",
            ),
        )
    for num, d, th, algo in (
        ("3.16", small, T316, "ew"),
        ("3.17", small, T317, "aew"),
        ("3.18", small3, T318, "ew"),
        ("3.19", small3, T319, "aew"),
    ):
        if d is None:
            continue
        exact = "ex_" if algo == "ew" else "exc_"
        d = d.copy()
        for c in SCORE_COLS:
            d["d_" + c] = pd.to_numeric(d[exact + c], errors="coerce") - pd.to_numeric(
                d[f"{algo}_{c}"], errors="coerce"
            )
        skipped = int(d[f"d_{SCORE_COLS[0]}"].isna().sum())
        moved = 100 * (d["d_minsum_max"].abs() > 1e-9).mean()
        add(
            f"table-{num}",
            _stats_table(
                d,
                "n",
                sorted(d.n.unique()),
                th,
                ["d_" + c for c in SCORE_COLS],
                ["Δ " + h for h in SCORE_HEADS],
                f"**Table {num}** Δ-scores (percentage points, exact minus {algo.upper()}), "
                f"{'*small*' if d is small or d.N.iloc[0] == 2 else '*small-3*'} data set"
                + (
                    f"; instances without an acceptable AEW solution, left out: {skipped}."
                    if algo == "aew"
                    else f"; Δ min-sum max ≠ 0 in {moved:.1f} % of the instances (ties between SPT schedules)."
                ),
                2,
            ),
        )
    if expo is not None:
        rows = []
        for _, r in expo.sort_values("n").iterrows():
            th = T33.get(str(int(r.n)))
            rows.append(
                [
                    str(int(r.n)),
                    _pair(th[0] if th else None, r.t_dyn, 3),
                    _pair(th[1] if th else None, r.t_es, 3),
                    f"{_f(_ratio(th[0], th[1])) if th else '–'} / {_f(_ratio(r.t_dyn, r.t_es))}",
                    _pair(th[2] if th else None, r["all"], 0),
                    _pair(th[3] if th else None, r.pareto, 0),
                    str(int(r["eq"])),
                ]
            )
        add(
            "table-3.3",
            "**Table 3.3** DYN and ES on the exponential instances (Figure 3.2).\n\n"
            + _table(["n", "DYN [s]", "ES [s]", "DYN/ES", "all", "pareto", "equitable (gridemu)"], rows),
        )
    if large is not None:
        out.extend(_large_tables(large, meta))
    if frames.get("readings") is not None:
        out.extend(_reading_tables(frames["readings"]))
    return out


#: Measures compared across the readings: (label, column, thesis table per N, thesis field per N).
#: Tables 3.8-3.11's fields follow MIN_SUM_GROUP (3.8 and 3.9 print min-sum first).
READING_MEASURES = (
    ("all solutions", "all", {2: T35, 3: T37}, {2: 0, 3: 0}),
    ("pareto-optimal", "pareto", {2: T35, 3: T37}, {2: 2, 3: 2}),
    ("equitable unconstrained", "eq", {2: T35, 3: T37}, {2: 4, 3: 4}),
    ("equitable constrained", "eq_cons", {2: T35, 3: T37}, {2: 6, 3: 6}),
    ("SPT sum score (%)", "ex_minsum_sum", {2: T38, 3: T310}, {2: 0, 3: 4}),
    ("min-max max score (%)", "ex_minmax_max", {2: T38, 3: T310}, {2: 6, 3: 2}),
    ("constrained min-sum sum score (%)", "exc_minsum_sum", {2: T39, 3: T311}, {2: 0, 3: 4}),
)


def _reading_tables(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Tables 3.5-3.11's figures under each reading of the split, beside the thesis's."""
    readings = [r for r in READINGS if (df.reading == r).any()]
    head = ["measure", "N", "n", "thesis"] + readings
    rows, dist = [], {r: {"count": [], "score": []} for r in readings}
    for label, col, th_table, th_field in READING_MEASURES:
        for (big_n, n), d in df.groupby(["N", "n"]):
            th = th_table[big_n].get(str(n))
            t = th[th_field[big_n]] if th else "n.a."
            row = [label, str(big_n), str(n), t]
            for r in readings:
                x = pd.to_numeric(d[d.reading == r][col], errors="coerce").dropna()
                row.append(_f(x.mean(), 1) if len(x) else "–")
                if len(x) and t != "n.a.":
                    if col.startswith("ex"):
                        dist[r]["score"].append(x.mean() - float(t))
                    else:
                        dist[r]["count"].append(np.log2(x.mean() / float(t)))
            rows.append(row)
    per = "/".join(str(x) for x in sorted(set(df.groupby(["reading", "N", "n"]).size().tolist())))
    summary = [
        [
            r,
            _f(2 ** np.mean(dist[r]["count"]), 2),
            _f(2 ** np.min(dist[r]["count"]), 2) + " – " + _f(2 ** np.max(dist[r]["count"]), 2),
            _f(np.mean(dist[r]["score"]), 1),
            _f(np.min(dist[r]["score"]), 1) + " – " + _f(np.max(dist[r]["score"]), 1),
        ]
        for r in readings
    ]
    return [
        (
            *_marker("readings"),
            f"Means of Tables 3.5-3.11's figures under each reading of the split ({per} instances per row and "
            "reading: the *small* cells of every max p, and *small-3*), beside the thesis's. Exact sets by DYN.\n\n"
            + _table(head, rows),
        ),
        (
            *_marker("readings-summary"),
            "How far each reading is from the thesis, over the rows above: counts as the geometric mean ratio "
            "gridemu / thesis (1 = the thesis's), scores as the mean difference gridemu − thesis (percentage "
            "points).\n\n" + _table(["reading", "counts: ratio", "range", "scores: difference", "range"], summary),
        ),
    ]


def _large_tables(large: pd.DataFrame, meta: dict) -> list[tuple[str, str, str]]:
    out = []
    n_vals = sorted(large.n.unique())
    big_ns = sorted(large.N.unique())
    per = _per_row(large.assign(cell=large.N * 100 + large.n), "cell")
    tag = f"-{meta['tag']}" if meta.get("tag") else ""
    uncapped = meta.get("max_steps", 0) is None
    stop = f"{meta.get('give_up') if uncapped else meta.get('max_steps', 0):,}"
    walks = (
        f"walks uncapped (a walk still going after {stop} steps is given up, and its instance left out of the scores)"
        if uncapped
        else f"walks capped at {stop} steps"
    )
    # The thesis's average and sum rows cover N = 2..8: compared only when the run covers the same.
    thesis_rows = set(big_ns) == set(LARGE.n_orgs)
    head = ["N"] + [f"{w} {n}" for n in ["average"] + [str(x) for x in n_vals] for w in ("EW", "AEW")] + ["AEW/EW"]
    rows, caps = [], []
    for label, d in [(str(b), large[large.N == b]) for b in big_ns] + [("average", large)]:
        th = T313.get(label) if label != "average" or thesis_rows else None
        row, crow = [label], [label]
        for j, sub in enumerate([d] + [d[d.n == n] for n in n_vals]):
            col = 0 if j == 0 else 1 + [10, 15, 20, 25].index(n_vals[j - 1])
            row += [
                _pair(th[2 * col] if th else None, sub.t_ew.mean()),
                _pair(th[2 * col + 1] if th else None, sub.t_aew.mean()),
            ]
            if j:
                crow.append(
                    f"{100 * (~sub.ew_finished.astype(bool)).mean():.0f} / "
                    f"{100 * (~sub.aew_finished.astype(bool)).mean():.0f}"
                )
        row.append(f"{_f(_ratio(th[1], th[0])) if th else '–'} / {_f(_ratio(d.t_aew.mean(), d.t_ew.mean()))}")
        rows.append(row)
        caps.append(crow)
    out.append(
        (
            *_marker(f"table-3.13{tag}"),
            f"**Table 3.13** Mean run time (s) of EW and AEW, *large* data set ({per} instances per cell; thesis 50), "
            f"{walks}.\n\n" + _table(head, rows),
        )
    )
    out.append(
        (
            *_marker(f"table-3.13-caps{tag}"),
            f"Walks stopped after {stop} steps ({'given up' if uncapped else 'the cap'}; % of instances, EW / AEW), "
            "*large* data set.\n\n" + _table(["N"] + [str(n) for n in n_vals], caps),
        )
    )
    for num, algo, th in (("3.20", "ew", T320), ("3.21", "aew", T321)):
        d = large if algo == "ew" else large[large.aew_acceptable.astype(bool)]
        note = (
            ""
            if algo == "ew"
            else " Instances without an acceptable solution "
            f"({int((~large.aew_acceptable.astype(bool)).sum())}) left out."
        )
        if uncapped:
            ended = d[f"{algo}_finished"].astype(bool)
            note += f" Walks given up, their instances left out: {int((~ended).sum())}."
            d = d[ended]
        out.append(
            (
                *_marker(f"table-{num}{tag}"),
                _stats_table(
                    d,
                    "N",
                    big_ns,
                    th if thesis_rows else {k: v for k, v in th.items() if k != "average"},
                    [f"{algo}_{c}" for c in SCORE_COLS],
                    SCORE_HEADS,
                    f"**Table {num}** Scores (%) of {algo.upper()}'s solutions, *large* data set "
                    f"({_per_row(large, 'N')} instances per row; thesis 200), {walks}.{note}",
                    2,
                ),
            )
        )
    rows = []
    for label, d in [(str(b), large[large.N == b]) for b in big_ns] + [("sum", large)]:
        th = T322.get(label) if label != "sum" or thesis_rows else None
        cells = []
        for n in n_vals:
            sub = d[d.n == n]
            ours = f"{int(sub.aew_acceptable.sum())} of {len(sub)}"
            t = th[[10, 15, 20, 25].index(n)] if th else None
            cells.append(f"{t} of {50 * (7 if label == 'sum' else 1)} / {ours}" if t else f"– / {ours}")
        cells.append(f"{th[4] if th else '–'} / {int(d.aew_acceptable.sum())} of {len(d)}")
        rows.append([label] + cells)
    out.append(
        (
            *_marker(f"table-3.22{tag}"),
            "**Table 3.22** Instances in which AEW found an acceptable result "
            f"(every u_k ≥ 0), *large* data set, {walks}.\n\n"
            + _table(["N"] + [str(n) for n in n_vals] + ["sum"], rows),
        )
    )
    return out


def _steps(text: str) -> int | None:
    """``--max-steps``: a positive count, or "none" (the walk as printed, uncapped)."""
    if text.lower() == "none":
        return None
    steps = int(text)
    if steps <= 0:
        raise argparse.ArgumentTypeError(f"--max-steps must be a positive count or none, got {text}")
    return steps


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(","))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a small subset of every data set")
    ap.add_argument("--write", action="store_true", help="put the tables into dedicated.md")
    ap.add_argument(
        "--from", dest="src", type=Path, action="append", help="format saved results instead of computing (repeatable)"
    )
    ap.add_argument("--tag", default="", help="suffix of the doc markers of the *large* tables (runs side by side)")
    ap.add_argument("--out", type=Path, default=Path("runs/dedicated-tables"))
    ap.add_argument(
        "--sets",
        type=lambda t: tuple(t.split(",")),
        default=("small", "small-3", "exponential", "readings", "large"),
        help="which runs: small, small-3, exponential, readings (the split readings), large (comma-separated)",
    )
    ap.add_argument("--large-per-cell", type=int, default=50, help="instances per (N, n) cell of *large* (thesis: 50)")
    ap.add_argument("--orgs", type=_ints, default=LARGE.n_orgs, help="N of the *large* runs (thesis: 2,...,8)")
    ap.add_argument("--jobs", type=_ints, default=LARGE.jobs_per_machine, help="n of the *large* runs")
    ap.add_argument("--readings-per-cell", type=int, default=50, help="instances per *small* cell for each reading")
    ap.add_argument(
        "--max-steps",
        type=_steps,
        default=50_000,
        help="cap on the steps of each EW/AEW walk on *large*, or none: the walk as printed, which ends only "
        "when the worst organization has no unvisited move (see --give-up)",
    )
    ap.add_argument(
        "--give-up",
        type=int,
        default=5_000_000,
        help="with --max-steps none: a walk still going after this many steps is stopped and reported as not "
        "ended; its cell's scores are then left out (a cell is reported uncapped only if every walk ended)",
    )
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    if args.src:
        frames, meta = load(args.src)
        meta["tag"] = args.tag
    else:
        meta = dict(
            quick=args.quick,
            sets=list(args.sets),
            large_per_cell=args.large_per_cell,
            max_steps=args.max_steps,
            give_up=args.give_up,
            command=" ".join(sys.argv[1:]),
            tag=args.tag,
        )
        steps = args.give_up if args.max_steps is None else args.max_steps
        tasks = plan(args.quick, args.large_per_cell, steps, args.sets, args.orgs, args.jobs, args.readings_per_cell)
        frames, meta = compute(tasks, args.out, args.workers, meta)
    for begin, end, text in tables(frames, meta):
        print(text + "\n")
        if args.write:
            from gridemu.experiments.decentralization_tables import write_between

            write_between(begin, end, text, DOC)
