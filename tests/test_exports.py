"""``gridemu export`` on every shipped scenario (tiny job counts): both formats, every job
present (never-started ones included), the input's requested times and trace header kept."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gridemu import emulator
from gridemu.emulator.cli import main
from gridemu.emulator.scenario import shipped_scenarios
from gridemu.scenarios.swf import read_swf_header, read_swf_header_lines

_CH4 = {"workload.until": 1000.0}
#: Each shipped scenario made tiny: a few hundred jobs at most.
TINY: dict[str, dict] = {
    **{n: _CH4 for n in ("averaging-game", "averaging-game-learning", "averaging-game-overloaded")},
    **{n: _CH4 for n in ("bilb", "bilb-learning", "bilb-overloaded")},
    "averaging-topology": {"workload.until": 10.0, "sites.count": 16},
    "bilb-topology": {"workload.until": 10.0, "sites.count": 16},
    **{
        n: {"run.horizon": 4000.0, "workload.until": 4000.0}
        for n in ("fairshare-idle", "fairshare-imbalanced", "fairshare-swegrid")
    },
    "faults": {"workload.until": 100.0},
    "gm-grid": {"workload.jobs": 100},
    "gm-scale": {"workload.until": 10.0},
    "molba": {"workload.jobs": 20},
    "molba-swf": {"workload.jobs": 20},
    "power-of-d": {"sites.count": 20, "workload.jobs": 300},
    "quickstart": {"workload.jobs": 200},
    "shapley-scale": {"sites.count": 10, "workload.until": 100.0, "run.horizon": 100.0},
}


def body(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line and not line.startswith(";")]


@pytest.mark.parametrize("name", sorted(shipped_scenarios()))
def test_every_shipped_scenario_exports_in_both_formats(name, tmp_path):
    result = emulator.run(name, backend="inprocess", overrides=TINY.get(name, {}), out=tmp_path / "r")
    assert main(["export", str(tmp_path / "r")]) == 0
    rows = body(tmp_path / "r" / "jobs.swf")
    assert len(rows) == len(result.jobs) and all(len(r) == 18 for r in rows)
    # Every field a number as SWF writes them: no '199.' (a float's last bit stripped to a point).
    assert not [f for r in rows for f in r if f.endswith(".") or f in ("-0", "")]
    assert main(["export", str(tmp_path / "r"), "--format", "evalys"]) == 0
    csv = pd.read_csv(tmp_path / "r" / "jobs_evalys.csv", dtype={"job_id": str, "allocated_resources": str})
    started = int(result.pieces["start"].notna().sum())
    never = int(result.jobs["start"].isna().sum())
    assert len(csv) == started + never
    assert csv["job_id"].is_unique
    # Every job is there, by its id (a piece's id is JOB.N, N = 1, 2, ... within a split job).
    assert set(csv["job_id"].str.split(".").str[0].astype(int)) == set(result.jobs["job_id"])
    ids = csv["job_id"].str.split(".", expand=True).reindex(columns=[0, 1])
    split = ids[1].notna()
    if split.any():
        numbers = ids[split].groupby(0)[1].apply(lambda n: sorted(map(int, n)))
        assert all(n == list(range(1, len(n) + 1)) for n in numbers)
        assert not set(ids.loc[split, 0]) & set(ids.loc[~split, 0])  # no bare id beside a split job's pieces
    assert (csv["submission_time"].notna()).all()


def test_swf_export_keeps_requested_times_and_the_trace_header(tmp_path):
    result = emulator.run("shapley", backend="inprocess", out=tmp_path / "r")
    assert main(["export", str(tmp_path / "r")]) == 0
    text = (tmp_path / "r" / "jobs.swf").read_text()
    # The source trace's header, each line quoted: its keys are not this file's (a reader that
    # takes a key's last value took the trace's MaxProcs and Version for the run's).
    assert "; > Computer: synthetic (gridemu), the shape of LPC-EGEE" in text
    assert "; Note: the header of the source trace shapley-small.swf follows, each line quoted after '> '" in text
    source = read_swf_header_lines(shipped_scenarios()["shapley"].parent / "shapley-small.swf")
    assert source and all(f"; >{line[1:]}" in text.splitlines() for line in source)
    header = read_swf_header(tmp_path / "r" / "jobs.swf")
    assert header["Version"] == "2.2" and header["MaxProcs"] == str(int(result.sites["procs"].sum()))
    assert header["Computer"].startswith("gridemu, ")
    # The shipped trace asks for twice each job's run time: field 9 keeps it, whatever the run did.
    rows = [[float(x) for x in r] for r in body(tmp_path / "r" / "jobs.swf")]
    size = dict(zip(result.jobs["job_id"] + 1, result.jobs["size"]))
    assert all(r[8] == 2 * size[int(r[0])] for r in rows)
    assert main(["export", str(tmp_path / "r"), "--format", "evalys"]) == 0
    csv = pd.read_csv(tmp_path / "r" / "jobs_evalys.csv")
    assert (csv["requested_time"] > 0).all()


def test_evalys_export_lists_jobs_that_never_started_with_their_state(tmp_path):
    data = {
        "run": {"horizon": 10.0},
        "sites": [{"name": "a", "procs": 1}],
        "workload": {
            "kind": "jobs",
            "list": [
                {"release": 0.0, "size": 20.0, "site": "a", "walltime": 30.0},
                {"release": 1.0, "size": 1.0, "site": "a"},
            ],
        },
    }
    emulator.run(data, out=tmp_path / "r")
    assert main(["export", str(tmp_path / "r"), "--format", "evalys"]) == 0
    csv = pd.read_csv(tmp_path / "r" / "jobs_evalys.csv", dtype={"job_id": str}).set_index("job_id")
    assert csv.loc["1", "final_state"] == "QUEUED" and csv.loc["1", "success"] == 0
    assert pd.isna(csv.loc["1", "starting_time"]) and csv.loc["1", "submission_time"] == 1.0
    assert csv.loc["0", "final_state"] == "RUNNING" and csv.loc["0", "requested_time"] == 30.0
    assert csv.loc["1", "requested_time"] == -1


def test_a_field_is_written_as_swf_writes_numbers():
    from gridemu.emulator.export import _field

    cases = {199.00000000000003: "199", 199.0: "199", 0.000576: "0.000576", -1.0: "-1", -1e-9: "0", 2.5: "2.5"}
    assert {v: _field(v) for v in cases} == cases
