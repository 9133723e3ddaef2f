"""Where jobs ran: the placement sites record (jobs.parquet's proc and proc_set), the Gantt
chart drawn from it, and the exports other tools read (SWF, evalys's jobs CSV)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gridemu.emulator as emulator
from gridemu.emulator.cli import main
from gridemu.emulator.report import gantt_boxes


def processors(row) -> list[int]:
    """The processors of one piece, from proc and proc_set (read independently of the kernel)."""
    if row.proc_set:
        out = []
        for part in row.proc_set.split():
            a, _, b = part.partition("-")
            out.extend(range(int(a), int(b or a) + 1))
        return out
    return list(range(row.proc, row.proc + row.procs))


def assert_valid_placement(jobs: pd.DataFrame, procs: dict[int, int]) -> None:
    ran = jobs[jobs["start"].notna()]
    assert (ran["proc"] >= 0).all()
    spans: dict = {}
    stop = ran["end"].fillna(np.inf)
    for row, end in zip(ran.itertuples(), stop):
        used = processors(row)
        assert len(used) == row.procs and len(set(used)) == row.procs, row.job_id
        assert min(used) == row.proc and max(used) < procs[row.exec_site], row.job_id
        for p in used:
            spans.setdefault((row.exec_site, p), []).append((row.start, end, row.job_id))
    for key, s in spans.items():
        s.sort()
        for (_, a_end, a), (b_start, _, b) in zip(s, s[1:]):
            assert a_end <= b_start, f"jobs {a} and {b} share processor {key[1]} of site {key[0]}"


def test_a_site_of_mixed_speeds_records_the_fastest_free_processors():
    data = {
        "sites": [{"name": "a", "speeds": [1.0, 3.0, 2.0]}],
        "workload": {"kind": "jobs", "list": [{"release": 0.0, "size": 6.0, "site": "a"} for _ in range(4)]},
    }
    t = emulator.run(data).jobs.set_index("job_id")
    assert t["proc"].tolist() == [1, 2, 0, 1]  # fastest first; the fourth waits for processor 1 (free at 2)
    assert t.loc[3, "start"] == 2.0 and (t["proc_set"] == "").all()


def test_rigid_jobs_record_their_processor_sets_without_overlap():
    data = {
        "run": {"seed": 3},
        "sites": {"count": 3, "procs": 16},
        "scheduler": {"name": "list"},
        "workload": {"kind": "rigid", "model": "uni", "jobs": 60},
    }
    jobs = emulator.run(data).jobs
    assert (jobs["proc_set"] != "").sum() > 30  # multi-processor jobs name their sets
    assert_valid_placement(jobs, {0: 16, 1: 16, 2: 16})


@pytest.mark.parametrize(
    "scenario,overrides",
    [
        ("gm-grid", {"workload.jobs": 300}),
        ("quickstart", {"workload.jobs": 2000}),
        ("molba", {}),
        ("faults", {}),
    ],
)
def test_shipped_runs_record_a_valid_placement(scenario, overrides):
    result = emulator.run(scenario, backend="inprocess", overrides=overrides)
    procs = dict(zip(result.sites["site_id"], result.sites["procs"]))
    pieces = result.pieces if len(result.pieces) else result.jobs
    assert_valid_placement(pieces, procs)
    split = result.jobs[result.jobs["fragments"] > 1]
    assert (split["proc"] == -1).all() and (split["proc_set"] == "").all()  # several pieces: see the pieces
    boxes = gantt_boxes(pieces, procs)  # drawn where it was recorded
    started = pieces[pieces["start"].notna()]
    assert boxes.groupby(["job_id", "start"])["count"].sum().sum() == started["procs"].sum()


def test_fcfs_recurrence_sites_record_nothing_and_the_chart_rebuilds_their_placement(tmp_path):
    result = emulator.run(
        "quickstart",
        backend="inprocess",
        overrides={"protocol.name": "local", "workload.jobs": 3000},
        out=tmp_path / "local",
    )
    jobs = result.jobs
    assert (jobs["proc"] == -1).all()  # the recurrence keeps free times, not processors
    procs = dict(zip(result.sites["site_id"], result.sites["procs"]))
    boxes = gantt_boxes(jobs, procs)
    assert len(boxes) >= len(jobs) and boxes["proc"].min() >= 0
    assert main(["report", str(tmp_path / "local"), "--gantt-sites", "0-2"]) == 0
    assert (tmp_path / "local" / "gantt.png").stat().st_size > 0


def test_gantt_sites_option_checks_its_input(tmp_path, capsys):
    emulator.run("quickstart", backend="inprocess", overrides={"workload.jobs": 300}, out=tmp_path / "q")
    assert main(["report", str(tmp_path / "q"), "--gantt-sites", "0-x"]) == 2
    assert "--gantt-sites: '0-x' is not a site id or a range like 0-3" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "q"), "--gantt-sites", "40"]) == 2
    # The sites where jobs ran, named one by one: "0..3" read as if site 2 (without jobs) were one.
    assert "--gantt-sites: no started job ran on site 40 (the sites where jobs ran: 0, 1, 2, 3, 4 and 3 more)" in (
        capsys.readouterr().err
    )
    assert main(["report", str(tmp_path / "q"), "--window", "1e9:2e9"]) == 2
    assert "--window: no job ran between" in capsys.readouterr().err
    # A chart of more panels than it draws, or of more pixels than memory holds: one line
    # before the panels are laid out (a thousand sites did not finish in 5 minutes).
    import gridemu.emulator.report as report_module
    from gridemu.model import inputs

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_module, "GANTT_MAX_SITES", 4)
        assert main(["report", str(tmp_path / "q"), "--gantt-sites", "all"]) == 2
        assert "--gantt-sites: 8 sites in one chart, more than the 4 it draws (a panel each)" in (
            capsys.readouterr().err
        )
        mp.setattr(inputs, "available_memory", lambda: 2**30)
        assert main(["report", str(tmp_path / "q"), "--gantt-sites", "0-3", "--dpi", "2400"]) == 2
        err = capsys.readouterr().err
        assert "--dpi: gantt.png at 2400 dpi, 28,800 x 16,320 pixels, would take about" in err, err
    # Refused before any figure: a failed report leaves the folder as the run wrote it.
    assert not list((tmp_path / "q").glob("*.png"))
    assert main(["report", str(tmp_path / "q"), "--gantt-sites", "all"]) == 0
    assert {p.name for p in (tmp_path / "q").glob("*.png")} == {"report.png", "flow_cdf.png", "gantt.png"}


# ------------------------------------------------------------------------------ exports


def swf_rows(path: Path) -> list[list[float]]:
    rows = [line.split() for line in path.read_text().splitlines() if line and not line.startswith(";")]
    assert all(len(r) == 18 for r in rows)
    return [[float(x) for x in r] for r in rows]


def test_swf_export_has_one_line_of_18_fields_per_job(tmp_path):
    data = {
        "run": {"horizon": 30.0},
        "sites": [{"name": "a", "procs": 2}, {"name": "b", "procs": 1}],
        "workload": {
            "kind": "jobs",
            "list": [
                {"release": 0.0, "size": 5.0, "site": "a", "procs": 2},
                {"release": 1.0, "size": 40.0, "site": "b"},
                {"release": 2.0, "size": 3.0, "site": "a"},
                {"release": 3.0, "size": 1.0, "site": "b"},
            ],
        },
    }
    emulator.run(data, out=tmp_path / "r")
    assert main(["export", str(tmp_path / "r")]) == 0
    text = (tmp_path / "r" / "jobs.swf").read_text()
    assert "; MaxProcs: 3" in text and "; MaxJobs: 4" in text
    rows = {int(r[0]): r for r in swf_rows(tmp_path / "r" / "jobs.swf")}
    # job 1 (id 0): released 0, waits 0, runs 5 on 2 processors, done, user a's organization, queue/partition site a
    assert rows[1][1:5] == [0.0, 0.0, 5.0, 2.0] and rows[1][10] == 1 and rows[1][14:16] == [1.0, 1.0]
    assert rows[3][1:4] == [2.0, 3.0, 3.0]  # waits for a's processors until 5
    assert rows[2][10] == -1 and rows[2][3] == -1  # still running at the horizon (30)
    assert rows[4][10] == 5 and rows[4][2] == -1 and rows[4][4] == -1  # never started
    assert rows[2][11] == 2 and rows[1][11] == 1  # organizations numbered from 1


def test_evalys_export_numbers_processors_across_sites(tmp_path, capsys):
    data = {
        "run": {"seed": 3},
        "sites": {"count": 3, "procs": 16},
        "scheduler": {"name": "list"},
        "workload": {"kind": "rigid", "model": "uni", "jobs": 40},
    }
    result = emulator.run(data, out=tmp_path / "r")
    assert main(["export", str(tmp_path / "r"), "--format", "evalys", "--out", str(tmp_path / "jobs.csv")]) == 0
    csv = pd.read_csv(tmp_path / "jobs.csv", dtype={"job_id": str, "allocated_resources": str})
    for col in (
        "job_id",
        "submission_time",
        "requested_number_of_resources",
        "starting_time",
        "execution_time",
        "finish_time",
        "waiting_time",
        "turnaround_time",
        "stretch",
        "allocated_resources",
        "success",
    ):
        assert col in csv.columns
    jobs = result.jobs.set_index("job_id")
    for row in csv.itertuples():
        used = []
        for part in row.allocated_resources.split():
            a, _, b = part.partition("-")
            used.extend(range(int(a), int(b or a) + 1))
        job = jobs.loc[int(row.job_id)]
        assert len(used) == row.requested_number_of_resources == job.procs
        site = int(job.exec_site)
        assert all(16 * site <= p < 16 * (site + 1) for p in used)  # site k's processors follow site k-1's
    assert (csv["finish_time"] - csv["starting_time"] == csv["execution_time"]).all()
    capsys.readouterr()
    assert main(["export", str(tmp_path / "r"), "--out", str(tmp_path)]) == 2  # a folder is not a file
    assert f"--out: {tmp_path} is a folder; give the file to write" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'}: no such folder" in capsys.readouterr().err
    assert main(["export", str(tmp_path)]) == 2
    assert "not a gridemu run folder" in capsys.readouterr().err
