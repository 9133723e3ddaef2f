"""Number and choice checks shared by scenario validation and the protocols' parameter
checks: every failure is a ScenarioError naming the dotted key. Also the rounding that
splits a scenario's totals (processors, jobs) over its sites."""

from __future__ import annotations

import difflib
import math
import re
from typing import Any, Callable, Iterable

import numpy as np

from gridemu.model.errors import ScenarioError

_INT_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NUMBER_TEXT = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.ASCII | re.IGNORECASE
)


def parse_int(text: str, where: str) -> int:
    """An integer written in user text (a CSV cell, an edge file, a per-site key, an option):
    ASCII digits with an optional sign only. Python's ``int`` also takes "١" or "1_0", and
    ``str.isdigit`` takes "²", which ``int`` then refuses: the one parser for all of them."""
    stripped = text.strip()
    if not _INT_TEXT.fullmatch(stripped):
        raise ScenarioError(where, f"must be an integer in ASCII digits, got {text!r}")
    return int(stripped)


def parse_number(text: str, where: str) -> float:
    """A number written in user text: ASCII digits, an optional sign, decimal point and
    exponent, or inf/nan (which the caller's checks may refuse); see :func:`parse_int`."""
    stripped = text.strip()
    if not _NUMBER_TEXT.fullmatch(stripped):
        raise ScenarioError(where, f"must be a number in ASCII digits, got {text!r}")
    return float(stripped)


def is_int_text(text: str) -> bool:
    """Whether ``text`` is an unsigned integer in ASCII digits (what :func:`parse_int` takes, no sign)."""
    return text.isascii() and text.isdigit()


def duplicate(names: Any) -> str | None:
    """The first name given twice among a header's column names (stripped), or None."""
    seen: set[str] = set()
    for name in names:
        name = str(name).strip()
        if name in seen:
            return name
        seen.add(name)
    return None


def check_number(
    key: str,
    value: Any,
    *,
    positive: bool = False,
    nonneg: bool = False,
    integer: bool = False,
    finite: bool = False,
    most: float | None = None,
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(key, f"must be a number, got {value!r}")
    if integer and (not float(value).is_integer() or math.isinf(value)):
        raise ScenarioError(key, f"must be an integer, got {value!r}")
    if math.isnan(value):
        raise ScenarioError(key, "must be a number, got nan")
    if finite and math.isinf(value):
        raise ScenarioError(key, f"must be a finite number, got {value!r}")
    if most is not None and value > most:
        raise ScenarioError(key, f"must be at most {most:g}, got {value!r}")
    if positive and not value > 0:
        raise ScenarioError(key, f"must be > 0, got {value!r}")
    if nonneg and value < 0:
        raise ScenarioError(key, f"must be >= 0, got {value!r}")
    return float(value)


def check_flag(key: str, value: Any) -> bool:
    """A true/false setting; anything else is an error naming the key."""
    if not isinstance(value, bool):
        raise ScenarioError(key, f"must be true or false, got {value!r}")
    return value


def choice(key: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ScenarioError(
            key, f"unknown value {value!r}{did_you_mean(value, allowed)} (allowed: {', '.join(allowed)})"
        )
    return value


def did_you_mean(word: Any, known: Iterable[str]) -> str:
    """``: did you mean 'x'?`` for the known name closest to a misspelled ``word``, or ""."""
    if not isinstance(word, str):
        return ""
    known = list(known)
    # Case apart ("EASY", "Quickstart"), then the spelling.
    by_case = {k.casefold(): k for k in known}
    if word.casefold() in by_case:
        return f": did you mean {by_case[word.casefold()]!r}?"
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f": did you mean {close[0]!r}?" if close else ""


def largest_remainder(share: np.ndarray, total: int) -> np.ndarray:
    """Whole counts adding up to ``total`` from shares that do: each share rounded down, one
    more for each of the largest remainders (equal remainders: the first ones)."""
    counts = np.floor(share).astype(np.int64)
    counts[np.argsort(-(share - counts), kind="stable")[: total - int(counts.sum())]] += 1
    return counts


def per_site_array(key: str, value: Any, n: int, **checks: Any) -> np.ndarray:
    """:func:`per_site_values` as a numpy array."""
    return np.array(per_site_values(key, value, n, **checks))


def per_site_values(key: str, value: Any, n: int, **checks: Any) -> list[float]:
    """A scalar for every site, a list with one value per site, a table
    ``{default = x, 0 = y, ...}``: x for every site but those named by index (so a grid with
    one overloaded site keeps its shape when ``sites.count`` is swept), or a table
    ``{cycle = [a, b, ...]}``: site i gets the (i mod length)-th value (so a grid keeps the
    *fraction* of such sites when ``sites.count`` is swept)."""
    if isinstance(value, dict) and "cycle" in value:
        cycle = value["cycle"]
        if len(value) > 1:
            raise ScenarioError(
                key,
                f"a cycle of per-site values stands alone, got also {', '.join(str(k) for k in value if k != 'cycle')}",
            )
        if not isinstance(cycle, list) or not cycle:
            raise ScenarioError(
                f"{key}.cycle", f"must be a non-empty list of values repeated over the sites, got {cycle!r}"
            )
        pattern = [check_number(f"{key}.cycle[{i}]", v, **checks) for i, v in enumerate(cycle)]
        return [pattern[i % len(pattern)] for i in range(n)]
    return _per_site(key, value, n, lambda k, v: check_number(k, v, **checks), "{default = 2.0, 0 = 3.0}")


def per_site_choices(key: str, value: Any, n: int, allowed: tuple[str, ...]) -> list[str]:
    """A named setting for every site, given as :func:`per_site_values` takes numbers: one
    value, a list with one per site, or a table ``{default = "a", 2 = "b"}``."""
    return _per_site(
        key, value, n, lambda k, v: choice(k, v, allowed), f'{{default = "{allowed[0]}", 0 = "{allowed[-1]}"}}'
    )


def _per_site(key: str, value: Any, n: int, one: Callable[[str, Any], Any], example: str) -> list[Any]:
    """One value, a list of n, or a ``{default = ..., <site index> = ...}`` table, each value
    checked by ``one(key, value)``."""
    if isinstance(value, dict):
        if "default" not in value:
            raise ScenarioError(key, f"a table of per-site values needs a default (e.g. {example})")
        values = [one(f"{key}.default", value["default"])] * n
        for site, v in value.items():
            if site == "default":
                continue
            if not is_int_text(str(site)) or int(site) >= n:
                raise ScenarioError(f"{key}.{site}", f"must name a site by its index, 0 to {n - 1}")
            values[int(site)] = one(f"{key}.{site}", v)
        return values
    if isinstance(value, list):
        if len(value) != n:
            raise ScenarioError(key, f"has {len(value)} values but there are {n} sites")
        return [one(f"{key}[{i}]", v) for i, v in enumerate(value)]
    return [one(key, value)] * n


def check_sequential(jobs: Any, who: str) -> None:
    """Every job of a JOB_DTYPE array runs on one processor; else name the first that does not."""
    wide = np.flatnonzero(jobs["procs"] != 1)
    if len(wide):
        j = jobs[wide[0]]
        raise ScenarioError(
            "workload", f"job {int(j['job_id'])} needs {int(j['procs'])} processors: {who} schedules sequential jobs"
        )


def check_integral(jobs: Any, columns: tuple[str, ...], key: str, why: str) -> None:
    """The named columns of every job hold integers; else name the first job that breaks it.
    Past 2^53 a float no longer holds every integer (and an int64 overflows soon after)."""
    for col in columns:
        bad = np.flatnonzero(jobs[col] != np.round(jobs[col]))
        if len(bad):
            j = jobs[bad[0]]
            raise ScenarioError(key, f"job {int(j['job_id'])}: {col} {float(j[col])} is not an integer ({why})")
        bad = np.flatnonzero(np.abs(jobs[col]) > 2.0**53)
        if len(bad):
            j = jobs[bad[0]]
            raise ScenarioError(
                key, f"job {int(j['job_id'])}: {col} {float(j[col]):g} is past 2^53, the largest exact integer ({why})"
            )
