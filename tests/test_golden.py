"""Every shipped scenario (and one run per protocol not shipped alone) keeps its job table.

The digests in ``tests/data/golden_jobs.json`` were written by ``python -m tests.golden
--write`` before the kernel and the protocols were reorganized into plug-ins; a change of
layout or speed must not change a single job.
"""
from __future__ import annotations

import json

import pytest

from tests import golden

STORED = json.loads(golden.GOLDEN.read_text())


@pytest.mark.parametrize("name", golden.names())
def test_job_table_is_unchanged(name):
    assert name in STORED, f"no digest recorded for {name}: run python -m tests.golden --write {name}"
    assert golden.run_one(name) == STORED[name]
