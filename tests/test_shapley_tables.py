"""The statistics and the window rule of docs/results/shapley_tables.py (the script's own
helpers, checked against figures computed here by other means)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gridemu.experiments.shapley_tables as tables


def test_sign_test_is_the_exact_two_tailed_binomial():
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0])
    b = np.array([2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 0])  # a lower in 9 windows, higher in 1, equal in 2
    lower, n, p = tables.sign_test(a, b)
    assert (lower, n) == (9, 10)
    assert p == pytest.approx(2 * (1 + 10) / 1024)
    assert tables.sign_test(np.zeros(5), np.zeros(5)) == (0, 0, 1.0)


def test_paired_t_matches_the_t_distribution_quantiles():
    # d with mean m and standard deviation s over n = 10: t = m / (s / sqrt(10)); choose t = 2.262,
    # the 97.5 % quantile of Student's t with 9 degrees of freedom, so p = 0.05.
    base = np.array([-1.0, 1.0] * 5)
    base = base / base.std(ddof=1)
    d = base + 2.262 / math.sqrt(10)
    assert tables.paired_t(d) == pytest.approx(0.05, abs=2e-4)
    d99 = base + 3.250 / math.sqrt(10)  # the 99.5 % quantile
    assert tables.paired_t(d99) == pytest.approx(0.01, abs=1e-4)
    assert tables.paired_t(np.zeros(7)) == 1.0


def _cell(tmp_path: Path, failures: list[tuple[int, str]]) -> Path:
    folder = tmp_path / "cell"
    folder.mkdir()
    rows = [
        {"sites.procs.dist": d, "seed": s, "fairness_directcontr": float(s)}
        for d in ("zipf", "uniform")
        for s in range(1, 8)
        if s not in {f[0] for f in failures}
    ]
    pd.DataFrame(rows).to_parquet(folder / "runs.parquet")
    if failures:
        pd.DataFrame(
            [{"sites.procs.dist": d, "seed": s, "error": e} for s, e in failures for d in ("zipf", "uniform")]
        ).to_csv(folder / "failures.csv", index=False)
    return folder


def test_read_cell_keeps_the_first_windows_with_jobs_by_seed(tmp_path):
    folder = _cell(tmp_path, [(2, "WorkloadError: the swf workload (x) has no job to run (...)")])
    runs, empty = tables.read_cell(folder, 4)
    assert empty == 1
    for d in ("zipf", "uniform"):
        assert runs.loc[runs["sites.procs.dist"] == d, "seed"].tolist() == [1, 3, 4, 5]


def test_read_cell_stops_on_any_other_failure(tmp_path):
    folder = _cell(tmp_path, [(3, "InvariantError: something broke")])
    with pytest.raises(SystemExit, match="InvariantError"):
        tables.read_cell(folder, 4)


def test_read_cell_joins_a_cell_run_in_parts(tmp_path):
    for first in (1, 4):
        part = tmp_path / "cell" / f"part-{first}"
        part.mkdir(parents=True)
        pd.DataFrame(
            [{"sites.procs.dist": "uniform", "seed": s, "fairness_directcontr": 1.0} for s in range(first, first + 3)]
        ).to_parquet(part / "runs.parquet")
    (tmp_path / "cell" / "part-4" / "failures.csv").write_text(
        "sites.procs.dist,seed,error\nuniform,7,WorkloadError: has no job to run\n"
    )
    runs, empty = tables.read_cell(tmp_path / "cell", 5)
    assert runs["seed"].tolist() == [1, 2, 3, 4, 5] and empty == 1


def _swf(path: Path, size: int) -> str:
    """A job every 10 s from 0 to 990, all of ``size`` seconds on one processor, users 1..5 in turn."""
    lines = ["; Version: 2.2", "; MaxProcs: 5"]
    for i in range(100):
        lines.append(
            " ".join(
                str(x) for x in [i + 1, 10 * i, 0, size, 1, -1, -1, 1, size, -1, 1, 1 + i % 5] + [1, -1, 1, -1, -1, -1]
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("size, waits", [(1000, 1.0), (1, 0.0)])
def test_warm_runs_count_contention_on_a_hand_made_trace(tmp_path, size, waits):
    import gridemu.experiments.shapley_warm as warm

    # 5 processors, windows of 100 s: 10 jobs a window. Jobs of 1000 s: the sixth job of any window
    # waits (cold), and the FCFS backlog (every job of the last 1000 s is still running) adds more.
    # Jobs of 1 s: each ends before the next arrives, no backlog, nobody waits.
    trace = _swf(tmp_path / "t.swf", size)
    out = tmp_path / "cell-uniform.csv"
    warm.run(trace, 5, 100, "uniform", 3, out, None)
    runs = pd.read_csv(out)
    assert len(runs) == 3 and (runs["empty"] == 0).all() and (runs["cold_jobs"] == 10).all()
    assert (runs["cold_waits"] == waits).all() and (runs["fcfs_waits"] == waits).all()
    assert ((runs["fcfs_backlog"] > 0) == (size > 1)).all()
    text = warm.cell_text(runs, "hand-made")
    assert f"| contended (a job waits in REF's schedule) | | {waits:.0%} | {waits:.0%} |" in text
    again = tmp_path / "again-uniform.csv"
    warm.run(trace, 5, 100, "uniform", 3, again, None)  # the same windows and figures again
    cols = [c for c in runs if c != "seconds"]
    pd.testing.assert_frame_equal(pd.read_csv(again)[cols], runs[cols])


def test_warm_runs_given_seeds_exactly_and_refuse_a_bad_range(tmp_path, capsys):
    import gridemu.experiments.shapley_warm as warm

    trace = _swf(tmp_path / "t.swf", 1000)
    out = tmp_path / "cell-uniform.csv"
    base = ["run", trace, "--procs", "5", "--duration", "100", "--dist", "uniform", "--out", str(out)]
    warm.main([*base, "--seeds", "4-5"])
    warm.main([*base, "--seeds", "5-6"])  # 5 is there already: only 6 runs
    assert pd.read_csv(out)["seed"].tolist() == [4, 5, 6]
    for bad in ("5-2", "0-3", "x-4"):
        with pytest.raises(SystemExit) as stop:
            warm.main([*base, "--seeds", bad])
        assert stop.value.code == 2
        assert f"argument --seeds: LO-HI with 1 <= LO <= HI, got '{bad}'" in capsys.readouterr().err


def test_ricc_table2_warm_table_is_the_kept_csv():
    """shapley.md's warm RICC Table 2 block is what `shapley_warm tables` makes of the
    per-window CSV kept in the repository: the doc and its data cannot drift apart."""
    import gridemu.experiments.shapley_warm as warm

    kept = warm.DOC.parent / "data" / "shapley-warm" / "ricc-long-uniform.csv"
    runs = pd.read_csv(kept)
    assert sorted(runs["seed"]) == list(range(1, 101))
    marker, title, paper = warm.CELLS["ricc-long"]
    doc = warm.DOC.read_text()
    begin = f"<!-- {marker}:begin (shapley_warm.py tables --write) -->"
    block = doc[doc.index(begin) + len(begin) : doc.index(f"<!-- {marker}:end -->")]
    assert block.strip() == warm.cell_text(runs, title, paper).strip()
