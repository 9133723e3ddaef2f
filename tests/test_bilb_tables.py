"""docs/results/bilb_tables.py: a partial rerun replaces only its tables; the errors it reports."""

from __future__ import annotations

import math

import pytest

from gridemu.emulator.sweep import sweep
from gridemu.experiments import bilb_tables
from gridemu.experiments.bilb_tables import MISSING, mean_errors, splice

BLOCK = """
### Table 4.2: averaging game, p_k = 1

| N | α = β | typical, thesis | typical, gridemu | overloaded, thesis | overloaded, gridemu |
|---|---|---|---|---|---|
| 2 | 2.0 | 0.50 ± 0.00 / 0.65 ± 0.00 | 0.60 ± 0.04 / 0.53 ± 0.03 (CI ± 0.04, 200) | | |
| 2 (α₁ = β₁ = 3) | 2.0 | -7.13 ± 0.00 / 3.66 ± 0.00 | -9.09 ± 0.00 / 3.88 ± 0.00 | 0.93 / 0.24 | 1.35 / 0.38 |
| 2 | 1.0 | 0.13 ± 0.00 / 0.06 ± 0.005 | 0.26 ± 0.00 / 0.08 ± 0.00 (CI ± 0.01, 200) | | |

### Table 4.3: BILB, homogeneous, every l_k the same (α = β = 2)

| l_k | N = 2, thesis | N = 2, gridemu | N = 10, thesis | N = 10, gridemu |
|---|---|---|---|---|
| 1 | 0.125 ± 0.006 / 0.123 ± 0.014 | 0.100 ± 0.004 / 0.054 ± 0.009 | 0.1 ± 0 / 0 ± 0 | 0.2 ± 0 / 0 ± 0 |
| 5 | 0.5 ± 0.006 / 0.568 ± 0.008 | 0.4 ± 0.031 / 0.268 ± 0.035 (CI ± 0.023, 200) | 2.0 ± 0 / 1 ± 0 | not rerun |

### Table 4.5: BILB

| N | α = β | l | typical, thesis | typical, gridemu | overloaded, thesis | overloaded, gridemu |
|---|---|---|---|---|---|---|
| 10 | 2.0 | 1000 | 3.00 ± 0.17 / 2.45 ± 0.22 | 2.70 ± 0.14 / 1.19 ± 0.17 (CI ± 0.04, 20) | | |
| 10 (α₁ = β₁ = 3) | 2.0 | 5 (l₁ = 1000) | 1.12 ± 0.82 / 1.80 ± 0.10 | 0.17 ± 0.03 / 0.20 | 1.33 / 0.15 | 0.49 |
"""


def test_mean_errors_take_the_homogeneous_rows_at_alpha_2_and_skip_cells_not_rerun():
    got = mean_errors(BLOCK)
    assert got["4.2"] == pytest.approx(0.2)  # 0.60 against 0.50; the heterogeneous and α = 1 rows left out
    assert got["4.3, l ≤ 4"] == pytest.approx((0.2 + 1.0) / 2)  # N = 2: 0.100/0.125; N = 10: 0.2/0.1
    assert got["4.3, l ≥ 5"] == pytest.approx(0.2)  # N = 10, l = 5 was not rerun
    assert got["4.5"] == pytest.approx(0.1)
    assert math.isnan(mean_errors("### Table 4.3: x\n\n| l_k | a |\n")["4.5"])


def test_splice_replaces_only_the_tables_given():
    new = "\n### Table 4.3: BILB, rerun\n\n| l_k | a |\n| 1 | " + MISSING + " |\n"
    out = splice(BLOCK, new)
    assert "### Table 4.3: BILB, rerun" in out and "| 1 | not rerun |" in out
    assert "0.125 ± 0.006" not in out  # the old Table 4.3 is gone
    assert out.index("### Table 4.2") < out.index("### Table 4.3") < out.index("### Table 4.5")
    assert "| 10 | 2.0 | 1000 | 3.00" in out  # the others are kept as they were
    assert splice(BLOCK, BLOCK) == BLOCK.strip("\n")


def test_t42_shipped_sets_the_shipped_run_beside_the_pages_tail(tmp_path, monkeypatch):
    """--t42-shipped: a row the sweep ran reads its cell, the others "not rerun"; each column's
    mean relative error counts the rows it has (the tail's from the page's Table 4.2)."""
    doc = tmp_path / "bilb.md"
    doc.write_text(bilb_tables.BEGIN + BLOCK + bilb_tables.END)
    monkeypatch.setattr(bilb_tables, "DOC", doc)
    sweep(
        "averaging-game",
        [("sites.count", [2])],
        repeat=2,
        overrides={"workload.until": 1000.0},
        out=tmp_path / "t42",
        backend="inprocess",
        quiet=True,
    )
    text = bilb_tables.t42_shipped(tmp_path / "t42")
    rows = {line.split("|")[1].strip(): line for line in text.splitlines()[2:]}
    assert "(CI ± " in rows["2"] and ", 2)" in rows["2"]  # two runs
    assert rows["5"].count(MISSING) == 2  # neither the page nor the sweep has N = 5
    assert "0.60 ± 0.04" in rows["2"]  # the page's tail cell
    assert "**0.20** (1 rows)" in rows["mean relative error of the score"]
