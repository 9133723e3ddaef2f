"""Property violations of GM and the busy schedulers on random instances (docs/results/migration.md).

    python -m gridemu.experiments.migration_rates [--instances 200] [--jobs 40]

Random instances of the paper's model, drawn with a fixed seed: 4 machines with speeds
drawn from {0.5, 1, 2, 3}; jobs with distinct integral release times (Definition 4 needs
them distinct), integral sizes uniform in 1..10, priorities v0 uniform in {0, 1, 2}. Each
policy of ``brokers.gm.algorithm.simulate`` runs on every instance (one pool of machines: the busy
schedulers are global, as in the paper), then:

  * EF: violating pairs per 1,000 comparable pairs j ≻ k (Definition 2);
  * WPM: per 1,000 jobs, counterfactual reruns with the job released 1 later, its
    priority 1 lower, its size 1 larger (Definition 3): each one a violation if the job
    then finishes earlier;
  * ILV: per 1,000 jobs, the job's completion with only h_θ(J) present (Definition 4).

Then GM again with a migration cost c per move (setup time without progress) for
c = 0.5, 1, 2, 5: the paper proves the properties for c = 0 only.
"""

from __future__ import annotations

import argparse

import numpy as np

from gridemu.brokers.gm.algorithm import GmJob, simulate
from gridemu.brokers.gm.fairness import ef_counts, ilv_violations, wpm_violations

SPEEDS = (0.5, 1.0, 2.0, 3.0)


def draw(rng: np.random.Generator, n_jobs: int, n_machines: int = 4) -> tuple[list[GmJob], list[float]]:
    speeds = rng.choice(SPEEDS, size=n_machines).tolist()
    releases = np.sort(rng.choice(np.arange(3 * n_jobs), size=n_jobs, replace=False))
    sizes = rng.integers(1, 11, size=n_jobs)
    prios = rng.integers(0, 3, size=n_jobs)
    return [GmJob(i, float(r), float(t), float(v)) for i, (r, t, v) in enumerate(zip(releases, sizes, prios))], speeds


def rates(instances: list[tuple[list[GmJob], list[float]]], policy: str, cost: float = 0.0) -> dict[str, float]:
    ef = pairs = wpm = ilv = jobs = migrations = 0
    for jobs_, speeds in instances:
        out = simulate(jobs_, speeds, policy, migration_cost=cost)
        bad, comparable = ef_counts(jobs_, out.completion)
        ef, pairs = ef + bad, pairs + comparable
        wpm += len(wpm_violations(jobs_, speeds, policy, step=1.0, migration_cost=cost))
        ilv += len(ilv_violations(jobs_, speeds, policy, migration_cost=cost))
        jobs += len(jobs_)
        migrations += sum(out.migrations.values())
    return {
        "ef_per_1000_pairs": 1000 * ef / pairs,
        "wpm_per_1000_jobs": 1000 * wpm / jobs,
        "ilv_per_1000_jobs": 1000 * ilv / jobs,
        "migrations_per_job": migrations / jobs,
        "pairs": pairs,
        "jobs": jobs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=2008)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    instances = [draw(rng, args.jobs) for _ in range(args.instances)]
    print(
        "| scheduler | migration cost | EF per 1,000 pairs | "
        "WPM per 1,000 jobs | ILV per 1,000 jobs | migrations per job |"
    )
    print("|---|---|---|---|---|---|")
    rows = [(p, 0.0) for p in ("fcfs_fastest", "fcfs_any", "preempt", "gm")] + [("gm", c) for c in (0.5, 1.0, 2.0, 5.0)]
    for policy, cost in rows:
        r = rates(instances, policy, cost)
        print(
            f"| {policy} | {cost:g} | {r['ef_per_1000_pairs']:.2f} | {r['wpm_per_1000_jobs']:.2f} | "
            f"{r['ilv_per_1000_jobs']:.2f} | {r['migrations_per_job']:.2f} |",
            flush=True,
        )
    print(
        f"\n{args.instances} instances of {args.jobs} jobs on 4 machines (seed {args.seed}); "
        f"{r['pairs']:,} comparable pairs in all."
    )


if __name__ == "__main__":
    main()
