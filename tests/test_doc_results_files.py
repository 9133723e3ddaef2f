"""docs/results-files.md against the files a run writes: the columns of jobs.parquet,
fragments.parquet, sites.parquet, averaging's timeseries.parquet, usage.parquet and outages.parquet are the
ones the page lists (both ways), and every key summary.json holds (global, per organization,
provenance, faults, the protocol and policy sections) is named on the page. A column or key
added, renamed or dropped in the code without the page fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import gridemu

DOC = Path(__file__).resolve().parent.parent / "docs" / "results-files.md"

# Tiny runs, each well under a second in-process: together they write every file the page's
# table describes but the checkpoint and the divisible protocols' timeseries.
RUNS = {
    "quickstart": {"workload.jobs": 200},
    "faults": {"workload.until": 100.0},
    "gm-grid": {"workload.jobs": 200},
    "molba": {},
    "power-of-d": {"sites.count": 20, "workload.jobs": 500},
    "fairshare-swegrid": {"workload.until": 3600.0, "run.horizon": 3600.0},
}


def row(file: str) -> str:
    """The text of the page's table row for ``file``."""
    found = [line for line in DOC.read_text().splitlines() if line.startswith(f"| `{file}` |")]
    assert len(found) == 1, f"docs/results-files.md has {len(found)} table rows for {file}"
    return found[0]


def without_parentheses(text: str) -> str:
    """``text`` with every (...) group, nested ones included, cut out: what is left of a
    column list is the columns, not what the notes about them mention."""
    out, depth = [], 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


def names(text: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", text))


def listed(file: str, after: str, until: str | None = None) -> set[str]:
    """The names the row of ``file`` lists after ``after`` (up to ``until``), notes left out."""
    text = row(file).split(after, 1)[1]
    if until is not None:
        text = text.split(until, 1)[0]
    return names(without_parentheses(text))


def test_without_parentheses_and_listed():
    assert without_parentheses("`a` (x `b` (y) z), `c` (`d`)") == "`a` , `c` "
    assert "job_id" in listed("jobs.parquet", "one row per job:")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("docruns")
    out = {}
    for name, overrides in RUNS.items():
        result = gridemu.run(name, backend="inprocess", overrides=overrides)
        result.write(folder / name)
        out[name] = folder / name
    return out


def columns(runs: dict[str, Path], file: str) -> set[str]:
    """The columns of ``file`` over every run that wrote it."""
    cols = set()
    for folder in runs.values():
        if (folder / file).exists():
            cols |= set(pd.read_parquet(folder / file).columns)
    return cols


def test_jobs_columns_are_the_documented_ones(runs):
    assert columns(runs, "jobs.parquet") == listed("jobs.parquet", "one row per job:")


def test_fragments_columns_are_the_documented_ones(runs):
    assert (runs["gm-grid"] / "fragments.parquet").exists()
    assert columns(runs, "fragments.parquet") == listed("fragments.parquet", "one row per piece:")


def test_sites_columns_are_the_documented_ones(runs):
    code = {"sent_<kind>" if c.startswith("sent_") else c for c in columns(runs, "sites.parquet")}
    doc = listed("sites.parquet", "one row per site:") - {"fairshare", "[faults]"}
    assert code == doc


def test_averaging_timeseries_columns_are_the_documented_ones(runs):
    code = set(pd.read_parquet(runs["quickstart"] / "timeseries.parquet").columns)
    assert code == listed("timeseries.parquet", "`averaging`:", ";")


def test_policy_timeseries_columns_are_the_documented_ones(runs):
    code = set(pd.read_parquet(runs["fairshare-swegrid"] / "timeseries.parquet").columns)
    assert code == listed("timeseries.parquet", "aggregated utilization share over time:", ";")


def test_usage_columns_are_the_documented_ones(runs):
    assert columns(runs, "usage.parquet") == listed("usage.parquet", "usage ledger:")


def test_outages_columns_are_the_documented_ones(runs):
    assert columns(runs, "outages.parquet") == listed("outages.parquet", "one row per crash:", ", by site and time")


def test_policy_csv_columns_are_the_documented_ones(runs):
    code = set(pd.read_csv(runs["fairshare-swegrid"] / "policy.csv").columns)
    assert code == listed("policy.csv", "one row per policy entry:", ": the `policy` section")


def summary_keys(summary: dict) -> set[str]:
    """Every key of summary.json a reader meets by name: the sections' and their sections'
    (organizations and policy entries are keyed by data, not by name, so their own keys are
    taken instead)."""
    keys = set()
    for section, value in summary.items():
        keys.add(section)
        if section == "organizations":
            for figures in value.values():
                keys |= set(figures)
            continue
        if not isinstance(value, dict):
            continue
        for key, inner in value.items():
            keys.add(key)
            if key in ("messages", "jobs_by_state", "psi", "inputs", "trace_jobs_skipped", "faults"):
                continue  # keyed by data (message kinds, states, ...), or faults: see below
            if key == "entries":
                for entry in inner.values():
                    keys |= set(entry)
            elif isinstance(inner, dict):
                keys |= set(inner)
    return keys


#: How the page names families of keys: "the same four of `wait_time` and `bounded_slowdown`",
#: "the `score_*` of each", "`payoff_mean_<site>`".
SHORTHAND = (
    (r"^(wait_time|bounded_slowdown)_(p50|p95|p99|max)$", r"\1"),
    (r"^score_(local|molba|molba_ilba|reference)$", "score_*"),
    (r"^payoff_mean_.*", "payoff_mean_<site>"),
)


def test_every_summary_key_is_documented(runs):
    doc = names(row("summary.json"))
    missing = {}
    for name, folder in runs.items():
        keys = summary_keys(json.loads((folder / "summary.json").read_text()))
        for pattern, short in SHORTHAND:
            keys = {re.sub(pattern, short, k) for k in keys}
        if keys - doc:
            missing[name] = sorted(keys - doc)
    assert not missing, f"summary.json keys that docs/results-files.md does not name: {missing}"


def test_the_fault_sums_are_the_sites_fault_columns(runs):
    # summary.json: "`faults`: the sums of the sites' fault columns, `down_at_end` as
    # `sites_down_at_end`".
    faults = json.loads((runs["faults"] / "summary.json").read_text())["global"]["faults"]
    sites = listed("sites.parquet", "with `[faults]`,")
    assert {"down_at_end" if k == "sites_down_at_end" else k for k in faults} == sites
