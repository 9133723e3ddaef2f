"""Tests for scenarios/swf.py: SWF parsing and conversion to gridemu jobs."""

from __future__ import annotations

import gzip
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from gridemu.model.errors import ScenarioError, WorkloadError
from gridemu.model.jobs import JOB_DTYPE
from gridemu.scenarios.swf import (
    SWF_DTYPE,
    SWF_FIELDS,
    iter_swf_chunks,
    read_swf,
    read_swf_header,
    swf_to_jobs,
)

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "scenarios" / "data" / "tiny.swf"
TRACES = Path("/work/shared/traces")
KTH = TRACES / "KTH-SP2-1996-2.1-cln.swf.gz"

# Facts about tiny.swf, counted independently of the parser (by awk over the file).
TINY_JOBS = 40
TINY_KEPT = 37  # job 6 (run time -1), job 13 (run time 0), job 26 (procs -1/-1) skipped
TINY_KEPT_PROCS = 708
TINY_USERS = {-1, 3, 5, 7, 12, 20}


def record(**fields: float) -> np.ndarray:
    """One SWF record: a plausible 1-processor job, with the given fields overridden."""
    rec = np.zeros(1, dtype=SWF_DTYPE)
    for name in SWF_FIELDS:
        rec[name] = -1
    base = dict(job_number=1, submit_time=0, run_time=10, allocated_procs=1, requested_procs=1, user_id=1)
    base.update(fields)
    for name, value in base.items():
        rec[name] = value
    return rec


def records(*rows: dict[str, float]) -> np.ndarray:
    out = np.concatenate([record(**row) for row in rows])
    out["job_number"] = np.arange(1, len(out) + 1)
    return out


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


GOOD = "  1  0  5  100  4  -1  -1  4  200  -1  1  3  1  -1  1  -1  -1  -1"


# ------------------------------------------------------------------------- parsing


def test_tiny_trace_parses() -> None:
    trace = read_swf(TINY)
    recs = trace.records
    assert recs.dtype == SWF_DTYPE
    assert len(recs) == TINY_JOBS
    assert recs["job_number"].tolist() == list(range(1, TINY_JOBS + 1))
    assert trace.max_procs == 64  # MaxProcs wins over MaxNodes (32)
    assert trace.header["Version"] == "2.2"
    assert trace.header["UnixStartTime"] == "1262304000"
    assert trace.header["MaxNodes"] == "32"
    # The unkeyed second line continues the Information value.
    assert trace.header["Information"] == "scenarios/swf.py\ntests/test_swf.py"
    assert list(trace.header)[:3] == ["Version", "Computer", "Installation"]
    assert trace.comments[0] == "; Version: 2.2"
    assert trace.comments[-1] == ";"
    assert len(trace.comments) == 20
    assert read_swf_header(TINY) == trace.header
    # -1 fields are kept as -1, not turned into NaN or dropped.
    job6 = recs[recs["job_number"] == 6][0]
    assert job6["run_time"] == -1 and job6["avg_cpu_time"] == -1
    job19 = recs[recs["job_number"] == 19][0]
    assert job19["allocated_procs"] == -1 and job19["requested_procs"] == 8
    # "1.0" in an integer field is accepted.
    assert recs[recs["job_number"] == 22][0]["allocated_procs"] == 1
    assert set(np.unique(recs["user_id"]).tolist()) == TINY_USERS
    assert recs["submit_time"][0] == 850 and recs["submit_time"][-1] == 19179


def test_gzip_and_plain_give_same_records(tmp_path: Path) -> None:
    gz = tmp_path / "tiny_copy.swf.gz"
    with open(TINY, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    # Detection is by magic bytes: a gzip file with a plain-looking name still works.
    disguised = tmp_path / "looks_plain.swf"
    shutil.copy(gz, disguised)
    plain = read_swf(TINY)
    for path in (gz, disguised):
        other = read_swf(path)
        np.testing.assert_array_equal(other.records, plain.records)
        assert other.header == plain.header
        assert other.max_procs == 64


def test_chunking_matches_one_chunk() -> None:
    whole = list(iter_swf_chunks(TINY))
    assert len(whole) == 1
    chunks = list(iter_swf_chunks(TINY, chunk_lines=7))
    assert [len(c) for c in chunks] == [7, 7, 7, 7, 7, 5]
    assert all(c.dtype == SWF_DTYPE for c in chunks)
    np.testing.assert_array_equal(np.concatenate(chunks), whole[0])
    np.testing.assert_array_equal(read_swf(TINY, chunk_lines=7).records, whole[0])


def test_short_line_names_file_and_line(tmp_path: Path) -> None:
    short = " ".join(GOOD.split()[:17])
    # Line 5 is the broken one: 2 comments, 1 good job, 1 blank line, then it.
    path = write_lines(tmp_path / "short.swf", ["; Version: 2.2", "; MaxProcs: 8", GOOD, "", short, GOOD])
    with pytest.raises(WorkloadError) as info:
        read_swf(path)
    message = str(info.value)
    assert message.startswith(f"{path}:5: expected 18 numeric SWF fields, got 17 fields")


def test_bad_token_names_line_and_field(tmp_path: Path) -> None:
    tokens = GOOD.split()
    tokens[3] = "abc"
    lines = ["; Version: 2.2"] + [GOOD] * 9 + [" ".join(tokens)] + [GOOD] * 3
    path = write_lines(tmp_path / "token.swf", lines)
    # The broken line sits in the second chunk, so line numbers must not restart per chunk.
    with pytest.raises(WorkloadError, match=r"token\.swf:11: .*'abc' in field 4 \(run_time\)"):
        list(iter_swf_chunks(path, chunk_lines=4))


@pytest.mark.parametrize(
    ("token", "column", "problem"),
    [("nan", 3, "non-numeric"), ("2.5", 4, "non-integer"), ("0x10", 1, "non-numeric")],
)
def test_other_bad_values_rejected(tmp_path: Path, token: str, column: int, problem: str) -> None:
    tokens = GOOD.split()
    tokens[column] = token
    path = write_lines(tmp_path / "bad.swf", [GOOD, " ".join(tokens)])
    with pytest.raises(WorkloadError, match=rf"bad\.swf:2: expected 18 numeric SWF fields, got {problem}"):
        read_swf(path)


@pytest.mark.parametrize(("column", "name"), [(1, "submit_time"), (3, "run_time"), (4, "allocated_procs")])
def test_a_value_below_minus_one_is_an_error_not_a_skip(tmp_path: Path, column: int, name: str) -> None:
    # SWF writes -1 for unknown; -50 is a corrupt field, which used to drop its job into the
    # "no run time" count with nothing said.
    tokens = GOOD.split()
    tokens[column] = "-50"
    path = write_lines(tmp_path / "neg.swf", [GOOD, GOOD, " ".join(tokens)])
    text = f"neg.swf:3: expected 18 numeric SWF fields, got '-50' in field {column + 1} ({name}), below -1"
    with pytest.raises(WorkloadError, match=re.escape(text)):
        read_swf(path)


def test_jobs_a_trace_cannot_run_are_said_at_validation_and_run(tmp_path: Path, capsys) -> None:
    # tiny.swf: one job without a run time, one of run time 0, one without processors.
    import gridemu.emulator as emulator
    from gridemu.emulator.cli import main

    data = {"sites": {"count": 2, "procs": 64}, "workload": {"kind": "swf", "path": str(TINY)}, "run": {"seed": 1}}
    said = (
        f"{TINY.name}: 3 jobs skipped, which cannot be emulated "
        "(1 no run time, 1 zero run time, 1 no procs); 37 jobs kept"
    )
    r = emulator.run(data)
    assert r.summary["global"]["trace_jobs_skipped"] == {"no_run_time": 1, "zero_run_time": 1, "no_procs": 1}
    assert any(w.startswith(said) for w in r.summary["global"]["workload_warnings"])
    assert f"gridemu: warning: {said}" in capsys.readouterr().err
    (tmp_path / "t.toml").write_text(f'[sites]\ncount = 2\nprocs = 64\n[workload]\nkind = "swf"\npath = "{TINY}"\n')
    assert main(["validate", str(tmp_path / "t.toml")]) == 0
    out, err = capsys.readouterr()
    assert f"gridemu: warning: {said}" in err
    assert re.search(r"estimate: about 37 jobs released over [\d,.e+]+ s; the run lasts", out), out  # seconds
    # A window leaves jobs out on purpose: those are not named.
    r = emulator.run({**data, "workload": {**data["workload"], "t_start": 3000}})
    assert "before_window" in r.summary["global"]["trace_jobs_skipped"]
    assert not any("window" in w for w in r.summary["global"].get("workload_warnings", []))


def test_a_job_too_wide_for_its_site_is_named_by_its_trace_number(capsys) -> None:
    import gridemu.emulator as emulator

    # tiny.swf's first job (trace number 1) asks 8 processors; release order puts it first.
    data = {"sites": {"count": 2, "procs": 4}, "workload": {"kind": "swf", "path": str(TINY)}, "run": {"seed": 1}}
    with pytest.raises(WorkloadError, match=r"tiny\.swf: job 1 of the trace needs 8 processors.*too_wide = .skip."):
        emulator.run(data)
    # Or left out and counted: the jobs of at most 4 processors run, numbered 0.. again.
    recs = read_swf(TINY).records
    procs = np.where(recs["allocated_procs"] > 0, recs["allocated_procs"], recs["requested_procs"])
    ok = (recs["submit_time"] >= 0) & (recs["run_time"] > 0) & (procs > 0)
    r = emulator.run({**data, "workload": {**data["workload"], "too_wide": "skip"}})
    skipped = r.summary["global"]["trace_jobs_skipped"]
    assert skipped["too_wide"] == int((ok & (procs > 4)).sum()) > 0
    assert len(r.jobs) == int((ok & (procs <= 4)).sum()) and r.jobs["job_id"].tolist() == list(range(len(r.jobs)))
    assert r.jobs["procs"].max() <= 4
    # Said with the share of the work it takes away: half a trace's work can be wide jobs.
    work = (recs["run_time"] * procs).astype(float)
    share = work[ok & (procs > 4)].sum() / work[ok].sum()
    said = f"{skipped['too_wide']} too wide: {100 * share:.0f} % of the window's work"
    assert any(said in w for w in r.summary["global"]["workload_warnings"]), said


def test_consistently_wrong_width_rejected(tmp_path: Path) -> None:
    # Every line has 19 fields: numpy alone would happily parse that.
    path = write_lines(tmp_path / "wide.swf", [GOOD + " 0"] * 3)
    with pytest.raises(WorkloadError, match=r"wide\.swf:1: .*got 19 fields"):
        read_swf(path)


def test_missing_file_is_workload_error(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="cannot open"):
        read_swf(tmp_path / "nope.swf")


def test_header_only_and_header_stops_at_first_job(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "h.swf", ["; MaxNodes: 70  (dual)", "", GOOD, "; Late: comment"])
    assert read_swf_header(path) == {"MaxNodes": "70  (dual)"}
    trace = read_swf(path)
    assert trace.max_procs == 70  # falls back to MaxNodes, leading integer only
    assert trace.comments == ["; MaxNodes: 70  (dual)", "; Late: comment"]
    assert "Late" not in trace.header
    empty = read_swf(write_lines(tmp_path / "e.swf", [";", "; Note: nothing here"]))
    assert len(empty.records) == 0 and empty.records.dtype == SWF_DTYPE
    assert empty.max_procs is None


# ---------------------------------------------------------------------- conversion


def test_tiny_conversion_and_skips() -> None:
    recs = read_swf(TINY).records
    out = swf_to_jobs(recs, n_orgs=3, seed=1)
    jobs = out.jobs
    assert jobs.dtype == JOB_DTYPE
    assert out.skipped == {"no_run_time": 1, "zero_run_time": 1, "no_procs": 1}
    assert len(jobs) + sum(out.skipped.values()) == TINY_JOBS
    assert len(jobs) == TINY_KEPT
    assert int(jobs["procs"].sum()) == TINY_KEPT_PROCS
    assert jobs["job_id"].tolist() == list(range(TINY_KEPT))
    assert np.all(np.diff(jobs["release"]) >= 0)
    assert np.all(jobs["size"] > 0) and np.all(jobs["procs"] >= 1)
    assert np.all(jobs["priority"] == 0) and np.all(jobs["migrations"] == 0)
    np.testing.assert_array_equal(jobs["submit_site"], jobs["owner"])
    # Job 19: allocated unknown, requested 8 -> procs 8; job 9: requested time -1 -> NaN.
    release = recs["submit_time"]
    assert jobs[jobs["release"] == release[18]]["procs"].tolist() == [8]
    assert np.isnan(jobs[jobs["release"] == release[8]]["walltime"]).all()
    assert int(np.isnan(jobs["walltime"]).sum()) == 1
    # Jobs 10 and 11 share a submit time: line order decides (64 procs, then 1).
    tie = jobs[jobs["release"] == 4645]
    assert tie["procs"].tolist() == [64, 1] and tie["job_id"][0] + 1 == tie["job_id"][1]
    # Groups: one per user, "org{k}/u{user}", user -1 -> "org{k}/unknown".
    assert set(out.org_of_user) == TINY_USERS
    assert len(out.group_names) == len(TINY_USERS)
    for user, org in out.org_of_user.items():
        expected = f"org{org}/unknown" if user == -1 else f"org{org}/u{user}"
        assert expected in out.group_names
    for job in jobs:
        name = out.group_names[job["group"]]
        assert name.startswith(f"org{job['owner']}/")
    first = jobs[0]
    assert out.group_names[first["group"]] == f"org{out.org_of_user[7]}/u7"  # job 1's user


def test_procs_fallback_and_skip_reasons() -> None:
    recs = records(
        dict(allocated_procs=-1, requested_procs=6),  # requested used
        dict(allocated_procs=0, requested_procs=2),  # zero allocation falls back too
        dict(allocated_procs=-1, requested_procs=-1),  # no_procs
        dict(allocated_procs=0, requested_procs=0),  # no_procs
        dict(run_time=-1),  # no_run_time
        dict(run_time=-1, allocated_procs=-1, requested_procs=-1),  # counted once, first reason
        dict(run_time=0),  # zero_run_time
        dict(submit_time=-1),  # no_submit_time
        dict(requested_time=0),  # kept, walltime NaN
        dict(requested_time=50.0),
    )
    out = swf_to_jobs(recs, n_orgs=2, seed=0)
    assert out.skipped == {"no_submit_time": 1, "no_run_time": 2, "zero_run_time": 1, "no_procs": 2}
    assert out.jobs["procs"].tolist() == [6, 2, 1, 1]
    assert np.isnan(out.jobs["walltime"][2]) and out.jobs["walltime"][3] == 50.0


def test_release_sorted_with_stable_ties() -> None:
    recs = records(
        dict(submit_time=30, run_time=1),
        dict(submit_time=10, run_time=2),
        dict(submit_time=30, run_time=3),
        dict(submit_time=10, run_time=4),
    )
    jobs = swf_to_jobs(recs, n_orgs=1, seed=0).jobs
    assert jobs["release"].tolist() == [10, 10, 30, 30]
    assert jobs["size"].tolist() == [2, 4, 1, 3]
    assert jobs["job_id"].tolist() == [0, 1, 2, 3]
    # Big enough that an unstable sort would really reorder ties (tiny inputs hide it).
    rng = np.random.default_rng(0)
    many = records(*[dict(submit_time=float(rng.integers(0, 5)), run_time=i + 1) for i in range(300)])
    jobs = swf_to_jobs(many, n_orgs=1, seed=0).jobs
    expected = np.lexsort((np.arange(300), many["submit_time"]))
    np.testing.assert_array_equal(jobs["size"], many["run_time"][expected])


def test_split_parallel() -> None:
    recs = read_swf(TINY).records
    plain = swf_to_jobs(recs, n_orgs=3, seed=5)
    split = swf_to_jobs(recs, n_orgs=3, seed=5, split_parallel=True)
    assert len(split.jobs) == int(plain.jobs["procs"].sum()) == TINY_KEPT_PROCS
    assert np.all(split.jobs["procs"] == 1)
    assert split.jobs["job_id"].tolist() == list(range(TINY_KEPT_PROCS))
    assert split.skipped == plain.skipped
    # Each original job becomes procs consecutive copies with the same release, size, owner.
    repeated = np.repeat(plain.jobs, plain.jobs["procs"])
    for name in ("release", "size", "owner", "group", "walltime", "submit_site"):
        np.testing.assert_array_equal(split.jobs[name], repeated[name])
    assert float(split.jobs["size"].sum()) == float((plain.jobs["size"] * plain.jobs["procs"]).sum())


def test_org_map_deterministic_and_seed_dependent() -> None:
    recs = read_swf(TINY).records
    a = swf_to_jobs(recs, n_orgs=4, seed=11)
    b = swf_to_jobs(recs, n_orgs=4, seed=11)
    assert a.org_of_user == b.org_of_user
    for name in JOB_DTYPE.names:  # field by field: NaN walltimes compare equal this way
        np.testing.assert_array_equal(a.jobs[name], b.jobs[name])
    assert a.group_names == b.group_names
    assert all(0 <= k < 4 for k in a.org_of_user.values())
    # The draw follows the documented recipe over the sorted distinct users.
    users = sorted(TINY_USERS)
    rng = np.random.default_rng(np.random.SeedSequence(11, spawn_key=(0x5357,)))
    assert a.org_of_user == dict(zip(users, rng.integers(0, 4, size=len(users)).tolist()))
    # Some other seed must give another map (6 users over 4 orgs: ties are rare).
    others = [swf_to_jobs(recs, n_orgs=4, seed=s).org_of_user for s in range(12, 16)]
    assert any(m != a.org_of_user for m in others)
    # The map depends on the set of users only, not on the window or the order of lines.
    windowed = swf_to_jobs(recs, n_orgs=4, seed=11, t_start=5000, t_end=9000)
    assert windowed.org_of_user == a.org_of_user
    reversed_ = swf_to_jobs(recs[::-1].copy(), n_orgs=4, seed=11)
    assert reversed_.org_of_user == a.org_of_user


def test_user_map_override_and_missing_user() -> None:
    recs = read_swf(TINY).records
    user_map = {-1: 0, 3: 1, 5: 2, 7: 0, 12: 1, 20: 2}
    out = swf_to_jobs(recs, n_orgs=3, seed=99, user_map=user_map)
    assert out.org_of_user == user_map
    assert sorted(out.group_names) == sorted(["org0/unknown", "org1/u3", "org2/u5", "org0/u7", "org1/u12", "org2/u20"])
    # Every job's owner is the org its user was mapped to (the user is in the group path).
    for job in out.jobs:
        org_part, user_part = out.group_names[job["group"]].split("/")
        user = -1 if user_part == "unknown" else int(user_part[1:])
        assert job["owner"] == user_map[user] and org_part == f"org{job['owner']}"

    # A partial map fixes its users; the rule (random by default) places the others.
    partial = {u: k for u, k in user_map.items() if u != 12}
    out = swf_to_jobs(recs, n_orgs=3, seed=99, user_map=partial)
    assert {u: out.org_of_user[u] for u in partial} == partial and 12 in out.org_of_user
    with pytest.raises(ScenarioError, match=r"user 5 to organization 7") as err:
        swf_to_jobs(recs, n_orgs=3, seed=99, user_map={**user_map, 5: 7})
    assert err.value.key == "workload.user_map.5"


def test_users_to_organizations_by_field_and_by_work() -> None:
    # By a field: each user's most frequent group id; ids in order to organizations 0, 1, ...
    recs = records(
        dict(user_id=1, group_id=7),
        dict(user_id=1, group_id=7),
        dict(user_id=1, group_id=9),
        dict(user_id=2, group_id=9),
        dict(user_id=3, group_id=4),
        dict(user_id=4, group_id=11),
    )
    out = swf_to_jobs(recs, n_orgs=2, seed=0, orgs_by="group")
    assert out.org_of_user == {3: 0, 1: 1, 2: 0, 4: 1}  # group ids 4, 7, 9, 11 -> 0, 1, 0, 1
    # By work: the user of most work first, each to the organization of least work per processor.
    recs = records(
        dict(user_id=1, run_time=900),
        dict(user_id=2, run_time=500),
        dict(user_id=3, run_time=400),
        dict(user_id=4, run_time=100),
    )
    out = swf_to_jobs(recs, n_orgs=2, seed=0, orgs_by="balanced", capacity=[1, 1])
    assert out.org_of_user == {1: 0, 2: 1, 3: 1, 4: 0}  # 900 | 0, 900 | 500, 900 | 900, then 1000 | 900


def test_time_window() -> None:
    recs = read_swf(TINY).records
    out = swf_to_jobs(recs, n_orgs=2, seed=3, t_start=4645, t_end=9376)
    in_window = (recs["submit_time"] >= 4645) & (recs["submit_time"] < 9376)
    assert int(in_window.sum()) == 11  # jobs 10..20 (job 21 at 9376 is excluded: half-open)
    assert out.skipped["before_window"] == 9
    assert out.skipped["after_window"] == 20
    assert out.skipped["zero_run_time"] == 1  # job 13 lies inside the window
    assert len(out.jobs) == 10
    assert out.jobs["release"][0] == 0.0  # t_start becomes time 0
    assert out.jobs["release"].max() == 9161 - 4645
    assert len(out.jobs) + sum(out.skipped.values()) == TINY_JOBS
    only_start = swf_to_jobs(recs, n_orgs=2, seed=3, t_start=15000)
    assert only_start.jobs["release"].min() == 15072 - 15000
    only_end = swf_to_jobs(recs, n_orgs=2, seed=3, t_end=1227)
    assert only_end.jobs["release"].tolist() == [850, 1120]  # no shift without t_start
    with pytest.raises(ScenarioError):
        swf_to_jobs(recs, n_orgs=2, seed=3, t_start=10, t_end=10)


def test_the_first_jobs_of_a_window() -> None:
    # workload.jobs: the window's first N usable jobs by submit time; the rest are counted.
    recs = read_swf(TINY).records
    usable = (recs["submit_time"] >= 0) & (recs["run_time"] > 0)
    usable &= np.where(recs["allocated_procs"] > 0, recs["allocated_procs"], recs["requested_procs"]) > 0
    order = np.argsort(recs["submit_time"][usable], kind="stable")
    out = swf_to_jobs(recs, n_orgs=2, seed=3, first=5)
    assert out.trace_numbers.tolist() == recs["job_number"][usable][order][:5].tolist()
    # The records after the fifth job are the part not read: counted as such, whatever they
    # lack; the faults are counted in the part read (tiny.swf is in submission order).
    cut = int(np.flatnonzero(usable)[5])
    assert out.skipped["after_first_jobs"] == TINY_JOBS - cut
    faults = {k: n for k, n in out.skipped.items() if k != "after_first_jobs"}
    assert sum(faults.values()) == cut - 5
    assert len(out.jobs) + sum(out.skipped.values()) == TINY_JOBS
    assert swf_to_jobs(recs, n_orgs=2, seed=3, first=1000).skipped.keys() == {
        "no_run_time",
        "zero_run_time",
        "no_procs",
    }


def test_balanced_organizations_share_the_jobs_that_run() -> None:
    # The first N jobs and the too-wide ones are left out before users are mapped: the work
    # balanced was the whole window's (KTH, first 3,000 jobs on 4 sites of 25: loads 0.38-1.13).
    import gridemu.emulator as emulator

    data = {
        "sites": {"count": 3, "procs": 16},
        "workload": {"kind": "swf", "path": str(TINY), "orgs_by": "balanced", "jobs": 25, "too_wide": "skip"},
        "run": {"seed": 1},
        "metrics": {"counterfactual": "none"},
    }
    run = emulator.run(data)
    jobs = run.jobs
    assert len(jobs) == 25 and jobs["procs"].max() <= 16 and run.summary["global"]["trace_jobs_skipped"]["too_wide"]
    # The rule, written here: users of most work first (ties: lower user id), each to the
    # organization with the least work so far (the sites are alike; ties: lower index).
    user = jobs["group"].str.rsplit("/", n=1).str[1].map(lambda u: -1 if u == "unknown" else int(u[1:]))
    work = (jobs["size"] * jobs["procs"]).groupby(user).sum()
    user_org = jobs.groupby(user)["owner"].first()
    load = {"org0": 0.0, "org1": 0.0, "org2": 0.0}
    for u in sorted(work.index, key=lambda u: (-work[u], u)):
        least = min(load, key=lambda o: (load[o], o))
        assert user_org[u] == least, u
        load[least] += work[u]


def test_a_trace_scaled_to_an_offered_load() -> None:
    # workload.load: the gaps between releases scaled so that work / (capacity x span) is the
    # target, computed here from the trace's lines, not by the code that scales.
    import gridemu.emulator as emulator

    recs = read_swf(TINY).records
    procs = np.where(recs["allocated_procs"] > 0, recs["allocated_procs"], recs["requested_procs"])
    ok = (recs["submit_time"] >= 0) & (recs["run_time"] > 0) & (procs > 0)
    submit, work = recs["submit_time"][ok].astype(float), float((recs["run_time"] * procs)[ok].sum())
    capacity = 2 * 64 * 1.5  # two sites of 64 processors at speed 1.5
    offered = work / (capacity * (submit.max() - submit.min()))
    data = {
        "sites": {"count": 2, "procs": 64, "speed": 1.5},
        "workload": {"kind": "swf", "path": str(TINY), "load": 0.5},
        "run": {"seed": 1},
    }
    r = emulator.run(data)
    said = r.summary["global"]["trace_load"]
    assert said["offered"] == pytest.approx(offered, rel=1e-5) and said["target"] == 0.5
    assert said["arrival_scale"] == pytest.approx(offered / 0.5, rel=1e-5)
    release = np.sort(r.jobs["release"].to_numpy())
    assert release[0] == submit.min()  # the first release stays
    assert release - release[0] == pytest.approx(np.sort(submit - submit.min()) * offered / 0.5)
    jobs = r.jobs
    assert float((jobs["size"] * jobs["procs"]).sum()) / (capacity * (release[-1] - release[0])) == pytest.approx(0.5)


def test_an_empty_window_names_the_traces_span(tmp_path: Path, capsys) -> None:
    from gridemu.emulator.cli import main

    (tmp_path / "t.toml").write_text(
        f'[sites]\ncount = 2\nprocs = 64\n[workload]\nkind = "swf"\npath = "{TINY}"\nt_start = 90000\nduration = 10\n'
    )
    assert main(["validate", str(tmp_path / "t.toml")]) == 2
    err = capsys.readouterr().err
    assert "no job is submitted in the window [90,000, 90,010) s: its jobs are submitted from" in err
    for bad in ("workload.load=0", "workload.jobs=2.5", "workload.jobs=0"):
        assert main(["validate", str(tmp_path / "t.toml"), "--set", bad]) == 2
        assert f"gridemu: error: {bad.split('=')[0]}: must be" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "t.toml"), "--set", "workload.too_wide=maybe"]) == 2
    assert "gridemu: error: workload.too_wide: unknown value 'maybe' (allowed: error, skip)" in capsys.readouterr().err


@pytest.mark.parametrize("n_orgs", [0, -3])
def test_bad_org_count(n_orgs: int) -> None:
    with pytest.raises(ScenarioError) as info:
        swf_to_jobs(read_swf(TINY).records, n_orgs=n_orgs, seed=0)
    assert info.value.key == "workload.orgs"


def test_empty_records() -> None:
    out = swf_to_jobs(np.empty(0, dtype=SWF_DTYPE), n_orgs=2, seed=0, split_parallel=True)
    assert len(out.jobs) == 0 and out.jobs.dtype == JOB_DTYPE
    assert out.group_names == [] and out.org_of_user == {} and out.skipped == {}


# ---------------------------------------------------------------------- real trace


def test_kth_first_chunk_sanity() -> None:
    if not KTH.exists():
        pytest.skip(f"{KTH} not available")
    header = read_swf_header(KTH)
    assert header["MaxProcs"] == "100"
    assert header["Installation"].startswith("Swedish Royal Institute of Technology")
    chunk = next(iter_swf_chunks(KTH, chunk_lines=5000))
    assert len(chunk) == 5000 and chunk.dtype == SWF_DTYPE
    assert chunk["job_number"][0] == 15  # the cleaned log starts after job 14
    assert np.all(np.diff(chunk["submit_time"]) >= 0)
    assert np.all(np.diff(chunk["job_number"]) > 0)
    procs = chunk["allocated_procs"]
    assert procs.max() <= 100 and procs.min() >= 1
    assert np.all((chunk["run_time"] >= 0) | (chunk["run_time"] == -1))
    assert np.all((chunk["wait_time"] >= 0) | (chunk["wait_time"] == -1))
    out = swf_to_jobs(chunk, n_orgs=5, seed=0)
    assert len(out.jobs) + sum(out.skipped.values()) == len(chunk)
    assert not math.isnan(float(out.jobs["size"].sum()))


def test_a_trace_study_hears_about_organizations_without_jobs(capsys) -> None:
    # tiny.swf has 6 users of very different work; spread at random over 5 organizations the
    # work per processor is far apart (or an organization gets none), which the run says and
    # summary.json keeps; balanced by work, every organization gets work.
    import gridemu.emulator as emulator

    data = {
        "sites": {"count": 5, "procs": 64},
        "workload": {"kind": "swf", "path": str(TINY), "orgs_by": "random"},
        "run": {"seed": 1},
    }
    r = emulator.run(data)
    warnings = r.summary["global"].get("workload_warnings", [])
    assert any("got no job of the trace" in w or "work per processor differs" in w for w in warnings)
    assert f"gridemu: warning: {warnings[0]}" in capsys.readouterr().err
    emulator.run({**data, "metrics": {"counterfactual": "local"}})  # the same jobs run again alone: said once
    assert capsys.readouterr().err.count(f"gridemu: warning: {warnings[0]}") == 1
    data["workload"]["orgs_by"] = "balanced"
    r = emulator.run(data)
    assert not any("got no job" in w for w in r.summary["global"].get("workload_warnings", []))
    assert set(r.jobs["owner"].astype(str)) == set(r.summary["organizations"])
    # More organizations than users: balancing cannot help, and the warning says why instead
    # of suggesting the rule already in use.
    r = emulator.run({**data, "sites": {"count": 9, "procs": 64}})
    warned = " ".join(r.summary["global"]["workload_warnings"])
    assert (
        "the trace has 6 users with jobs here for 9 organizations" in warned
        and 'try orgs_by = "balanced"' not in warned
    )
    with pytest.raises(ScenarioError, match="unknown value 'users'") as err:
        emulator.run({**data, "workload": {**data["workload"], "orgs_by": "users"}})
    assert err.value.key == "workload.orgs_by"


# ----------------------------------------------------------------------------- warm start


def _fcfs_by_events(release: list[int], size: list[int], machines: int) -> list[int]:
    """Global FCFS as an event simulation, written apart from ``sites/fcfs_replay.py``: time goes
    from event to event; at each, ended jobs free their processors, released jobs join the
    queue, and the queue's head starts while a processor is free."""
    from collections import deque

    n, i, free = len(release), 0, machines
    queue: deque[int] = deque()
    running: list[tuple[int, int]] = []  # (end, job)
    start = [-1] * n
    while i < n or queue:
        t = min(([release[i]] if i < n else []) + [e for e, _ in running])
        free += sum(1 for e, _ in running if e <= t)
        running = [(e, j) for e, j in running if e > t]
        while i < n and release[i] <= t:
            queue.append(i)
            i += 1
        while queue and free:
            j = queue.popleft()
            start[j], free = t, free - 1
            running.append((t + size[j], j))
    return start


def test_fcfs_backlog_against_an_event_replay() -> None:
    from gridemu.sites.fcfs_replay import fcfs_backlog

    rng = np.random.default_rng(11)
    for trial in range(60):
        n, machines = int(rng.integers(1, 40)), int(rng.integers(1, 6))
        release = np.sort(rng.integers(0, 60, n))
        size = rng.integers(1, 25, n)
        t_start = int(rng.integers(0, 80))
        start = _fcfs_by_events(release.tolist(), size.tolist(), machines)
        present = [j for j in range(n) if release[j] < t_start and start[j] + size[j] > t_start]
        left = [int(size[j]) if start[j] >= t_start else int(start[j] + size[j] - t_start) for j in present]
        got, got_left = fcfs_backlog(release, size, machines, t_start)
        assert got.tolist() == present and got_left.tolist() == left, trial


def test_warm_window_puts_the_fcfs_backlog_first() -> None:
    """Two processors, t_start = 100. FCFS before it: the 2-processor job of 0 runs 0-150 on
    both; then, in release order, the job of 10 runs 150-170, the job of 20 150-155, and the
    2-processor job of 30 155-195 and 170-210. At 100 the first job's copies have 50 s left and
    the other four copies wait whole: they come first, released at 0 on the window's clock."""
    recs = records(
        dict(submit_time=0, run_time=150, allocated_procs=2, user_id=1),
        dict(submit_time=10, run_time=20, user_id=2),
        dict(submit_time=20, run_time=5, user_id=1),
        dict(submit_time=30, run_time=40, allocated_procs=2, user_id=2),
        dict(submit_time=100, run_time=7, user_id=2),  # the window's first job
        dict(submit_time=130, run_time=3, allocated_procs=2, user_id=1),
        dict(submit_time=400, run_time=9, user_id=1),  # after the window
    )
    kw = dict(n_orgs=2, seed=1, user_map={1: 0, 2: 1}, split_parallel=True, t_start=100, t_end=300)
    cold = swf_to_jobs(recs, **kw)
    warm = swf_to_jobs(recs, **kw, warm_machines=2)
    assert warm.warm == 2 + 1 + 1 + 2
    w = warm.jobs[: warm.warm]
    assert w["release"].tolist() == [0.0] * 6
    assert w["size"].tolist() == [50, 50, 20, 5, 40, 40]
    assert w["owner"].tolist() == [0, 0, 1, 0, 1, 1]
    assert w["procs"].tolist() == [1] * 6
    assert warm.jobs["job_id"].tolist() == list(range(len(warm.jobs)))
    rest = warm.jobs[warm.warm :]
    for name in ("release", "size", "owner", "procs", "submit_site"):
        assert rest[name].tolist() == cold.jobs[name].tolist(), name
    assert warm.skipped == cold.skipped  # the backlog's records are before the window all the same
    # Enough processors that nothing waits: only what still runs at 100, with its work left.
    roomy = swf_to_jobs(recs, **kw, warm_machines=10)
    assert roomy.jobs["size"][: roomy.warm].tolist() == [50, 50]


def test_warm_start_needs_whole_seconds_a_window_and_sequential_jobs() -> None:
    recs = records(dict(submit_time=0.5, run_time=10), dict(submit_time=100, run_time=3))
    with pytest.raises(ScenarioError, match=r"workload.warm_start.*job 1 has submit time 0.5"):
        swf_to_jobs(recs, n_orgs=1, seed=1, split_parallel=True, t_start=50, warm_machines=2)
    with pytest.raises(ScenarioError, match=r"workload.warm_start.*needs a window"):
        swf_to_jobs(recs, n_orgs=1, seed=1, split_parallel=True, warm_machines=2)
    with pytest.raises(ScenarioError, match=r"workload.warm_start.*split_parallel"):
        swf_to_jobs(recs, n_orgs=1, seed=1, t_start=50, warm_machines=2)
