"""Bounds on what gridemu reads and allocates: every input file is a regular file of bounded
size, a TOML text is nested only so deep (checked before it is parsed), and an allocation
that cannot fit in this machine's memory is refused before it is made.

A FIFO would hang the reader, a device (``/dev/zero``) never ends, and a file of gigabytes
is read whole before a line of it is checked; ``tomllib`` recurses once per nesting level,
so an array nested 50,000 deep ends in ``RecursionError``. Each is one line naming the key.
"""

from __future__ import annotations

import csv
import os
import stat
from collections.abc import Callable
from pathlib import Path

from gridemu.model.checks import duplicate
from gridemu.model.errors import ScenarioError

#: The largest input file read (scenario, trace, job list, edge file, policy), in MiB; the
#: environment variable ``GRIDEMU_MAX_INPUT_MIB`` raises it (a trace of several GiB).
DEFAULT_MAX_INPUT_MIB = 64
MAX_INPUT_ENV = "GRIDEMU_MAX_INPUT_MIB"
#: The deepest nesting of arrays and inline tables in a TOML text (a scenario needs 4).
MAX_TOML_DEPTH = 64


def max_input_bytes() -> int:
    raw = os.environ.get(MAX_INPUT_ENV)
    if raw is None:
        return DEFAULT_MAX_INPUT_MIB << 20
    try:
        mib = float(raw)
    except ValueError:
        mib = -1.0
    if not mib > 0 or mib == float("inf"):
        raise ScenarioError(MAX_INPUT_ENV, f"must be a number of MiB > 0, got {raw!r}")
    return int(mib * (1 << 20))


def check_input_file(path: str | os.PathLike[str], key: str, what: str = "a file") -> Path:
    """``path`` if it is a regular file no larger than :func:`max_input_bytes`; else a
    ScenarioError naming ``key``. Stats the path (never opens it: opening a FIFO blocks)."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ScenarioError(key, f"no such file: {path}") from None
    except OSError as exc:
        raise ScenarioError(key, f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ScenarioError(key, f"{path} is a folder, not {what}")
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device or socket"
        raise ScenarioError(key, f"{path} is {kind}, not {what} (a regular file)")
    limit = max_input_bytes()
    if st.st_size > limit:
        raise ScenarioError(
            key,
            f"{path} is {st.st_size / (1 << 20):,.1f} MiB, more than the {limit / (1 << 20):g} MiB an input file "
            f"may have (set {MAX_INPUT_ENV} to raise it)",
        )
    return path


def check_toml_depth(text: str, key: str, limit: int = MAX_TOML_DEPTH) -> None:
    """Refuse a TOML text whose arrays and inline tables nest deeper than ``limit``, before
    ``tomllib`` recurses into it. Brackets inside strings and comments do not count."""
    depth, line, i, n = 0, 1, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            j = i + len(quote)
            while j < n:
                if quote[0] == '"' and text[j] == "\\":
                    j += 2
                    continue
                if text.startswith(quote, j):
                    break
                if len(quote) == 1 and text[j] == "\n":  # a broken one-line string: tomllib says where
                    break
                j += 1
            line += text.count("\n", i, j)
            i = j + len(quote)
            continue
        elif c in "[{":
            depth += 1
            if depth > limit:
                raise ScenarioError(key, f"line {line}: arrays and tables nested more than {limit} deep")
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1


def available_memory() -> int:
    """Bytes this machine can still give a run: MemAvailable of /proc/meminfo, else the
    physical memory (os.sysconf), else 8 GiB (no way to ask)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def gib(n: float) -> str:
    if n >= 1 << 50:
        return f"{n / (1 << 30):.2g} GiB"
    return f"{n / (1 << 30):,.1f} GiB" if n >= 1 << 28 else f"{n / (1 << 20):,.0f} MiB"


def check_allocation(key: str, nbytes: float, what: str) -> None:
    """Refuse, before it is made, an allocation that cannot fit in this machine's memory at
    all (the sites' processors, a latency matrix, a trace's split jobs): no ``--force`` helps."""
    free = available_memory()
    if nbytes > free:
        raise ScenarioError(key, f"{what} would take about {gib(nbytes)}, more than the {gib(free)} available")


class CsvProblem(Exception):
    """Why a CSV file cannot be read as a table: at ``line`` (0: the file as a whole, 1: its
    header), ``problem``; each reader says it in its own error's form."""

    def __init__(self, line: int, problem: str):
        super().__init__(f"line {line}: {problem}")
        self.line, self.problem = line, problem


def csv_table(
    path: Path, header: Callable[[list[str]], None] | None = None, expected: str = ""
) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """A CSV file's column names and its rows, each (its line, {name: text}): the one reader
    of the job lists and edge files. A spreadsheet's UTF-8 byte-order mark is not part of the
    first name. ``header`` checks the names before any row is read (it raises the caller's
    own error); ``expected`` says what header an empty file lacks. CsvProblem where the file
    is no table: not UTF-8 text, empty, a name given twice, a line the csv module cannot read
    (a field past its 131,072 characters, a NUL byte), a row of another length than the header."""
    reader = None
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None:
                raise CsvProblem(1, f"empty file; expected a CSV header line{expected}")
            names = list(reader.fieldnames)
            twice = duplicate(names)
            if twice is not None:
                raise CsvProblem(1, f"column {twice!r} is named twice in the header")
            if header is not None:
                header(names)
            rows = []
            for line, row in enumerate(reader, start=2):
                if None in row or None in row.values():
                    raise CsvProblem(line, f"wrong number of columns (header has {len(names)})")
                rows.append((line, row))
    except UnicodeDecodeError:
        raise CsvProblem(0, "not a text CSV file (UTF-8)") from None
    except csv.Error as exc:
        raise CsvProblem(reader.line_num + 1 if reader is not None else 1, f"not a CSV line ({exc})") from None
    return names, rows
