"""One import name: ``import gridemu`` gives what a user needs (run, load, sweep, ...)."""

from __future__ import annotations

import pandas as pd
import pytest

import gridemu


def test_run_write_and_load_give_the_same_tables(tmp_path):
    result = gridemu.run("quickstart", seed=4, backend="inprocess", overrides={"workload.jobs": 400})
    assert result.folder is None
    result.write(tmp_path / "q")
    again = gridemu.load(tmp_path / "q")
    assert isinstance(again, gridemu.RunResult)
    assert result.folder == again.folder == tmp_path / "q"  # where the files are (None before: a study)
    pd.testing.assert_frame_equal(again.jobs, result.jobs)
    pd.testing.assert_frame_equal(again.sites, result.sites)
    # No job split (no fragments.parquet): the pieces are the run's, not the 16-column job table.
    pd.testing.assert_frame_equal(again.pieces, result.pieces)
    assert again.summary["global"]["jobs"] == 400 and again.scenario["run"]["seed"] == 4
    with pytest.raises(gridemu.GridemuError, match="not a gridemu run folder"):
        gridemu.load(tmp_path)


def test_sweep_and_scenarios_under_the_one_name(tmp_path):
    assert "quickstart" in gridemu.shipped_scenarios()
    runs, orgs, table = gridemu.sweep(
        "quickstart",
        [("protocol.name", ["local", "random"])],
        overrides={"workload.jobs": 200},
        backend="inprocess",
        quiet=True,
        out=tmp_path / "s",
    )
    assert sorted(runs["protocol.name"]) == ["local", "random"] and len(orgs) == 16
    assert set(dir(gridemu)) >= {"run", "load", "sweep", "resume", "load_scenario", "__version__"}
    with pytest.raises(AttributeError, match="module 'gridemu' has no attribute 'simulate'"):
        gridemu.simulate  # noqa: B018
