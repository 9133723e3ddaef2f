"""Workload sources: Poisson/gamma generators, explicit job lists (TOML or CSV), SWF traces.

``generate_jobs`` turns a scenario's ``[workload]`` into one JOB_DTYPE array plus the
table of group paths. Every random stream is spawned from the run seed by a stable key
(site id, purpose), so a workload never depends on shard layout.

Job ids are assigned 0..n-1 in order of (release, submit site, order within the site).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from gridemu.model.checks import (
    check_flag,
    check_number,
    check_sequential,
    choice,
    parse_int,
    parse_number,
    per_site_array,
)
from gridemu.model.errors import ScenarioError, WorkloadError
from gridemu.model.inputs import CsvProblem, check_input_file, csv_table
from gridemu.model.jobs import JOB_DTYPE, empty_jobs, number_jobs
from gridemu.scenarios import dedicated, poisson, propositions

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.sites.spec import SiteSpec


class WorkloadSource(Protocol):
    """What a workload generator reads of a scenario (``emulator.scenario.Scenario`` is one)."""

    workload: dict[str, Any]
    sites: list["SiteSpec"]
    orgs: list[str]
    extra: dict[str, Any]  # generators note what they skipped or drew (trace windows)

    @property
    def seed(self) -> int: ...


# Spawn-key purposes; part of the determinism contract, never renumber.
#: Streams (kind = "streams") draw from their own key: (STREAMS_KEY, stream index).
STREAMS_KEY = 0x53545245
#: The rigid-job instance of a run (thesis ch. 5) is one global draw, not per site.
RIGID_KEY = (0x524947,)
RIGID_MODELS = ("uni", "lublin")
#: The most jobs a generated workload may have (about 100 bytes each in a run, several
#: copies in the result tables): past it a run is refused before anything is generated.
MAX_JOBS = 100_000_000
#: The ``[workload]`` keys each kind reads (``kind`` aside); a key of another kind is ignored
#: with a warning (``emulator/scenario.py``) and left out of the resolved scenario.
#: ``warm_start`` is every kind's: any value but "cold" is refused outside an SWF trace.
WORKLOAD_KEYS: dict[str, frozenset[str]] = {
    "poisson": frozenset({"rate", "alpha", "beta", "priority", "until", "jobs", "integral", "procs", "warm_start"}),
    "jobs": frozenset({"list", "warm_start"}),
    "csv": frozenset({"path", "warm_start"}),
    "swf": frozenset(
        {
            "path",
            "orgs",
            "user_map",
            "t_start",
            "t_end",
            "duration",
            "warm_start",
            "orgs_by",
            "split_parallel",
            "jobs",
            "load",
            "too_wide",
        }
    ),
    "rigid": frozenset({"model", "jobs", "warm_start"}),
    "proposition": frozenset({"number", "variant", "X", "group", "warm_start"}),
    "streams": frozenset({"streams", "until", "warm_start"}),
    "dedicated": frozenset({"instance", "jobs_per_machine", "max_size", "rounds", "period", "warm_start"}),
}


def poisson_size(wl: dict[str, Any], n_sites: int) -> float:
    """The jobs a Poisson workload makes: ``jobs``, or about its rates × ``until`` (not drawn)."""
    if "jobs" in wl:
        return float(wl["jobs"])
    return float(per_site_array("workload.rate", wl.get("rate", 1.0), n_sites).sum()) * float(wl["until"])


def check_workload(wl: dict[str, Any], sites: list["SiteSpec"]) -> None:  # noqa: C901
    """Validate ``[workload]`` without generating it (``gridemu validate``)."""
    kind = wl["kind"]
    n = len(sites)
    if wl.get("warm_start", "cold") != "cold" and kind != "swf":
        raise ScenarioError(
            "workload.warm_start", f"applies to a window of an SWF trace (kind = \"swf\"), not {kind!r}"
        )
    if kind == "poisson":
        rates = per_site_array("workload.rate", wl.get("rate", 1.0), n, positive=True, finite=True)
        if rates.max() > np.finfo(float).max / max(1, n):  # their sum must stay a finite number
            raise ScenarioError(
                "workload.rate", f"the rates add up to more than a float holds (largest {rates.max():g})"
            )
        alpha = per_site_array("workload.alpha", wl.get("alpha", 2.0), n, positive=True, finite=True)
        beta = per_site_array("workload.beta", wl.get("beta", 2.0), n, positive=True, finite=True)
        # A gamma draw is below x with probability about (x / beta)^alpha / Gamma(alpha + 1):
        # with a tiny shape, sizes underflow to 0 (x = the smallest float) for a good share of jobs.
        zero = np.exp(alpha * (np.log(np.finfo(float).smallest_subnormal) - np.log(beta)))
        if zero.max() > 1e-9:
            k = int(np.argmax(zero))
            raise ScenarioError(
                "workload.alpha",
                f"gamma(alpha={alpha[k]:g}, beta={beta[k]:g}) sizes underflow to 0 for about "
                f"{100 * zero[k]:.2g} % of site {sites[k].name}'s jobs: use a larger alpha or beta",
            )
        if "jobs" not in wl and "until" not in wl:
            raise ScenarioError("workload.jobs", "give the total number of jobs (jobs) or the end of arrivals (until)")
        if "jobs" in wl and "until" in wl:
            raise ScenarioError(
                "workload.until",
                "workload.jobs and workload.until are both given: give one (jobs: how many; until: when arrivals end)",
            )
        if "jobs" in wl:
            jobs = check_number("workload.jobs", wl["jobs"], positive=True, most=MAX_JOBS)
            if not jobs.is_integer():
                raise ScenarioError("workload.jobs", f"must be an integer, got {wl['jobs']!r}")
        if "until" in wl:
            until = check_number("workload.until", wl["until"], positive=True)
            if "jobs" not in wl and poisson_size(wl, n) > MAX_JOBS:
                raise ScenarioError(
                    "workload.until",
                    f"arrivals until {until:g} at {rates.sum():g} jobs per time unit make about "
                    f"{poisson_size(wl, n):.3g} jobs (at most {MAX_JOBS:,}: split the study, or give workload.jobs)",
                )
        _check_procs(wl.get("procs", 1), sites)
        per_site_array("workload.priority", wl.get("priority", 0.0), n, nonneg=True, finite=True)
        integral = wl.get("integral", False)
        if integral != "releases" and not isinstance(integral, bool):
            raise ScenarioError(
                "workload.integral", f'must be true or false, or "releases" (floor releases only), got {integral!r}'
            )
    elif kind == "jobs":
        entries = wl.get("list")
        if not isinstance(entries, list) or not entries:
            raise ScenarioError("workload.list", "give the jobs as [[workload.list]] tables")
        _rows_to_jobs(entries, sites, "workload.list")
    elif kind == "rigid":
        _check_rigid(wl, sites)
    elif kind == "proposition":
        propositions.workload_rows(wl)
    elif kind == "dedicated":
        dedicated.check_dedicated(wl, sites)
    elif kind == "streams":
        _check_streams(wl, sites)
    elif kind in ("csv", "swf"):
        path = wl.get("path")
        if not isinstance(path, str):
            raise ScenarioError("workload.path", f"give the {kind} file's path")
        check_input_file(path, "workload.path", f"a {kind} file")
        if kind == "swf" and "orgs" in wl:
            orgs = check_number("workload.orgs", wl["orgs"])
            if orgs <= 0 or not orgs.is_integer():
                raise ScenarioError("workload.orgs", f"must be a positive integer, got {wl['orgs']!r}")
        if kind == "swf":
            from gridemu.scenarios.swf import ORGS_BY, WARM_STARTS, check_warm_start

            # The window's bounds are trace times (>= 0); "random" draws the start from the seed.
            if wl.get("t_start", "random") != "random":
                check_number("workload.t_start", wl["t_start"], nonneg=True, finite=True)
            if "t_end" in wl:
                check_number("workload.t_end", wl["t_end"], positive=True)
            if "duration" in wl:
                check_number("workload.duration", wl["duration"], positive=True)
            if "split_parallel" in wl:
                check_flag("workload.split_parallel", wl["split_parallel"])
            if "jobs" in wl:  # the window's first so many
                check_number("workload.jobs", wl["jobs"], positive=True, integer=True, most=MAX_JOBS)
            if "load" in wl:  # the offered load its inter-arrival times are scaled to
                check_number("workload.load", wl["load"], positive=True, finite=True)
            choice("workload.too_wide", wl.get("too_wide", "error"), ("error", "skip"))
            choice("workload.orgs_by", wl.get("orgs_by", "random"), ORGS_BY)
            if choice("workload.warm_start", wl.get("warm_start", "cold"), WARM_STARTS) != "cold":
                check_warm_start(wl.get("t_start"), wl.get("split_parallel") is True)
            user_map = wl.get("user_map", {})
            if not isinstance(user_map, dict):
                raise ScenarioError(
                    "workload.user_map", f"must be a table {{user id = organization index}}, got {user_map!r}"
                )
            for user, org in user_map.items():
                try:
                    int(user)
                except ValueError:
                    raise ScenarioError(f"workload.user_map.{user}", "a user id must be an integer") from None
                check_number(f"workload.user_map.{user}", org, nonneg=True, integer=True)


def _check_rigid(wl: dict[str, Any], sites: list["SiteSpec"]) -> int:
    """Thesis ch. 5 instances: one machine per organization, all of the same width m."""
    model = wl.get("model", "uni")
    if model not in RIGID_MODELS:
        raise ScenarioError("workload.model", f"unknown value {model!r} (allowed: {', '.join(RIGID_MODELS)})")
    if "jobs" not in wl:
        raise ScenarioError("workload.jobs", "give the number of jobs of the instance")
    jobs = check_number("workload.jobs", wl["jobs"], positive=True, integer=True)
    widths = {s.procs for s in sites}
    if len(widths) > 1:
        raise ScenarioError(
            "sites.procs", f"rigid instances need machines of one width m (thesis 5.1), got {sorted(widths)}"
        )
    if len({s.org for s in sites}) != len(sites):
        raise ScenarioError("sites", "rigid instances need one site per organization (organization k owns machine k)")
    m = widths.pop()
    if model == "lublin" and m < 2:
        raise ScenarioError("sites.procs", "the lublin model needs q < m, so machines of at least 2 processors")
    return int(jobs)


def _check_procs(spec: Any, sites: list["SiteSpec"]) -> None:
    smallest = min(s.procs for s in sites)
    if isinstance(spec, dict):
        for k in spec:
            if k not in ("low", "high"):
                raise ScenarioError(f"workload.procs.{k}", "unknown key (allowed: high, low)")
        low = check_number("workload.procs.low", spec.get("low", 1), positive=True, integer=True)
        high = check_number("workload.procs.high", spec.get("high", low), positive=True, integer=True)
        if high < low:
            raise ScenarioError("workload.procs.high", f"must be >= low ({low}), got {high}")
        top = high
    else:
        top = check_number("workload.procs", spec, positive=True, integer=True)
    if top > smallest:
        raise ScenarioError("workload.procs", f"jobs may need {int(top)} processors but a site has only {smallest}")


def generate_jobs(scenario: WorkloadSource) -> tuple[np.ndarray, list[str]]:
    """All jobs of the run, sorted by job id, and the group path table."""
    wl = scenario.workload
    kind = wl["kind"]
    if kind == "poisson":
        jobs, groups = _poisson(scenario)
    elif kind == "jobs":
        jobs, groups = _rows_to_jobs(wl["list"], scenario.sites, "workload.list")
    elif kind == "csv":
        jobs, groups = _csv_jobs(Path(wl["path"]), scenario.sites)
    elif kind == "rigid":
        jobs, groups = _rigid(scenario)
    elif kind == "proposition":
        jobs, groups = propositions.workload_jobs(wl, scenario.orgs.index(scenario.sites[0].org))
    elif kind == "streams":
        jobs, groups = _streams(scenario)
    elif kind == "dedicated":
        jobs, groups = dedicated.dedicated_jobs(wl, scenario.sites, scenario.seed)
    else:
        from gridemu.scenarios.swf_workload import swf_jobs  # the SWF reader only when a trace is used

        jobs, groups = swf_jobs(scenario)
    if not len(jobs):
        raise no_jobs_error(wl)
    return number_jobs(jobs), groups


def no_jobs_error(wl: dict[str, Any]) -> WorkloadError:
    if "path" in wl:
        why = f" ({wl['path']}): an empty file, a header alone, or every job filtered out"
    else:
        why = ": every job it would draw falls outside its span (workload.until, a stream's start and stop)"
    return WorkloadError(f"the {wl['kind']} workload has no job to run{why}")


def _poisson(scenario: WorkloadSource) -> tuple[np.ndarray, list[str]]:
    """Per-site Poisson arrivals (rate λ), gamma(α shape, β scale) sizes: thesis ch. 4 settings."""
    return poisson.draw_sites(site_draws(scenario), scenario.sites), list(scenario.orgs)


def site_draws(scenario: WorkloadSource) -> poisson.SiteDraws | None:
    """What a shard needs to draw its own sites' jobs, for a workload drawn site by site
    (``poisson``); None for the others (a trace, a list, one global draw)."""
    if scenario.workload["kind"] != "poisson":
        return None
    return poisson.SiteDraws(dict(scenario.workload), len(scenario.sites), tuple(scenario.orgs), scenario.seed)


def _rigid(scenario: WorkloadSource) -> tuple[np.ndarray, list[str]]:
    """A thesis ch. 5 instance (``scenarios.rigid``): rigid jobs released at 0, Zipf owners.

    Organization k submits to site k. Each site's jobs come in Highest-First order (q
    non-increasing, ties by draw order), so the ``list`` scheduler runs Algorithm 5.1 with
    HF, the local schedule MOLBA starts from.
    """
    from gridemu.scenarios.rigid import lublin_jobs, uni_jobs

    wl, sites = scenario.workload, scenario.sites
    n = _check_rigid(wl, sites)
    rng = np.random.default_rng(np.random.SeedSequence(scenario.seed, spawn_key=RIGID_KEY))
    draw = uni_jobs if wl.get("model", "uni") == "uni" else lublin_jobs
    drawn = draw(rng, n, len(sites), sites[0].procs)  # owner = submit site = group = organization
    jobs = drawn[np.lexsort((drawn["job_id"], -drawn["procs"], drawn["owner"]))]
    return jobs, list(scenario.orgs)


_ROW_KEYS = {"release", "size", "procs", "site", "group", "walltime", "priority", "target"}


def _rows_to_jobs(rows: list[dict[str, Any]], sites: list["SiteSpec"], where: str) -> tuple[np.ndarray, list[str]]:
    """Explicit jobs (TOML tables or CSV rows). ``where`` prefixes errors (key or file:line)."""
    by_name = {s.name: s for s in sites}
    orgs = list(dict.fromkeys(s.org for s in sites))
    org_index = {org: k for k, org in enumerate(orgs)}
    groups: list[str] = list(orgs)
    group_index = {g: k for k, g in enumerate(groups)}
    jobs = empty_jobs(len(rows))
    for i, row in enumerate(rows):
        label = f"{where}[{i}]" if not where.endswith(":") else f"{where}{i + 2}"
        if not isinstance(row, dict):
            raise ScenarioError(label, "must be a table")
        extra = set(row) - _ROW_KEYS
        if extra:
            raise ScenarioError(
                f"{label}.{sorted(extra)[0]}", f"unknown job field (allowed: {', '.join(sorted(_ROW_KEYS))})"
            )
        for req in ("release", "size", "site"):
            if req not in row or row[req] in ("", None):
                raise ScenarioError(f"{label}.{req}", "missing")
        release = check_number(
            f"{label}.release", _as_number(row["release"], f"{label}.release"), nonneg=True, finite=True
        )
        size = check_number(f"{label}.size", _as_number(row["size"], f"{label}.size"), positive=True, finite=True)
        procs = check_number(f"{label}.procs", _as_number(row.get("procs", 1), f"{label}.procs"), positive=True)
        if not procs.is_integer():
            raise ScenarioError(f"{label}.procs", f"must be an integer, got {row.get('procs')!r}")
        site = _site_named(row["site"], sites, by_name, f"{label}.site")
        if row.get("target") not in (None, ""):  # a dedicated job (thesis ch. 3): the site it must run on
            jobs[i]["target_site"] = _site_named(row["target"], sites, by_name, f"{label}.target").site_id
        if procs > site.procs:
            raise ScenarioError(
                f"{label}.procs", f"needs {procs:.15g} processors but site {site.name} has {site.procs}"
            )  # %g: 1e+300, not its 301 digits
        group = str(row.get("group", "") or site.org)
        if group not in group_index:
            group_index[group] = len(groups)
            groups.append(group)
        jobs[i]["release"] = release
        jobs[i]["size"] = size
        jobs[i]["procs"] = int(procs)
        jobs[i]["submit_site"] = site.site_id
        jobs[i]["owner"] = org_index[site.org]
        jobs[i]["group"] = group_index[group]
        if row.get("walltime") not in (None, ""):
            jobs[i]["walltime"] = check_number(
                f"{label}.walltime", _as_number(row["walltime"], f"{label}.walltime"), positive=True, finite=True
            )
        if row.get("priority") not in (None, ""):
            jobs[i]["priority"] = check_number(
                f"{label}.priority", _as_number(row["priority"], f"{label}.priority"), nonneg=True, finite=True
            )
    return jobs, groups


def _site_named(ref: Any, sites: list["SiteSpec"], by_name: dict[str, "SiteSpec"], key: str) -> "SiteSpec":
    """A site given by its name or its index (a number, or digits in a CSV cell)."""
    if isinstance(ref, str) and ref in by_name:
        return by_name[ref]
    if isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < len(sites):
        return sites[ref]
    if isinstance(ref, str) and ref.strip()[:1].isdigit():  # digits in a CSV cell: ASCII only
        i = parse_int(ref, key)
        if 0 <= i < len(sites):
            return sites[i]
    raise ScenarioError(key, f"unknown site {ref!r} (sites: {', '.join(list(by_name)[:10])}...)")


def _as_number(value: Any, key: str) -> Any:
    if isinstance(value, str):
        return parse_number(value, key)
    return value


def _csv_jobs(path: Path, sites: list["SiteSpec"]) -> tuple[np.ndarray, list[str]]:
    """A CSV job list with a header naming columns release,size,site[,procs,group,walltime,priority,target]."""

    def header(names: list[str]) -> None:
        # The header's own faults at its own line (a row's check would name line 2).
        unknown = [f for f in names if f not in _ROW_KEYS]
        if unknown:
            raise WorkloadError(
                f"{path}:1: unknown column {unknown[0]!r} in the header (allowed: {', '.join(sorted(_ROW_KEYS))})"
            )
        missing = [f for f in ("release", "size", "site") if f not in names]
        if missing:
            raise WorkloadError(f"{path}:1: the header has no column {missing[0]!r} (release, size and site needed)")

    try:
        _, rows = csv_table(path, header)
    except CsvProblem as exc:
        raise WorkloadError(f"{path}:{exc.line}: {exc.problem}" if exc.line else f"{path}: {exc.problem}") from None
    try:
        return _rows_to_jobs([row for _, row in rows], sites, f"{path}:")
    except ScenarioError as exc:
        # Re-raise as a workload error: the "key" is file:line.field here.
        raise WorkloadError(str(exc)) from None


_STREAM_KEYS = {"group", "interval", "size", "spread", "overestimate", "sites", "start", "stop"}


def _stream_span(key: str, st: dict[str, Any], until: float | None) -> tuple[float, float]:
    """A stream's start and stop (default ``workload.until``), checked."""
    start = check_number(f"{key}.start", st.get("start", 0.0), nonneg=True)
    stop = st.get("stop", until)
    if stop is None:
        raise ScenarioError(f"{key}.stop", "give stop (or workload.until): when the stream ends")
    stop = check_number(f"{key}.stop", stop, nonneg=True, finite=True)
    if start > stop:
        where = "stop" if "stop" in st else "stop (workload.until)"
        raise ScenarioError(
            f"{key}.start", f"{start:g} is after the stream's {where}, {stop:g}: it would submit no job"
        )
    return start, stop


def _check_streams(wl: dict[str, Any], sites: list["SiteSpec"]) -> list[dict[str, Any]]:
    """Job streams (the fairshare paper's workload, section 5.1): each ``[[workload.streams]]``
    submits a job of group path ``group`` every ``interval`` seconds from ``start`` to ``stop``
    (default: ``workload.until``), runtime ``size`` × U(1 − spread, 1 + spread) on a speed-1
    processor, requested walltime runtime × (1 + U(overestimate)), to a site drawn uniformly
    from ``sites`` (indices; default all): a random broker. Returns the streams, defaults filled."""
    raw = wl.get("streams")
    if not isinstance(raw, list) or not raw:
        raise ScenarioError("workload.streams", "give a list of [[workload.streams]] tables")
    until = check_number("workload.until", wl.get("until", 0.0), positive=True) if "until" in wl else None
    out = []
    for i, st in enumerate(raw):
        key = f"workload.streams[{i}]"
        if not isinstance(st, dict):
            raise ScenarioError(key, "must be a table")
        for k in st:
            if k not in _STREAM_KEYS:
                raise ScenarioError(f"{key}.{k}", f"unknown key (allowed: {', '.join(sorted(_STREAM_KEYS))})")
        group = st.get("group")
        if not isinstance(group, str) or not group:
            raise ScenarioError(f"{key}.group", "give the jobs' group path, e.g. \"VO-A/P-A1\"")
        spread = check_number(f"{key}.spread", st.get("spread", 0.0), nonneg=True)
        if spread >= 1:
            raise ScenarioError(f"{key}.spread", f"must be < 1 (runtimes stay positive), got {spread}")
        over = st.get("overestimate", [0.0, 0.0])
        if not isinstance(over, list) or len(over) != 2:
            raise ScenarioError(f"{key}.overestimate", f"must be [low, high] fractions, got {over!r}")
        lo, hi = (check_number(f"{key}.overestimate[{j}]", v, nonneg=True) for j, v in enumerate(over))
        if hi < lo:
            raise ScenarioError(f"{key}.overestimate", f"needs low <= high, got {over!r}")
        targets = st.get("sites", list(range(len(sites))))
        if not isinstance(targets, list) or not targets:
            raise ScenarioError(f"{key}.sites", "must be a non-empty list of site indices")
        for j, t in enumerate(targets):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < len(sites):
                raise ScenarioError(f"{key}.sites[{j}]", f"must be a site index 0..{len(sites) - 1}, got {t!r}")
        start, stop = _stream_span(key, st, until)
        interval = check_number(f"{key}.interval", st.get("interval", 15.0), positive=True)
        out.append(
            {
                "group": group,
                "interval": interval,
                "size": check_number(f"{key}.size", st.get("size", 3600.0), positive=True, finite=True),
                "spread": spread,
                "overestimate": (lo, hi),
                "sites": targets,
                "start": start,
                "stop": stop,
            }
        )
    # Sized before drawing, as a Poisson workload is: a tiny interval must not allocate for hours.
    total = streams_size(out)
    if total > MAX_JOBS:
        worst = max(range(len(out)), key=lambda i: (out[i]["stop"] - out[i]["start"]) / out[i]["interval"])
        raise ScenarioError(
            f"workload.streams[{worst}].interval",
            f"the streams would submit {total:.3g} jobs (at most {MAX_JOBS:,}): a longer interval or a shorter stream",
        )
    return out


def streams_size(streams: list[dict[str, Any]]) -> float:
    """The jobs checked streams submit (not drawn)."""
    return sum(max(0.0, (st["stop"] - st["start"]) / st["interval"]) for st in streams)


def streams_extent(wl: dict[str, Any], sites: list["SiteSpec"]) -> tuple[float, float, float, float]:
    """Streams, sized without drawing: (jobs, when the last one ends submitting, work at speed 1,
    the longest runtime a stream may draw)."""
    streams = _check_streams(wl, sites)
    each = [max(0.0, (st["stop"] - st["start"]) / st["interval"]) for st in streams]
    return (
        sum(each),
        max(st["stop"] for st in streams),
        sum(k * st["size"] for k, st in zip(each, streams)),
        max(st["size"] * (1 + st["spread"]) for k, st in zip(each, streams) if k > 0) if any(each) else 0.0,
    )


def expected_jobs(wl: dict[str, Any], sites: list["SiteSpec"]) -> float | None:
    """About how many jobs a generated workload makes, without drawing it (None: the jobs
    come from a list or a file, whose size is what it is)."""
    if wl["kind"] == "poisson":
        return poisson_size(wl, len(sites))
    if wl["kind"] == "streams":
        return streams_size(_check_streams(wl, sites))
    if wl["kind"] == "dedicated":
        dedicated.check_dedicated(wl, sites)
        return float(wl["jobs_per_machine"] * len(sites) * wl["rounds"])
    return float(wl["jobs"]) if "jobs" in wl else None


def _streams(scenario: WorkloadSource) -> tuple[np.ndarray, list[str]]:
    streams = _check_streams(scenario.workload, scenario.sites)
    groups = list(dict.fromkeys(st["group"] for st in streams))
    org_of_site = [scenario.orgs.index(s.org) for s in scenario.sites]
    parts = []
    for i, st in enumerate(streams):
        rng = np.random.default_rng(np.random.SeedSequence(scenario.seed, spawn_key=(STREAMS_KEY, i)))
        release = np.arange(st["start"], st["stop"], st["interval"])
        k = len(release)
        part = empty_jobs(k)
        part["release"] = release
        part["size"] = st["size"] * rng.uniform(1 - st["spread"], 1 + st["spread"], size=k)
        lo, hi = st["overestimate"]
        part["walltime"] = part["size"] * (1 + rng.uniform(lo, hi, size=k))
        site = np.asarray(st["sites"])[rng.integers(0, len(st["sites"]), size=k)]
        part["submit_site"] = site
        part["owner"] = np.asarray(org_of_site)[site]
        part["group"] = groups.index(st["group"])
        parts.append(part)
    return (np.concatenate(parts) if parts else empty_jobs(0)), groups


def check_scheduler_jobs(sites: list["SiteSpec"], jobs: np.ndarray) -> None:
    """What a local scheduler needs of every job, checked once the workload is generated."""
    if checks_jobs(sites):
        check_sequential(jobs, "the preempt scheduler")


def checks_jobs(sites: list["SiteSpec"]) -> bool:
    """Whether ``check_scheduler_jobs`` has anything to check for these sites."""
    return any(s.scheduler == "preempt" for s in sites)


__all__ = ["generate_jobs", "check_workload", "JOB_DTYPE"]
