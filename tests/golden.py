"""Job tables of every shipped scenario, as digests kept in ``tests/data/golden_jobs.json``.

A refactoring of the kernel or of a protocol must leave every shipped scenario's job table
unchanged. ``python -m tests.golden --write`` records the digests (run it before such a
change, on the code that defines the expected behaviour); ``tests/test_golden.py``
compares every later run with them. The digest covers every column of ``jobs.parquet``,
floats to their last bit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

GOLDEN = Path(__file__).with_name("data") / "golden_jobs.json"
#: Keeps the slowest shipped scenarios small enough for the test suite; the same
#: overrides are used when the digests are written and when they are checked.
_CH4 = {"workload.until": 3000.0}
OVERRIDES: dict[str, dict] = {
    **{
        name: _CH4
        for name in (
            "averaging-game",
            "averaging-game-learning",
            "averaging-game-overloaded",
            "bilb",
            "bilb-learning",
            "bilb-overloaded",
        )
    },
    **{name: {"run.horizon": 20000.0} for name in ("fairshare-idle", "fairshare-imbalanced", "fairshare-swegrid")},
    "shapley-scale": {"sites.count": 30},
    "power-of-d": {"sites.count": 100, "workload.jobs": 10000},
}
#: Runs beyond the shipped scenarios, so every protocol is covered: name -> (scenario, overrides).
EXTRA: dict[str, tuple[str, dict]] = {
    "quickstart-random": ("quickstart", {"protocol.name": "random"}),
    "quickstart-local-events": ("quickstart", {"protocol.name": "local", "scheduler.name": "spt"}),
}


def digest(jobs: pd.DataFrame) -> str:
    """SHA-256 over every column's name, dtype and raw bytes (row order included)."""
    h = hashlib.sha256()
    for name in jobs.columns:
        col = jobs[name].to_numpy()
        h.update(name.encode())
        if col.dtype == object:
            h.update("\x1f".join(map(str, col)).encode())
        else:
            h.update(str(col.dtype).encode())
            h.update(np.ascontiguousarray(col).tobytes())
    return h.hexdigest()


def run_one(name: str, full: bool = False, windows: bool = False, **kwargs) -> dict:
    """Run one golden scenario (small, or as shipped with ``full``) and digest its job table;
    ``windows``: with the run's count of windows too (not stored: a figure of the kernel's)."""
    from gridemu.emulator import api  # noqa: PLC0415  (import late: --help stays instant)

    scenario, overrides = EXTRA.get(name, (name, {}))
    if not full:
        overrides = {**OVERRIDES.get(name, {}), **overrides}
    res = api.run(scenario, backend=kwargs.pop("backend", "inprocess"), overrides=overrides, **kwargs)
    out = {"rows": len(res.jobs), "digest": digest(res.jobs)}
    return out | ({"windows": res.summary["global"]["windows"]} if windows else {})


def names() -> list[str]:
    from gridemu.emulator.scenario import shipped_scenarios  # noqa: PLC0415

    return sorted(shipped_scenarios()) + sorted(EXTRA)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the digests (else compare)")
    parser.add_argument("--full", action="store_true", help="the scenarios as shipped (minutes), kept apart")
    parser.add_argument("names", nargs="*", help="scenarios (default: every shipped one and the extra runs)")
    args = parser.parse_args(argv)
    path = GOLDEN.with_name("golden_jobs_full.json") if args.full else GOLDEN
    stored = json.loads(path.read_text()) if path.exists() else {}
    bad = 0
    for name in args.names or names():
        t0 = time.perf_counter()
        got = run_one(name, full=args.full)
        wall = time.perf_counter() - t0
        if args.write:
            stored[name] = got
            status = "written"
        else:
            status = "same" if stored.get(name) == got else f"DIFFERENT (expected {stored.get(name)})"
            bad += status != "same"
        print(f"{name:28s} {got['rows']:7d} jobs  {wall:6.1f} s  {status}", flush=True)
    if args.write:
        path.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
