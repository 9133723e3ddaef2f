"""Reading Standard Workload Format (SWF) traces and turning them into gridemu jobs.

SWF is the plain-text job-log format of the Parallel Workloads Archive (PWA,
https://www.cs.huji.ac.il/labs/parallel/workload/), maintained by Dror Feitelson's
group: one job per line, 18 whitespace-separated numeric fields, ``-1`` meaning
"unknown", and header comments starting with ``;`` such as ``; MaxProcs: 128``.
The fields, in order, are listed in :data:`SWF_FIELDS`.

The real traces used by the tests and benchmarks (``shared/traces/*.swf.gz``) are
PWA logs. Anyone publishing results obtained with them must cite the archive and
Feitelson, Tsafrir and Krakov, "Experience with using the Parallel Workloads
Archive", JPDC 74(10):2967-2982, 2014, and acknowledge each log's provider (the
``Acknowledge`` header line); ``shared/traces/SOURCES.txt`` has the details.

Choices made here:

* Parsing streams the file (plain or gzip, recognised by its magic bytes) in
  chunks of at most ``chunk_lines`` jobs, each converted by numpy's C parser in one
  go; a million-line trace never exists as a million Python objects. Any line
  without exactly 18 finite numbers (integer fields may be written ``3.0`` but not
  ``3.5``), or with a number below -1 (SWF's "unknown"; no field is negative), is a
  :class:`WorkloadError` naming file, line and field.
* Header comments are the ``;`` lines before the first job. ``; Key: value`` lines
  become dict entries; a repeated key or an unkeyed continuation line (an indented
  second URL, the text of a copyright notice) is appended to the key's value after
  a newline. Every comment line is also kept verbatim.
* :func:`swf_to_jobs` maps SWF records to ``JOB_DTYPE`` rows: release = submit
  time, size = run time, procs = allocated (else requested) processors, walltime =
  requested time. Jobs that cannot be emulated (no run time, no processor count,
  no submit time, outside the chosen window) are skipped and counted by reason,
  never dropped silently.
* Users are mapped to ``n_orgs`` organizations by a rule (``orgs_by``):
  ``"random"`` (the default): uniformly at random with a seeded generator of its own, so
  the map depends only on the seed and the set of users; ``"group"``, ``"queue"``,
  ``"partition"``: by the SWF field of that name (each user's most frequent value over the
  whole trace; the distinct values in ascending order go to organizations 0, 1, ... and
  round again past the last); ``"balanced"``: by submitted work, the users of most work
  first (size × processors over the emulated jobs), each to the organization with the least
  work per processor so far (``capacity``: processors per organization). An explicit
  ``user_map`` fixes some users (or all); the rule places the rest. ``split_parallel`` turns a q-processor job
  into q sequential jobs, as in the Shapley-value scheduling papers.
"""

from __future__ import annotations

import gzip
import heapq
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NoReturn, TextIO

import numpy as np

from gridemu.model.errors import ScenarioError, WorkloadError
from gridemu.model.inputs import check_allocation
from gridemu.model.jobs import JOB_DTYPE, empty_jobs
from gridemu.sites.fcfs_replay import fcfs_backlog

SWF_FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "avg_cpu_time",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)

_INT_FIELDS = frozenset(
    {
        "job_number",
        "allocated_procs",
        "requested_procs",
        "status",
        "user_id",
        "group_id",
        "executable",
        "queue",
        "partition",
        "preceding_job",
    }
)

SWF_DTYPE = np.dtype([(name, "i8" if name in _INT_FIELDS else "f8") for name in SWF_FIELDS])

_N_FIELDS = len(SWF_FIELDS)
_INT_COLUMNS = np.array([i for i, name in enumerate(SWF_FIELDS) if name in _INT_FIELDS])
# Beyond 2**53 a float64 no longer holds every integer, so the i8 cast could lie.
_INT_LIMIT = 2.0**53
# What counts as "numeric" when hunting for the broken line; it rejects nan, inf,
# hex and digit separators, which the bulk path rejects too (or catches as non-finite).
# re.ASCII: \d would take "١" (float() reads it; numpy's parser does not).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z", re.ASCII)
_HEADER_KEY = re.compile(r";\s*([A-Za-z][A-Za-z0-9_]*)\s*:(.*)\Z")
_LEADING_INT = re.compile(r"\s*(\d+)")
_GZIP_MAGIC = b"\x1f\x8b"

#: Seed-sequence spawn key of the user -> organization draw ("SW" in ASCII), so the
#: draw never shares a stream with another consumer of the same scenario seed.
_ORG_SPAWN_KEY = 0x5357


# --------------------------------------------------------------------------- parsing


def _open_text(path: str | os.PathLike[str]) -> TextIO:
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
        # Archive copies are often renamed or decompressed without fixing the
        # suffix, so the bytes decide, not the name.
        if magic == _GZIP_MAGIC:
            return gzip.open(path, "rt", encoding="utf-8", errors="replace")
        return open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot open SWF trace: {exc.strerror or exc}") from exc


def _scan(
    path: str | os.PathLike[str],
    chunk_lines: int,
    on_comment: Callable[[str, bool], None] | None,
) -> Iterator[np.ndarray]:
    """Yield parsed chunks; report each comment line and whether it precedes the first job."""
    if chunk_lines < 1:
        raise ValueError(f"chunk_lines must be >= 1, got {chunk_lines}")
    lines: list[str] = []
    linenos: list[int] = []
    seen_job = False
    lineno = 0
    with _open_text(path) as fh:
        try:
            for lineno, raw in enumerate(fh, 1):
                text = raw.strip()
                if not text:
                    continue
                if text[0] == ";":
                    if on_comment is not None:
                        on_comment(raw.rstrip("\r\n"), not seen_job)
                    continue
                seen_job = True
                lines.append(text)
                linenos.append(lineno)
                if len(lines) >= chunk_lines:
                    yield _parse_chunk(path, lines, linenos)
                    lines, linenos = [], []
        except (OSError, EOFError) as exc:
            # A truncated or corrupt gzip stream surfaces here, mid-file.
            raise WorkloadError(f"{path}:{lineno + 1}: cannot read SWF trace: {exc}") from exc
    if lines:
        yield _parse_chunk(path, lines, linenos)


def _parse_chunk(path: str | os.PathLike[str], lines: list[str], linenos: list[int]) -> np.ndarray:
    try:
        # loadtxt's C tokenizer is ~5x faster than float() over split tokens and
        # already refuses ragged rows and non-numbers; comments=None because '#'
        # has no meaning in SWF and must not hide half a line.
        values = np.loadtxt(lines, dtype=np.float64, comments=None, ndmin=2)
    except ValueError as exc:
        _raise_first_bad_line(path, lines, linenos, str(exc))
    if values.shape[1] != _N_FIELDS:
        _raise_first_bad_line(path, lines, linenos, f"{values.shape[1]} columns")
    ints = values[:, _INT_COLUMNS]
    if not (np.isfinite(values).all() and (np.abs(ints) < _INT_LIMIT).all() and (ints == np.trunc(ints)).all()):
        _raise_first_bad_line(path, lines, linenos, "non-finite or non-integer value")
    if not (values >= -1).all():
        _raise_first_bad_line(path, lines, linenos, "a value below -1")
    records = np.empty(len(lines), dtype=SWF_DTYPE)
    for col, name in enumerate(SWF_FIELDS):
        records[name] = values[:, col]
    return records


def _line_problem(text: str) -> str | None:
    tokens = text.split()
    if len(tokens) != _N_FIELDS:
        return f"{len(tokens)} fields"
    for col, (token, name) in enumerate(zip(tokens, SWF_FIELDS), 1):
        if not _NUMBER.match(token):
            return f"non-numeric token {token!r} in field {col} ({name})"
        value = float(token)
        if not math.isfinite(value):  # 1e999: int() of it would raise OverflowError
            return f"non-finite {token!r} in field {col} ({name})"
        if name in _INT_FIELDS:
            if value != int(value) or abs(value) >= _INT_LIMIT:
                return f"non-integer {token!r} in integer field {col} ({name})"
        if value < -1:  # a corrupt value, not an unknown one: skipping its job would hide it
            return f"{token!r} in field {col} ({name}), below -1 (SWF writes -1 for unknown; no field is negative)"
    return None


def _raise_first_bad_line(
    path: str | os.PathLike[str], lines: list[str], linenos: list[int], bulk_problem: str
) -> NoReturn:
    # Only reached on failure, so a slow per-line pass is fine and gives the user
    # an exact line number instead of numpy's chunk-relative row.
    for text, lineno in zip(lines, linenos):
        problem = _line_problem(text)
        if problem is not None:
            raise WorkloadError(f"{path}:{lineno}: expected {_N_FIELDS} numeric SWF fields, got {problem}")
    raise WorkloadError(
        f"{path}:{linenos[0]}: expected {_N_FIELDS} numeric SWF fields, got {bulk_problem} "
        f"somewhere in lines {linenos[0]}-{linenos[-1]}"
    )


def iter_swf_chunks(path: str | os.PathLike[str], chunk_lines: int = 200_000) -> Iterator[np.ndarray]:
    """Stream an SWF file (plain or gzip) as ``SWF_DTYPE`` arrays of at most ``chunk_lines`` jobs."""
    return _scan(path, chunk_lines, None)


def _parse_header(comment_lines: list[str]) -> dict[str, str]:
    header: dict[str, str] = {}
    current: str | None = None
    for line in comment_lines:
        stripped = line.strip()
        match = _HEADER_KEY.match(stripped)
        # "; Information: http://a/" is a key, but ";    http://b/" on the next
        # line is a continuation whose "http" must not become a key.
        if match and not match.group(2).startswith("//"):
            key, value = match.group(1), match.group(2).strip()
            header[key] = f"{header[key]}\n{value}" if key in header else value
            current = key
            continue
        text = stripped[1:].strip()
        if not text:
            current = None  # a bare ';' closes a multi-line value
        elif current is not None:
            header[current] = f"{header[current]}\n{text}"
    return header


def read_swf_header(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``; Key: value`` header comments before the first job, in file order.

    Reads only up to the first job line, so it is cheap even on huge traces.
    """
    return _parse_header(read_swf_header_lines(path))


def read_swf_header_lines(path: str | os.PathLike[str]) -> list[str]:
    """The comment lines before the first job, verbatim (``gridemu export`` carries them on,
    as the Parallel Workloads Archive asks of anything derived from a trace)."""
    leading: list[str] = []
    with _open_text(path) as fh:
        for raw in fh:
            text = raw.strip()
            if not text:
                continue
            if text[0] != ";":
                break
            leading.append(raw.rstrip("\r\n"))
    return leading


def _max_procs(header: Mapping[str, str]) -> int | None:
    # MaxProcs counts processors, which is what a job's procs field uses; MaxNodes
    # is only a fallback for logs that give nothing else (values like "70  (dual)").
    for key in ("MaxProcs", "MaxNodes"):
        match = _LEADING_INT.match(header.get(key, ""))
        if match and int(match.group(1)) > 0:
            return int(match.group(1))
    return None


@dataclass
class SwfTrace:
    """A whole SWF file in memory: header, verbatim comments and one record array."""

    header: dict[str, str]
    comments: list[str]
    records: np.ndarray
    max_procs: int | None


def read_swf(path: str | os.PathLike[str], chunk_lines: int = 200_000) -> SwfTrace:
    """Read a whole SWF file (plain or gzip) into an :class:`SwfTrace`."""
    comments: list[str] = []
    leading: list[str] = []

    def keep(line: str, before_first_job: bool) -> None:
        comments.append(line)
        if before_first_job:
            leading.append(line)

    chunks = list(_scan(path, chunk_lines, keep))
    records = np.concatenate(chunks) if chunks else np.empty(0, dtype=SWF_DTYPE)
    header = _parse_header(leading)
    return SwfTrace(header=header, comments=comments, records=records, max_procs=_max_procs(header))


# --------------------------------------------------------------------- conversion


@dataclass
class SwfJobs:
    """Jobs converted from SWF records, with the tables needed to interpret them."""

    jobs: np.ndarray
    group_names: list[str]
    org_of_user: dict[int, int]
    skipped: dict[str, int] = field(default_factory=dict)
    warm: int = 0  # the first ``warm`` jobs are the backlog of a warm start
    #: The work (run time x processors) of the jobs left out as too wide (``skipped["too_wide"]``).
    wide_work: float = 0.0
    #: Each job's number in the trace (SWF field 1): what an error about a job names.
    trace_numbers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


ORGS_BY = ("random", "group", "queue", "partition", "balanced")
#: ``workload.warm_start``: an empty system at t_start, or the FCFS replay's backlog there.
WARM_STARTS = ("cold", "fcfs")
_ORGS_BY_FIELD = {"group": "group_id", "queue": "queue", "partition": "partition"}


def _draw_orgs(users: np.ndarray, n_orgs: int, seed: int) -> dict[int, int]:
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_ORG_SPAWN_KEY,)))
    orgs = rng.integers(0, n_orgs, size=len(users))
    return {int(u): int(k) for u, k in zip(users, orgs)}


def _orgs_by_field(records: np.ndarray, field: str, n_orgs: int) -> dict[int, int]:
    """Each user's most frequent value of ``field`` (lowest among equals); values in
    ascending order to organizations 0, 1, ..., modulo ``n_orgs``."""
    pairs, counts = np.unique(np.stack([records["user_id"], records[field]], axis=1), axis=0, return_counts=True)
    best: dict[int, tuple[int, int]] = {}
    for (user, value), n in zip(pairs.tolist(), counts.tolist()):
        if user not in best or n > best[user][0]:
            best[user] = (n, value)
    values = sorted({v for _, v in best.values()})
    slot = {v: i % n_orgs for i, v in enumerate(values)}
    return {u: slot[v] for u, (_, v) in best.items()}


def _orgs_balanced(users: np.ndarray, work: np.ndarray, capacity: list[int], fixed: dict[int, int]) -> dict[int, int]:
    """Users of most work first, each to the organization with the least work per processor
    (lowest index among equals), counting the users ``fixed`` by a map first."""
    load = [0.0] * len(capacity)
    out = dict(fixed)
    for u, w in zip(users.tolist(), work.tolist()):
        if u in fixed:
            load[fixed[u]] += w
    # The organizations by (work per processor, index): the least loaded on top, in log time.
    least = [(load[k] / capacity[k], k) for k in range(len(capacity))]
    heapq.heapify(least)
    for i in np.lexsort((users, -work)).tolist():
        u = int(users[i])
        if u in fixed:
            continue
        _, k = heapq.heappop(least)
        out[u] = k
        load[k] += work[i]
        heapq.heappush(least, (load[k] / capacity[k], k))
    return out


def _window(
    submit: np.ndarray,
    run_time: np.ndarray,
    procs: np.ndarray,
    t_start: float | None,
    t_end: float | None,
    first: int | None = None,
    widest: int | None = None,
) -> tuple[np.ndarray, dict[str, int], np.ndarray, np.ndarray | None]:
    """Which records the window keeps, the others counted by reason, which records are
    usable at all (a warm start replays those before the window), and which it left out as
    too wide (None without ``widest``). Each job is counted under
    the first reason that applies, so the counts plus the kept jobs add up to the number of
    records: nothing vanishes silently. ``first``: the window ends after its first so many
    jobs that can be emulated, in submission order (the records after the last of them count
    as ``after_first_jobs``, whatever they lack: the counts are the part of the trace read);
    ``widest``: jobs on more processors are left out (``too_wide``)."""
    no_submit, no_run, zero_run, no_procs = submit < 0, run_time < 0, run_time == 0, procs <= 0
    usable = ~(no_submit | no_run | zero_run | no_procs)
    before = submit < t_start if t_start is not None else np.zeros(len(submit), dtype=bool)
    after = submit >= t_end if t_end is not None else np.zeros(len(submit), dtype=bool)
    wide = procs > widest if widest is not None else np.zeros(len(submit), dtype=bool)
    late = np.zeros(len(submit), dtype=bool)
    if first is not None:
        ok = np.flatnonzero(usable & ~before & ~after & ~wide)
        if len(ok) > first:
            c = ok[np.argsort(submit[ok], kind="stable")][first]  # the first job past the cut
            index = np.arange(len(submit))
            late = ~no_submit & ((submit > submit[c]) | ((submit == submit[c]) & (index >= c)))
    keep = np.ones(len(submit), dtype=bool)
    skipped: dict[str, int] = {}
    wide_kept: np.ndarray | None = None
    # A job with no submit time cannot be released at any defined moment; then the window
    # (t_start <= submit < t_end, half-open, so adjacent windows tile a trace, and its first
    # jobs); then what a job lacks: a run time (unknown, -1, or 0: nothing to emulate),
    # processors (neither the allocated nor the requested count is usable), or a site wide
    # enough.
    for reason, bad in (
        ("no_submit_time", no_submit),
        ("before_window", before),
        ("after_window", after),
        ("after_first_jobs", late),
        ("no_run_time", no_run),
        ("zero_run_time", zero_run),
        ("no_procs", no_procs),
        ("too_wide", wide),
    ):
        hit = keep & bad
        if hit.any():
            skipped[reason] = int(hit.sum())
        if reason == "too_wide":
            wide_kept = hit
        keep &= ~bad
    return keep, skipped, usable, wide_kept


def swf_to_jobs(
    records: np.ndarray,
    *,
    n_orgs: int,
    seed: int,
    user_map: Mapping[int, int] | None = None,
    orgs_by: str = "random",
    capacity: list[int] | None = None,
    split_parallel: bool = False,
    t_start: float | None = None,
    t_end: float | None = None,
    org_names: list[str] | None = None,
    warm_machines: int | None = None,
    first: int | None = None,
    widest: int | None = None,
) -> SwfJobs:
    """Convert ``SWF_DTYPE`` records to ``JOB_DTYPE`` jobs owned by ``n_orgs`` organizations
    (named ``org_names``, by default org0, org1, ...: the prefix of their users' group paths).

    ``warm_machines``: the window starts warm (``workload.warm_start = "fcfs"``). The jobs
    submitted before ``t_start`` (split into sequential copies, as ``split_parallel``, which it
    needs) are replayed under global FCFS on that many processors
    (:func:`~gridemu.sites.fcfs_replay.fcfs_backlog`); each copy still queued or running at
    ``t_start`` comes first in the window, released at ``t_start`` with the work it has left, in
    the replay's order (ids 0, 1, ...: ahead of every window job, as submission order would
    put it). Their count is ``SwfJobs.warm``.

    ``first``: only the window's first so many jobs that can be emulated, in submission
    order (before ``split_parallel`` makes copies); ``widest``: jobs on more processors are
    left out (:func:`_window`). Both before users are mapped to organizations, so that
    ``orgs_by = "balanced"`` balances the jobs that run."""
    if isinstance(n_orgs, bool) or not isinstance(n_orgs, (int, np.integer)) or n_orgs <= 0:
        raise ScenarioError("workload.orgs", f"must be a positive integer, got {n_orgs!r}")
    if t_start is not None and t_end is not None and not t_end > t_start:
        raise ScenarioError("workload.t_end", f"must be greater than t_start ({t_start}), got {t_end}")
    missing_fields = set(SWF_FIELDS) - set(records.dtype.names or ())
    if missing_fields:
        raise TypeError(f"records lack SWF fields {sorted(missing_fields)}")

    submit = records["submit_time"]
    run_time = records["run_time"]
    allocated = records["allocated_procs"]
    requested = records["requested_procs"]
    # procs = allocated processors, or the request when the allocation is unknown;
    # a zero allocation (e.g. a job cancelled before start) also falls back.
    procs = np.where(allocated > 0, allocated, requested)

    keep, skipped, usable, wide = _window(submit, run_time, procs, t_start, t_end, first, widest)
    # The work the run does not get for the jobs left out as too wide, said with their count.
    wide_work = float((run_time * procs)[wide].sum()) if wide is not None else 0.0

    # Organizations: drawn over every distinct user in the records, not just the
    # kept ones, so changing the window or skip rules never reshuffles the map.
    all_users = np.unique(records["user_id"])
    fixed: dict[int, int] = {}
    for user, org in (user_map or {}).items():
        if not 0 <= int(org) < n_orgs:
            raise ScenarioError(
                f"workload.user_map.{user}", f"sends user {user} to organization {org}, outside 0..{n_orgs - 1}"
            )
        fixed[int(user)] = int(org)
    if orgs_by == "balanced":
        users, user_of_job = np.unique(records["user_id"][keep], return_inverse=True)
        work = np.bincount(user_of_job, weights=(run_time * np.maximum(procs, 1))[keep], minlength=len(users))
        org_of_user = {int(u): 0 for u in all_users}  # users with no emulated job: any organization
        org_of_user.update(_orgs_balanced(users, work, list(capacity or [1] * n_orgs), fixed))
    elif orgs_by in _ORGS_BY_FIELD:
        org_of_user = _orgs_by_field(records, _ORGS_BY_FIELD[orgs_by], int(n_orgs))
    else:
        org_of_user = _draw_orgs(all_users, int(n_orgs), seed)
    org_of_user.update(fixed)

    # job_id order = (release, original line order): a stable sort on release
    # keeps the trace's own order among jobs submitted in the same second.
    kept_index = np.flatnonzero(keep)
    kept_index = kept_index[np.argsort(submit[kept_index], kind="stable")]
    warm_left = np.zeros(0, dtype=np.int64)
    if warm_machines is not None:
        kept_index, warm_left = _with_backlog(
            records, procs, usable, kept_index, warm_machines, t_start, split_parallel
        )
    kept = records[kept_index]
    kept_procs = procs[kept_index]

    shift = 0.0 if t_start is None else float(t_start)  # t_start becomes time 0
    # owner = the user's organization; one group per user, path "<organization>/u{user}"
    # (user -1 -> "<organization>/unknown"), interned in order of first appearance so group
    # indices are stable for a given trace, window and seed.
    names = org_names if org_names is not None else [f"org{k}" for k in range(int(n_orgs))]
    users, first_seen, user_of_job = np.unique(kept["user_id"], return_index=True, return_inverse=True)
    by_appearance = np.argsort(first_seen, kind="stable")
    group_of_user = np.empty(len(users), dtype=np.int64)
    group_of_user[by_appearance] = np.arange(len(users))
    org_of_distinct = np.array([org_of_user[int(u)] for u in users], dtype=np.int64)
    owner = org_of_distinct[user_of_job]
    group = group_of_user[user_of_job]
    group_names = [
        f"{names[org_of_user[int(u)]]}/unknown" if u == -1 else f"{names[org_of_user[int(u)]]}/u{int(u)}"
        for u in users[by_appearance]
    ]

    # split_parallel: a q-processor job becomes q one-processor jobs with the same
    # release and size, the preparation used in the Shapley-value scheduling papers.
    if split_parallel:
        repeat = kept_procs.copy()
        repeat[: len(warm_left)] = 1  # a backlog row is already one copy
        # One job row per processor: 10^9 of them is a memory bomb, refused before it is made.
        rows = float(repeat.sum())
        check_allocation("workload.split_parallel", 3.0 * rows * JOB_DTYPE.itemsize, f"{rows:,.0f} jobs")
        out_procs = np.ones(int(repeat.sum()), dtype=np.int64)
    else:
        repeat = np.ones(len(kept), dtype=np.int64)
        out_procs = kept_procs
    if np.any(out_procs > np.iinfo(np.int32).max):
        raise WorkloadError("a job asks for more processors than JOB_DTYPE can hold")

    # One job row per processor: 10^9 of them is a memory bomb, refused before it is made.
    check_allocation(
        "workload.split_parallel", 3.0 * float(repeat.sum()) * JOB_DTYPE.itemsize, f"{repeat.sum():,} jobs"
    )
    jobs = empty_jobs(int(repeat.sum()))
    jobs["job_id"] = np.arange(len(jobs))
    jobs["owner"] = np.repeat(owner, repeat)
    jobs["group"] = np.repeat(group, repeat)
    # release = submit time (shifted so t_start is 0 when a window is given).
    jobs["release"] = np.repeat(kept["submit_time"] - shift, repeat)
    jobs["size"] = np.repeat(kept["run_time"], repeat)
    jobs["release"][: len(warm_left)] = 0.0  # the backlog: at t_start, with the work each has left
    jobs["size"][: len(warm_left)] = warm_left
    jobs["procs"] = out_procs
    # walltime = requested time; -1 (or any non-positive limit, which no scheduler
    # could honour) means unknown and becomes NaN.
    requested_time = kept["requested_time"]
    jobs["walltime"] = np.repeat(np.where(requested_time > 0, requested_time, np.nan), repeat)
    jobs["priority"] = 0.0
    # Each job enters the grid at its own organization's site and has not moved yet.
    jobs["submit_site"] = jobs["owner"]
    jobs["migrations"] = 0
    return SwfJobs(
        jobs=jobs,
        group_names=group_names,
        org_of_user=org_of_user,
        skipped=skipped,
        warm=len(warm_left),
        wide_work=wide_work,
        trace_numbers=np.repeat(kept["job_number"], repeat),
    )


def scale_to_load(jobs: np.ndarray, capacity: float, load: float) -> tuple[float, float]:
    """Stretch or compress the jobs' inter-arrival times, in place, so that their offered
    load is ``load``: their work (run time x processors) over ``capacity`` (the sites'
    processors x speed) times the span of their releases, which scaling the gaps between
    releases by a factor scales alike (the first release stays where it is). Returns the
    trace's own offered load and the factor (below 1: arrivals closer together, more load)."""
    release = jobs["release"]
    first, span = float(release.min()), float(release.max() - release.min())
    if not span > 0:
        raise ScenarioError(
            "workload.load", "every job of the window is submitted at one instant: there are no gaps to scale"
        )
    offered = float((jobs["size"] * jobs["procs"]).sum()) / (capacity * span)
    factor = offered / load
    jobs["release"] = first + (release - first) * factor
    return offered, factor


def check_warm_start(t_start: object, split_parallel: bool) -> None:
    """What a warm start needs (``gridemu validate`` asks before the trace is read): a window
    to start, and sequential jobs to replay."""
    if t_start is None:
        raise ScenarioError("workload.warm_start", "needs a window: give workload.t_start")
    if not split_parallel:
        raise ScenarioError(
            "workload.warm_start", "replays sequential jobs: set workload.split_parallel = true with it"
        )


def _with_backlog(
    records: np.ndarray,
    procs: np.ndarray,
    usable: np.ndarray,
    window: np.ndarray,
    machines: int,
    t_start: float | None,
    split_parallel: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The record index of every backlog copy (see ``swf_to_jobs``'s ``warm_machines``) followed
    by the window's, and the work each copy has left. ``usable``: the records that no skip
    rule but the window's drops."""
    check_warm_start(t_start, split_parallel)
    submit, run_time = records["submit_time"], records["run_time"]
    prior = np.flatnonzero(usable & (submit < t_start))
    prior = prior[np.argsort(submit[prior], kind="stable")]
    n_copies = int(procs[prior].sum())  # refused before the replay's arrays are made
    check_allocation("workload.warm_start", 4.0 * n_copies * 8, f"a replay of {n_copies:,} jobs")
    copies = np.repeat(prior, procs[prior])
    for name, values in (("submit time", submit[prior]), ("run time", run_time[prior])):
        odd = np.flatnonzero(values != np.floor(values))
        if len(odd):
            raise ScenarioError(
                "workload.warm_start",
                f"the FCFS replay takes whole seconds; job {int(records['job_number'][prior[odd[0]]])} "
                f"has {name} {float(values[odd[0]]):g}",
            )
    present, left = fcfs_backlog(submit[copies], run_time[copies], int(machines), t_start)
    return np.concatenate([copies[present], window]), left
