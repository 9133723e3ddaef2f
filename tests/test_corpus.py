"""Every bad input of the corpus (tests/corpus.py) gives one clear line and exit code 2:
no traceback, no hang, no run that passes on bad input."""

from __future__ import annotations

import pytest

from tests.corpus import cases, run_case

CASES = cases()


def test_the_corpus_is_large_and_its_names_unique():
    assert len(CASES) >= 150
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line_and_exit_2(case):
    outcome = run_case(case, limit=30.0)
    assert outcome.verdict == "clean", f"{outcome.verdict}, exit {outcome.code}: {outcome.err[-2000:]}"
