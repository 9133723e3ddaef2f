"""WPM and ILV (migration paper, Definitions 3 and 4) checked on the emulator, not on the
reference simulator: for jobs drawn from a run, the emulator runs again with one job's type
made worse (WPM: released 1 later, priority 1 lower, size 1 larger; it must not finish
earlier) or with every job below it removed (ILV: J' = h_θ(J); its completion must not
change). Replicated GM keeps both up to latency; decentralized GM decides per site and
does not promise them. Writes the table of docs/results/decentralization.md, "Greedy
migration".

    python -m gridemu.experiments.decentralization_gm_props            # prints the table
    python -m gridemu.experiments.decentralization_gm_props --write    # and puts it in the doc
    python -m gridemu.experiments.decentralization_gm_props --jobs 30  # more sampled jobs per mode
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import gridemu.emulator as emulator
from gridemu.brokers.gm.fairness import h_set
from gridemu.brokers.gm.metrics import instance
from gridemu.emulator.scenario import load_scenario
from gridemu.experiments.decentralization_tables import write_between
from gridemu.scenarios.workload import generate_jobs

TOL = 1e-9


def job_list(jobs: np.ndarray) -> list[dict]:
    return [
        {
            "release": float(j["release"]),
            "size": float(j["size"]),
            "site": int(j["submit_site"]),
            "priority": float(j["priority"]),
        }
        for j in jobs
    ]


def completion(settings: dict, rows: list[dict], key: tuple) -> float:
    """d of the job whose (site, release) is ``key``, in a run of the job list ``rows`` (a
    preempted job's size in the table is the sum of its pieces: not matched exactly)."""
    r = emulator.run(
        "gm-scale", overrides={**settings, "workload": {"kind": "jobs", "list": rows}, "metrics.fairness": False}
    )
    t = r.jobs
    hit = t[(t.submit_site == key[0]) & (t.release == key[1])]
    assert len(hit) == 1, key
    return float(hit["end"].iloc[0])


def check(settings: dict, n_jobs: int, seed: int) -> dict:
    sc = load_scenario("gm-scale", overrides=settings)
    jobs = generate_jobs(sc)[0]
    rows = job_list(jobs)
    theta = instance(jobs)
    picks = np.random.default_rng(seed).choice(len(rows), size=n_jobs, replace=False)
    base = {i: completion(settings, rows, (rows[i]["site"], rows[i]["release"])) for i in picks}
    wpm = {"release": 0, "priority": 0, "size": 0}
    tried = {"release": 0, "priority": 0, "size": 0}
    ilv = 0
    for i in picks:
        row = rows[i]
        for what, change in (
            ("release", {"release": row["release"] + 1}),
            ("priority", {"priority": row["priority"] - 1}),
            ("size", {"size": row["size"] + 1}),
        ):
            if what == "priority" and row["priority"] < 1:
                continue
            worse = dict(row, **change)
            tried[what] += 1
            d = completion(settings, rows[:i] + [worse] + rows[i + 1 :], (worse["site"], worse["release"]))
            wpm[what] += d < base[i] - TOL
        keep = {k.id for k in h_set(theta, theta[i])}
        sub = [r for r, j in zip(rows, jobs) if int(j["job_id"]) in keep]
        d = completion(settings, sub, (row["site"], row["release"]))
        ilv += abs(d - base[i]) > TOL * max(1.0, abs(d))
    return {"jobs": n_jobs, "wpm": wpm, "wpm_tried": tried, "ilv": ilv}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20, help="jobs drawn per mode")
    parser.add_argument("--sites", type=int, default=16)
    parser.add_argument("--until", type=float, default=25.0, help="workload.until (shorter: each rerun is one run)")
    parser.add_argument("--write", action="store_true", help="put the table in docs/results/decentralization.md")
    args = parser.parse_args(argv)
    modes = [
        ("replicated", {"protocol.mode": "replicated"}),
        ("sampled, d = 2", {"protocol.samples": 2}),
        ("sampled, d = 0 (local GM)", {"protocol.samples": 0}),
    ]
    lines = [
        "| GM | jobs checked | WPM: later release finishes earlier | lower priority | larger size | "
        "ILV: d changes without lower jobs |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(lines), flush=True)
    for name, extra in modes:
        settings = {"sites.count": args.sites, "workload.until": args.until, **extra}
        out = check(settings, args.jobs, seed=1)
        w, t = out["wpm"], out["wpm_tried"]
        lines.append(
            f"| {name} | {out['jobs']} | {w['release']} of {t['release']} | {w['priority']} of {t['priority']} | "
            f"{w['size']} of {t['size']} | {out['ilv']} of {out['jobs']} |"
        )
        print(lines[-1], flush=True)
    if args.write:
        write_between(
            "<!-- gm-props:begin (decentralization_gm_props.py) -->", "<!-- gm-props:end -->", "\n".join(lines)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
