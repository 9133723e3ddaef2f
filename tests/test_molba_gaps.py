"""docs/results/molba_tables.py: the cells of means it reports as past 2 standard errors."""

from __future__ import annotations

from gridemu.experiments import molba_tables


def test_gaps_counts_the_cells_past_two_standard_errors_from_the_printed_figures():
    thesis = {(2, 10): (1.50, 0.30, 1.50, 0.30, 1.20, 0.00), (2, 0): (9, 9, 9, 9, 9, 9)}
    # local: 0.10 off with s.e. √((0.3² + 0.3²)/150) = 0.0346 -> z = 2.9; MOLBA: 0.05 off -> 1.4;
    # MOLBA+ILBA: σ 0 on both sides and 1.204 printed as 1.20: equal, not past.
    ours = {(2, 10): (1.60, 0.30, 1.55, 0.30, 1.204, 0.0, 1.2, 150), (2, 0): (0, 0, 0, 0, 0, 0, 0, 600)}
    text = molba_tables.gaps(thesis, ours)
    assert text.startswith("Cells of means more than 2 standard errors from the thesis's: 1 of 3 (more than 3: 0")
    assert "N = 2, n = 10, local: 1.60 against 1.50, s.e. 0.035, z = 2.9" in text
    assert "MOLBA:" not in text and "average" not in text  # "average" rows are not cells of the 48
