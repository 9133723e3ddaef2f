"""A researcher's week (issue 43): joining only a cluster started with ``ray start``,
``gridemu show``, what a run records to be repeated, suggestions for misspelled names, and
result folders that honour the umask."""

from __future__ import annotations

import pytest

from gridemu.emulator.cli import main


@pytest.fixture
def address_file(tmp_path, monkeypatch):
    """Ray's address file (``/tmp/ray/ray_current_cluster``) moved into the test's folder."""
    import ray._private.utils

    path = tmp_path / "ray_current_cluster"
    monkeypatch.setattr(ray._private.utils, "get_ray_address_file", lambda temp_dir: str(path))
    # As in a fresh gridemu process: not yet connected to the session's own Ray (conftest).
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return path


def test_address_auto_without_ray_start_is_refused(address_file, tmp_path, capsys):
    # Whatever Ray instances run on this machine (other runs' private ones), none was started
    # with `ray start`: auto joins none of them.
    argv = ["run", "quickstart", "--set", "workload.jobs=100", "--address", "auto", "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--address auto: no Ray cluster started with `ray start --head` on this machine" in err
    assert str(address_file) in err and not (tmp_path / "r").exists()


def test_address_auto_follows_ray_start_and_ray_address(address_file, tmp_path, monkeypatch, capsys):
    from gridemu.emulator.backends import resolve_address

    address_file.write_text("10.1.2.3:6379\n")
    assert resolve_address("auto") == ("10.1.2.3:6379", f"started with `ray start`, recorded in {address_file}")
    monkeypatch.setenv("RAY_ADDRESS", "10.9.9.9:6380")
    assert resolve_address("auto") == ("10.9.9.9:6380", "RAY_ADDRESS")
    monkeypatch.delenv("RAY_ADDRESS")
    # A file left by a cluster that is gone (nobody listens there): one line, exit 2.
    address_file.write_text("127.0.0.1:1\n")
    assert main(["run", "quickstart", "--address", "auto", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "cannot reach a Ray cluster at '127.0.0.1:1'" in err and "ray start --head" in err


def test_result_folders_honour_the_umask(tmp_path):
    import os
    import stat

    from gridemu.emulator.api import make_run_folder
    from gridemu.emulator.results import write_whole

    old = os.umask(0o027)
    try:
        write_whole(tmp_path / "r", lambda folder: (folder / "summary.json").write_text("{}"))
        make_run_folder(tmp_path / "c")  # made at the start of a run with --checkpoint: was 0700
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o750


def test_misspelled_names_get_a_suggestion(capsys):
    assert main(["validate", "quikstart"]) == 2
    assert "no file or shipped scenario named 'quikstart': did you mean 'quickstart'?" in capsys.readouterr().err
    assert main(["validate", "quickstart", "--set", "protocol.name=averagin"]) == 2
    assert "unknown value 'averagin': did you mean 'averaging'?" in capsys.readouterr().err
    assert main(["validate", "bilb", "--set", "protocol.limt=5"]) == 2
    err = capsys.readouterr().err
    # Only BILB's keys are listed, not every protocol's.
    assert "protocol.limt: unknown key: did you mean 'limit'? (allowed: name, period," in err and "samples" not in err
    assert main(["validate", "quickstart", "--set", "workload.rat=2"]) == 2
    assert "workload.rat: unknown key: did you mean 'rate'?" in capsys.readouterr().err
    # A name in other case: difflib saw nothing close in 'EASY' for 'easy' (an exploratory study).
    assert main(["validate", "quickstart", "--set", "scheduler.name=EASY"]) == 2
    assert "unknown value 'EASY': did you mean 'easy'?" in capsys.readouterr().err


def test_a_folder_that_does_not_exist_is_named_so(tmp_path, capsys):
    for command in ("report", "export"):
        assert main([command, str(tmp_path / "nowhere")]) == 2
        assert f"{tmp_path / 'nowhere'}: no such folder" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert "not a gridemu run folder" in capsys.readouterr().err


def test_a_run_records_how_to_repeat_it_and_its_scenario_runs_from_another_folder(tmp_path, monkeypatch):
    import hashlib
    import json

    import gridemu
    from gridemu.emulator.scenario import shipped_scenarios

    trace = shipped_scenarios()["shapley"].parent / "shapley-small.swf"
    monkeypatch.chdir(tmp_path)
    assert main(["run", "shapley", "--backend", "inprocess", "--quiet", "--out", "r"]) == 0
    prov = json.loads((tmp_path / "r" / "summary.json").read_text())["provenance"]
    assert prov["gridemu"] == gridemu.emulator.cli._version()
    assert {"python", "numpy", "pandas", "ray"} <= set(prov) and all(prov[k] for k in ("python", "numpy", "pandas"))
    assert prov["inputs"]["workload.path"] == {
        "path": str(trace.resolve()),
        "sha256": hashlib.sha256(trace.read_bytes()).hexdigest(),
    }
    saved = (tmp_path / "r" / "scenario.toml").read_text()
    assert f'path = "{trace.resolve()}"' in saved
    # The saved scenario alone says what ran it: comment lines a TOML reader skips.
    head = saved.splitlines()[:2]
    assert head[0].startswith(f"# written by gridemu {prov['gridemu']}") and f"numpy {prov['numpy']}" in head[0]
    if "git" in prov:
        assert prov["git"]["commit"] in head[0]
    assert head[1] == f"# workload.path: {trace.resolve()}, sha256 {prov['inputs']['workload.path']['sha256']}"
    # The saved scenario runs from any folder and gives the same jobs.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    again = tmp_path / "r" / "scenario.toml"
    assert main(["run", str(again), "--backend", "inprocess", "--quiet", "--out", "r2"]) == 0
    first, second = gridemu.load(tmp_path / "r"), gridemu.load(elsewhere / "r2")
    assert first.jobs.equals(second.jobs)


def test_show_prints_a_scenario_that_runs(tmp_path, monkeypatch, capsys):
    import tomllib

    monkeypatch.chdir(tmp_path)
    assert main(["show", "shapley", "--set", "run.seed=3"]) == 0
    text = capsys.readouterr().out
    data = tomllib.loads(text)
    assert data["run"]["seed"] == 3 and data["workload"]["path"].startswith("/")
    (tmp_path / "my.toml").write_text(text)
    assert main(["validate", "my.toml"]) == 0
    assert main(["show", "quickstart", "--set", "protocol.perod=3"]) == 2
    assert "did you mean 'period'?" in capsys.readouterr().err


def test_provenance_asks_git_once_a_process_and_hashes_inputs_at_every_run(tmp_path, monkeypatch):
    from gridemu.emulator import provenance as prov_mod

    calls = []

    def fake_git(where):
        calls.append(where)
        return {"commit": "c0ffee", "modified": len(calls) > 1}  # a second call would say modified

    monkeypatch.setattr(prov_mod, "git_commit", fake_git)
    prov_mod._own_commit.cache_clear()
    trace = tmp_path / "t.swf"
    trace.write_text("; one\n")
    data = {"workload": {"path": str(trace)}}
    first = prov_mod.provenance(data)
    trace.write_text("; two\n")  # the input changed between runs: its hash follows
    second = prov_mod.provenance(data)
    prov_mod._own_commit.cache_clear()  # later tests ask the real checkout again
    assert len(calls) == 1
    assert first["git"] == second["git"] == {"commit": "c0ffee", "modified": False}
    assert first["inputs"]["workload.path"]["sha256"] != second["inputs"]["workload.path"]["sha256"]
