"""Input files as spreadsheets and hand edits make them (an input audit of 2026-11-27): a
field past the csv module's limit, a byte-order mark, columns an edge file does not read,
a policy nested past the TOML limit, a share given as text; and --max-* on run as on validate.
Each broken case is one line and exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gridemu.sites.fairshare import PolicyError
from gridemu.sites.fairshare_forms import policy_from_dict, policy_from_xml
from tests.test_errors import call, expect_error

THREE = ["--set", "sites.count=3", "--set", "workload.rate=1", "--set", "protocol.name=local"]


def _jobs(tmp_path: Path, body: bytes) -> list[str]:
    (tmp_path / "jobs.csv").write_bytes(body)
    return ["--set", "workload.kind=csv", "--set", f"workload.path={tmp_path / 'jobs.csv'}"]


def _edges(tmp_path: Path, body: bytes) -> list[str]:
    (tmp_path / "edges.csv").write_bytes(body)
    return ["--set", f"network.topology_file={tmp_path / 'edges.csv'}"]


def test_a_field_past_the_csv_limit_is_one_line(tmp_path, capsys):
    # csv raises its own Error past 131,072 characters: it was a traceback, exit 1.
    jobs = _jobs(tmp_path, b"release,size,procs,site,group\n0,5,2,0," + b"g" * 200_000 + b"\n")
    expect_error(capsys, ["validate", "quickstart", *THREE, *jobs], "jobs.csv:2: not a CSV line", "field larger")
    edges = _edges(tmp_path, b"source,target\n" + b"a" * 200_000 + b",b\n")
    expect_error(capsys, ["validate", "quickstart", *THREE, *edges], "edges.csv, line 2: not a CSV line")


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    # A spreadsheet's UTF-8 export starts with one: 'release' was an unknown job field.
    out = tmp_path / "r"
    jobs = _jobs(tmp_path, "\ufeffrelease,size,site\n0,5,0\n1.5,3,2\n".encode())
    edges = _edges(tmp_path, "\ufeffsource,target\n0,1\n1,2\n".encode())
    assert call(["run", "quickstart", *THREE, *jobs, *edges, "--backend", "inprocess", "--out", out, "--quiet"]) == 0
    jobs_table = pd.read_parquet(out / "jobs.parquet")
    assert list(jobs_table["release"]) == [0.0, 1.5] and list(jobs_table["submit_site"]) == [0, 2]


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        # a "weight" column read as nothing while it looked like latencies
        (b"source,target,weight\n0,1,5\n1,2,5\n", ["line 1: unknown column 'weight'", "source, target, latency"]),
        (b"source,target\n0,1,5\n1,2\n", ["line 2: wrong number of columns (header has 2)"]),
        (b"", ["empty file"]),
    ],
    ids=["unknown-column", "long-row", "empty"],
)
def test_an_edge_file_reads_source_target_and_latency_only(tmp_path, capsys, body, needles):
    expect_error(capsys, ["validate", "quickstart", *THREE, *_edges(tmp_path, body)], "network.topology_file", *needles)


def _nested(levels: int) -> str:
    opening = "".join(f'<child-entries><policy-entry name="e{i}" type="group" share="100">' for i in range(levels))
    closing = "</policy-entry></child-entries>" * levels
    return f'<policy-entry name="root" type="local">{opening}{closing}</policy-entry>'


def test_a_policy_nested_past_the_toml_limit_is_refused_not_a_recursion_error():
    assert policy_from_xml(_nested(30)).name == "root"
    with pytest.raises(PolicyError, match="entries nested more than 64 deep"):
        policy_from_xml(_nested(500))  # a RecursionError traceback before


def test_a_toml_share_is_a_number_not_text():
    tree = {"name": "root", "type": "local", "children": [{"name": "a", "type": "group", "share": "100"}]}
    with pytest.raises(PolicyError, match="share must be a number, got '100'"):
        policy_from_dict(tree)
    tree["children"][0]["share"] = 100
    assert policy_from_dict(tree).name == "root"


def test_run_takes_the_max_options_validate_takes(tmp_path, capsys):
    # reliability.md said they refuse a run; run did not know them ("unrecognized arguments").
    out = tmp_path / "r"
    argv = ["run", "quickstart", "--backend", "inprocess", "--out", out]
    expect_error(capsys, [*argv, "--max-messages", "10"], "more than --max-messages 10")
    assert not out.exists()
    assert call([*argv, "--max-messages", "1e9", "--quiet"]) == 0


@pytest.mark.parametrize(
    ("header", "needle"),
    [
        (b"release,size, procs,site", "jobs.csv:1: unknown column ' procs' in the header"),
        (b"release,size,procs", "jobs.csv:1: the header has no column 'site'"),
    ],
    ids=["space-in-a-name", "no-site-column"],
)
def test_a_header_fault_is_named_at_the_header(tmp_path, capsys, header, needle):
    # Found row by row, these read 'jobs.csv:2. procs: unknown job field' and 'jobs.csv:2.site: missing'.
    jobs = _jobs(tmp_path, header + b"\n0,5,1,0\n")
    expect_error(capsys, ["validate", "quickstart", *THREE, *jobs], needle)
