"""Why Table 5.2 (*swf*) is off at n = 500: what the lower bound max(W̄, p_max) is made of.

For the *swf* instances of molba.md's tables at n = 500 (molba-tables.sh with PER_N=1: seeds
1 + 1000 (m's index) + 100000 (N's index) + r, r < 50), only the job generator and the local
schedule are needed (no run): per
(N, m), the local score, the share of instances whose lower bound is W̄ (W̄ ≥ p_max), the
median of W̄ / p_max, the widths (mean q / m, share of serial jobs) and the runtimes (median
p, median p_max). The same figures for *uni*, where Table 5.1 agrees at n = 500. Then the
local score under readings of the generator the thesis's words ("a realistic workload
generator [Lublin and Feitelson, 2003]", adjusted only for q < m, n jobs, releases at 0)
leave open: sizes not scaled to m (the program's 128-processor defaults, q redrawn below
m), and the program's batch and interactive parameter sets instead of its "all jobs" one.
They show how far the generator's parameters move the score; none is adopted (the text
does not say which the thesis ran), so the tables keep the "all jobs" set scaled to m.

    python -m gridemu.experiments.molba_swf            # prints the tables (about 1.5 CPU-minutes)
    python -m gridemu.experiments.molba_swf --write    # and puts them in molba.md
"""

from __future__ import annotations

import contextlib
import functools
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

from gridemu.brokers.molba.algorithm import local_schedule, lower_bound, mean_work
from gridemu.brokers.molba.list_scheduling import makespan
from gridemu.brokers.molba.protocol import instance
from gridemu.emulator.scenario import load_scenario
from gridemu.experiments.decentralization_tables import write_between
from gridemu.experiments.script_args import hand_parsed
from gridemu.scenarios import rigid
from gridemu.scenarios.workload import generate_jobs

DOC = Path(__file__).with_name("molba.md")
MS = (32, 128, 512)
NS = (2, 5, 10, 20)
#: Table 5.2's local scores at n = 500 (thesis section 5.6.2), by N.
THESIS_LOCAL_500 = {2: 1.53, 5: 1.46, 10: 1.44, 20: 1.32}
RUNS = 50


#: Readings of the generator: the one the sweeps run, and three the thesis's words leave open.
READINGS = {
    "all jobs, sizes scaled to m (as run)": {},
    "all jobs, sizes not scaled (u_hi = 7, q redrawn below m)": {"scaled_params": lambda params, m: params},
    "batch jobs only (the program's batch set)": {
        "lublin_jobs": functools.partial(rigid.lublin_jobs, params=rigid.BATCH)
    },
    "interactive jobs only (the program's interactive set)": {
        "lublin_jobs": functools.partial(rigid.lublin_jobs, params=rigid.INTERACTIVE)
    },
}


@functools.lru_cache(maxsize=None)
def figures(
    scenario: str, n_orgs: int, m: int, reading: str = "all jobs, sizes scaled to m (as run)", n: int = 500
) -> dict:
    rows = []
    with contextlib.ExitStack() as patches:
        for name, value in READINGS[reading].items():  # workload.py looks lublin_jobs up in rigid at each draw
            patches.enter_context(mock.patch.object(rigid, name, value))
        for r in range(RUNS):
            seed = 1 + 1000 * MS.index(m) + 100000 * NS.index(n_orgs) + r  # molba-tables.sh's PER_N=1 seeds
            sc = load_scenario(
                scenario, {"sites.count": n_orgs, "sites.procs": m, "workload.jobs": n, "run.seed": seed}
            )
            jobs = instance(generate_jobs(sc)[0], [m] * n_orgs)
            machines = [m] * n_orgs
            w_bar, p_max = mean_work(jobs, machines), max(j.p for j in jobs)
            p = np.array([j.p for j in jobs])
            q = np.array([j.q for j in jobs])
            rows.append(
                {
                    "local": makespan(local_schedule(jobs, machines), jobs) / lower_bound(jobs, machines),
                    "w_bound": w_bar >= p_max,
                    "ratio": w_bar / p_max,
                    "width": (q / m).mean(),
                    "serial": (q == 1).mean(),
                    "p_med": np.median(p),
                    "p_max": p_max,
                }
            )
    d = pd.DataFrame(rows)
    return {
        "local s": d["local"].mean(),
        "W̄ ≥ p_max": d["w_bound"].mean(),
        "median W̄/p_max": d["ratio"].median(),
        "mean q/m": d["width"].mean(),
        "serial": d["serial"].mean(),
        "median p": d["p_med"].median(),
        "median p_max": d["p_max"].median(),
    }


def table(scenario: str, thesis: bool) -> str:
    """Per (N, m): what the lower bound is made of, for the generator as run."""
    cols = ["local s", "W̄ ≥ p_max", "median W̄/p_max", "mean q/m", "serial", "median p", "median p_max"]
    lines = ["| N | m | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
    for n_orgs in NS:
        for m in MS:
            f = figures(scenario, n_orgs, m)
            cells = [
                f"{f['local s']:.2f}",
                f"{f['W̄ ≥ p_max']:.0%}",
                f"{f['median W̄/p_max']:.2f}",
                f"{f['mean q/m']:.3f}",
                f"{f['serial']:.0%}",
                f"{f['median p']:.0f}",
                f"{f['median p_max']:.0f}",
            ]
            lines.append(f"| {n_orgs} | {m} | " + " | ".join(cells) + " |")
        if thesis:
            lines.append(f"| {n_orgs} | thesis, all m | {THESIS_LOCAL_500[n_orgs]:.2f} |" + " |" * (len(cols) - 1))
    return "\n".join(lines) + "\n"


def readings() -> str:
    """The local score at n = 500 per reading of the generator, per m and over all m, beside the thesis."""
    lines = ["| generator | N | m = 32 | m = 128 | m = 512 | all m | thesis |", "|---|---|---|---|---|---|---|"]
    for reading in READINGS:
        for n_orgs in NS:
            s = [figures("molba-swf", n_orgs, m, reading)["local s"] for m in MS]
            lines.append(
                f"| {reading} | {n_orgs} | "
                + " | ".join(f"{v:.2f}" for v in s)
                + f" | {np.mean(s):.2f} | {THESIS_LOCAL_500[n_orgs]:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = "".join(
        [
            "*swf*, n = 500, the generator as run (\"all jobs\" set, sizes scaled to m):\n\n",
            table("molba-swf", True),
            "\n*uni*, n = 500 (Table 5.1 agrees here):\n\n",
            table("molba", False),
            "\nLocal score of *swf* at n = 500 under other readings of the generator (50 instances per m):\n\n",
            readings(),
        ]
    )
    print(text)
    if "--write" in argv:
        write_between(
            "<!-- molba-swf-bound:begin (molba_swf.py --write) -->", "<!-- molba-swf-bound:end -->", text, DOC
        )
    return 0


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(__doc__, sys.argv[1:], ('--write',))
    sys.exit(main(sys.argv[1:]))
