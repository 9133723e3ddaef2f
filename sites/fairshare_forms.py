"""Grid-wide fairshare policies: their TOML and XML forms, mounting of remote
subpolicies, validation, and the paper's example policies (Figures 2 and 4). The model
(:class:`~gridemu.sites.fairshare.Entry`) and the readings of the paper are in
``sites/fairshare.py``.

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
"""

from __future__ import annotations

import math
import numbers
import re
import tomllib
import xml.etree.ElementTree as ET
from typing import Callable, Mapping
from urllib.parse import urlsplit

from gridemu.model.inputs import MAX_TOML_DEPTH
from gridemu.sites.fairshare import _SUM_TOLERANCE, SCOPES, Entry, PolicyError

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


def _share(value: object, label: str, text: bool = False) -> float:
    """A share: a number, or with ``text`` (an XML attribute, always a string) its text."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str) if text else numbers.Real):
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
        return _share(table["share"], label, text=what == "attribute")
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


def policy_from_dict(data: Mapping, where: str = "policy", scope_of: Callable[[str], str] | None = None) -> Entry:
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
    _check_xml_depth(wrapper)
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
            f"policy: expected one <policy-entry>, or a subpolicy of <usage-source> and <child-entries>, got {tags}"
        )
    root_name = _check_name(name if name is not None else "subpolicy", "policy: name")
    return _xml_body(elements, root_name, type, 100.0, None, "local", scope_of)


def _check_xml_depth(root: ET.Element, limit: int = 2 * MAX_TOML_DEPTH) -> None:
    """Entries nested as deep as a TOML policy may be (a level is a <policy-entry> and its
    <child-entries>): the walk below recurses once a level, and 500 levels were a
    RecursionError traceback."""
    stack = [(root, 0)]
    while stack:
        el, depth = stack.pop()
        if depth > limit:
            raise PolicyError(f"policy: entries nested more than {limit // 2} deep")
        stack.extend((child, depth + 1) for child in el)


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


def _validate(entry: Entry, path: str, is_root: bool) -> None:  # noqa: C901
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
