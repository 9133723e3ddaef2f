"""Result tables and files of a run (DESIGN.md, "Scenarios, CLI and results").

``jobs.parquet``: one row per job, the columns of ``JOB_COLUMNS`` (docs/results-files.md
says what each means; states: ``model.jobs.STATES``).
``fragments.parquet``: where some job was split (divisible load), one row per piece.
``sites.parquet``: one row per site: site_id, name, owner, procs, speed_mean, events,
cpu_seconds (CPU time of its event loop: the cost of its own decisions), messages_sent,
messages_received, sent_<kind> for every message kind of the protocol, jobs_executed,
busy, utilization.
``timeseries.parquet``: what the protocol records (averaging: one row per site and round).
``usage.parquet``: each site's usage ledger: processor-time of finished jobs per group.
``outages.parquet``: with ``[faults]``, one row per crash: site_id, down, up.
``summary.json``: ``organizations`` (per organization) and ``global`` figures, and for some
protocols a ``protocol`` section; ``fairness`` and a scheduler section's (``policy``) where they apply.
``scenario.toml``: the resolved scenario, every default filled in (a ``[sites]`` table kept as one).
``<name>.csv``: the protocol's result tables (``Report.tables``; fairshare: ``policy.csv``).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa

from gridemu.brokers import registry
from gridemu.brokers.metrics import score
from gridemu.emulator.engine import RawRun
from gridemu.emulator.provenance import toml_header
from gridemu.emulator.scenario_toml import to_toml
from gridemu.emulator.stats import tail
from gridemu.model.errors import GridemuError, first_few
from gridemu.model.jobs import JOB_DTYPE, STATE_CODE, STATES, columns_in_piece_order
from gridemu.sites.faults import FAULT_COLUMNS
from gridemu.sites.results import site_runs_in_order

JOB_COLUMNS = [
    "job_id",
    "owner",
    "group",
    "release",
    "size",
    "procs",
    "submit_site",
    "exec_site",
    "start",
    "end",
    "migrations",
    "state",
    "deadline",
    "fragments",
    "proc",
    "proc_set",
]
PIECE_COLUMNS = [
    "job_id",
    "fragment",
    "owner",
    "submit_site",
    "exec_site",
    "size",
    "procs",
    "start",
    "end",
    "deadline",
    "state",
    "proc",
    "proc_set",
]


@dataclass
class RunResult:
    """What ``emulator.run`` returns: the three tables as DataFrames and the summary dict."""

    jobs: pd.DataFrame
    sites: pd.DataFrame
    timeseries: pd.DataFrame
    usage: pd.DataFrame
    summary: dict[str, Any]
    scenario: dict[str, Any]
    #: One row per piece (``PIECE_COLUMNS``); the same rows as ``jobs`` unless some job was split.
    pieces: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: What ``scenario.toml`` holds, where it differs from ``scenario`` (every site listed):
    #: sites drawn from a ``[sites]`` table are kept as that table (``Scenario.saved_data``).
    saved_scenario: dict[str, Any] | None = None
    #: One row per crash (``[faults]`` runs: outages.parquet), else empty.
    outages: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Where the files are: ``out`` of ``emulator.run(..., out=...)`` (or the folder beside
    #: it that took them when ``out`` gained files of someone else's during the run), of
    #: :meth:`write` and of :func:`resume`, or the folder :func:`load` read.
    folder: Path | None = None

    def write(self, out: str | Path, overwrite: bool = False) -> Path:
        """Write the result files into ``out``, all or nothing: they are written to a hidden
        folder beside it and renamed to ``out`` once complete. A folder that already holds a
        run's results is refused unless ``overwrite`` (then it is replaced whole: no file of
        the old run stays beside the new ones)."""
        self.folder = write_whole(out, self._write_files, overwrite)
        return self.folder

    def _write_files(self, folder: Path) -> None:
        self.jobs.to_parquet(folder / "jobs.parquet", index=False)
        self.sites.to_parquet(folder / "sites.parquet", index=False)
        if len(self.timeseries):
            self.timeseries.to_parquet(folder / "timeseries.parquet", index=False)
        self.usage.to_parquet(folder / "usage.parquet", index=False)
        if "down" in self.outages:  # a run with faults, even one without a crash
            self.outages.to_parquet(folder / "outages.parquet", index=False)
        if len(self.pieces) != len(self.jobs):
            self.pieces.to_parquet(folder / "fragments.parquet", index=False)
        (folder / "summary.json").write_text(summary_text(self.summary))
        (folder / "scenario.toml").write_text(
            toml_header(self.summary.get("provenance"))
            + to_toml(self.scenario if self.saved_scenario is None else self.saved_scenario)
        )
        for table in registry.report_of(self.summary["global"]["protocol"]).result_tables(self.summary):
            table.frame.to_csv(folder / f"{table.name}.csv", index=False)


def summary_text(summary: dict[str, Any]) -> str:
    """``summary.json``'s text: indented, each organization's figures on one line. A
    million-site run's organizations indented field by field took 11 s to write (json's
    pure-Python encoder: ``indent`` turns its C encoder off) and 349 MB; a line each goes
    through the C encoder, 4.6 s and 283 MB, and stays readable line by line."""
    encode = json.JSONEncoder(default=json_default).encode
    parts = []
    for key, value in summary.items():
        if key == "organizations" and isinstance(value, dict) and value:
            text = "{\n" + ",\n".join(f"    {encode(name)}: {encode(v)}" for name, v in value.items()) + "\n  }"
        else:
            text = json.dumps(value, indent=2, default=json_default).replace("\n", "\n  ")
        parts.append(f"  {encode(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def read_table(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises its own types for a damaged or foreign file
        raise GridemuError(f"{path}: not a readable Parquet table ({str(exc).splitlines()[0]})") from None


_NUMBER = (int, float, type(None))
#: What every run's summary holds and report and export read without a default: a summary
#: edited or damaged into another shape is one line naming the key, not a KeyError.
_SUMMARY_GLOBAL = {"protocol": str, "sites": int, "seed": int, "jobs_by_state": dict}
_SUMMARY_ORG = {"jobs": int, "jobs_done": int, "jobs_migrated": int, "mean_flow_time": _NUMBER, "makespan": _NUMBER}
_SUMMARY_FAULTS = ("crashes", "jobs_killed", "jobs_lost", "messages_lost", "messages_late")


def check_summary(summary: object, path: Path) -> None:
    def bad(key: str, what: str) -> GridemuError:
        return GridemuError(f"{path}: not a gridemu summary ({key}: {what})")

    def table(value: object, key: str, fields: dict[str, type | tuple[type, ...]]) -> None:
        if not isinstance(value, dict):
            raise bad(key, "not a table")
        for name, kind in fields.items():
            if not isinstance(value.get(name), kind) or isinstance(value.get(name), bool):
                raise bad(f"{key}.{name}", "missing or of the wrong type")

    table(summary, "summary", {"global": dict, "organizations": dict})
    assert isinstance(summary, dict)
    g = summary["global"]
    table(g, "global", _SUMMARY_GLOBAL)
    counts = {"global.jobs_by_state": g["jobs_by_state"], "global.messages": g.get("messages") or {}}
    if "faults" in g:
        table(g["faults"], "global.faults", dict.fromkeys(_SUMMARY_FAULTS, int))
    for key, value in counts.items():
        table(value, key, {})
        if not all(isinstance(v, int) for v in value.values()):
            raise bad(key, "counts must be integers")
    for name, org in summary["organizations"].items():
        table(org, f"organizations.{name}", _SUMMARY_ORG)
    if summary.get("protocol") is not None:
        table(summary["protocol"], "protocol", {"name": str})


def load(folder: str | Path) -> RunResult:
    """A run's results from its folder (what :meth:`RunResult.write` wrote), one clear error
    when the folder is not a run's."""
    from gridemu.emulator.scenario import read_scenario_file

    folder = Path(folder)
    if not folder.exists():
        raise GridemuError(f"{folder}: no such folder")
    missing = [name for name in ("summary.json", "jobs.parquet") if not (folder / name).is_file()]
    if missing:
        if marked(folder) == "sweep":
            raise GridemuError(
                f"{folder}: a gridemu sweep folder, not a run's: its runs keep no job table (runs.parquet and "
                "orgs.parquet hold their figures; gridemu report reads it)"
            )
        verb = "is" if len(missing) == 1 else "are"
        raise GridemuError(f"{folder}: not a gridemu run folder ({' and '.join(missing)} {verb} missing)")
    try:
        summary = json.loads((folder / "summary.json").read_text())
    except (ValueError, OSError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise GridemuError(f"{folder / 'summary.json'}: not a readable summary ({exc})") from None
    jobs = read_table(folder / "jobs.parquet")
    check_summary(summary, folder / "summary.json")
    optional = {
        name: read_table(folder / f"{name}.parquet") if (folder / f"{name}.parquet").exists() else pd.DataFrame()
        for name in ("timeseries", "usage", "fragments", "outages")
    }
    scenario = read_scenario_file(folder / "scenario.toml")[0] if (folder / "scenario.toml").exists() else {}
    return RunResult(
        jobs=jobs,
        sites=read_table(folder / "sites.parquet"),
        timeseries=optional["timeseries"],
        usage=optional["usage"],
        summary=summary,
        scenario=scenario,
        pieces=optional["fragments"] if len(optional["fragments"]) else whole_pieces(jobs),
        outages=optional["outages"],
        folder=folder,
    )


def whole_pieces(jobs: pd.DataFrame, fragment: Any = None) -> pd.DataFrame:
    """The piece table of a run where no job was split: each job one piece, in
    ``PIECE_COLUMNS``, sharing the job table's columns (a second labelled copy would be the
    run's largest object again); ``fragment``: the pieces' own column, else 0 (a folder
    without fragments.parquet)."""
    if fragment is None:
        fragment = np.zeros(len(jobs), dtype=np.int64)
    cols = {c: (fragment if c == "fragment" else jobs[c]) for c in PIECE_COLUMNS}
    return pd.DataFrame(cols, copy=False)


def write_whole(
    out: str | Path,
    write: "Callable[[Path], None]",
    overwrite: bool = False,
    results: tuple[str, ...] = (),
    kind: str = "run",
) -> Path:
    """Result files written all or nothing: ``write(folder)`` fills a hidden folder beside
    ``out`` (with the marker of a ``kind`` folder), which is then renamed to ``out`` (an
    earlier folder of that kind only with ``overwrite``; see :func:`check_out`)."""
    out = check_out(out, overwrite, results or RESULT_FILES, kind)
    tmp = partial_folder(out)
    try:
        write_marker(tmp, kind)
        write(tmp)
        _replace(tmp, out, kind)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # made by mkdtemp above: ours
        raise
    return out


#: Files that make a folder a run's results (``check_out`` refuses to mix two runs).
RESULT_FILES = ("summary.json", "jobs.parquet", "sites.parquet", "scenario.toml")
#: The marker gridemu writes into every folder it makes (a run's, a sweep's): only a folder
#: that holds it may be replaced (docs/results-files.md).
MARKER = ".gridemu-run"
MARKER_FORMAT = 1
#: Held (flock) by the process that writes into a run folder while it runs (resume, run --checkpoint).
LOCK = ".gridemu-lock"
#: What gridemu writes into its folders, besides the marker: a folder holding anything else
#: is the user's too and is never replaced. Figures (``*.png``, ``*.pdf``, ``*.svg``) are report's; hidden
#: ``.NAME.partial...`` files are gridemu's own files half-written when a process died.
OWN_FILES = frozenset(
    (
        *RESULT_FILES,
        "fragments.parquet",
        "timeseries.parquet",
        "usage.parquet",
        "outages.parquet",
        "checkpoint.gridemu",
        LOCK,
        "jobs.swf",
        "jobs_evalys.csv",
        "runs.parquet",
        "runs.csv",
        "orgs.parquet",
        "table.csv",
        "failures.csv",
        "scores.csv",
        "stats.csv",
        "paired.csv",
        "policy.csv",
        "sweep.json",
    )
)


def write_marker(folder: Path, kind: str = "run") -> None:
    """Mark ``folder`` as made by gridemu (a ``kind`` folder: ``run`` or ``sweep``)."""
    (folder / MARKER).write_text(json.dumps({"gridemu": kind, "format": MARKER_FORMAT}) + "\n")


def marked(folder: Path) -> str | None:
    """The kind of gridemu folder ``folder`` is (its marker), or None when it is none."""
    path = folder / MARKER
    if path.is_symlink() or not path.is_file():
        return None
    try:
        text = path.read_bytes()[:4096].decode()
        mark = json.loads(text)
    except (OSError, ValueError):
        return None
    if not isinstance(mark, dict) or mark.get("format") != MARKER_FORMAT or mark.get("gridemu") not in ("run", "sweep"):
        return None
    return mark["gridemu"]


def check_out(
    out: str | Path, overwrite: bool = False, results: tuple[str, ...] = RESULT_FILES, kind: str = "run"
) -> Path:
    """The result folder ``out``, checked before any work. It may be missing, an empty folder
    or a gridemu ``kind`` folder (its marker) holding only gridemu's files, and one that
    holds ``results`` of an earlier run only with ``overwrite``. Anything else (a symbolic
    link, a file, the working directory or a folder above it, a folder of other files) is
    refused: gridemu never replaces what it did not write. Its parent must be writable."""
    out = Path(out)
    if out.is_symlink():
        raise GridemuError(f"--out: {out} is a symbolic link: give the folder itself (gridemu replaces no link)")
    if out.exists() and not out.is_dir():
        raise GridemuError(f"--out: {out} exists and is not a folder")
    here = Path.cwd().resolve()
    if out.name in ("", ".", "..") or out.resolve() in (here, *here.parents):
        raise GridemuError(f"--out: {out} is the working directory or a folder above it: name a folder inside it")
    if out.is_dir():
        try:
            entries = sorted(p.name for p in out.iterdir())
        except OSError as exc:
            raise GridemuError(f"--out: cannot read {out}: {exc.strerror or exc}") from None
        if entries:
            _check_own(out, entries, overwrite, results, kind)
    parent = out.absolute().parent
    _make_folder(parent, out)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise GridemuError(f"--out: cannot write in {parent}")
    return out


def partial_folder(out: Path) -> Path:
    """A new hidden folder beside ``out`` to fill before it is renamed to ``out``, with the
    permissions of any folder the user makes (mkdtemp makes it private, 0700)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    tmp.chmod(0o777 & ~_umask())
    return tmp


def _umask() -> int:
    """The process's umask (reading it means setting it: set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _replace(tmp: Path, out: Path) -> None:
    """Rename the complete ``tmp`` to ``out``; an existing ``out`` is moved aside first and
    removed once the new one is in place."""


class ForeignEntries(GridemuError):
    """A result folder holds what gridemu did not write: it is never replaced."""


def _check_own(out: Path, entries: list[str], overwrite: bool, results: tuple[str, ...], kind: str) -> None:
    """A non-empty ``out``: a gridemu ``kind`` folder of gridemu's files, its results kept unless ``overwrite``."""
    found = marked(out)
    if found is None:
        raise ForeignEntries(
            f"--out: {out} holds files gridemu did not write ({entries[0]}) and is no gridemu run folder "
            f"(no {MARKER}): name a new or empty folder"
        )
    if found != kind:
        raise GridemuError(f"--out: {out} is a gridemu {found} folder, not a {kind} folder: name another folder")
    foreign = sorted(e for e in entries if not _own(e))
    if foreign:
        shown = first_few([e + ("/" if (out / e).is_dir() else "") for e in foreign])
        raise ForeignEntries(
            f"--out: {out} holds what gridemu did not write ({shown}): move it away or name another folder"
        )
    held = [f for f in results if f in entries]
    if held and not overwrite:
        raise GridemuError(
            f"--out: {out} holds the results of an earlier {kind} ({held[0]}): choose another folder or add --overwrite"
        )


def _own(name: str) -> bool:
    return (
        name == MARKER
        or name in OWN_FILES
        or name.endswith((".png", ".pdf", ".svg"))  # report's figures, in any --format
        or (name.startswith(".") and ".partial" in name)
    )


def _replace(tmp: Path, out: Path, kind: str = "run") -> None:
    """Rename the complete ``tmp`` to ``out``; an existing ``out`` (checked again: a gridemu
    folder, see :func:`check_out`) is moved aside first and removed once the new one is in place."""
    old = None
    if out.is_dir() and not out.is_symlink() and any(out.iterdir()):
        if marked(out) != kind:  # changed since check_out: never remove what is not ours
            raise GridemuError(f"--out: {out} is no longer a gridemu {kind} folder: it is kept as it is")
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        out.replace(old / out.name)
    os.replace(tmp, out)  # an empty folder of that name is replaced too
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)  # mkdtemp's, holding the marked folder moved aside


@contextmanager
def locked(folder: Path, what: str) -> Iterator[None]:
    """Hold an exclusive lock on the run folder ``folder`` (its ``LOCK`` file) for the block:
    a second process that writes into it (``resume``, ``run --checkpoint``) is refused at once."""
    try:
        fd = os.open(folder / LOCK, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise GridemuError(f"{what}: cannot lock {folder}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise GridemuError(
                f"{what}: {folder} is in use by another gridemu process (it holds {folder / LOCK}): wait for it to end"
            ) from None
        except OSError as exc:  # a file system without locks (some network and FUSE ones): go on, said
            print(
                f"gridemu: warning: {what}: cannot lock {folder} ({exc.strerror or exc}): "
                "a second run or resume into it would not be refused",
                file=sys.stderr,
            )
        yield
    finally:
        os.close(fd)  # the lock goes with it


#: The folders this process made above a result folder (``runs/`` of the default ``--out``):
#: a run stopped before it wrote anything takes back the empty ones (:func:`take_back_parents`).
MADE_PARENTS: set[Path] = set()


def take_back_parents(out: Path) -> None:
    """Remove the folders above ``out`` that this process made and that are empty again
    (rmdir: never one that holds anything)."""
    for parent in out.absolute().parents:
        if parent not in MADE_PARENTS:
            break
        try:
            parent.rmdir()
        except OSError:
            break
        MADE_PARENTS.discard(parent)


def _make_folder(folder: Path, out: Path) -> None:
    """Create ``folder`` (and its parents) for the result folder ``out``, or one clear error."""
    missing = [p for p in (folder.absolute(), *folder.absolute().parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        MADE_PARENTS.update(missing)
    except (FileExistsError, NotADirectoryError):
        raise GridemuError(f"--out: cannot create {out}: {folder} or a folder above it is a file") from None
    except OSError as exc:
        raise GridemuError(f"--out: cannot create {out}: {exc.strerror or exc}") from None


def json_default(value: Any) -> Any:
    """numpy numbers as JSON numbers (summary.json, and what experiment scripts keep)."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    raise TypeError(type(value).__name__)


def piece_table(raw: RawRun) -> pd.DataFrame:
    """One row per piece of work a site holds at the end (a job, or a fragment of a divisible one).

    Takes the job columns out of ``raw.shard_results`` (call it once). Codes stay numeric (owner,
    group, state); sorted by job id and fragment id.
    """
    # Taken out of the shard results: the columns below are their only copy from here on.
    parts = [r.pop("jobs") for r in raw.shard_results]
    parts = [p for p in parts if p]
    flight = [b for b in raw.in_flight if len(b)]
    if flight:
        # Jobs inside transfer messages still travelling at the horizon.
        batch = np.concatenate(flight)
        batch = batch[batch["mtype"] == 0]
        extra = {name: batch[f"job_{name}"] for name in JOB_DTYPE.names}
        extra.update(
            exec_site=batch["dst"].astype(np.int32),
            start=np.full(len(batch), np.nan),
            end=np.full(len(batch), np.nan),
            state=np.full(len(batch), STATE_CODE["transferred"], dtype=np.int8),
            offered=np.zeros(len(batch), dtype=bool),
            proc=np.full(len(batch), -1, dtype=np.int32),
            proc_set=np.full(len(batch), "", dtype=object),
        )
        parts.append(extra)
    if not parts:
        return pd.DataFrame({})
    # Sorted and filtered as arrays, one copy of each column at most: the table is the run's
    # largest object (10M jobs: a pandas sort_values and a drop would each copy it again).
    cols = columns_in_piece_order(parts)
    offered = cols.pop("offered")
    if offered.any():
        # A piece offered to another site is held by its sender until the answer comes; if
        # the receiver took it and the grant was still travelling at the end, it is the receiver's.
        ids, frag = cols["job_id"], cols["fragment"]
        same = (ids[1:] == ids[:-1]) & (frag[1:] == frag[:-1])
        dup = np.zeros(len(ids), dtype=bool)
        dup[1:] |= same
        dup[:-1] |= same
        keep = ~(dup & offered)
        cols = {k: v[keep] for k, v in cols.items()}
    if _ARROW_TEXT and len(cols["proc_set"]) and (cols["proc_set"] == "").all():
        # No piece on a processor set (the columns path): two Arrow buffers, not strings inferred
        # one by one (10M jobs: 0.5 s).
        n, nothing = len(cols["proc_set"]), pa.py_buffer(b"")
        cols["proc_set"] = pd.array(
            pa.StringArray.from_buffers(n, pa.py_buffer(np.zeros(n + 1, dtype=np.int32)), nothing), dtype=_TEXT
        )
    return pd.DataFrame(cols, copy=False)


# What pandas makes of strings: Arrow-backed from pandas 3 on (before, object columns as they come).
_TEXT = pd.Series([""]).dtype
_ARROW_TEXT = isinstance(_TEXT, pd.StringDtype) and _TEXT.storage == "pyarrow"


# A job's state from its pieces' states: the least advanced piece decides, except that a
# job with a piece started (or done) and another waiting is running.
_STATE_RANK = np.array([0, 2, 3, 4, 5, 1, 6])  # pending, queued, running, done, rejected, transferred, lost
_RANK_STATE = np.argsort(_STATE_RANK)


def job_table(pieces: pd.DataFrame) -> pd.DataFrame:
    """One row per job: its pieces aggregated (start of the first, end of the last, size summed).

    ``exec_site`` is the site that ran the largest share of the job; ``fragments`` counts
    its pieces.
    """
    ids = pieces["job_id"].to_numpy()
    # piece_table's rows come sorted by job: strictly increasing ids are unique without the
    # hash table is_unique builds (10M rows: 0.5 s).
    if (ids[1:] > ids[:-1]).all() or pieces["job_id"].is_unique:
        # The same columns (a copy would double the run's largest object); a column set on
        # one table later replaces it there only.
        jobs = pieces.copy(deep=False)
        jobs["fragments"] = np.ones(len(jobs), dtype=np.int32)
        return jobs
    g = pieces.groupby("job_id", sort=True)
    first = g.first()
    jobs = first.reset_index()
    jobs["size"] = g["size"].sum().to_numpy()
    jobs["start"] = g["start"].min().to_numpy()
    rank = pd.Series(_STATE_RANK[pieces["state"].to_numpy().astype(int)], index=pieces.index)
    low = rank.groupby(pieces["job_id"]).min().to_numpy()
    high = rank.groupby(pieces["job_id"]).max().to_numpy()
    running = _STATE_RANK[STATE_CODE["running"]]
    low = np.where((high >= running) & (low < running), running, low)
    jobs["state"] = _RANK_STATE[low].astype(np.int8)
    done = jobs["state"].to_numpy() == STATE_CODE["done"]
    jobs["end"] = np.where(done, g["end"].max().to_numpy(), np.nan)
    jobs["migrations"] = g["migrations"].max().to_numpy()
    share = pieces.groupby(["job_id", "exec_site"], sort=True)["size"].sum().reset_index()
    share = share.sort_values(["job_id", "size", "exec_site"], ascending=[True, False, True], kind="stable")
    jobs["exec_site"] = share.drop_duplicates("job_id")["exec_site"].to_numpy()
    jobs["fragments"] = g.size().to_numpy().astype(np.int32)
    # A job of several pieces ran on several processor sets: fragments.parquet has each.
    whole = jobs["fragments"].to_numpy() == 1
    jobs["proc"] = np.where(whole, jobs["proc"].to_numpy(), -1).astype(np.int32)
    jobs["proc_set"] = np.where(whole, jobs["proc_set"].to_numpy(), "")
    return jobs


def labelled(table: pd.DataFrame, orgs: list[str], groups: list[str], columns: list[str] = JOB_COLUMNS) -> pd.DataFrame:
    """Replace owner, group and state codes by their names (categoricals) for the files."""
    # The table's columns, not a copy (10M jobs: 0.8 s and a second table in memory); the
    # columns set below replace this frame's own only.
    out = pd.DataFrame({c: table[c] for c in columns}, copy=False)
    out["owner"] = pd.Categorical.from_codes(table["owner"].to_numpy(), categories=orgs)
    if "group" in out:
        out["group"] = pd.Categorical.from_codes(table["group"].to_numpy(), categories=_unique(groups))
    out["state"] = pd.Categorical.from_codes(table["state"].to_numpy().astype(int), categories=list(STATES))
    return out


def _unique(names: list[str]) -> list[str]:
    if len(set(names)) != len(names):
        raise ValueError("group names must be unique")
    return names


def site_table(raw: RawRun, table: pd.DataFrame) -> pd.DataFrame:
    """Per-site rows; ``table`` is the piece table (what each site actually ran)."""
    rows = [row for r in raw.shard_results for row in r["sites"]]
    sites = pd.DataFrame(rows).sort_values("site_id").reset_index(drop=True)
    sites["owner"] = [raw.scenario.orgs[o] for o in sites["owner"]]
    started = table[table["start"].notna()]
    stop = np.where(started["end"].notna(), started["end"], _end_time(raw, table))
    busy = (
        pd.Series((stop - started["start"].to_numpy()) * started["procs"].to_numpy())
        .groupby(started["exec_site"].to_numpy())
        .sum()
    )
    done = table[table["state"] == STATE_CODE["done"]].groupby("exec_site").size()
    sites["jobs_executed"] = sites["site_id"].map(done).fillna(0).astype(int)
    sites["busy"] = sites["site_id"].map(busy).fillna(0.0)
    span = _end_time(raw, table)
    sites["utilization"] = sites["busy"] / (sites["procs"] * span) if span > 0 else 0.0
    return sites


def _end_time(raw: RawRun, table: pd.DataFrame) -> float:
    """The time the run covers: the horizon, or the last completion when it ran dry."""
    if math.isfinite(raw.scenario.horizon):
        return raw.scenario.horizon
    return float(table["end"].max()) if table["end"].notna().any() else 0.0


def timeseries_table(raw: RawRun) -> pd.DataFrame:
    parts = [pd.DataFrame(r["timeseries"]) for r in raw.shard_results if r["timeseries"]]
    if not parts:
        return pd.DataFrame()
    df = pd.concat(parts, ignore_index=True)
    return df.sort_values([c for c in ("time", "site") if c in df]).reset_index(drop=True)


def outage_table(raw: RawRun) -> pd.DataFrame:
    """Every crash of the run's sites (``[faults]``): ``site_id``, ``down``, ``up`` (the
    repair, inf where none comes), by site and time; empty without faults."""
    parts = [r["outages"] for r in raw.shard_results if "outages" in r]
    if not parts:
        return pd.DataFrame()
    df = pd.DataFrame({k: np.concatenate([p[k] for p in parts]) for k in ("site_id", "down", "up")})
    return df.sort_values(["site_id", "down"], kind="stable").reset_index(drop=True)


def usage_table(raw: RawRun) -> pd.DataFrame:
    """The sites' usage ledgers: processor-time of finished jobs per site and group."""
    cols = {k: np.concatenate([r["usage"][k] for r in raw.shard_results]) for k in ("site_id", "group", "usage")}
    order = site_runs_in_order(cols["site_id"])
    df = pd.DataFrame({k: v[order] for k, v in cols.items()})
    site, group = df["site_id"].to_numpy(), df["group"].to_numpy(dtype=int)
    df["group"] = pd.Categorical.from_codes(group, categories=raw.groups)
    # Ledgers come sorted by (site, group), their runs now in site order: sorted already (no 0.76 s sort at 10000x10M).
    if ((site[1:] > site[:-1]) | ((site[1:] == site[:-1]) & (group[1:] > group[:-1]))).all():
        return df
    return df.sort_values(["site_id", "group"]).reset_index(drop=True)


def wait_and_slowdown(done: pd.DataFrame, n_orgs: int, bound: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Mean wait time (first start − release) and mean bounded slowdown of the finished jobs
    ``done``, per organization (NaN where none finished) and over all: the standard SWF
    metrics. Bounded slowdown = max(1, (end − release) / max(size, ``bound``)), ``size``
    being the job's processing time at speed 1 (Feitelson's τ = ``bound``, 10 s by convention)."""
    wait = done["start"] - done["release"]
    bsld = bounded_slowdown(done, bound)
    by_org = [by_owner(s, done["owner"], n_orgs).mean().to_numpy() for s in (wait, bsld)]
    return (
        by_org[0],
        by_org[1],
        float(wait.mean()) if len(done) else math.nan,
        float(bsld.mean()) if len(done) else math.nan,
    )


def bounded_slowdown(done: pd.DataFrame, bound: float) -> pd.Series:
    """max(1, flow / max(size, ``bound``)) of each finished job (:func:`wait_and_slowdown`)."""
    return np.maximum(1.0, (done["end"] - done["release"]) / np.maximum(done["size"], bound))


def flow_by_org(table: pd.DataFrame, n_orgs: int) -> np.ndarray:
    """Sum of flow times (end - release) of each organization's finished jobs."""
    done = table[table["state"] == STATE_CODE["done"]]
    return by_owner(done["end"] - done["release"], done["owner"], n_orgs).sum().to_numpy()


def by_owner(values: pd.Series, owner: pd.Series, n_orgs: int) -> Any:
    """``values`` by organization code, every organization a group (empty: sum 0, mean and max NaN); codes
    as a categorical, which pandas groups without hashing (1M jobs, 10,000 organizations: 5 against 13 ms)."""
    return values.groupby(pd.Categorical.from_codes(owner.to_numpy(), categories=range(n_orgs)), observed=False)


def job_figures(
    table: pd.DataFrame, orgs: list[str], metrics: dict[str, Any], local_table: pd.DataFrame | None = None
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The figures of a job table (owner and state as codes): the global ones (``makespan``,
    means and tails of flow, wait and bounded slowdown) and each organization's, over the jobs
    released from ``metrics.warmup`` on (with a cut, ``warmup`` and ``jobs_measured`` too);
    ``sum_flow_time_local`` and ``score`` where the counterfactual's ``local_table`` is given.
    A run's summary and ``gridemu report DIR --warmup T`` both count them here."""
    # metrics.warmup: jobs released before it are left out of every figure of a job.
    warmup = float(metrics.get("warmup", 0.0))
    if warmup > 0:
        table = table[table["release"].to_numpy() >= warmup]
        if local_table is not None:
            local_table = local_table[local_table["release"].to_numpy() >= warmup]
    done_mask = table["state"] == STATE_CODE["done"]
    flows = flow_by_org(table, len(orgs))
    local_flows = flow_by_org(local_table, len(orgs)) if local_table is not None else None
    if local_table is not None:
        # S_k compares the jobs both runs finished: a sum over an organization's 126 finished
        # jobs against its 446 alone read as a gain. Where both finished every job, the sums above.
        done_ids = [t.loc[t["state"] == STATE_CODE["done"], "job_id"].to_numpy() for t in (table, local_table)]
        both = np.intersect1d(*done_ids)
        paired = [flow_by_org(t[np.isin(t["job_id"].to_numpy(), both)], len(orgs)) for t in (table, local_table)]
    owner = table["owner"].to_numpy()
    done = table[done_mask.to_numpy()]
    n_jobs = np.bincount(owner, minlength=len(orgs))
    n_done = np.bincount(done["owner"].to_numpy(), minlength=len(orgs))
    makespan = by_owner(done["end"], done["owner"], len(orgs)).max().to_numpy()
    migrated = np.bincount(owner, weights=(table["migrations"].to_numpy() > 0), minlength=len(orgs))
    bound = float(metrics.get("slowdown_bound", 10.0))
    waits, slowdowns, mean_wait, mean_bsld = wait_and_slowdown(done, len(orgs), bound)
    per_org = {}
    for k, org in enumerate(orgs):
        entry: dict[str, Any] = {
            "jobs": int(n_jobs[k]),
            "jobs_done": int(n_done[k]),
            "sum_flow_time": float(flows[k]),
            "mean_flow_time": float(flows[k] / n_done[k]) if n_done[k] else None,
            "makespan": float(makespan[k]) if n_done[k] else None,
            "mean_wait_time": float(waits[k]) if n_done[k] else None,
            "mean_bounded_slowdown": float(slowdowns[k]) if n_done[k] else None,
            "jobs_migrated": int(migrated[k]),
        }
        if local_flows is not None:
            entry["sum_flow_time_local"] = float(local_flows[k])
            # No job finished in both runs: nothing to compare (null, as its mean flow time), not
            # a 0 that a mean over organizations would count as "no change".
            both = paired[0][k] > 0 and paired[1][k] > 0
            entry["score"] = score(float(paired[0][k]), float(paired[1][k])) if both else None
        per_org[org] = entry
    glob = {
        "makespan": float(table.loc[done_mask, "end"].max()) if done_mask.any() else None,
        "mean_flow_time": float(flows.sum() / done_mask.sum()) if done_mask.any() else None,
        "mean_wait_time": mean_wait if done_mask.any() else None,
        "mean_bounded_slowdown": mean_bsld if done_mask.any() else None,
        **tail(done["end"] - done["release"], "flow_time"),
        **tail(done["start"] - done["release"], "wait_time"),
        **tail(bounded_slowdown(done, bound), "bounded_slowdown"),
    }
    if warmup > 0:
        glob["warmup"] = warmup
        glob["jobs_measured"] = int(len(table))
    return glob, per_org


def with_warmup(summary: dict[str, Any], jobs: pd.DataFrame, metrics: dict[str, Any], warmup: float) -> dict[str, Any]:
    """``summary`` with its job figures counted again (:func:`job_figures`) over the jobs of the
    job table ``jobs`` (as ``jobs.parquet`` holds it) released from ``warmup`` on; 0: no cut.
    The counterfactual is not kept in a run's folder, so ``score`` and ``sum_flow_time_local``
    are left out; the protocol's sections stay as the run wrote them."""
    orgs = list(summary["organizations"])
    coded = pd.DataFrame(
        {
            "owner": pd.Categorical(jobs["owner"], categories=orgs).codes,
            "state": pd.Categorical(jobs["state"], categories=list(STATES)).codes,
            **{c: jobs[c] for c in ("release", "start", "end", "size", "migrations")},
        }
    )
    figures, per_org = job_figures(coded, orgs, {**metrics, "warmup": warmup})
    glob = {k: v for k, v in summary["global"].items() if k not in ("warmup", "jobs_measured")}
    glob.update(figures)
    dropped = ("score", "sum_flow_time_local")
    organizations = {
        org: {**{k: v for k, v in old.items() if k not in dropped}, **per_org[org]}
        for org, old in summary["organizations"].items()
    }
    return {**summary, "global": glob, "organizations": organizations}


def _rates(raw: RawRun, jobs: int) -> dict[str, float | None]:
    """Events and jobs a second of ``wall_seconds``. A resumed run's wall time is the resumed
    process's: its rates count what it handled, the events after the checkpoint and the jobs
    not finished at it (the whole run's over that time would be overstated)."""
    events, before = raw.events, raw.extra.get("resumed")
    if before is not None:
        events, jobs = events - before["events"], jobs - before["jobs_done"]
    wall = raw.wall_seconds
    return {
        "events_per_second": round(events / wall, 1) if wall > 0 else None,
        "jobs_per_second": round(jobs / wall, 1) if wall > 0 else None,
    }


def summarize(
    raw: RawRun, table: pd.DataFrame, sites: pd.DataFrame, local_table: pd.DataFrame | None
) -> dict[str, Any]:
    orgs = raw.scenario.orgs
    figures, per_org = job_figures(table, orgs, raw.scenario.data["metrics"], local_table)
    sent = [c for c in sites.columns if c.startswith("sent_")]
    messages = {c[5:]: int(sites[c].sum()) for c in sent if sites[c].sum() > 0}
    states = table["state"].value_counts()
    cut = {k: figures.pop(k) for k in ("warmup", "jobs_measured") if k in figures}
    glob = {
        "jobs": int(len(table)),
        "jobs_by_state": {STATES[int(c)]: int(n) for c, n in states.items()},
        **figures,
        "time_unit": raw.scenario.data["run"]["time_unit"],
        "events": int(raw.events),
        "messages": messages,
        "messages_total": int(sum(messages.values())),
        "windows": int(raw.windows),
        "wall_seconds": round(raw.wall_seconds, 6),
        # What the sites' own event loops took, added up (sites.parquet has each one's).
        "site_cpu_seconds": round(float(sites["cpu_seconds"].sum()), 6),
        "setup_seconds": round(raw.extra.get("setup_seconds", 0.0), 6),
        **_rates(raw, len(table)),
        "backend": raw.backend,
        "shards": raw.shards,
        "sites": len(raw.scenario.sites),
        "organizations": len(orgs),
        "seed": raw.scenario.seed,
        "protocol": raw.scenario.protocol["name"],
    }
    glob.update(cut)
    if "resumed" in raw.extra:
        glob["resumed_from_window"] = raw.extra["resumed"]["window"]
    if "stalled_at" in raw.extra:  # liveness: stopped with only timers left (coordinator.Coordinator)
        glob["stalled_at"] = raw.extra["stalled_at"]
    if raw.scenario.faults is not None:
        # Sums of the sites' fault columns (sites.parquet); messages_total counts lost ones too.
        glob["faults"] = {
            ("sites_down_at_end" if c == "down_at_end" else c): (float if c in ("downtime", "work_lost") else int)(
                sites[c].sum()
            )
            for c in FAULT_COLUMNS
        }
    if raw.scenario.extra.get("workload_warnings"):
        glob["workload_warnings"] = list(raw.scenario.extra["workload_warnings"])
    if "swf_skipped" in raw.scenario.extra:
        glob["trace_jobs_skipped"] = raw.scenario.extra["swf_skipped"]
    if "swf_load" in raw.scenario.extra:  # workload.load: the trace's offered load and the scale that met it
        glob["trace_load"] = {k: round(v, 6) for k, v in raw.scenario.extra["swf_load"].items()}
    if "swf_warm_jobs" in raw.scenario.extra:
        glob["warm_start_jobs"] = raw.scenario.extra["swf_warm_jobs"]
    return {"global": glob, "organizations": per_org}


__all__ = [
    "RunResult",
    "load",
    "piece_table",
    "job_table",
    "labelled",
    "site_table",
    "timeseries_table",
    "summarize",
    "job_figures",
    "with_warmup",
    "score",
]
