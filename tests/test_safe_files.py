"""Never lose a user's file, never run code from a run folder, files that round-trip
(issues 44 and 45): ``--out`` refusals, checkpoints without pickle, the resume lock,
ASCII-only numbers, ambiguous input, and scenario.toml written with tomli-w."""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gridemu.emulator as emulator
import gridemu.emulator.api as api
from gridemu.emulator import checkpoint as ckpt
from gridemu.emulator.results import LOCK, MARKER
from gridemu.emulator.scenario import read_scenario_file, shipped_scenarios
from tests.golden import digest
from tests.test_checkpoint import stop_at
from tests.test_errors import SMALL_RUN, call, expect_error

USER_FILE = "thesis.tex"


def no_run(monkeypatch) -> None:
    """Any work started fails the test: a refusal comes before the run."""
    monkeypatch.setattr(api, "run_windows", lambda *a, **k: pytest.fail("the run started"))


def users_folder(path: Path) -> Path:
    path.mkdir()
    (path / USER_FILE).write_text("years of work\n")
    return path


# --------------------------------------------------------------------------- --out


def test_a_folder_of_the_users_files_is_refused_with_or_without_overwrite(tmp_path, capsys, monkeypatch):
    no_run(monkeypatch)
    out = users_folder(tmp_path / "mine")
    for extra in ([], ["--overwrite"]):
        expect_error(capsys, SMALL_RUN + ["--out", out, *extra], str(out), "files gridemu did not write", USER_FILE)
        assert (out / USER_FILE).read_text() == "years of work\n"


def test_the_working_directory_is_refused(tmp_path, capsys, monkeypatch):
    no_run(monkeypatch)
    monkeypatch.chdir(users_folder(tmp_path / "cwd"))
    for out in (".", "..", str(tmp_path / "cwd")):
        expect_error(capsys, SMALL_RUN + ["--out", out, "--overwrite"], "working directory")
    assert (tmp_path / "cwd" / USER_FILE).exists()


def test_links_and_files_are_refused(tmp_path, capsys, monkeypatch):
    no_run(monkeypatch)
    target = users_folder(tmp_path / "mine")
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "file").write_text("mine\n")
    expect_error(capsys, SMALL_RUN + ["--out", tmp_path / "link", "--overwrite"], "link", "symbolic link")
    expect_error(capsys, SMALL_RUN + ["--out", tmp_path / "dangling"], "dangling", "symbolic link")
    expect_error(capsys, SMALL_RUN + ["--out", tmp_path / "file", "--overwrite"], "is not a folder")
    assert (target / USER_FILE).exists() and (tmp_path / "file").read_text() == "mine\n"
    assert (tmp_path / "dangling").is_symlink() and not (tmp_path / "nowhere").exists()


def test_overwrite_replaces_a_run_folder_but_never_a_file_put_into_it(tmp_path, capsys):
    out = tmp_path / "r"
    assert call(SMALL_RUN + ["--out", out]) == 0
    assert json.loads((out / MARKER).read_text()) == {"gridemu": "run", "format": 1}
    (out / "report.png").write_bytes(b"a plot report drew")
    assert call(SMALL_RUN + ["--out", out, "--overwrite"]) == 0  # gridemu's own files only: replaced
    (out / USER_FILE).write_text("notes\n")
    (out / "analysis").mkdir()
    # Every foreign entry is named, a folder as a folder.
    expect_error(
        capsys, SMALL_RUN + ["--out", out, "--overwrite"], f"holds what gridemu did not write (analysis/, {USER_FILE})"
    )
    assert (out / USER_FILE).read_text() == "notes\n" and (out / "analysis").is_dir()


def test_a_second_run_into_the_same_folder_is_refused_at_once(tmp_path, capsys, monkeypatch):
    """A run without --checkpoint locks its folder too: a second one is refused before it
    runs, not after doing all its work (then refused for the first one's results)."""
    no_run(monkeypatch)
    for out in (tmp_path / "new", tmp_path / "empty"):
        if out.name == "empty":
            out.mkdir()
        out.mkdir(exist_ok=True)
        (out / MARKER).write_text(json.dumps({"gridemu": "run", "format": 1}) + "\n")  # the first run's folder
        with open(out / LOCK, "w") as held:  # ... which it holds while it runs
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            expect_error(capsys, SMALL_RUN + ["--out", out, "--quiet"], str(out), "in use by another gridemu process")
        assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, LOCK])  # the first run's, left as they were


def test_a_run_that_fails_takes_back_its_folder_or_marker(tmp_path, capsys, monkeypatch):
    def fail(*args, **kwargs):
        raise emulator.GridemuError("the run failed")

    monkeypatch.setattr(api, "run_windows", fail)
    made, empty = tmp_path / "made", tmp_path / "empty"
    empty.mkdir()
    for out in (made, empty):
        expect_error(capsys, SMALL_RUN + ["--out", out, "--quiet"], "the run failed")
    assert not made.exists() and empty.is_dir() and not any(empty.iterdir())


def test_an_interrupted_run_takes_back_the_folders_it_made_above_its_own(tmp_path, monkeypatch):
    # runs/ of the default --out, made for this run: an interrupt left it behind, empty.
    kw = {"backend": "inprocess", "overrides": {"workload.jobs": 3000}}
    with pytest.raises(KeyboardInterrupt):
        emulator.run("quickstart", out=tmp_path / "runs" / "deep" / "r", on_progress=stop_at(3), **kw)
    assert list(tmp_path.iterdir()) == []
    # A folder that was there, or that gained a file meanwhile, stays.
    (tmp_path / "runs").mkdir()
    with pytest.raises(KeyboardInterrupt):
        emulator.run("quickstart", out=tmp_path / "runs" / "r", on_progress=stop_at(3), **kw)
    assert [p.name for p in tmp_path.iterdir()] == ["runs"] and not any((tmp_path / "runs").iterdir())
    kept = tmp_path / "runs" / "a" / "b"

    def interrupt(progress):
        (tmp_path / "runs" / "a" / "note.txt").write_text("mine")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        emulator.run("quickstart", out=kept / "r", on_progress=interrupt, **kw)
    assert sorted(p.name for p in (tmp_path / "runs" / "a").iterdir()) == ["note.txt"]


def test_results_that_came_while_a_run_waited_are_not_replaced(tmp_path, monkeypatch):
    """Checked again under the lock: another run may have written its results since."""
    out = tmp_path / "r"
    assert call(SMALL_RUN + ["--out", out]) == 0
    before = (out / "jobs.parquet").read_bytes()
    checks = []
    real = api.check_out

    def check_then_earlier_results(folder, overwrite=False, *args):
        checks.append(folder)
        if len(checks) == 1:  # the first check saw the folder as the other run left it a moment before
            return Path(folder)
        return real(folder, overwrite, *args)

    monkeypatch.setattr(api, "check_out", check_then_earlier_results)
    monkeypatch.setattr(api, "run_windows", lambda *a, **k: pytest.fail("the run started"))
    small = {"workload.jobs": 50, "metrics.counterfactual": "none"}
    with pytest.raises(emulator.GridemuError, match="holds the results of an earlier run"):
        api.run("quickstart", backend="inprocess", overrides=small, out=out)
    assert len(checks) == 2 and (out / "jobs.parquet").read_bytes() == before


def test_a_sweep_folder_is_no_run_folder_and_a_sweep_refuses_the_users_folder(tmp_path, capsys, monkeypatch):
    import gridemu.emulator.sweep as sweep

    monkeypatch.setattr(sweep, "run_one", lambda *a, **k: pytest.fail("the sweep started"))
    mine = users_folder(tmp_path / "mine")
    sweep_args = ["sweep", "quickstart", "--backend", "inprocess", "--quiet", "--set", "workload.jobs=50"]
    expect_error(capsys, sweep_args + ["--out", mine, "--overwrite"], "files gridemu did not write")
    assert (mine / USER_FILE).exists()
    swept = tmp_path / "sw"
    swept.mkdir()
    (swept / MARKER).write_text(json.dumps({"gridemu": "sweep", "format": 1}))
    (swept / "runs.csv").write_text("a\n")
    no_run(monkeypatch)
    expect_error(capsys, SMALL_RUN + ["--out", swept, "--overwrite"], "a gridemu sweep folder, not a run folder")
    assert (swept / "runs.csv").exists()


def test_export_never_replaces_a_file_unasked(tmp_path, capsys):
    run = tmp_path / "r"
    assert call(SMALL_RUN + ["--out", run]) == 0
    mine = tmp_path / "mine.swf"
    mine.write_text("my trace\n")
    expect_error(capsys, ["export", run, "--out", mine], str(mine), "--overwrite")
    assert mine.read_text() == "my trace\n"
    (tmp_path / "link.swf").symlink_to(mine)
    expect_error(capsys, ["export", run, "--out", tmp_path / "link.swf", "--overwrite"], "symbolic link")
    assert mine.read_text() == "my trace\n"
    assert call(["export", run, "--out", mine, "--overwrite"]) == 0
    assert mine.read_text().startswith("; Version: 2.2")


# --------------------------------------------------------------------------- checkpoints

SMALL = {"backend": "inprocess", "shards": 2, "overrides": {"workload.jobs": 600}}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> tuple[Path, str]:
    """A run folder stopped after 4 windows with a checkpoint, and the uninterrupted run's digest."""
    out = tmp_path_factory.mktemp("stopped") / "r"
    with pytest.raises(KeyboardInterrupt):
        emulator.run("quickstart", **SMALL, out=out, checkpoint=0, on_progress=stop_at(4))
    return out, digest(emulator.run("quickstart", **SMALL).jobs)


def copy_of(stopped: tuple[Path, str], tmp_path: Path) -> Path:
    folder = tmp_path / "copy" / "elsewhere"
    shutil.copytree(stopped[0], folder, symlinks=True)
    return folder


def test_a_copied_run_folder_resumes_elsewhere_to_the_same_job_table(stopped, tmp_path):
    folder = copy_of(stopped, tmp_path)
    before = (stopped[0] / ckpt.FILE).read_bytes()
    assert b"pickle" not in before[:200] and before.startswith(b'{"magic": "gridemu-checkpoint"')
    assert digest(emulator.resume(folder).jobs) == stopped[1]
    assert digest(pd.read_parquet(folder / "jobs.parquet")) == stopped[1]
    assert (stopped[0] / ckpt.FILE).read_bytes() == before  # the original folder is as it was


def rewrite(path: Path, payload: bytes, **header) -> None:
    """A checkpoint file with this payload and a header that matches it (changed by ``header``)."""
    head = {"magic": ckpt.MAGIC, "format": ckpt.FORMAT, "sha256": hashlib.sha256(payload).hexdigest()}
    head.update({"bytes": len(payload), **header})
    path.write_bytes(json.dumps(head).encode() + b"\n" + payload)


def payload_of(path: Path) -> bytes:
    return path.read_bytes().split(b"\n", 1)[1]


def graph_payload(nodes: list, roots: dict) -> bytes:
    buf = io.BytesIO()
    graph = json.dumps({"roots": roots, "nodes": nodes}).encode()
    np.savez(buf, graph=np.frombuffer(graph, dtype=np.uint8), allow_pickle=False)
    return buf.getvalue()


def damage(kind: str, path: Path) -> None:
    data = path.read_bytes()
    if kind == "foreign":
        path.write_bytes(os.urandom(4000))
    elif kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "tampered":
        cut = len(data) - 100
        path.write_bytes(data[:cut] + bytes([data[cut] ^ 1]) + data[cut + 1 :])
    elif kind == "old-version":
        rewrite(path, payload_of(path), format=ckpt.FORMAT - 1)
    elif kind == "missing":
        path.unlink()
    elif kind == "pickle-inside":  # a valid header over an .npz whose array is a pickle
        buf = io.BytesIO()
        np.savez(buf, graph=np.array([os.system], dtype=object), allow_pickle=True)
        rewrite(path, buf.getvalue())
    elif kind == "names-os-system":
        rewrite(path, graph_payload([["obj", "os:system", []]], {"meta": {"r": 0}, "shards": None}))
    elif kind == "calls-eval":
        nodes = [["reduce", "builtins:eval", {"r": 1}], ["tuple", ["__import__('os').system('false')"]]]
        rewrite(path, graph_payload(nodes, {"meta": {"r": 0}, "shards": None}))
    elif kind == "foreign-layout":
        rewrite(path, graph_payload([["dict", []]], {"meta": {"r": 0}, "shards": None}))
    elif kind == "compressed":  # a member that could unpack to any size
        buf = io.BytesIO()
        np.savez_compressed(buf, graph=np.zeros(10**6, dtype=np.uint8))
        rewrite(path, buf.getvalue())
    elif kind == "legacy-pickle":
        path.unlink()
        (path.parent / ckpt.OLD_FILE).write_bytes(b"\x80\x05N.")


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("foreign", "is not a gridemu checkpoint"),
        ("truncated", "truncated or damaged"),
        ("tampered", "its checksum does not match"),
        ("old-version", f"format {ckpt.FORMAT - 1}, this gridemu reads {ckpt.FORMAT}"),
        ("missing", "holds no checkpoint"),
        ("pickle-inside", "not a checkpoint this gridemu can read"),
        ("names-os-system", "not a class of gridemu"),
        ("calls-eval", "not a reconstructor of gridemu's"),
        ("foreign-layout", "not a checkpoint this gridemu can read"),
        ("compressed", "a compressed member"),
        ("legacy-pickle", "never read"),
    ],
)
def test_a_bad_checkpoint_is_one_line_and_nothing_is_run_or_removed(stopped, tmp_path, capsys, kind, says):
    folder = copy_of(stopped, tmp_path)
    damage(kind, folder / ckpt.FILE)
    before = sorted(p.name for p in folder.iterdir())
    expect_error(capsys, ["resume", folder, "--quiet"], says)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_resume_refuses_a_folder_without_the_marker_or_through_a_link(stopped, tmp_path, capsys):
    folder = copy_of(stopped, tmp_path)
    (tmp_path / "link").symlink_to(folder)
    expect_error(capsys, ["resume", tmp_path / "link"], "is no gridemu run folder")
    (folder / MARKER).unlink()
    expect_error(capsys, ["resume", folder], "is no gridemu run folder")
    assert (folder / ckpt.FILE).exists()


def test_a_second_resume_is_refused_at_once(stopped, tmp_path, capsys, monkeypatch):
    folder = copy_of(stopped, tmp_path)
    no_run(monkeypatch)
    with open(folder / LOCK, "w") as held:  # another process resuming it holds the lock
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        expect_error(capsys, ["resume", folder, "--quiet"], str(folder), "in use by another gridemu process")
    assert (folder / ckpt.FILE).exists()


def test_resume_into_another_folder_is_checked_as_run_and_overwrite_works(stopped, tmp_path, capsys):
    folder = copy_of(stopped, tmp_path)
    mine = users_folder(tmp_path / "mine")
    expect_error(capsys, ["resume", folder, "--out", mine, "--overwrite"], "files gridemu did not write")
    done = tmp_path / "done"
    assert call(SMALL_RUN + ["--out", done]) == 0
    expect_error(capsys, ["resume", folder, "--out", done, "--quiet"], "holds the results of an earlier run")
    assert call(["resume", folder, "--out", done, "--overwrite", "--quiet"]) == 0
    assert digest(pd.read_parquet(done / "jobs.parquet")) == stopped[1]
    assert (folder / ckpt.FILE).exists() and (mine / USER_FILE).exists()  # the stopped run is kept


# --------------------------------------------------------------------------- numbers and ambiguous input


def csv_scenario(tmp_path: Path, csv: str, **extra: str) -> Path:
    (tmp_path / "jobs.csv").write_text(csv)
    text = '[sites]\ncount = 3\nprocs = 2\n[workload]\nkind = "csv"\npath = "jobs.csv"\n'
    for table, body in extra.items():
        text += f"[{table}]\n{body}\n"
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("digit", ["²", "١", "1_0", "٣.٥"])
def test_unicode_digits_in_a_job_list_are_refused(tmp_path, capsys, digit):
    column = "size" if "." in digit else "site"
    row = f"0,{digit},1" if column == "size" else f"0,1.0,{digit}"
    path = csv_scenario(tmp_path, f"release,size,site\n0,1.0,0\n{row}\n")
    expect_error(capsys, ["validate", path], "jobs.csv:3", column, "ASCII digits")
    assert (tmp_path / "jobs.csv").exists()


def test_unicode_digits_in_an_edge_file_and_a_per_site_key_are_refused(tmp_path, capsys):
    (tmp_path / "edges.csv").write_text("source,target,latency\n0,1,1.0\n1,²,1.0\n")
    path = tmp_path / "s.toml"
    path.write_text(
        '[sites]\ncount = 3\nprocs = 2\n[network]\ntopology_file = "edges.csv"\n'
        '[workload]\nkind = "poisson"\njobs = 20\n'
    )
    expect_error(capsys, ["validate", path], "edges.csv, line 3, column target", "ASCII digits")
    (tmp_path / "edges.csv").write_text("source,target,latency\n0,1,1.0\n1,2,١\n")
    expect_error(capsys, ["validate", path], "line 3, column latency", "ASCII digits")
    expect_error(capsys, ["validate", "quickstart", "--set", 'sites.procs={default = 2, "١" = 3}'], "sites.procs.١")


SITES = '[workload]\nkind = "poisson"\njobs = 20\n'


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[[sites]]\nprocs = 3\nspeeds = [1.0, 2.0]\n", "sites[0].procs"),
        ("[[sites]]\nspeed = 2.0\nspeeds = [1.0, 2.0]\n", "sites[0].speed"),
        ("[[sites]]\nname = 7\nprocs = 2\n", "sites[0].name"),
        ('[[sites]]\nname = "7"\nprocs = 2\n', "sites[0].name"),
        ('[[sites]]\nname = "a"\norg = ["x", "y"]\nprocs = 2\n', "sites[0].org"),
    ],
)
def test_ambiguous_sites_are_refused(tmp_path, capsys, text, key):
    path = tmp_path / "s.toml"
    path.write_text(text + SITES)
    expect_error(capsys, ["validate", path], key)


def test_jobs_and_until_together_duplicate_columns_and_a_falling_range_are_refused(tmp_path, capsys):
    # Both in one file, or both set over a scenario: which one sizes the workload is unclear.
    both = ["--set", "workload.until=100.0", "--set", "workload.jobs=50"]
    expect_error(capsys, ["validate", "quickstart", *both], "workload.until", "both given")
    path = tmp_path / "both.toml"
    path.write_text(Path(shipped_scenarios()["quickstart"]).read_text())
    path.write_text(path.read_text().replace("jobs = 20000", "jobs = 20000\nuntil = 100.0"))
    expect_error(capsys, ["validate", path], "workload.until", "both given")
    # One set over a scenario that gives the other replaces it (issue 40's averaging-topology
    # command sets jobs on a scenario that gives until).
    assert emulator.load_scenario("quickstart", {"workload.until": 100.0}).workload.get("jobs") is None
    assert emulator.load_scenario("averaging-topology", {"workload.jobs": 500}).workload.get("until") is None
    path = csv_scenario(tmp_path, "release,size,site,size\n0,1.0,0,2.0\n")
    expect_error(capsys, ["validate", path], "jobs.csv:1", "'size' is named twice")
    (tmp_path / "edges.csv").write_text("source,target,target\n0,1,2\n")
    path.write_text(
        '[sites]\ncount = 3\n[network]\ntopology_file = "edges.csv"\n[workload]\nkind = "poisson"\njobs = 20\n'
    )
    expect_error(capsys, ["validate", path], "network.topology_file", "'target' is named twice")
    run = tmp_path / "r"
    assert call(SMALL_RUN + ["--out", run]) == 0
    expect_error(capsys, ["report", run, "--gantt-sites", "5-2"], "--gantt-sites", "'5-2'", "goes down")
    expect_error(capsys, ["report", run, "--gantt-sites", "٣"], "--gantt-sites", "is not a site id")


def test_a_policy_given_as_tree_and_file_is_refused(tmp_path, capsys):
    """``policy.file`` beside ``policy.tree`` (or a provider's): the tree silently won and the
    file was never read, a folder or binary file included (issue 44's audit)."""
    (tmp_path / "policy.xml").mkdir()
    for key in ("policy.file", "policy.providers.VO-A.file"):
        sets = ["--set", f'{key}="{tmp_path / "policy.xml"}"']
        expect_error(capsys, ["validate", "fairshare-imbalanced", *sets], key, "tree and file are both given")


# --------------------------------------------------------------------------- scenario.toml round trips

#: Small enough that each shipped scenario runs twice in about a second.
CHEAP: dict[str, dict] = {
    **{name: {"workload.until": 200.0} for name in ("averaging-game", "averaging-game-learning")},
    **{name: {"workload.until": 200.0} for name in ("averaging-game-overloaded", "averaging-topology", "faults")},
    **{name: {"workload.until": 200.0} for name in ("bilb", "bilb-learning", "bilb-overloaded")},
    **{name: {"workload.until": 100.0, "sites.count": 12} for name in ("bilb-topology", "gm-scale", "shapley-scale")},
    **{name: {"workload.until": 600.0, "run.horizon": 1200.0} for name in ("fairshare-idle", "fairshare-imbalanced")},
    "fairshare-swegrid": {"workload.until": 600.0, "run.horizon": 1200.0},
    "power-of-d": {"sites.count": 20, "workload.jobs": 300},
    "quickstart": {"workload.jobs": 300},
    "gm-grid": {"workload.jobs": 200},
    "dedicated": {"workload.rounds": 2},
}


@pytest.mark.parametrize("name", sorted(shipped_scenarios()))
def test_every_shipped_scenario_runs_again_from_its_saved_toml(tmp_path, name):
    first = emulator.run(name, backend="inprocess", overrides=CHEAP.get(name), out=tmp_path / "r")
    again = emulator.run(tmp_path / "r" / "scenario.toml", backend="inprocess")
    assert digest(again.jobs) == digest(first.jobs)


def test_sites_drawn_from_a_table_are_saved_as_the_table(tmp_path):
    """scenario.toml keeps a [sites] table as a table (a million sites listed one by one were
    110 MB of TOML); the seed expands it to the same sites, drawn processor counts included,
    and the API's result still lists every site."""
    sets = {"sites.count": 3000, "sites.procs": {"dist": "uniform", "low": 1, "high": 4}, "workload.rate": 0.5}
    sets |= {"workload.jobs": 600}
    first = emulator.run(
        "quickstart", backend="inprocess", overrides=sets | {"metrics.counterfactual": "none"}, out=tmp_path / "r"
    )
    assert len(first.scenario["sites"]) == 3000
    saved = read_scenario_file(tmp_path / "r" / "scenario.toml")[0]
    assert saved["sites"] == {"count": 3000, "procs": sets["sites.procs"], "speed": 1.0, "scheduler": "fcfs"}
    assert len((tmp_path / "r" / "scenario.toml").read_text().splitlines()) < 100
    again = emulator.run(tmp_path / "r" / "scenario.toml", backend="inprocess")
    assert digest(again.jobs) == digest(first.jobs)
    assert again.sites["procs"].tolist() == first.sites["procs"].tolist()


def renamed(value):
    """Names no hand-written TOML writer got right: non-ASCII letters, digits of another
    script as a key, spaces and quotes."""
    if isinstance(value, dict):
        return {renamed(k): renamed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v) for v in value]
    if isinstance(value, str):
        return value.replace("VO-A", "VO-Å").replace("VO-B", "١").replace("P-A1", 'P "A 1"')
    return value


def test_names_of_any_script_round_trip_through_scenario_toml(tmp_path):
    raw, _ = read_scenario_file("fairshare-idle")
    data = renamed(raw)
    assert "VO-Å" in data["policy"]["providers"] and "١" in data["policy"]["providers"]
    first = emulator.run(data, backend="inprocess", overrides=CHEAP["fairshare-idle"], out=tmp_path / "r")
    text = (tmp_path / "r" / "scenario.toml").read_text()
    assert '"VO-Å"' in text and '"١"' in text and 'P \\"A 1\\"' in text
    again = emulator.run(tmp_path / "r" / "scenario.toml", backend="inprocess")
    assert digest(again.jobs) == digest(first.jobs)
    assert set(first.jobs["group"]) == set(again.jobs["group"]) and 'VO-Å/P "A 1"' in set(first.jobs["group"])
    assert call(["report", tmp_path / "r", "--no-plot"]) == 0


def test_the_supervisor_takes_back_what_a_dead_run_left_and_nothing_else(tmp_path):
    """The gridemu command's parent, when its child died without a word (SIGKILL, a dead
    raylet), removes the folder the child made or the marker and lock it put into the user's
    empty folder; a folder holding a checkpoint, or anything else, stays."""
    from gridemu.emulator.cli import _take_back

    made, mine, kept = tmp_path / "made", tmp_path / "mine", tmp_path / "kept"
    for folder in (made, mine, kept):
        folder.mkdir()
        (folder / MARKER).write_text(json.dumps({"gridemu": "run", "format": 1}) + "\n")
        (folder / LOCK).write_bytes(b"")
    (kept / ckpt.FILE).write_bytes(b"a checkpoint")
    said = b"".join(tag + os.fsencode(str(f)) + b"\0" for tag, f in ((b"m", made), (b"k", mine), (b"m", kept)))
    _take_back(said + b"m" + os.fsencode(str(tmp_path / "never-made")) + b"\0")
    assert not made.exists()
    assert mine.is_dir() and not any(mine.iterdir())
    assert sorted(p.name for p in kept.iterdir()) == sorted([MARKER, LOCK, ckpt.FILE])


def test_a_file_system_without_locks_runs_and_says_so(tmp_path, capsys, monkeypatch):
    """Some network and FUSE file systems refuse flock: a run there goes on, with a warning,
    rather than failing where it ran before runs locked their folder."""
    import errno

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    assert call(SMALL_RUN + ["--out", tmp_path / "r"]) == 0
    assert (tmp_path / "r" / "jobs.parquet").exists()
    assert "cannot lock" in capsys.readouterr().err


def test_runs_started_in_the_same_second_each_get_a_default_folder(tmp_path, monkeypatch, capsys):
    # The default folder is runs/NAME-TIME to the second: the second run of that second was
    # refused ("holds the results of an earlier run") and its results lost.
    import time

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(time, "strftime", lambda fmt, *a: "20261127-120000")
    argv = ["run", "quickstart", "--backend", "inprocess", "--set", "workload.jobs=200", "--quiet"]
    assert call(argv) == 0 and call(argv) == 0
    folders = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert folders == ["quickstart-20261127-120000", "quickstart-20261127-120000-2"]
    assert all((tmp_path / "runs" / f / "jobs.parquet").exists() for f in folders)


def test_a_default_folder_is_taken_back_when_the_run_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "_run_windows", fail)
    assert call(["run", "quickstart", "--backend", "inprocess", "--set", "workload.jobs=200", "--quiet"]) != 0
    assert list(tmp_path.iterdir()) == []  # runs/ too: this run made it


@pytest.mark.parametrize("checkpoint", [None, 0.01], ids=["plain", "checkpoints"])
def test_a_file_put_into_the_folder_during_the_run_is_kept_and_the_results_go_beside_it(
    tmp_path, monkeypatch, capsys, checkpoint
):
    # The run's results were refused at the end (the folder held a file gridemu did not
    # write), so all its work was lost, and its lock file stayed behind.
    from gridemu.emulator import engine

    out = tmp_path / "r"
    drop = lambda name: name == "write" and (out / USER_FILE).write_text("mine\n")  # noqa: E731
    monkeypatch.setattr(engine, "PHASE_HOOKS", [drop])
    result = emulator.run(
        "quickstart", backend="inprocess", overrides={"workload.jobs": 300}, out=out, checkpoint=checkpoint
    )
    alone = emulator.run("quickstart", backend="inprocess", overrides={"workload.jobs": 300})
    assert result.folder == tmp_path / "r-results"
    assert (out / USER_FILE).read_text() == "mine\n"
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, USER_FILE])  # the lock and checkpoint gone
    assert pd.read_parquet(result.folder / "jobs.parquet").equals(alone.jobs)
    err = capsys.readouterr().err
    assert f"holds what gridemu did not write ({USER_FILE})" in err and "the results are in" in err
