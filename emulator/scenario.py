"""Scenario files: load TOML, apply ``--set`` overrides, validate, fill defaults.

A scenario is plain nested data. ``load_scenario`` returns a :class:`Scenario` whose
``data`` is the fully resolved dict (every default filled in), which is what a run
writes back as ``scenario.toml``; the typed fields are views of it the engine reads.
Every problem is a :class:`ScenarioError` naming the dotted key.
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gridemu.brokers import registry
from gridemu.brokers.params import Params
from gridemu.brokers.protocol import Protocol, ScenarioFacts
from gridemu.emulator.limits import costs
from gridemu.emulator.scenario_toml import copy_tree
from gridemu.emulator.topology import Topology, build_topology, link_latency_matrix, smallest_link_latency
from gridemu.model.checks import check_flag, check_number, choice, did_you_mean, largest_remainder, per_site_values
from gridemu.model.errors import ScenarioError, first_few
from gridemu.model.inputs import check_allocation, check_input_file, check_toml_depth
from gridemu.scenarios.workload import WORKLOAD_KEYS, check_workload
from gridemu.sites.faults import FaultPlan, parse_faults
from gridemu.sites.sections import SECTIONS
from gridemu.sites.spec import SiteSpec

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "scenarios" / "data"

SCHEDULERS = ("fcfs", "spt", "list", "planned", "fcfs_any", "preempt", "fairshare", "easy")
BACKENDS = ("inprocess", "ray")
PACKINGS = ("block", "round_robin")
WORKLOAD_KINDS = ("poisson", "jobs", "csv", "swf", "rigid", "proposition", "streams", "dedicated")

# Keys each section may hold; anything else is a typo the user should hear about.
_KNOWN = {
    "run": {"seed", "horizon", "backend", "shards", "packing", "lookahead", "name", "description", "time_unit"},
    "network": {"latency", "latency_matrix", "topology", "topology_file"},
    "scheduler": {"name"},
    "metrics": {"counterfactual", "sample_interval", "fairness", "slowdown_bound", "warmup"},
    # Every kind's keys (scenarios/workload.py says which kind reads which).
    "workload": {"kind"}.union(*WORKLOAD_KEYS.values()),
    "sites": {"count", "procs", "speed", "scheduler"},
    "site": {"name", "org", "procs", "speed", "speeds", "scheduler"},
}


#: Bounds that keep a run finite: a site's processors (each is state), the sites of a grid,
#: and the smallest link latency (the kernel's lookahead: a window must advance the clock
#: by it at any virtual time the run reaches, and below this it no longer does in floats).
MAX_PROCS = 1_000_000
MAX_SITES = 10_000_000
MIN_LATENCY = 1e-9


@dataclass
class Scenario:
    data: dict[str, Any]
    sites: list[SiteSpec]
    orgs: list[str]
    latency: float | np.ndarray  # one latency for every link, or an (n_sites, n_sites) matrix
    lookahead: float
    source: str = "<dict>"
    extra: dict[str, Any] = field(default_factory=dict)
    topology: Topology = field(default_factory=lambda: Topology("full", None))
    faults: FaultPlan | None = None  # [faults] (sites/faults.py)
    #: The protocol's keys, checked and frozen (``data["protocol"]`` as typed values); after
    #: ``Protocol.check_jobs``, also what the jobs settle.
    params: Params = field(default_factory=Params)
    #: A ``[sites]`` table as given, its defaults filled in (None for ``[[sites]]`` entries).
    sites_table: dict[str, Any] | None = None

    def saved_data(self) -> dict[str, Any]:
        """``data`` as ``scenario.toml`` and checkpoints keep it: sites drawn from a ``[sites]``
        table stay that table, which the same seed expands to the same sites (a million site
        tables written out were 110 MB of TOML)."""
        if self.sites_table is None:
            return self.data
        return {k: (self.sites_table if k == "sites" else v) for k, v in self.data.items()}

    @property
    def seed(self) -> int:
        return int(self.data["run"]["seed"])

    @property
    def protocol(self) -> dict[str, Any]:
        return self.data["protocol"]

    @property
    def workload(self) -> dict[str, Any]:
        return self.data["workload"]

    @property
    def horizon(self) -> float:
        return float(self.data["run"]["horizon"])

    @property
    def folder(self) -> Path | None:
        """Where the scenario file is (paths it names are relative to it); None for a dict."""
        return Path(self.source).parent if self.source != "<dict>" else None

    @property
    def max_latency(self) -> float:
        """The slowest link: how long any message may take."""
        return _max_latency(self.latency)

    @property
    def plugin(self) -> Protocol:
        """The protocol's description (``brokers/registry.py``)."""
        return registry.get(self.protocol["name"])

    def facts(self) -> ScenarioFacts:
        """What a protocol's checks and summary see of this scenario."""
        return ScenarioFacts(self.sites, self.data, self.max_latency)


def _max_latency(latency: float | np.ndarray) -> float:
    return float(latency.max()) if isinstance(latency, np.ndarray) else float(latency)


# --------------------------------------------------------------------------- input


def shipped_scenarios() -> dict[str, Path]:
    """Name -> path of every scenario shipped with the package."""
    return {p.stem: p for p in sorted(SHIPPED_DIR.glob("*.toml"))}


def read_scenario_file(ref: str | Path) -> tuple[dict[str, Any], str]:
    """Read a scenario by path or shipped name; returns (raw dict, source label).

    A file of that name wins over a shipped scenario; a folder does not (a working
    directory with a ``runs/shapley`` or ``shapley/`` folder must not hide ``shapley``)."""
    path = Path(ref)
    if not path.is_file():
        shipped = shipped_scenarios()
        if str(ref) in shipped:
            path = shipped[str(ref)]
        elif path.is_dir():
            raise ScenarioError(
                "scenario", f"{path} is a folder, not a scenario file (shipped scenarios: gridemu list)"
            )
        elif not path.exists():
            names = ", ".join(shipped) or "none"
            # A protocol's name where a scenario goes (gridemu show power_of_d): say where its keys are.
            hint = did_you_mean(str(ref), shipped)
            if str(ref) in registry.PROTOCOLS:
                hint += f"{' ' if hint else '; '}{ref} is a protocol: gridemu list {ref} shows its keys"
            raise ScenarioError("scenario", f"no file or shipped scenario named {str(ref)!r}{hint} (shipped: {names})")
    check_input_file(path, "scenario", "a scenario file")  # a FIFO or /dev/zero never ends
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError("scenario", f"{path} is not UTF-8 text (TOML files must be UTF-8)") from None
    except OSError as exc:
        raise ScenarioError("scenario", f"cannot read {path}: {exc.strerror or exc}") from None
    check_toml_depth(text, "scenario")
    try:
        return tomllib.loads(text), str(path)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError("scenario", f"{path} is not valid TOML: {exc}") from None


def parse_override(text: str) -> tuple[str, Any]:
    """``key.path=value`` -> (key path, value); the value is read as TOML, else as a string."""
    if "=" not in text:
        raise ScenarioError(text, "an override must look like key.path=value")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ScenarioError(text, "an override must look like key.path=value")
    check_toml_depth(raw, key)
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError as exc:
        # A bare word is a string (--set protocol.name=random); an array, table or quoted
        # string that does not parse is a typo, which as a string would be judged for its type.
        if raw.strip()[:1] in ("[", "{", '"', "'"):
            raise ScenarioError(key, f"{raw.strip()!r} is not a TOML value ({exc})") from None
        value = raw.strip()
    return key, value


def _absolute(path: str, source: str) -> str:
    """``path`` as an absolute path: as given when it exists from here, else beside the
    scenario file ``source`` when it is there; left as given when it is in neither place
    (the workload's check names it)."""
    if Path(path).is_absolute():
        return path
    if Path(path).exists():
        return str(Path(path).resolve())
    if source != "<dict>" and (Path(source).parent / path).exists():
        return str((Path(source).parent / path).resolve())
    return path


def absolute_paths(data: dict[str, Any], source: str) -> dict[str, Any]:
    """``data`` with the trace it names (``workload.path``) made absolute (``gridemu show``)."""
    wl = data.get("workload")
    if isinstance(wl, dict) and isinstance(wl.get("path"), str):
        wl["path"] = _absolute(wl["path"], source)
    return data


#: Keys that size the same thing two ways: an override of one takes the other out of the
#: scenario it overrides (``--set workload.jobs=N`` on a scenario that gives ``until``);
#: given together, in a file or both as overrides, they stay an error.
_INSTEAD_OF = {"workload.jobs": "workload.until", "workload.until": "workload.jobs"}


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Set each dotted key in a deep copy of ``data`` (tables are created as needed)."""
    for key in overrides:  # from Python (gridemu.run's overrides) as from --set
        if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
            raise ScenarioError(str(key), "an override's key must be a dotted key path such as workload.jobs")
    out = copy_tree(data)
    for key, other in _INSTEAD_OF.items():
        if key in overrides and other not in overrides:
            section, name = other.split(".")
            if isinstance(out.get(section), dict):
                out[section].pop(name, None)
    for key, value in overrides.items():
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise ScenarioError(key, f"{part!r} is not a table, cannot set a key inside it")
            node = nxt
        node[parts[-1]] = value
    return out


def load_scenario(
    ref: str | Path | dict[str, Any],
    overrides: dict[str, Any] | None = None,
    source: str | None = None,
    **run_settings: Any,
) -> Scenario:
    """Load, override and validate a scenario.

    ``ref`` is a path, a shipped scenario name or a dict; ``source`` is where a dict was read
    from (files it names relative to that file are found beside it). ``run_settings`` (seed,
    backend, shards, horizon) are shortcuts for ``run.*`` overrides; ``None`` values are ignored.
    """
    if isinstance(ref, dict):
        raw, source = ref, source or "<dict>"  # apply_overrides copies it
    else:
        raw, source = read_scenario_file(ref)
    sets = dict(overrides or {})
    for key, value in run_settings.items():
        if value is not None:
            sets[f"run.{key}"] = value
    data = apply_overrides(raw, sets)  # a copy of its own: no second one
    _note_overrides(data, sets)
    return _validate(data, source)


#: Overrides that leave the job table as it is: the description needs no word about them.
_SAME_RUN = frozenset({"run.description", "run.backend", "run.shards", "run.packing", "run.name"})


def _note_overrides(data: dict[str, Any], sets: dict[str, Any]) -> None:
    """Say in ``run.description`` what was set over the scenario (a scenario.toml saved after
    ``--set sites.count=20000`` must not still read "64 sites")."""
    changed = [f"{k} = {v!r}" for k, v in sets.items() if k not in _SAME_RUN]
    run = data.get("run")
    if changed and isinstance(run, dict) and isinstance(run.get("description"), str):
        run["description"] += f" (set: {', '.join(changed)})"


def check_scenario(
    ref: str | Path, overrides: dict[str, Any] | None = None, limit: int = 20
) -> tuple[Scenario | None, list[ScenarioError]]:
    """The validated scenario, or None and every error :func:`validate` finds in it, not only
    the first (``gridemu validate``): after each, the key it names is taken out (its default
    applies; a key without one gets a stand-in, ``_STAND_IN``) and the scenario is checked
    again. It stops when the scenario passes, or at an error that only follows from a key
    taken out (about a key the scenario does not set, or above one taken out: ``workload.jobs:
    give ...`` once a bad ``until`` is gone), or when a key cannot be taken out."""
    raw, source = read_scenario_file(ref)
    raw = apply_overrides(raw, overrides or {})
    given = copy_tree(raw)
    errors: list[ScenarioError] = []
    while len(errors) < limit:
        try:
            scenario = validate(raw, source)  # it works on a copy: raw stays as given
            return (None if errors else scenario), errors
        except ScenarioError as exc:
            follows = errors and (
                _find(given, exc.key) is None
                or any(e.key == exc.key or e.key.startswith((exc.key + ".", exc.key + "[")) for e in errors)
            )
            if follows:
                return None, errors
            errors.append(exc)
            where = _find(raw, exc.key)
            if where is None:
                return None, errors
            if exc.key in _STAND_IN:  # no default: a value that lets the other keys be checked
                where[0][where[1]] = _STAND_IN[exc.key](raw)
            elif exc.key == "protocol.name":  # its keys mean nothing without it: the table goes
                del raw["protocol"]
            else:
                del where[0][where[1]]
    return None, errors


#: Per-site keys whose lists give a bad ``sites.count``'s stand-in its length.
_PER_SITE_LISTS = (
    ("workload", "rate"),
    ("workload", "alpha"),
    ("workload", "beta"),
    ("sites", "procs"),
    ("sites", "speed"),
    ("workload", "priority"),
    ("protocol", "limit"),
    ("protocol", "join"),
)


def _stand_in_count(raw: dict[str, Any]) -> int:
    """A site count for a bad ``sites.count``: the length of the scenario's first per-site
    list, so that the lists are not reported as the wrong length; 2 without one."""
    for section, key in _PER_SITE_LISTS:
        value = raw.get(section, {}).get(key) if isinstance(raw.get(section), dict) else None
        if isinstance(value, list) and value:
            return len(value)
    return 2


#: Keys without a default, and what :func:`check_scenario` puts in place of a bad value
#: (from the scenario as given) so that the keys after it are still checked (taken out,
#: each would end the list).
_STAND_IN: dict[str, Callable[[dict[str, Any]], Any]] = {"sites.count": _stand_in_count, "workload.jobs": lambda raw: 1}


def _find(data: Any, key: str) -> tuple[Any, Any] | None:
    """The container and index of a dotted key (``sites[2].procs``, ``faults.crash[0].site``)
    in nested data, or None when it is not there."""
    parts: list[Any] = []
    for part in key.split("."):
        name, *indices = part.replace("]", "").split("[")
        parts.append(name)
        parts += [int(i) for i in indices if i.isascii() and i.isdigit()]
    node = data
    for part in parts[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    last = parts[-1]
    if (isinstance(node, dict) and last in node) or (
        isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node)
    ):
        return node, last
    return None


# --------------------------------------------------------------------------- checks


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ScenarioError(key, f"must be a table, got {type(value).__name__}")
    return value


def _unknown(section: str, table: dict[str, Any], allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            raise ScenarioError(
                f"{section}.{key}", f"unknown key{did_you_mean(key, allowed)} (allowed: {', '.join(sorted(allowed))})"
            )


def _draw_procs(key: str, spec: Any, n: int, seed: int) -> list[int]:
    """Processor counts: an int, a list, or {dist = "uniform"|"zipf", ...}; with ``total``,
    the counts add up to it (the Shapley papers' "processors per organization follow Zipf or
    uniform distributions, totalling the trace's machine size")."""
    if isinstance(spec, dict) and "dist" in spec:
        dist = choice(f"{key}.dist", spec.get("dist"), ("uniform", "zipf"))
        if "total" in spec:
            allowed = {"dist", "total"} | ({"a"} if dist == "zipf" else set())
        else:
            allowed = {"dist"} | ({"low", "high"} if dist == "uniform" else {"a", "max"})
        unknown = sorted(set(spec) - allowed)
        if unknown:
            raise ScenarioError(
                f"{key}.{unknown[0]}", f"unknown key for dist = {dist!r} (allowed: {', '.join(sorted(allowed))})"
            )
        if "total" in spec:
            return _split_total(key, spec, dist, n)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0x50524F43,)))
        if dist == "uniform":
            low = int(check_number(f"{key}.low", spec.get("low", 1), positive=True, integer=True, most=MAX_PROCS))
            high = int(check_number(f"{key}.high", spec.get("high", low), positive=True, integer=True, most=MAX_PROCS))
            if high < low:
                raise ScenarioError(f"{key}.high", f"must be >= low ({low}), got {high}")
            return rng.integers(low, high + 1, size=n).tolist()
        a = check_number(f"{key}.a", spec.get("a", 1.4267), positive=True)
        if a <= 1:
            raise ScenarioError(f"{key}.a", f"a Zipf exponent must be > 1, got {a}")
        cap = int(check_number(f"{key}.max", spec.get("max", 1024), positive=True, integer=True, most=MAX_PROCS))
        return np.minimum(rng.zipf(a, size=n), cap).tolist()
    return [int(v) for v in per_site_values(key, spec, n, positive=True, integer=True, most=MAX_PROCS)]


def _split_total(key: str, spec: dict[str, Any], dist: str, n: int) -> list[int]:
    """``total`` processors over n sites: equal (uniform) or in proportion to the Zipf law
    k^-a over ranks k = 1..n (site 0 the largest; ``a`` default 1), at least one each,
    rounded by largest remainder so the counts add up exactly."""
    total = int(check_number(f"{key}.total", spec["total"], positive=True, integer=True))
    if total < n:
        raise ScenarioError(f"{key}.total", f"{total} processors cannot give each of the {n} sites one")
    if dist == "uniform":
        weights = np.ones(n)
    else:
        a = check_number(f"{key}.a", spec.get("a", 1.0), positive=True)
        weights = np.arange(1, n + 1, dtype=float) ** -a
    return largest_remainder(1 + weights / weights.sum() * (total - n), total).tolist()


def _site_label(key: str, value: Any) -> str:
    """A site's name or organization: a string, and not only digits (job lists and edge files
    name a site by its name or by its index: "3" would be both)."""
    if not isinstance(value, str) or not value:
        raise ScenarioError(key, f"must be a non-empty string, got {value!r}")
    if value.isdigit():
        raise ScenarioError(key, f"must not be only digits ({value!r} reads as a site index): give a name")
    return value


def _agree(key: str, entry: dict[str, Any]) -> None:
    """``speeds`` lists each processor: a ``procs`` or ``speed`` beside it must say the same."""
    speeds = entry["speeds"]
    if "speed" in entry:
        raise ScenarioError(f"{key}.speed", "give speed (one for every processor) or speeds (one each), not both")
    if "procs" in entry and isinstance(speeds, list) and entry["procs"] != len(speeds):
        raise ScenarioError(
            f"{key}.procs", f"is {entry['procs']!r} but speeds lists {len(speeds)} processors: give one of them"
        )


def _build_sites(data: dict[str, Any], default_scheduler: str, seed: int) -> list[SiteSpec]:
    raw = data.get("sites")
    if raw is None:
        raise ScenarioError("sites", "missing: give [[sites]] entries or a [sites] table with count")
    specs: list[SiteSpec] = []
    if isinstance(raw, list):
        if not raw:
            raise ScenarioError("sites", "the list of sites is empty")
        for i, entry in enumerate(raw):
            key = f"sites[{i}]"
            if not isinstance(entry, dict):
                raise ScenarioError(key, "must be a table")
            _unknown(key, entry, _KNOWN["site"])
            name = _site_label(f"{key}.name", entry.get("name", f"site{i}"))
            org = _site_label(f"{key}.org", entry.get("org", name))
            if "speeds" in entry:
                _agree(key, entry)
                speeds = entry["speeds"]
                if not isinstance(speeds, list) or not speeds:
                    raise ScenarioError(f"{key}.speeds", "must be a non-empty list of speeds")
                speeds = [
                    check_number(f"{key}.speeds[{j}]", s, positive=True, finite=True) for j, s in enumerate(speeds)
                ]
            else:
                procs = int(
                    check_number(f"{key}.procs", entry.get("procs", 1), positive=True, integer=True, most=MAX_PROCS)
                )
                speed = check_number(f"{key}.speed", entry.get("speed", 1.0), positive=True, finite=True)
                speeds = [speed] * procs
            scheduler = choice(f"{key}.scheduler", entry.get("scheduler", default_scheduler), SCHEDULERS)
            specs.append(SiteSpec(i, name, org, tuple(float(s) for s in speeds), scheduler))
        dup = [n for n, k in Counter(s.name for s in specs).items() if k > 1]
        if dup:
            raise ScenarioError("sites", f"duplicate site names: {', '.join(sorted(dup))}")
        return specs
    if not isinstance(raw, dict):
        raise ScenarioError("sites", "must be a list of [[sites]] tables or a [sites] table")
    _unknown("sites", raw, _KNOWN["sites"])
    count = int(check_number("sites.count", raw.get("count", 0), positive=True, integer=True, most=MAX_SITES))
    per = costs().memory
    check_allocation("sites.count", count * per.get("per_site", 0.0), f"{count:,} sites")
    procs = _draw_procs("sites.procs", raw.get("procs", 1), count, seed)
    total = float(sum(procs))
    check_allocation(
        "sites.procs", count * per.get("per_site", 0.0) + total * per.get("per_proc", 0.0), f"{total:,.0f} processors"
    )
    speeds = per_site_values("sites.speed", raw.get("speed", 1.0), count, positive=True, finite=True)
    scheduler = choice("sites.scheduler", raw.get("scheduler", default_scheduler), SCHEDULERS)
    width = len(str(count - 1))
    # The names' format made once and the speeds as Python floats at once: half of the
    # sites' 5 s at a million (the rest is the frozen dataclass's own __init__).
    site_name, org_name = f"site{{:0{width}d}}".format, f"org{{:0{width}d}}".format
    speed = np.asarray(speeds, dtype=float).tolist()
    return [SiteSpec(i, site_name(i), org_name(i), (speed[i],) * procs[i], scheduler) for i in range(count)]


def _latency(data: dict[str, Any], n: int, seed: int) -> tuple[float | np.ndarray, float]:
    """(latency, smallest link latency). A uniform latency stays a number: a 10,000-site
    matrix would take 800 MB for nothing. ``latency = {dist = "uniform", low, high}`` draws
    each link's latency (symmetric) from the run's seed."""
    net = _table(data, "network")
    _unknown("network", net, _KNOWN["network"])
    if isinstance(net.get("latency"), dict):
        spec = net["latency"]
        choice("network.latency.dist", spec.get("dist"), ("uniform",))
        unknown = sorted(set(spec) - {"dist", "low", "high"})
        if unknown:
            raise ScenarioError(f"network.latency.{unknown[0]}", "unknown key (allowed: dist, low, high)")
        for bound in ("low", "high"):
            if bound not in spec:
                raise ScenarioError(f"network.latency.{bound}", "missing: a uniform latency needs low and high")
        low = float(check_number("network.latency.low", spec["low"], positive=True, finite=True))
        high = float(check_number("network.latency.high", spec["high"], positive=True, finite=True))
        if high < low:
            raise ScenarioError("network.latency.high", f"must be >= low ({low}), got {high}")
        check_allocation("network.latency", 16.0 * n * n, f"a {n:,} x {n:,} latency matrix")
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0x4C4154,)))  # "LAT": its own stream
        upper = np.triu(rng.uniform(low, high, size=(n, n)), 1)
        arr = upper + upper.T
        np.fill_diagonal(arr, low)
        return arr, (float(arr[~np.eye(n, dtype=bool)].min()) if n > 1 else low)
    if "latency_matrix" in net:
        mat = net["latency_matrix"]
        try:
            arr = np.asarray(mat, dtype=float)
        except (TypeError, ValueError):
            raise ScenarioError("network.latency_matrix", "must be a square list of lists of numbers") from None
        if arr.shape != (n, n):
            raise ScenarioError("network.latency_matrix", f"must be {n}x{n} (one row per site), got shape {arr.shape}")
        off = arr[~np.eye(n, dtype=bool)]
        if n > 1 and not ((off > 0) & np.isfinite(off)).all():
            raise ScenarioError("network.latency_matrix", "every latency between two sites must be a finite number > 0")
        return arr, (float(off.min()) if n > 1 else float(arr[0, 0]))
    lat = float(check_number("network.latency", net.get("latency", 1.0), positive=True, finite=True))
    return lat, lat


def validate(raw: dict[str, Any], source: str = "<dict>") -> Scenario:
    """Check every key of a raw scenario dict and fill defaults; see module doc. ``raw`` is
    left as given."""
    return _validate(copy_tree(raw) if isinstance(raw, dict) else raw, source)


def _validate(data: dict[str, Any], source: str) -> Scenario:  # noqa: C901
    """:func:`validate` on data it may change (the Scenario's ``data`` is it, resolved)."""
    if not isinstance(data, dict):
        raise ScenarioError("scenario", "must be a table")
    allowed_top = set(_KNOWN) - {"site"} | {"protocol", "faults"} | {s.name for s in SECTIONS.values()}
    for key in data:
        if key not in allowed_top:
            raise ScenarioError(
                key, f"unknown section{did_you_mean(key, allowed_top)} (allowed: {', '.join(sorted(allowed_top))})"
            )

    run = _table(data, "run")
    _unknown("run", run, _KNOWN["run"])
    run["seed"] = int(check_number("run.seed", run.get("seed", 0), nonneg=True, integer=True))
    run["horizon"] = float(check_number("run.horizon", run.get("horizon", math.inf), positive=True))
    run["backend"] = choice("run.backend", run.get("backend", "inprocess"), BACKENDS)
    run["shards"] = int(check_number("run.shards", run.get("shards", 0), nonneg=True, integer=True))
    run["packing"] = choice("run.packing", run.get("packing", "block"), PACKINGS)
    data["run"] = run

    sched = _table(data, "scheduler")
    _unknown("scheduler", sched, _KNOWN["scheduler"])
    sched["name"] = choice("scheduler.name", sched.get("name", "fcfs"), SCHEDULERS)
    data["scheduler"] = sched

    sites = _build_sites(data, sched["name"], run["seed"])
    sites_table = None
    if isinstance(data["sites"], dict):
        given = data["sites"]
        sites_table = {
            "count": len(sites),
            "procs": given.get("procs", 1),
            "speed": given.get("speed", 1.0),
            "scheduler": sites[0].scheduler,
        }
    if run["shards"] > len(sites):
        raise ScenarioError("run.shards", f"{run['shards']} shards for {len(sites)} sites: at most one shard per site")

    latency, min_latency = _latency(data, len(sites), run["seed"])
    net = _table(data, "network")
    topology = build_topology(net, sites, run["seed"], Path(source).parent if source != "<dict>" else None)
    if not topology.full:
        latency = link_latency_matrix(topology, len(sites), latency)
        min_latency = smallest_link_latency(topology, latency)
    if min_latency < MIN_LATENCY:  # a window spans at least one link latency
        key = (
            "network.topology_file"
            if topology.link_latency
            else ("network.latency_matrix" if "latency_matrix" in net else "network.latency")
        )
        raise ScenarioError(
            key, f"must be >= {MIN_LATENCY:g} (a window spans at least one link latency), got {min_latency!r}"
        )
    if "lookahead" in run:
        look = check_number("run.lookahead", run["lookahead"])
        if not look >= MIN_LATENCY:
            raise ScenarioError("run.lookahead", f"must be >= {MIN_LATENCY:g}, got {look!r}")
        if look > min_latency:
            raise ScenarioError("run.lookahead", f"must be <= the smallest link latency {min_latency}, got {look}")
        lookahead = float(look)
    else:
        lookahead = min_latency
    run["lookahead"] = lookahead

    proto = _table(data, "protocol")
    if "name" not in proto and proto:
        raise ScenarioError(
            "protocol.name", f"missing: the [protocol] table sets {', '.join(sorted(proto))} but names no protocol"
        )
    name = proto.get("name", "local")
    if not isinstance(name, str) or name not in registry.PROTOCOLS:  # a list or table: unhashable
        known = tuple(registry.PROTOCOLS)
        raise ScenarioError(
            "protocol.name",
            f"unknown value {name!r}{did_you_mean(name, known)} (allowed: {', '.join(known)}); a protocol of "
            "your own: load its file or module with --plugin FILE|MODULE (from Python: gridemu.plugin.register)",
        )
    proto["name"] = name
    protocol = registry.get(proto["name"])
    data["protocol"] = proto
    if not topology.full:
        registry.require(
            protocol,
            "topologies",
            "network.topology",
            f'the {proto["name"]} protocol needs every site to hear every other (topology = "full")',
        )

    metrics = _table(data, "metrics")
    _unknown("metrics", metrics, _KNOWN["metrics"])
    if "counterfactual" in metrics:
        choice("metrics.counterfactual", metrics["counterfactual"], ("local", "none"))
    if "fairness" in metrics:
        check_flag("metrics.fairness", metrics["fairness"])
    if "slowdown_bound" in metrics:
        metrics["slowdown_bound"] = check_number(
            "metrics.slowdown_bound", metrics["slowdown_bound"], positive=True, finite=True
        )
    if "sample_interval" in metrics:
        metrics["sample_interval"] = check_number(
            "metrics.sample_interval", metrics["sample_interval"], positive=True, finite=True
        )
    if "warmup" in metrics:
        metrics["warmup"] = check_number("metrics.warmup", metrics["warmup"], nonneg=True, finite=True)
    data["metrics"] = metrics

    wl = _table(data, "workload")
    _unknown("workload", wl, _KNOWN["workload"])
    wl["kind"] = choice("workload.kind", wl.get("kind", "poisson"), WORKLOAD_KINDS)
    data["workload"] = wl
    # What one unit of virtual time is, for tables and plots: seconds for traces.
    unit = run.get("time_unit", "s" if wl["kind"] == "swf" else "time units")
    if not isinstance(unit, str) or not unit.strip():
        raise ScenarioError("run.time_unit", f"must be a name such as \"s\" or \"time units\", got {unit!r}")
    if wl["kind"] == "swf" and unit != "s":  # a label, not a conversion: "h" put seconds under hours
        raise ScenarioError(
            "run.time_unit",
            f"an SWF trace's times are seconds (\"s\"); time_unit names the unit, it converts nothing; got {unit!r}",
        )
    run["time_unit"] = unit
    for key in ("name", "description"):  # labels of the user's, written to scenario.toml and listed
        if key in run and not isinstance(run[key], str):
            raise ScenarioError(f"run.{key}", f"must be a string, got {run[key]!r}")
    # A trace path relative to the scenario file (shipped scenarios name their trace so), made
    # absolute: the saved scenario.toml runs from any folder.
    path = wl.get("path")
    if isinstance(path, str):
        wl["path"] = _absolute(path, source)
    check_workload(wl, sites)
    # Keys another kind reads (a sweep over workload.kind sets them all, a scenario made from
    # another keeps them): ignored with a warning below, and left out of the resolved table.
    unread = sorted(k for k in wl if k != "kind" and k not in WORKLOAD_KEYS[wl["kind"]])
    for k in unread:
        del wl[k]
    # Keys another protocol reads may stay (a sweep over protocol.name sets them all): ignored
    # with a warning below, and left out of the resolved table (scenario.toml: the run as it
    # ran, which reads again without the warnings); the rest keep the order they were given in.
    params = protocol.params.from_table(
        proto, ScenarioFacts(sites, data, _max_latency(latency)), ignore=registry.all_keys()
    )
    resolved = params.table()
    data["protocol"] = {"name": proto["name"]} | {k: resolved[k] for k in proto if k in resolved} | resolved
    mixed = [s.name for s in sites if s.scheduler == "easy" and len(set(s.speeds)) > 1]
    if mixed:
        raise ScenarioError(
            "scheduler.name",
            "the easy scheduler needs identical processors at a site (a job's estimate is at the site's speed); "
            f"sites with several speeds: {first_few(mixed)}",
        )
    if any(s.scheduler == "planned" for s in sites):
        registry.require(
            protocol, "starts_jobs", "scheduler.name", "the planned scheduler starts only what a protocol planned"
        )

    for section in SECTIONS.values():  # sections of a local scheduler's own (sites/sections.py)
        if section.name in data:
            if not isinstance(data[section.name], dict):
                raise ScenarioError(section.name, "must be a table")
            section.hooks().check(data[section.name], len(sites), Path(source).parent if source != "<dict>" else None)
        elif any(s.scheduler == section.scheduler for s in sites):
            raise ScenarioError(
                "scheduler.name",
                f"the {section.scheduler} scheduler needs {section.needs}: add a [{section.name}] section",
            )
    faults = None
    if "faults" in data:
        faults = parse_faults(data["faults"], [s.name for s in sites])
        registry.require(
            protocol,
            "faults",
            "faults",
            f"the {proto['name']} protocol does not run with faults (it waits for answers or tracks other sites' jobs)",
        )
        data["faults"]["on_crash"] = faults.on_crash
    data["sites"] = [{"name": s.name, "org": s.org, "speeds": list(s.speeds), "scheduler": s.scheduler} for s in sites]
    orgs = list(dict.fromkeys(s.org for s in sites))
    # A typo for one of its own keys shows here.
    keys = protocol.params.keys()
    warnings = [
        f"protocol.{k} is not read by the {proto['name']} protocol (its keys: {', '.join(keys) or 'none'}): ignored"
        for k in sorted(k for k in proto if k != "name" and k not in keys)
    ]
    read = ", ".join(sorted(WORKLOAD_KEYS[wl["kind"]], key=str.lower))
    warnings += [
        f"workload.{k} is not read by a workload of kind {wl['kind']!r} (its keys: {read}): ignored" for k in unread
    ]
    return Scenario(
        data=data,
        sites=sites,
        orgs=orgs,
        latency=latency,
        lookahead=lookahead,
        source=source,
        topology=topology,
        faults=faults,
        params=params,
        extra={"scenario_warnings": warnings} if warnings else {},
        sites_table=sites_table,
    )
