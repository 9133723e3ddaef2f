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

TOML form (``policy_from_toml`` / ``policy_from_dict``)::

    [policy]                      # the root entry
    name = "Resource"             # required, non-empty, no "/"
    type = "resource"             # required (free text: resource, VO, project, user, local)
    scope = "local"               # optional: "local" or "global" (see scope below)
    source = "jdbc:mysql://localhost/usage"   # optional: the usage source's address
    # share: optional on the root (default 100, ignored by validate)

    [[policy.children]]
    name = "VO-A"
    type = "VO"
    share = 30                    # required below the root: percent of the parent, > 0
    ref = "http://vo-a.org/policy-provider"   # optional: mount a provider's subpolicy here

    [[policy.children]]
    name = "VO-B"
    type = "VO"
    share = 70
    scope = "global"
    [[policy.children.children]]  # VO-B's children, and so on down
    name = "P-B1"
    ...

Unknown keys are errors. ``policy_from_dict`` takes the root table itself or a whole
document whose ``policy`` key holds it.

XML form (``policy_from_xml``), Figure 2 [286-321]: ``<policy-entry type=".." name=".."
share="..">`` (share optional on the root) holding at most one of each of
``<usage-source at="..."/>``, ``<child-entries>`` (only ``policy-entry`` elements) and
``<policy-reference><at>URL</at></policy-reference>`` (``ref`` = the URL). A provider's
document may be a subpolicy fragment as in Figure 2's VO-A and VO-B parts: a top-level
``<usage-source/>`` followed by ``<child-entries>``, with no enclosing element; it is
parsed into a root Entry named by the ``name`` argument (type ``type``, default
``"subpolicy"``). ``<usage-source>`` also accepts a ``scope="local|global"`` attribute
(our extension; it wins over the address).

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
import re
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence
from urllib.parse import urlsplit

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


# ------------------------------------------------------------------------- parsing


def default_scope_of(at: str) -> str:
    """``"local"`` for a ``jdbc:`` URL or an address on localhost / without host, else ``"global"``."""
    if at.strip().lower().startswith("jdbc:"):
        return "local"
    try:
        host = urlsplit(at.strip()).hostname
    except ValueError:
        host = None
    if host is None or host in ("localhost", "127.0.0.1", "::1"):
        return "local"
    return "global"


def _label(where: str, path: str) -> str:
    return f"{where} {path}"


def _check_name(name: object, label: str) -> str:
    if not isinstance(name, str) or not name or "/" in name:
        raise PolicyError(f"{label}: name must be a non-empty string without '/', got {name!r}")
    return name


def _share(value: object, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise PolicyError(f"{label}: share must be a number, got {value!r}")
    try:
        share = float(value)
    except ValueError:
        raise PolicyError(f"{label}: share must be a number, got {value!r}") from None
    if not math.isfinite(share):
        raise PolicyError(f"{label}: share must be finite, got {value!r}")
    return share


def _entry_share(table: Mapping[str, object], parent_path: str | None, label: str, what: str) -> float:
    """An entry's share: required below the root, 100 (implicit) on it."""
    if "share" in table:
        return _share(table["share"], label)
    if parent_path is None:
        return 100.0
    raise PolicyError(f"{label}: missing {what} 'share'")


def _resolve_scope(
    scope: object, source: str | None, parent_scope: str, scope_of: Callable[[str], str], label: str
) -> str:
    if scope is None and source is not None:
        scope = scope_of(source)
    if scope is None:
        return parent_scope
    if scope not in SCOPES:
        raise PolicyError(f"{label}: scope must be 'local' or 'global', got {scope!r}")
    return scope  # type: ignore[return-value]


_TOML_KEYS = {"name", "type", "share", "scope", "source", "ref", "children"}


def policy_from_dict(
    data: Mapping, where: str = "policy", scope_of: Callable[[str], str] | None = None
) -> Entry:
    """The TOML form (module docstring) as parsed into dicts; ``data`` is the root table or
    a document whose ``policy`` key holds it. Structure only: see :func:`validate`."""
    if isinstance(data, Mapping) and "name" not in data and "policy" in data:
        data = data["policy"]
    return _dict_entry(data, where, None, "local", scope_of or default_scope_of, f"{where}: root")


def _dict_entry(
    data: object,
    where: str,
    parent_path: str | None,
    parent_scope: str,
    scope_of: Callable[[str], str],
    anon: str,
) -> Entry:
    if not isinstance(data, Mapping):
        raise PolicyError(f"{anon}: expected a table, got {type(data).__name__}")
    if "name" not in data:
        raise PolicyError(f"{anon}: missing key 'name'")
    name = _check_name(data["name"], anon)
    path = name if parent_path is None else f"{parent_path}/{name}"
    label = _label(where, path)
    unknown = sorted(set(data) - _TOML_KEYS)
    if unknown:
        raise PolicyError(f"{label}: unknown key {unknown[0]!r}")
    if "type" not in data:
        raise PolicyError(f"{label}: missing key 'type'")
    etype = data["type"]
    if not isinstance(etype, str):
        raise PolicyError(f"{label}: type must be a string, got {etype!r}")
    share = _entry_share(data, parent_path, label, "key")
    source = data.get("source")
    if source is not None and not isinstance(source, str):
        raise PolicyError(f"{label}: source must be a string, got {source!r}")
    ref = data.get("ref")
    if ref is not None and (not isinstance(ref, str) or not ref):
        raise PolicyError(f"{label}: ref must be a non-empty string, got {ref!r}")
    scope = _resolve_scope(data.get("scope"), source, parent_scope, scope_of, label)
    raw_children = data.get("children", [])
    if not isinstance(raw_children, list):
        raise PolicyError(f"{label}: children must be an array of tables")
    children = tuple(
        _dict_entry(child, where, path, scope, scope_of, f"{label}: children[{i}]")
        for i, child in enumerate(raw_children)
    )
    return Entry(name, etype, share, scope, children, ref, source)


def policy_from_toml(text: str, scope_of: Callable[[str], str] | None = None) -> Entry:
    """Parse the TOML form; the document must hold a ``[policy]`` table."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"policy: not valid TOML: {exc}") from None
    if not isinstance(doc.get("policy"), dict):
        raise PolicyError("policy: the document has no [policy] table")
    unknown = sorted(set(doc) - {"policy"})
    if unknown:
        raise PolicyError(f"policy: unknown top-level key {unknown[0]!r}")
    return policy_from_dict(doc["policy"], "policy", scope_of)


_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")


def policy_from_xml(
    text: str,
    name: str | None = None,
    type: str = "subpolicy",
    scope_of: Callable[[str], str] | None = None,
) -> Entry:
    """Parse Figure 2's XML: one ``<policy-entry>`` document, or a subpolicy fragment
    (``<usage-source/>`` + ``<child-entries>``) wrapped into a root named ``name``."""
    scope_of = scope_of or default_scope_of
    body = _XML_DECL.sub("", text, count=1)
    try:
        wrapper = ET.fromstring(f"<fragment>{body}</fragment>")
    except ET.ParseError as exc:
        raise PolicyError(f"policy: not well-formed XML: {exc}") from None
    elements = list(wrapper)
    if (wrapper.text or "").strip() or any((el.tail or "").strip() for el in elements):
        raise PolicyError("policy: text outside the XML elements")
    if len(elements) == 1 and elements[0].tag == "policy-entry":
        entry = _xml_entry(elements[0], None, "local", scope_of, "policy: root <policy-entry>")
        if name is not None and name != entry.name:
            raise PolicyError(f"policy {entry.name}: the document's root is not named {name!r}")
        return entry
    if not elements or any(el.tag not in ("usage-source", "child-entries") for el in elements):
        tags = [el.tag for el in elements]
        raise PolicyError(
            "policy: expected one <policy-entry>, or a subpolicy of <usage-source> and "
            f"<child-entries>, got {tags}"
        )
    root_name = _check_name(name if name is not None else "subpolicy", "policy: name")
    return _xml_body(elements, root_name, type, 100.0, None, "local", scope_of)


def _xml_entry(
    el: ET.Element, parent_path: str | None, parent_scope: str, scope_of: Callable[[str], str], anon: str
) -> Entry:
    attrs = dict(el.attrib)
    if "name" not in attrs:
        raise PolicyError(f"{anon}: missing attribute 'name'")
    name = _check_name(attrs["name"], anon)
    path = name if parent_path is None else f"{parent_path}/{name}"
    label = _label("policy", path)
    unknown = sorted(set(attrs) - {"name", "type", "share"})
    if unknown:
        raise PolicyError(f"{label}: unknown attribute {unknown[0]!r}")
    if "type" not in attrs:
        raise PolicyError(f"{label}: missing attribute 'type'")
    share = _entry_share(attrs, parent_path, label, "attribute")
    if (el.text or "").strip():
        raise PolicyError(f"{label}: unexpected text in <policy-entry>")
    return _xml_body(list(el), name, attrs["type"], share, parent_path, parent_scope, scope_of)


def _xml_body(
    elements: list[ET.Element],
    name: str,
    etype: str,
    share: float,
    parent_path: str | None,
    parent_scope: str,
    scope_of: Callable[[str], str],
) -> Entry:
    path = name if parent_path is None else f"{parent_path}/{name}"
    label = _label("policy", path)
    seen: dict[str, ET.Element] = {}
    for el in elements:
        if el.tag not in ("usage-source", "child-entries", "policy-reference"):
            raise PolicyError(f"{label}: unexpected element <{el.tag}>")
        if el.tag in seen:
            raise PolicyError(f"{label}: <{el.tag}> given twice")
        if (el.tail or "").strip():
            raise PolicyError(f"{label}: unexpected text after <{el.tag}>")
        seen[el.tag] = el
    source = None
    explicit_scope = None
    if "usage-source" in seen:
        us = seen["usage-source"]
        unknown = sorted(set(us.attrib) - {"at", "scope"})
        if unknown or len(us) or (us.text or "").strip():
            raise PolicyError(f"{label}: <usage-source> takes only the attributes 'at' and 'scope'")
        source = us.attrib.get("at")
        explicit_scope = us.attrib.get("scope")
    scope = _resolve_scope(explicit_scope, source, parent_scope, scope_of, label)
    ref = None
    if "policy-reference" in seen:
        pr = seen["policy-reference"]
        ats = list(pr)
        if len(ats) != 1 or ats[0].tag != "at" or pr.attrib or (pr.text or "").strip():
            raise PolicyError(f"{label}: <policy-reference> must hold exactly one <at>")
        ref = (ats[0].text or "").strip()
        if not ref or len(ats[0]):
            raise PolicyError(f"{label}: <policy-reference><at> must hold an address")
    children: list[Entry] = []
    if "child-entries" in seen:
        ce = seen["child-entries"]
        if ce.attrib or (ce.text or "").strip():
            raise PolicyError(f"{label}: <child-entries> takes no attributes or text")
        for i, child in enumerate(ce):
            if child.tag != "policy-entry":
                raise PolicyError(f"{label}: <child-entries> holds <{child.tag}>, not <policy-entry>")
            if (child.tail or "").strip():
                raise PolicyError(f"{label}: unexpected text in <child-entries>")
            children.append(_xml_entry(child, path, scope, scope_of, f"{label}: child-entries[{i}]"))
    return Entry(name, etype, share, scope, tuple(children), ref, source)


# ------------------------------------------------------------------- mount, validate


def mount(policy: Entry, providers: Mapping[str, Entry]) -> Entry:
    """Replace every entry with a ``ref`` by itself with the provider's children, scope and
    source (recursively); unknown references and cycles are errors."""
    return _mount(policy, providers, policy.name, ())


def _mount(entry: Entry, providers: Mapping[str, Entry], path: str, chain: tuple[str, ...]) -> Entry:
    label = _label("policy", path)
    src = entry
    while src.ref is not None:
        ref = src.ref
        if src.children:
            raise PolicyError(f"{label}: has both children and the policy reference {ref!r}")
        if ref in chain:
            raise PolicyError(f"{label}: policy reference cycle {' -> '.join(chain + (ref,))}")
        if ref not in providers:
            raise PolicyError(f"{label}: unknown policy reference {ref!r}")
        chain = chain + (ref,)
        src = providers[ref]
    children = tuple(_mount(c, providers, f"{path}/{c.name}", chain) for c in src.children)
    return Entry(entry.name, entry.type, entry.share, src.scope, children, None, src.source)


def validate(policy: Entry) -> None:
    """Shares > 0 and finite, siblings summing to 100 (±1e-6), sibling names unique, names
    without '/', scopes local/global, no entry with both children and a reference. The
    root's share is ignored (implicit 100% [255])."""
    _validate(policy, policy.name if isinstance(policy.name, str) else repr(policy.name), True)


def _validate(entry: Entry, path: str, is_root: bool) -> None:
    label = _label("policy", path)
    if not isinstance(entry, Entry):
        raise PolicyError(f"{label}: not an Entry: {entry!r}")
    _check_name(entry.name, label)
    if not isinstance(entry.type, str):
        raise PolicyError(f"{label}: type must be a string, got {entry.type!r}")
    if entry.scope not in SCOPES:
        raise PolicyError(f"{label}: scope must be 'local' or 'global', got {entry.scope!r}")
    if not is_root:
        share = entry.share
        if isinstance(share, bool) or not isinstance(share, numbers.Real) or not math.isfinite(share):
            raise PolicyError(f"{label}: share must be a finite number, got {share!r}")
        if share <= 0:
            raise PolicyError(f"{label}: share must be positive, got {share:g}")
    if entry.ref is not None:
        if not isinstance(entry.ref, str) or not entry.ref:
            raise PolicyError(f"{label}: ref must be a non-empty string, got {entry.ref!r}")
        if entry.children:
            raise PolicyError(f"{label}: has both children and the policy reference {entry.ref!r}")
    if not isinstance(entry.children, tuple):
        raise PolicyError(f"{label}: children must be a tuple of entries")
    names: set[str] = set()
    for child in entry.children:
        if not isinstance(child, Entry):
            raise PolicyError(f"{label}: a child is not an Entry: {child!r}")
        if child.name in names:
            raise PolicyError(f"{label}: two children named {child.name!r}")
        names.add(child.name)
    for child in entry.children:
        _validate(child, f"{path}/{child.name}", False)
    if entry.children:
        total = math.fsum(c.share for c in entry.children)
        if abs(total - 100.0) > _SUM_TOLERANCE:
            raise PolicyError(f"{label}: shares of the children of {entry.name} add up to {total:g}, not 100")


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
    if isinstance(u, bool) or not isinstance(u, numbers.Real) or not math.isfinite(u) or u < 0:
        raise ValueError(f"usage {path}: must be a finite number ≥ 0, got {u!r}")
    return float(u)


def _sibling_usage(parent: Entry, prefix: str | None, usage: Mapping[str, float]) -> tuple[list[float], float]:
    values = [
        _usage_value(usage, c.name if prefix is None else f"{prefix}/{c.name}") for c in parent.children
    ]
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


# --------------------------------------------------------------------- paper figures


def figure_4() -> Entry:
    """Figure 4 [586-615], the simulation policy, subpolicies mounted: Resource (local
    usage) {VO-A 30% (global) {P-A1 50, P-A2 30, P-A3 20}, VO-B 70% (global) {P-B1 60
    {U-B11 55, U-B12 30, U-B13 15}, P-B2 40}}."""

    def e(name: str, etype: str, share: float, scope: str, *children: Entry) -> Entry:
        return Entry(name, etype, float(share), scope, tuple(children))

    return e(
        "Resource", "resource", 100, "local",
        e("VO-A", "VO", 30, "global",
          e("P-A1", "project", 50, "global"),
          e("P-A2", "project", 30, "global"),
          e("P-A3", "project", 20, "global")),
        e("VO-B", "VO", 70, "global",
          e("P-B1", "project", 60, "global",
            e("U-B11", "user", 55, "global"),
            e("U-B12", "user", 30, "global"),
            e("U-B13", "user", 15, "global")),
          e("P-B2", "project", 40, "global")),
    )  # fmt: skip


_FIGURE_2_RESOURCE = """\
<policy-entry type="resource" name="Cluster">
  <usage-source at="jdbc:mysql://localhost/usage"/>
  <child-entries>
    <policy-entry type="VO" name="VO-A" share="50">
      <policy-reference>
        <at>http://vo-a.org/policy-provider</at>
      </policy-reference>
    </policy-entry>
    <policy-entry type="VO" name="VO-B" share="25">
      <policy-reference>
        <at>http://vo-b.org/policy-provider</at>
      </policy-reference>
    </policy-entry>
    <policy-entry type="local" name="Local" share="25"/>
  </child-entries>
</policy-entry>
"""

_FIGURE_2_VO_A = """\
<usage-source at="http://swegrid.se/vo-a/usage"/>
<child-entries>
  <policy-entry type="project" name="P-A1" share="25">
    <child-entries>
      <policy-entry type="user" name="U-A11" share="50"/>
      <policy-entry type="user" name="U-A12" share="50"/>
    </child-entries>
  </policy-entry>
  <policy-entry type="project" name="P-A2" share="25"/>
  <policy-entry type="project" name="P-A3" share="25"/>
  <policy-entry type="project" name="P-A4" share="25"/>
</child-entries>
"""

_FIGURE_2_VO_B = """\
<usage-source at="http://swegrid.se/vo-b/usage"/>
<child-entries>
  <policy-entry type="project" name="P-B1" share="60"/>
  <policy-entry type="project" name="P-B2" share="30"/>
  <policy-entry type="project" name="P-B3" share="10"/>
</child-entries>
"""


def figure_2_xml() -> tuple[str, str, str]:
    """Figure 2's documents [286-321]: the resource policy, VO-A's and VO-B's subpolicies
    (providers at http://vo-a.org/policy-provider and http://vo-b.org/policy-provider)."""
    return _FIGURE_2_RESOURCE, _FIGURE_2_VO_A, _FIGURE_2_VO_B
