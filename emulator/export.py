"""``gridemu export``: a finished run's jobs in the formats other tools read.

* ``swf``: the Standard Workload Format of the Parallel Workloads Archive (version 2.2), one
  line per job and its 18 fields, so the archive's tools and any SWF reader take a run as a
  trace. Times are the run's virtual time (seconds for SWF workloads), from its 0. The job
  number is the job id + 1 (SWF counts from 1); user = organization, group = group, queue =
  submitting site, partition = executing site, each numbered from 1 in the run's order
  (their names are in the header). Status 1: finished; 0: lost in a crash; 5: never started
  by the end of the run (wait, run time and processors -1); a job still running at the end
  has status -1 and run time -1. Fields the emulator has no notion of are -1.
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
from gridemu.model.errors import GridemuError
from gridemu.sites.results import interval_set

FORMATS = ("swf", "evalys")


def _number(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Categories numbered from 1 in their order, and their names."""
    cat = values.astype("category")
    return cat.cat.codes.to_numpy() + 1, [str(c) for c in cat.cat.categories]


def swf_text(jobs: pd.DataFrame, sites: pd.DataFrame, summary: dict) -> str:
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
    walltime = jobs["walltime"].to_numpy() if "walltime" in jobs else np.full(len(jobs), np.nan)
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
    ]
    body = [" ".join(_field(v) for v in row) for row in rows.tolist()]
    return "\n".join(header + body) + "\n"


def _field(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.6f}".rstrip("0")


def evalys_frame(jobs: pd.DataFrame, sites: pd.DataFrame) -> pd.DataFrame:
    pieces = jobs.attrs.get("pieces", jobs)
    procs = dict(zip(sites["site_id"], sites["procs"]))
    offset = dict(zip(sites["site_id"], np.cumsum([0] + list(sites["procs"]))[:-1]))
    boxes = gantt_boxes(pieces, procs)
    key = ["job_id", "start"]
    boxes["first"] = boxes["proc"] + boxes["site"].map(offset)
    boxes["text"] = [interval_set(list(range(a, a + c))) for a, c in zip(boxes["first"], boxes["count"])]
    alloc = boxes.groupby(key, sort=False)["text"].agg(" ".join)
    ran = pieces[pieces["start"].notna()].copy()
    ran["allocated_resources"] = [alloc[(j, s)] for j, s in zip(ran["job_id"], ran["start"])]
    frag = ran["fragment"] if "fragment" in ran else pd.Series(0, index=ran.index)
    # A piece still running at the end of the run is drawn up to the last instant it reached.
    finish = ran["end"].fillna(np.nanmax(ran[["start", "end"]].to_numpy()))
    out = pd.DataFrame(
        {
            "job_id": [f"{j}" if not f else f"{j}.{f}" for j, f in zip(ran["job_id"], frag)],
            "workload_name": "gridemu",
            "submission_time": ran["release"],
            "requested_number_of_resources": ran["procs"],
            "requested_time": ran["walltime"] if "walltime" in ran else -1.0,
            "success": (ran["state"].astype(str) == "done").astype(int),
            "final_state": ran["state"].astype(str).str.upper(),
            "starting_time": ran["start"],
            "execution_time": finish - ran["start"],
            "finish_time": finish,
            "waiting_time": ran["start"] - ran["release"],
            "turnaround_time": finish - ran["release"],
            "stretch": (finish - ran["release"]) / (finish - ran["start"]),
            "allocated_resources": ran["allocated_resources"],
            "consumed_energy": -1.0,
            "metadata": [f"owner={o};site={s}" for o, s in zip(ran["owner"], ran["exec_site"])],
        }
    )
    return out.reset_index(drop=True)


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
    jobs, sites, _ts, summary = load_run(run_dir)
    if fmt == "swf":
        path = out or run_dir / "jobs.swf"
        _write(path, swf_text(jobs, sites, summary))
    else:
        path = out or run_dir / "jobs_evalys.csv"
        _write(path, evalys_frame(jobs, sites).to_csv(index=False, float_format="%.9g"))
    return path
