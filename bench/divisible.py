"""Chapter-4 protocols (averaging_game, bilb): how fast, and what Ray's barriers cost them.

    python bench/divisible.py [--sites 10 30] [--until 1000] [--repeat 3]

Runs the shipped ``bilb`` scenario (one processor per site, λ = 0.2, gamma(2, 2),
l_k = 1000) and ``averaging-game`` for the given site counts, one period (T = 1000) as
docs/results/bilb.md measures them, in-process with one shard and on a private local Ray
instance with two shards. These protocols talk every round (offers, pieces, answers), so
a run takes thousands of windows, and each window is one barrier over the shards.
Prints, per setting, the median of ``--repeat`` runs: wall seconds of the kernel, windows,
events and messages per second, and wall seconds per window.
"""

from __future__ import annotations

import argparse
import os
import statistics

import gridemu.emulator as emulator


def measure(name: str, sites: int, until: float, backend: str, shards: int, repeat: int) -> dict:
    walls, last = [], None
    for _ in range(repeat):
        result = emulator.run(
            name,
            backend=backend,
            shards=shards,
            overrides={"sites.count": sites, "workload.until": until, "metrics.counterfactual": "none"},
        )
        last = result.summary["global"]
        walls.append(last["wall_seconds"])
    wall = statistics.median(walls)
    return {
        "wall": wall,
        "windows": last["windows"],
        "events_s": last["events"] / wall,
        "messages_s": last["messages_total"] / wall,
        "per_window_ms": 1000 * wall / last["windows"],
        "jobs": last["jobs"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites", type=int, nargs="+", default=[10, 30])
    ap.add_argument("--until", type=float, default=1000.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("RAY_ADDRESS", "local")
    from gridemu.emulator.backends import ensure_ray

    ensure_ray(num_cpus=2)
    print(
        f"{'scenario':<16}{'sites':>6}{'backend':>13}{'jobs':>8}{'wall s':>9}{'windows':>9}"
        f"{'events/s':>11}{'msgs/s':>10}{'ms/window':>11}"
    )
    for name in ("bilb", "averaging-game"):
        for sites in args.sites:
            for backend, shards in (("inprocess", 1), ("ray", 2)):
                m = measure(name, sites, args.until, backend, shards, args.repeat)
                print(
                    f"{name:<16}{sites:>6}{backend + '/' + str(shards):>13}"
                    f"{m['jobs']:>8,}{m['wall']:>9.2f}{m['windows']:>9,}"
                    f"{m['events_s']:>11,.0f}{m['messages_s']:>10,.0f}{m['per_window_ms']:>11.2f}"
                )


if __name__ == "__main__":
    main()
