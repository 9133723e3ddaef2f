"""Grid-wide fairshare policies (Elmroth & Gardfjäll, "Design and evaluation of a
decentralized system for Grid-wide fairshare scheduling"): the policy tree, its XML and
TOML forms, mounting of remote subpolicies, job mapping, target deviation tuples, the
base-200 priority of section 4 and the usage approaches of section 5.1.

Pure functions, no simulation kernel. Line numbers in brackets refer to
``/work/shared/papers/grid-wide-fairshare.txt``.

Model (sections 2-3 [119-131, 252-264]). A policy is a tree of :class:`Entry`. "The root
entry represents the total resource capacity, with an implicit 100% share. Each child entry
represents the share allotted to a particular user group, specified as a percentage of the
parent share" [254-257]. "An entry contains the entity name (e.g. VO-A), type (e.g. VO),
target share (e.g. 50%), usage data source, and a set of child policy entries" [257-259].
An entry is named by its *path*: the names from the root's child down to it, joined by
``/`` (``"VO-B/P-B1/U-B11"``); the root itself has no path (error messages name it by its
name: ``policy Resource/VO-A: ...``).
The TOML and XML forms, mounting and validation are in ``sites/fairshare_forms.py``.

Readings where the text is ambiguous or silent:
  * Scope is attached to the entry that *owns* the usage source, and governs its
    children's deviations. The text says "the scope of a policy share is determined by its
    usage data source" [261-264], but Figure 2 puts ``<usage-source>`` on the root (the
    local DB) and on each subpolicy (the VO's global usage service) [287, 303, 316], and
    the runtime entry "collects information about its usage relative to the parent, using
    the usage data source of the parent" [477-479]. So ``Entry.scope`` is the scope of the
    entry's own usage source, and the deviation of an entry is computed from the usage of
    its *parent's* scope. Figure 4 [586-593]: Resource(scope local) {VO-A(global){P-A1,
    P-A2, P-A3}, VO-B(global){P-B1(global){U-B11, U-B12, U-B13}, P-B2}}: the VO deviations
    use this site's usage ("the first policy-level has local scope" [587-588]), project
    and user deviations use Grid-wide usage ("VO-A and VO-B both have global subpolicies"
    [589-590]).
  * An entry without a usage source inherits its parent's scope at parse time (P-A1 in
    Figure 2 has none, and its users are divided by the VO's global source); a root
    without one is ``"local"``. Explicit ``scope`` (TOML, or our XML attribute) wins,
    else the source's address is mapped by ``scope_of`` (default :func:`default_scope_of`:
    ``"local"`` for ``jdbc:`` URLs and for addresses whose host is localhost, 127.0.0.1,
    ::1 or missing (a file path); ``"global"`` otherwise). The address is kept in
    ``Entry.source``, which takes no part in Entry equality (it records where usage comes
    from; the policy is the rest).
  * Mounting [140-143, 279-284]: an entry with ``ref`` takes the children, the scope and
    the source of the provider's root entry (the subpolicy, whose ``<usage-source>``
    divides the VO share), and keeps its own name, type and share; ``ref`` is cleared,
    so a mounted tree holds no references. A provider may reference another provider
    (its root or any entry); an entry with both children and a reference is an error.
  * The root's share is ignored by :func:`validate` (the root has "an implicit 100%
    share" [255]), so a provider's subpolicy, or any subtree, validates as a root.
  * Mapping [480-482]: a group path's components are matched against child names from the
    root; the walk stops at a leaf or at the first component that names no child (later
    components are not tried).
  * Actual share = the entry's usage over the sum of its siblings' usage (the paper's
    "aggregated utilization ... represented as a percentage of the parent entity's
    utilization share" [659-662]; a parent's own jobs, which stopped there, are not a
    sibling and do not count). When the siblings' total is zero every actual share is
    0, so each deviation equals the target share.
  * Deviation = target share − actual share, in percent of the parent, so in (−100, +100];
    positive = the entry got less than its target [486-489]. Computed as
    ``share − 100·u/total`` so round numbers stay exact.
  * Priority [530-535]: ``Σ (dev[i] + 100)·200^(d−1−i)``, tuple padded with zeros, as
    printed. The "digits" dev+100 span 0..200, i.e. 201 values, and deviations are real,
    so the number is *not* exactly the lexicographic order the text motivates [502-506]:
    the lower digits together span up to 200·(200^(d−1)−1)/199, a little more than one
    unit of the top digit. Subgroup isolation [551-560] therefore holds for two siblings
    whose deviations differ by more than 200/199·(1−200^−(d−1)) (≈ 1.005 percent points);
    closer deviations can be reordered by deeper levels (tests show both).
  * Usage approaches [641-647], as seen at ``now``: a record is completed when
    ``end <= now``; one with ``start <= now`` and a NaN, infinite or later end is running;
    one with ``start > now`` counts nothing. Historical: completed jobs only. Active: plus
    running jobs' elapsed ``now − start``. Predictive: plus each running job's *whole*
    requested walltime ("the requested wallclock time for each currently running job"
    [646-647]), elapsed time not subtracted, counted in the current window, even when the
    job has overrun it. Usage is processor-seconds: procs × time.
  * Windows (Maui FSINTERVAL/FSDEPTH/FSDECAY, [460-464, 554-556]): window k covers
    [now − (k+1)·length, now − k·length); the part of a job's interval in window k counts
    with weight decay**k; windows k ≥ count are dropped. The default (one infinite window,
    as in the simulations [621-622]) gives plain totals.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

SCOPES = ("local", "global")
APPROACHES = ("historical", "active", "predictive")
_SUM_TOLERANCE = 1e-6


class PolicyError(ValueError):
    """A malformed policy; the message names the entry path (``policy Resource/VO-A: ...``)."""


@dataclass(frozen=True)
class Entry:
    """One policy entry. ``scope`` is the scope of the entry's usage source, used for the
    deviations of its *children*; ``ref`` names a provider whose subpolicy is mounted here;
    ``source`` records the usage source's address (not compared)."""

    name: str
    type: str
    share: float
    scope: str = "local"
    children: tuple["Entry", ...] = ()
    ref: str | None = None
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.children, list):
            object.__setattr__(self, "children", tuple(self.children))


@dataclass(frozen=True)
class Windows:
    """Multi-window usage history: ``count`` windows of ``length`` seconds, window k
    (k = 0 the current one) weighted ``decay**k``."""

    length: float = math.inf
    count: int = 1
    decay: float = 1.0


@dataclass(frozen=True)
class UsageRecord:
    """One job as the usage collector sees it. ``entry`` is the path of the deepest entry
    the job was mapped to; ``end`` is inf or NaN while the job runs; ``walltime`` is the
    requested wallclock time (used by the predictive approach)."""

    entry: str
    start: float
    end: float
    procs: int
    walltime: float


# ---------------------------------------------------------------------- tree queries


def _walk(entry: Entry, prefix: str | None = None):
    """(path, entry, parent) for every entry below ``entry``, parents before children."""
    for child in entry.children:
        path = child.name if prefix is None else f"{prefix}/{child.name}"
        yield path, child, entry
        yield from _walk(child, path)


def depth(policy: Entry) -> int:
    """Levels below the root (a lone root: 0; Figure 4: 3)."""
    return 1 + max(depth(c) for c in policy.children) if policy.children else 0


def entries(policy: Entry) -> list[str]:
    """Every entry path below the root, parents before children, siblings in policy order."""
    return [path for path, _, _ in _walk(policy)]


def leaves(policy: Entry) -> list[str]:
    """The paths of the entries without children, in policy order."""
    return [path for path, entry, _ in _walk(policy) if not entry.children]


def map_path(policy: Entry, group: str) -> list[str]:
    """Section 3.2 [480-482]: walk from the root along ``group``'s '/'-separated names
    until a leaf or a name that matches no child; the entry paths passed."""
    out: list[str] = []
    entry = policy
    for name in group.split("/"):
        if not entry.children:
            break
        child = next((c for c in entry.children if c.name == name), None)
        if child is None:
            break
        out.append(child.name if not out else f"{out[-1]}/{child.name}")
        entry = child
    return out


def target_shares(policy: Entry) -> dict[str, float]:
    """path -> target share as a fraction of the parent (30% -> 0.3)."""
    return {path: entry.share / 100.0 for path, entry, _ in _walk(policy)}


def _usage_value(usage: Mapping[str, float], path: str) -> float:
    u = usage.get(path, 0.0)
    if type(u) is float and 0.0 <= u < math.inf:  # nearly every call: no check against numbers.Real's ABC
        return u
    if isinstance(u, bool) or not isinstance(u, numbers.Real) or not math.isfinite(u) or u < 0:
        raise ValueError(f"usage {path}: must be a finite number ≥ 0, got {u!r}")
    return float(u)


def _sibling_usage(parent: Entry, prefix: str | None, usage: Mapping[str, float]) -> tuple[list[float], float]:
    values = [_usage_value(usage, c.name if prefix is None else f"{prefix}/{c.name}") for c in parent.children]
    return values, math.fsum(values)


def actual_shares(policy: Entry, usage: Mapping[str, float]) -> dict[str, float]:
    """path -> the entry's usage over its siblings' total (0 for all when that is 0).
    Paths missing from ``usage`` have usage 0."""
    out: dict[str, float] = {}

    def visit(entry: Entry, prefix: str | None) -> None:
        if not entry.children:
            return
        values, total = _sibling_usage(entry, prefix, usage)
        for child, u in zip(entry.children, values):
            path = child.name if prefix is None else f"{prefix}/{child.name}"
            out[path] = u / total if total > 0 else 0.0
            visit(child, path)

    visit(policy, None)
    return out


def deviation_tuple(
    policy: Entry,
    path: Sequence[str],
    local_usage: Mapping[str, float],
    global_usage: Mapping[str, float],
) -> list[float]:
    """The target deviation tuple [484-489] of a job mapped along ``path`` (as returned by
    :func:`map_path`): for each entry, target − actual share in percent, the actual share
    taken from the usage of the *parent's* scope (``local_usage`` or ``global_usage``)."""
    out: list[float] = []
    parent = policy
    prefix: str | None = None
    for i, p in enumerate(path):
        names = p.split("/") if isinstance(p, str) else []
        expected = None if prefix is None else prefix.split("/")
        if len(names) != i + 1 or (expected is not None and names[:i] != expected):
            raise ValueError(f"path {list(path)!r}: element {i} ({p!r}) is not a child of the previous one")
        child = next((c for c in parent.children if c.name == names[-1]), None)
        if child is None:
            raise ValueError(f"path {list(path)!r}: no entry {p!r} in policy {policy.name}")
        usage = local_usage if parent.scope == "local" else global_usage
        values, total = _sibling_usage(parent, prefix, usage)
        u = values[parent.children.index(child)]
        out.append(child.share - (100.0 * u / total if total > 0 else 0.0))
        parent, prefix = child, p
    return out


def priority(deviation: Sequence[float], d: int) -> float:
    """Section 4 [530-535]: pad to d elements with zeros, then Σ (dev[i]+100)·200^(d−1−i).
    Highest = least favored. See the module docstring on how exact the isolation is."""
    if isinstance(d, bool) or not isinstance(d, int) or d < 0:
        raise ValueError(f"d: must be an integer ≥ 0, got {d!r}")
    if len(deviation) > d:
        raise ValueError(f"deviation {list(deviation)!r}: longer than d={d}")
    value = 0.0
    for i in range(d):
        dev = float(deviation[i]) if i < len(deviation) else 0.0
        if not (-100.0 - 1e-9 <= dev <= 100.0 + 1e-9):
            raise ValueError(f"deviation[{i}]: must be within [-100, 100] percent, got {dev!r}")
        value = value * 200.0 + (dev + 100.0)
    return value


def job_priority(
    policy: Entry, group: str, local_usage: Mapping[str, float], global_usage: Mapping[str, float]
) -> float:
    """map_path, deviation_tuple and priority with d = depth(policy), for one job's group."""
    path = map_path(policy, group)
    return priority(deviation_tuple(policy, path, local_usage, global_usage), depth(policy))


# ----------------------------------------------------------------------------- usage


def _check_windows(windows: Windows) -> None:
    if not isinstance(windows, Windows):
        raise ValueError(f"windows: expected a Windows, got {windows!r}")
    if not (windows.length > 0):
        raise ValueError(f"windows: length must be > 0 (inf allowed), got {windows.length!r}")
    if isinstance(windows.count, bool) or not isinstance(windows.count, int) or windows.count < 1:
        raise ValueError(f"windows: count must be an integer ≥ 1, got {windows.count!r}")
    if not (0.0 <= windows.decay <= 1.0):
        raise ValueError(f"windows: decay must be within [0, 1], got {windows.decay!r}")


def _weighted_time(a: float, b: float, now: float, w: Windows) -> float:
    """Σ_k decay**k · |[a, b) ∩ window k|."""
    if b <= a:
        return 0.0
    if math.isinf(w.length):
        return max(0.0, min(b, now) - a)  # window 0 = (-inf, now); the others are empty
    k_lo = max(0, math.floor((now - b) / w.length) - 1)
    k_hi = min(w.count - 1, math.ceil((now - a) / w.length) + 1)
    total = 0.0
    for k in range(k_lo, k_hi + 1):
        lo = now - (k + 1) * w.length
        hi = now - k * w.length
        overlap = min(b, hi) - max(a, lo)
        if overlap > 0:
            total += w.decay**k * overlap
    return total


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[: k + 1]) for k in range(len(parts))]


def usage_of(
    records: Iterable[UsageRecord], now: float, approach: str, windows: Windows = Windows()
) -> dict[str, float]:
    """Processor-seconds per entry path and every ancestor path, as seen at ``now`` with the
    given approach (historical, active, predictive) and windows (module docstring).
    Every path named by a record, and its ancestors, appears (0.0 when nothing counts)."""
    if approach not in APPROACHES:
        raise ValueError(f"approach: expected one of {APPROACHES}, got {approach!r}")
    _check_windows(windows)
    if isinstance(now, bool) or not isinstance(now, numbers.Real) or not math.isfinite(now):
        raise ValueError(f"now: must be a finite time, got {now!r}")
    out: dict[str, float] = {}
    for i, r in enumerate(records):
        label = f"usage record {i} ({getattr(r, 'entry', None)!r})"
        if not isinstance(r.entry, str) or not r.entry or "" in r.entry.split("/"):
            raise ValueError(f"{label}: entry must be a path of non-empty names, got {r.entry!r}")
        if isinstance(r.procs, bool) or not isinstance(r.procs, numbers.Integral) or r.procs <= 0:
            raise ValueError(f"{label}: procs must be a positive integer, got {r.procs!r}")
        if not math.isfinite(r.start):
            raise ValueError(f"{label}: start must be finite, got {r.start!r}")
        if not math.isnan(r.end) and r.end < r.start:
            raise ValueError(f"{label}: end {r.end!r} before start {r.start!r}")
        if r.start > now:
            used = 0.0
        elif r.end <= now:  # completed (NaN compares False: running)
            used = r.procs * _weighted_time(r.start, r.end, now, windows)
        elif approach == "historical":
            used = 0.0
        elif approach == "active":
            used = r.procs * _weighted_time(r.start, now, now, windows)
        else:
            if not (math.isfinite(r.walltime) and r.walltime >= 0):
                raise ValueError(
                    f"{label}: predictive usage needs the running job's walltime (finite, ≥ 0), got {r.walltime!r}"
                )
            used = r.procs * r.walltime  # window 0, weight decay**0 = 1
        for p in _ancestors(r.entry):
            out[p] = out.get(p, 0.0) + used
    return out


def aggregate(usage_by_leaf: Mapping[str, float], policy: Entry) -> dict[str, float]:
    """Add each entry's own usage (a leaf's, or a parent's jobs that stopped there) up to
    every ancestor; every entry path of ``policy`` appears. Unknown paths are errors."""
    out = {p: 0.0 for p in entries(policy)}
    for path in usage_by_leaf:
        if path not in out:
            raise ValueError(f"usage {path}: no such entry in policy {policy.name}")
        u = _usage_value(usage_by_leaf, path)
        for p in _ancestors(path):
            out[p] += u
    return out
