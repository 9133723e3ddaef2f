"""``gridemu export``: a finished run's jobs in the formats other tools read.

* ``swf``: the Standard Workload Format of the Parallel Workloads Archive (version 2.2), one
  line per job and its 18 fields, so the archive's tools and any SWF reader take a run as a
  trace. Times are the run's virtual time (seconds for SWF workloads), from its 0. The job
  number is the job id + 1 (SWF counts from 1); user = organization, group = group, queue =
  submitting site, partition = executing site, each numbered from 1 in the run's order
  (their names are in the header). Status 1: finished; 0: lost in a crash; 5: never started
  by the end of the run (wait, run time and processors -1); a job still running at the end
  has status -1 and run time -1. Requested time is the input's (an SWF trace's field 9, a job
  list's ``walltime``), -1 where the input had none. A run of an SWF trace carries the trace's
  header lines on after gridemu's own (the Parallel Workloads Archive asks that anything
  derived from a trace keeps them), each quoted after ``; >`` so that its keys are not read
  as this file's. Fields the emulator has no notion of are -1.
* ``evalys``: the jobs CSV Batsim writes and evalys's ``JobSet.from_csv`` reads: one row per
  piece that ran (whole jobs, or the pieces of split jobs), ``allocated_resources`` as an
  interval set of global processor numbers ("0-3 7": each site's processors numbered after
  the previous site's, in site id order; ``metadata`` names the owner and the site). Which
  processors a job used on a site of identical processors is the placement
  ``gridemu report --gantt`` draws (``emulator.report.gantt_boxes``). A piece still running at
  the end has ``success`` 0, ``final_state`` RUNNING and the run's last instant as its finish
  time.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from gridemu.emulator.report import gantt_boxes, load_run
from gridemu.emulator.scenario import load_scenario, read_scenario_file
from gridemu.model.errors import GridemuError
from gridemu.scenarios.swf import read_swf_header_lines
from gridemu.scenarios.workload import generate_jobs
from gridemu.sites.results import interval_set

FORMATS = ("swf", "evalys")
#: Workloads whose jobs may carry a requested time (``walltime``); drawn ones never do.
WITH_REQUESTED_TIME = ("swf", "jobs", "csv", "streams")


def source_trace(run_dir: Path) -> tuple[dict, str] | None:
    """The run's scenario (as saved in ``scenario.toml``) and where it was read, or None."""
    path = run_dir / "scenario.toml"
    return read_scenario_file(path) if path.is_file() else None


def requested_times(run_dir: Path, jobs: pd.DataFrame) -> tuple[np.ndarray, str | None]:
    """Each job's requested time (NaN where the input gave none) and, when it cannot be had,
    why. The job table does not keep it (its columns are what the run did): the run's
    workload is read again from its saved scenario, the same jobs in the same id order."""
    unknown = np.full(len(jobs), np.nan)
    saved = source_trace(run_dir)
    if saved is None or saved[0].get("workload", {}).get("kind") not in WITH_REQUESTED_TIME:
        return unknown, None
    try:
        table, _ = generate_jobs(load_scenario(saved[0], source=saved[1]))
    except GridemuError as exc:  # e.g. the trace was moved since the run
        return unknown, f"requested times unknown: the workload cannot be read again ({exc})"
    if len(table) != len(jobs) or not np.array_equal(table["release"], jobs["release"].to_numpy()):
        return unknown, "requested times unknown: the workload read again is not the run's"
    return table["walltime"][jobs["job_id"].to_numpy()], None


def trace_header(run_dir: Path) -> list[str]:
    """The header lines of the SWF trace the run read, with a line naming it; none otherwise."""
    saved = source_trace(run_dir)
    wl = saved[0].get("workload", {}) if saved else {}
    if wl.get("kind") != "swf" or not Path(str(wl.get("path", ""))).is_file():
        return []
    # Each line quoted after "; >": its "; MaxProcs:", "; Version:"... are the trace's, not
    # this file's, and a reader that takes a key's last value (or all of them) would take them
    # as this file's (gridemu's own reader joins a key given twice; export wrote both).
    lines = [";" + " >" + line[1:] for line in read_swf_header_lines(wl["path"])]
    return [
        f"; Note: the header of the source trace {Path(wl['path']).name} follows, each line quoted after '> '"
    ] + lines


def _number(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Categories numbered from 1 in their order, and their names."""
    cat = values.astype("category")
    return cat.cat.codes.to_numpy() + 1, [str(c) for c in cat.cat.categories]


def swf_text(
    jobs: pd.DataFrame,
    sites: pd.DataFrame,
    summary: dict,
    requested: np.ndarray | None = None,
    source_header: list[str] | None = None,
) -> str:
    """The SWF trace of a run; ``requested``: each job's requested time (NaN: unknown);
    ``source_header``: lines carried on after gridemu's own header."""
    g = summary["global"]
    user, users = _number(jobs["owner"])
    group, groups = _number(jobs["group"])
    state = jobs["state"].astype(str).to_numpy()
    release = jobs["release"].to_numpy()
    start, end = jobs["start"].to_numpy(), jobs["end"].to_numpy()
    started = ~np.isnan(start)
    wait = np.where(started, start - release, -1.0)
    run = np.where(~np.isnan(end), end - start, -1.0)
    procs = jobs["procs"].to_numpy()
    status = np.select([state == "done", state == "lost", ~started], [1, 0, 5], -1)
    walltime = np.full(len(jobs), np.nan) if requested is None else requested
    rows = np.column_stack(
        [
            jobs["job_id"].to_numpy() + 1,
            release,
            wait,
            run,
            np.where(started, procs, -1),
            np.full(len(jobs), -1),
            np.full(len(jobs), -1),
            procs,
            np.where(np.isnan(walltime), -1, walltime),
            np.full(len(jobs), -1),
            status,
            user,
            group,
            np.full(len(jobs), -1),
            jobs["submit_site"].to_numpy() + 1,
            jobs["exec_site"].to_numpy() + 1,
            np.full(len(jobs), -1),
            np.full(len(jobs), -1),
        ]
    )
    header = [
        "; Version: 2.2",
        f"; Computer: gridemu, {g['sites']} sites, protocol {g['protocol']}, seed {g['seed']}",
        f"; MaxProcs: {int(sites['procs'].sum())}",
        f"; MaxJobs: {len(jobs)}",
        f"; Note: times in {g.get('time_unit', 'time units')} of the run's virtual time",
        f"; Note: users (organizations) 1..{len(users)}: {', '.join(users)}",
        f"; Note: groups 1..{len(groups)}: {', '.join(groups)}",
        "; Note: queue = submitting site id + 1, partition = executing site id + 1",
        *(source_header or []),
    ]
    body = [" ".join(_field(v) for v in row) for row in rows.tolist()]
    return "\n".join(header + body) + "\n"


def _field(v: float) -> str:
    """A number as SWF writes it: an integer without a point, else at most six decimals.
    Rounded first: 199.00000000000003 (an end minus a start) is 199, not "199." (the zeros
    stripped, the point left), which a reader of integer fields refuses."""
    text = f"{v:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def evalys_frame(jobs: pd.DataFrame, sites: pd.DataFrame, requested: np.ndarray | None = None) -> pd.DataFrame:
    """One row per piece that ran, then one per job that never started (see module doc);
    ``requested``: each job's requested time, NaN where unknown (written -1)."""
    pieces = jobs.attrs.get("pieces", jobs)
    procs = dict(zip(sites["site_id"], sites["procs"]))
    offset = dict(zip(sites["site_id"], np.cumsum([0] + list(sites["procs"]))[:-1]))
    boxes = gantt_boxes(pieces, procs)
    key = ["job_id", "start"]
    boxes["first"] = boxes["proc"] + boxes["site"].map(offset)
    boxes["text"] = [interval_set(list(range(a, a + c))) for a, c in zip(boxes["first"], boxes["count"])]
    alloc = boxes.groupby(key, sort=False)["text"].agg(" ".join)
    # Pieces (fragments.parquet) carry no release: each takes its job's.
    wall = np.full(len(jobs), np.nan) if requested is None else requested
    per_job = pd.DataFrame({"release": jobs["release"].to_numpy(), "walltime": wall}, index=jobs["job_id"].to_numpy())
    # A split job's pieces numbered 1, 2, ... within it (the fragment ids are run-unique
    # numbers); a whole job keeps its bare id.
    number = None
    if "fragment" in pieces:
        by_job = pieces.groupby("job_id", sort=False)
        number = (by_job.cumcount() + 1).where(by_job["job_id"].transform("size") > 1, 0)
    ran = pieces[pieces["start"].notna()].copy()
    ran["allocated_resources"] = [alloc[(j, s)] for j, s in zip(ran["job_id"], ran["start"])]
    ran["release"] = per_job["release"].reindex(ran["job_id"]).to_numpy()
    frag = number[ran.index] if number is not None else pd.Series(0, index=ran.index)
    # A piece still running at the end of the run is drawn up to the last instant it reached.
    finish = ran["end"].fillna(np.nanmax(ran[["start", "end"]].to_numpy())) if len(ran) else ran["end"]
    never = jobs[jobs["start"].isna()]
    out = pd.DataFrame(
        {
            "job_id": [f"{j}" if not f else f"{j}.{f}" for j, f in zip(ran["job_id"], frag)]
            + [f"{j}" for j in never["job_id"]],
            "workload_name": "gridemu",
            "submission_time": np.concatenate([ran["release"].to_numpy(), never["release"].to_numpy()]),
            "requested_number_of_resources": np.concatenate([ran["procs"].to_numpy(), never["procs"].to_numpy()]),
            "requested_time": np.nan_to_num(
                per_job["walltime"].reindex(np.concatenate([ran["job_id"], never["job_id"]])).to_numpy(), nan=-1.0
            ),
            "success": np.concatenate([(ran["state"].astype(str) == "done").astype(int), np.zeros(len(never), int)]),
            "final_state": [
                str(s).upper() for s in np.concatenate([ran["state"].astype(str), never["state"].astype(str)])
            ],
            "starting_time": _then_nan(ran["start"], never),
            "execution_time": _then_nan(finish - ran["start"], never),
            "finish_time": _then_nan(finish, never),
            "waiting_time": _then_nan(ran["start"] - ran["release"], never),
            "turnaround_time": _then_nan(finish - ran["release"], never),
            "stretch": _then_nan((finish - ran["release"]) / (finish - ran["start"]), never),
            "allocated_resources": list(ran["allocated_resources"]) + [""] * len(never),
            "consumed_energy": -1.0,
            "metadata": [f"owner={o};site={s}" for o, s in zip(ran["owner"], ran["exec_site"])]
            + [f"owner={o};site={s}" for o, s in zip(never["owner"], never["submit_site"])],
        }
    )
    return out


def _then_nan(values: pd.Series, never: pd.DataFrame) -> np.ndarray:
    """The pieces' values, then NaN (an empty CSV field) for each job that never started."""
    return np.concatenate([values.to_numpy(dtype=float), np.full(len(never), np.nan)])


def check_file(path: Path, overwrite: bool = False) -> Path:
    """``--out``, checked before any work: not a link, not a folder, an existing file only
    with ``overwrite`` (gridemu replaces no file of the user's unasked), in a folder that exists."""
    if path.is_symlink():
        raise GridemuError(f"--out: {path} is a symbolic link: give the file itself (gridemu replaces no link)")
    if path.is_dir():
        raise GridemuError(f"--out: {path} is a folder; give the file to write")
    if path.exists() and not overwrite:
        raise GridemuError(f"--out: {path} exists: add --overwrite to replace it")
    if not path.parent.is_dir():
        raise GridemuError(f"--out: {path.parent} is not a folder")
    return path


def _write(path: Path, text: str) -> None:
    """All or nothing: a half-written file never replaces the old one."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.partial-", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # as a file opened for writing gets, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # mkstemp's, just made
        raise


def export(run_dir: Path, fmt: str, out: Path | None = None) -> Path:
    """Write the run's jobs as ``fmt`` (:data:`FORMATS`); returns the file written."""
    jobs, sites, _ts, summary, _outages = load_run(run_dir)
    requested, why = requested_times(run_dir, jobs)
    if fmt == "swf":
        path = out or run_dir / "jobs.swf"
        header = trace_header(run_dir) + ([f"; Note: {why}"] if why else [])
        _write(path, swf_text(jobs, sites, summary, requested, header))
    else:
        path = out or run_dir / "jobs_evalys.csv"
        _write(path, evalys_frame(jobs, sites, requested).to_csv(index=False, float_format="%.9g"))
    return path
