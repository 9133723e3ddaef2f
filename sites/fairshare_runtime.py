"""The runtime policy tree of a run (grid-wide fairshare paper, section 3.2): the scenario's
``[policy]`` resolved once, shared by every site's ``fairshare`` scheduler.

``[policy]`` keys (docs/scenarios.md):
  * ``tree``: the local policy as a TOML table (``sites.fairshare_forms.policy_from_dict``), or
    ``file``: a path to a TOML or XML (Figure 2's ``policy-entry`` form) policy;
  * ``providers``: VO subpolicies mounted where an entry has ``ref = "<name>"``: a table
    per provider with ``tree`` or ``file``, and ``site`` (the site index that serves it;
    sites fetch it by message, protocol ``fairshare``);
  * ``approach``: the usage approach of global entries, "historical" | "active" |
    "predictive" (section 5.1); ``local_approach`` that of local ones ("active": "for
    enforcing local policies, resources always consider local, active usage");
  * ``window``: ``{length, count, decay}`` usage-history windows (Maui's FSINTERVAL,
    FSDEPTH, FSDECAY); default one infinite window ("only a single usage history window");
  * ``weights``: ``{fairshare, queue_time}``: priority = fairshare × base-200 priority +
    queue_time × seconds waited (default 1 and 0: "the scheduler selects the job with highest
    fairshare priority");
  * ``default``: the entry a job whose group path maps nowhere goes to (counted and
    reported); without it such a job is an error naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from gridemu.sites.fairshare import (
    APPROACHES,
    Entry,
    PolicyError,
    Windows,
    depth,
    deviation_tuple,
    entries,
    map_path,
    priority,
    target_shares,
)
from gridemu.sites.fairshare_forms import mount, policy_from_dict, policy_from_toml, policy_from_xml, validate
from gridemu.sites.sections import SectionFacts, SectionHooks

if TYPE_CHECKING:  # pandas only for annotations: shard actors start without it
    import pandas as pd

_KEYS = {"tree", "file", "providers", "approach", "local_approach", "window", "weights", "default"}


@dataclass
class RuntimePolicy:
    """What a fairshare scheduler needs: the mounted tree, job mapping, approaches, weights."""

    policy: Entry
    entries: list[str]
    entry_of_group: list[str]  # run group index -> the entry its jobs map to
    group_unmapped: list[bool]  # whether that group maps nowhere (sent to the default entry)
    default: str | None
    approach: str
    local_approach: str
    windows: Windows
    w_fs: float
    w_qt: float
    targets: dict[str, float] = field(default_factory=dict)
    depth: int = 0
    paths: dict[str, list[str]] = field(default_factory=dict)  # entry -> root-to-entry paths
    # mount point (entry path of the local policy with ref) -> the site serving its subpolicy;
    # the subpolicy reaches the other sites by message (protocol fairshare)
    served: dict[str, int] = field(default_factory=dict)
    #: Groups whose path leaves the tree at an entry that has children, none of that name
    #: (a typo, or a user the policy does not list): their jobs count at that entry (the
    #: paper's rule); group -> what the run warns about it.
    partial: dict[str, str] = field(default_factory=dict)

    def mount_point(self, entry: str, unmounted: set[str]) -> str:
        """``entry``, or the mount point above it whose subpolicy has not arrived yet."""
        for m in unmounted:
            if entry.startswith(m + "/"):
                return m
        return entry

    def totals(self, usage: Mapping[str, float]) -> dict[str, float]:
        """Usage of every entry: its own jobs' and all its descendants'."""
        out: dict[str, float] = {}
        for entry, u in usage.items():
            for p in self.paths[entry]:
                out[p] = out.get(p, 0.0) + u
        return out

    def priorities(self, waiting: list[str], local: Mapping[str, float], grid: Mapping[str, float]) -> dict[str, float]:
        lt, gt = self.totals(local), self.totals(grid)
        return {e: priority(deviation_tuple(self.policy, self.paths[e], lt, gt), self.depth) for e in waiting}


def load_policy_tree(spec: Mapping[str, Any], key: str, base: Path | None = None) -> Entry:
    """A ``{tree = {...}}`` or ``{file = "..."}`` table -> Entry (errors name ``key``)."""
    from gridemu.model.errors import ScenarioError
    from gridemu.model.inputs import check_input_file, check_toml_depth

    if "tree" in spec and "file" in spec:  # one would silently win over the other
        raise ScenarioError(f"{key}.file", "tree and file are both given: give the policy one way")
    # Each tree is checked as it is read (shares, names, scopes), so that an error names the
    # key or file it came from; the mounted whole is checked again in build().
    if "tree" in spec:
        try:
            entry = policy_from_dict(spec["tree"], where=f"{key}.tree")
            validate(entry)
            return entry
        except PolicyError as exc:
            raise ScenarioError(f"{key}.tree", str(exc)) from None
    if "file" in spec:
        if not isinstance(spec["file"], str) or not spec["file"]:
            raise ScenarioError(f"{key}.file", f"must be the policy file's name, got {spec['file']!r}")
        path = Path(spec["file"])
        if base is not None and not path.is_absolute() and not path.exists():
            path = base / path
        check_input_file(path, f"{key}.file", "a policy file")
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise ScenarioError(f"{key}.file", f"{path} is not UTF-8 text (a policy is XML or TOML)") from None
        # The name says the form where it can (an empty .xml is an XML error, not "no [policy]
        # table"); otherwise the first character does.
        suffix = path.suffix.lower()
        xml = suffix == ".xml" or (suffix != ".toml" and text.lstrip().startswith("<"))
        if not xml:
            check_toml_depth(text, f"{key}.file")
        try:
            entry = policy_from_xml(text) if xml else policy_from_toml(text)
            validate(entry)
            return entry
        except PolicyError as exc:
            raise ScenarioError(f"{key}.file", f"{path}: {exc}") from None
    raise ScenarioError(key, "give the policy as tree = {...} or file = \"policy.xml\"")


def _subtable(conf: Mapping[str, Any], name: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    """``policy.window`` or ``policy.weights``: a table of those keys only (a typo such as
    ``dcay`` was its default, silently)."""
    from gridemu.model.errors import ScenarioError

    table = conf.get(name, {})
    if not isinstance(table, Mapping):
        raise ScenarioError(f"policy.{name}", f"must be a table {{{', '.join(keys)}}}, got {table!r}")
    for k in table:
        if k not in keys:
            raise ScenarioError(f"policy.{name}.{k}", f"unknown key (allowed: {', '.join(sorted(keys))})")
    return table


def build(  # noqa: C901
    conf: Mapping[str, Any], groups: list[str], base: Path | None = None, used: set[int] | None = None
) -> RuntimePolicy:
    """Resolve ``[policy]`` for a run whose jobs carry the group paths ``groups`` (those of
    index in ``used``, default all: a group no job has need not map anywhere)."""
    from gridemu.model.errors import ScenarioError

    for k in conf:
        if k not in _KEYS:
            raise ScenarioError(f"policy.{k}", f"unknown key (allowed: {', '.join(sorted(_KEYS))})")
    tree = load_policy_tree(conf, "policy", base)
    providers = {}
    sites_of: dict[str, int] = {}
    given = conf.get("providers") or {}
    if not isinstance(given, Mapping):
        raise ScenarioError(
            "policy.providers", f"must be a table of providers (name = {{tree or file, site}}), got {given!r}"
        )
    for name, spec in given.items():
        if not isinstance(spec, dict):
            raise ScenarioError(f"policy.providers.{name}", "must be a table with tree or file, and site")
        for k in spec:
            if k not in ("tree", "file", "site"):
                raise ScenarioError(f"policy.providers.{name}.{k}", "unknown key (allowed: file, site, tree)")
        providers[name] = load_policy_tree(spec, f"policy.providers.{name}", base)
        if "site" in spec:
            site = spec["site"]
            if isinstance(site, bool) or not isinstance(site, int) or site < 0:
                raise ScenarioError(f"policy.providers.{name}.site", f"must be a site index, got {site!r}")
            sites_of[name] = site
    served = {path: sites_of[e.ref] for path, e in _refs(tree) if e.ref in sites_of}
    try:
        tree = mount(tree, providers)
        validate(tree)
    except PolicyError as exc:
        raise ScenarioError("policy", str(exc)) from None
    approaches = {}
    for key, default in (("approach", "active"), ("local_approach", "active")):
        value = conf.get(key, default)
        if value not in APPROACHES:
            raise ScenarioError(f"policy.{key}", f"unknown value {value!r} (allowed: {', '.join(APPROACHES)})")
        approaches[key] = value
    from gridemu.model.checks import check_number

    win = _subtable(conf, "window", ("length", "count", "decay"))

    length = check_number("policy.window.length", win.get("length", math.inf), positive=True)
    count = int(check_number("policy.window.count", win.get("count", 1), positive=True, integer=True))
    decay = check_number("policy.window.decay", win.get("decay", 1.0), positive=True)
    if decay > 1:
        raise ScenarioError("policy.window.decay", f"must be in (0, 1], got {decay}")
    weights = _subtable(conf, "weights", ("fairshare", "queue_time"))
    w_fs = check_number("policy.weights.fairshare", weights.get("fairshare", 1.0), nonneg=True)
    w_qt = check_number("policy.weights.queue_time", weights.get("queue_time", 0.0), nonneg=True)
    all_entries = entries(tree)
    default = conf.get("default")
    if default is not None and default not in all_entries:
        raise ScenarioError("policy.default", f"no entry {default!r} in the policy (entries: {', '.join(all_entries)})")
    entry_of, unmapped, partial = [], [], {}
    for i, g in enumerate(groups):
        path = map_path(tree, g)
        if path and len(path) < len(g.split("/")) and (used is None or i in used):
            children = _entry(tree, path[-1]).children
            if children:
                partial[g] = (
                    f"jobs of group {g!r} count at policy entry {path[-1]!r}: {g.split('/')[len(path)]!r} is none of "
                    f"its children ({', '.join(c.name for c in children)})"
                )
        if not path:
            if default is None and used is not None and i not in used:
                entry_of.append(all_entries[0])  # no job has this group
                unmapped.append(True)
                continue
            if default is None:
                raise ScenarioError(
                    "policy.default",
                    f"jobs of group {g!r} map to no policy entry: give policy.default, the entry they go to",
                )
            path = map_path(tree, default)
        entry_of.append(path[-1])
        unmapped.append(not map_path(tree, g))
    paths = {e: map_path(tree, e) for e in all_entries}
    return RuntimePolicy(
        policy=tree,
        entries=all_entries,
        entry_of_group=entry_of,
        group_unmapped=unmapped,
        default=default,
        approach=approaches["approach"],
        local_approach=approaches["local_approach"],
        windows=Windows(length, count, decay),
        w_fs=w_fs,
        w_qt=w_qt,
        targets=target_shares(tree),
        depth=depth(tree),
        paths=paths,
        served=served,
        partial=partial,
    )


def _entry(tree: Entry, path: str) -> Entry:
    """The entry at an entry path (``VO-A/P-A1``) of ``tree``."""
    entry = tree
    for name in path.split("/"):
        entry = next(c for c in entry.children if c.name == name)
    return entry


def _refs(entry: Entry, prefix: str | None = None):
    """(path, entry) of every entry of the unmounted local policy that references a provider."""
    for child in entry.children:
        path = child.name if prefix is None else f"{prefix}/{child.name}"
        if child.ref is not None:
            yield path, child
        yield from _refs(child, path)


def share_timeseries(
    rt: RuntimePolicy, jobs: Any, groups: list[str], samples: int = 200, end: float | None = None
) -> dict[str, np.ndarray]:
    """Aggregated utilization share of every entry over time (section 5.1): the grid-wide
    usage delivered to the entry since the start, as a fraction of its parent's.

    ``jobs`` has group (names or codes), start, end and procs; unfinished jobs count up to
    the sample time. Returns columns time, entry, share, target, usage.
    """
    start = np.asarray(jobs["start"], dtype=float)
    stop = np.asarray(jobs["end"], dtype=float)
    procs = np.asarray(jobs["procs"], dtype=float)
    group = jobs["group"]
    codes = group.cat.codes.to_numpy() if hasattr(group, "cat") else np.asarray(group)
    names = list(group.cat.categories) if hasattr(group, "cat") else groups
    ran = ~np.isnan(start)
    if end is None:
        end = float(np.nanmax(np.where(np.isnan(stop), start, stop))) if ran.any() else 1.0
    times = np.linspace(end / samples, end, samples)
    stop = np.where(np.isnan(stop), np.inf, stop)
    entry_of = {name: rt.entry_of_group[groups.index(name)] if name in groups else None for name in names}
    leaf_usage: dict[str, np.ndarray] = {}
    for code, name in enumerate(names):
        entry = entry_of[name]
        sel = ran & (codes == code)
        if entry is None or not sel.any():
            continue
        s, e, q = start[sel], stop[sel], procs[sel]
        u = np.zeros(samples)
        for lo in range(0, len(s), 4096):  # memory O(block × samples)
            ss, ee, qq = s[lo : lo + 4096, None], e[lo : lo + 4096, None], q[lo : lo + 4096, None]
            u += (np.clip(np.minimum(times, ee) - ss, 0.0, None) * qq).sum(axis=0)
        leaf_usage[entry] = leaf_usage.get(entry, 0.0) + u
    total: dict[str, np.ndarray] = {}
    for entry, u in leaf_usage.items():
        for p in rt.paths[entry]:
            total[p] = total.get(p, 0.0) + u
    rows_t, rows_e, rows_s, rows_g, rows_u = [], [], [], [], []
    for entry in rt.entries:
        path = rt.paths[entry]
        mine = total.get(entry, np.zeros(samples))
        parent = (
            total.get(path[-2], np.zeros(samples))
            if len(path) > 1
            else sum((total.get(e, 0.0) for e in rt.entries if len(rt.paths[e]) == 1), np.zeros(samples))
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(parent > 0, mine / parent, np.nan)
        rows_t.append(times)
        rows_e.extend([entry] * samples)
        rows_s.append(share)
        rows_g.append(np.full(samples, rt.targets[entry]))
        rows_u.append(mine)
    return {
        "time": np.concatenate(rows_t),
        "entry": np.asarray(rows_e, dtype=object),
        "share": np.concatenate(rows_s),
        "target": np.concatenate(rows_g),
        "usage": np.concatenate(rows_u),
    }


# The [policy] section's hooks (sites/sections.py): what the kernel calls for the fairshare scheduler.
def check_section(conf: dict[str, Any], n_sites: int, base: Path | None) -> None:
    from gridemu.model.errors import ScenarioError

    build(conf, [], base)
    for name, spec in (conf.get("providers") or {}).items():
        if isinstance(spec, dict) and isinstance(spec.get("site"), int) and spec["site"] >= n_sites:
            raise ScenarioError(
                f"policy.providers.{name}.site", f"must be a site index 0..{n_sites - 1}, got {spec['site']}"
            )


def shared_policy(
    conf: dict[str, Any], groups: list[str], used: set[int] | None, base: Path | None
) -> tuple[RuntimePolicy, list[str]]:
    """The runtime policy tree every fairshare scheduler of the run shares, and a warning for
    each group that counts at an inner entry (the first five)."""
    rt = build(conf, groups, base, used)
    why = list(rt.partial.values())
    return rt, why[:5] + ([f"and {len(why) - 5} more such groups"] if len(why) > 5 else [])


def section_results(facts: SectionFacts) -> tuple[dict[str, Any], "pd.DataFrame"]:
    """The ``policy`` section of summary.json and the share-policy runs' figure, every
    entry's aggregated utilization share over time (timeseries.parquet)."""
    import pandas as pd  # noqa: PLC0415  (the driver's alone)

    jobs, interval = facts.jobs, facts.metrics.get("sample_interval")
    end = min(facts.horizon, float(np.nanmax(jobs[["start", "end"]].to_numpy()))) if len(jobs) else 1.0
    samples = int(min(2000, max(10, end // interval))) if interval else 200
    shares = pd.DataFrame(share_timeseries(facts.state, jobs, facts.groups, samples=samples, end=end))
    unmapped = (
        int(facts.sites["jobs_to_default_entry"].fillna(0).sum()) if "jobs_to_default_entry" in facts.sites else 0
    )
    return policy_summary(facts.state, shares, unmapped), shares


def policy_summary(rt: RuntimePolicy, shares: "pd.DataFrame", unmapped: int) -> dict[str, Any]:
    """Per entry: target, final share, final deviation (percentage points), the mean absolute
    deviation over the second half of the run, and the first time from which the share stays
    within ±2 points of its target (None if it never settles); over all entries: the mean of
    those absolute deviations and the largest final one."""
    out: dict = {"jobs_to_default_entry": unmapped, "entries": {}}
    for entry, part in shares.groupby("entry", sort=False):
        share = part["share"].to_numpy()
        times = part["time"].to_numpy()
        target = float(part["target"].iloc[0])
        off = ~(np.abs(share - target) <= 0.02)
        last_off = np.flatnonzero(off)
        settled = None if off[-1] else float(times[last_off[-1] + 1]) if len(last_off) else float(times[0])
        late = share[len(share) // 2 :]
        late = late[late == late]
        out["entries"][entry] = {
            "target": target,
            "final_share": float(share[-1]) if share[-1] == share[-1] else None,
            "final_deviation_points": float(100 * (share[-1] - target)) if share[-1] == share[-1] else None,
            "mean_abs_deviation_points": float(100 * np.abs(late - target).mean()) if len(late) else None,
            "within_2_points_from": settled,
        }
    devs = [
        v["mean_abs_deviation_points"] for v in out["entries"].values() if v["mean_abs_deviation_points"] is not None
    ]
    finals = [
        abs(v["final_deviation_points"]) for v in out["entries"].values() if v["final_deviation_points"] is not None
    ]
    out["mean_abs_deviation_points"] = float(np.mean(devs)) if devs else None
    out["max_final_deviation_points"] = float(max(finals)) if finals else None
    return out


HOOKS = SectionHooks(check=check_section, shared=shared_policy, results=section_results)
