"""Bad input as a user meets it (an audit of the CLI and gridemu.run, branch badinput): values
of the wrong type, keys a table never read, window bounds of a trace, empty --grid values.
Each is one line naming the key and exit 2, never a traceback, and nothing is dropped silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from gridemu.emulator.api import run
from gridemu.model.errors import ScenarioError
from tests.test_errors import expect_error


@pytest.mark.parametrize("value", ["[1]", "{a=1}"], ids=["list", "table"])
def test_a_protocol_name_that_is_no_string_is_named(capsys, value):
    # It was a TypeError (unhashable type) from the registry's lookup, exit 1.
    expect_error(
        capsys, ["validate", "quickstart", "--set", f"protocol.name={value}"], "protocol.name", "unknown value"
    )
    with pytest.raises(ScenarioError, match="protocol.name"):
        run("quickstart", backend="inprocess", overrides={"protocol.name": ["averaging"]})


TINY_SWF = Path(__file__).resolve().parent.parent / "scenarios" / "data" / "tiny.swf"


@pytest.mark.parametrize(
    ("override", "needles"),
    [
        # a string or list was a numpy or float() traceback, exit 1
        ('workload.t_start="noon"', ["workload.t_start", "must be a number", "'noon'"]),
        ("workload.t_start=[100]", ["workload.t_start", "must be a number"]),
        ('workload.t_end="late"', ["workload.t_end", "must be a number", "'late'"]),
        # nan was blamed on the memory estimate ("protocol: the run needs about inf GiB")
        ("workload.t_start=nan", ["workload.t_start", "must be a number, got nan"]),
        # true was taken as 1 and -1 shifted every release by +1: both ran
        ("workload.t_start=true", ["workload.t_start", "must be a number, got True"]),
        ("workload.t_start=-1", ["workload.t_start", "must be >= 0, got -1"]),
        # "no job to run", naming no key
        ("workload.t_end=-5", ["workload.t_end", "must be > 0, got -5"]),
        # "false" (a string) split every parallel job: 708 jobs instead of 37
        ('workload.split_parallel="false"', ["workload.split_parallel", "must be true or false", "'false'"]),
        ("workload.split_parallel=1", ["workload.split_parallel", "must be true or false", "got 1"]),
    ],
    ids=[
        "t_start-text",
        "t_start-list",
        "t_end-text",
        "t_start-nan",
        "t_start-bool",
        "t_start-negative",
        "t_end-negative",
        "split-text",
        "split-number",
    ],
)
def test_a_trace_window_and_split_parallel_of_the_wrong_kind_are_named(tmp_path, capsys, override, needles):
    scenario = tmp_path / "swf.toml"
    scenario.write_text(f'[sites]\ncount = 3\nprocs = 64\n\n[workload]\nkind = "swf"\npath = "{TINY_SWF}"\n')
    expect_error(capsys, ["validate", scenario, "--set", override], *needles)


FAIRSHARE = """\
[run]
horizon = 2000.0
[network]
latency = 0.05
[sites]
count = 2
procs = 2
[scheduler]
name = "fairshare"
[workload]
jobs = 20
[protocol]
name = "fairshare"
[policy.tree]
name = "Resource"
type = "resource"
children = [{name = "org0", type = "VO", share = 50}, {name = "org1", type = "VO", share = 50}]
"""


@pytest.mark.parametrize(
    ("override", "needles"),
    [
        # a typo in a key of window or weights was its default, silently
        ("policy.window={length=600.0, dcay=0.5}", ["policy.window.dcay", "unknown key", "count, decay, length"]),
        ("policy.weights={fairshar=2.0}", ["policy.weights.fairshar", "unknown key", "fairshare, queue_time"]),
        # weights that are no table: an AttributeError (exit 1)
        ("policy.weights=5", ["policy.weights", "must be a table", "got 5"]),
    ],
    ids=["window-typo", "weights-typo", "weights-number"],
)
def test_a_policy_key_of_the_wrong_kind_or_name_is_named(tmp_path, capsys, override, needles):
    scenario = tmp_path / "fairshare.toml"
    scenario.write_text(FAIRSHARE)
    expect_error(capsys, ["validate", scenario, "--set", override], *needles)


def test_a_policy_file_name_that_is_no_string_is_named(tmp_path, capsys):
    # file = 5 was a TypeError from os.fspath (exit 1)
    scenario = tmp_path / "fairshare.toml"
    scenario.write_text(FAIRSHARE.split("[policy.tree]")[0] + "[policy]\nfile = 5\n")
    expect_error(capsys, ["validate", scenario], "policy.file", "policy file's name", "got 5")


@pytest.mark.parametrize(("values", "which"), [("10,,50", "value 2 of 3"), ("10,50,", "value 3 of 3")])
def test_an_empty_value_in_a_grid_is_named_not_dropped(tmp_path, capsys, values, which):
    # "10,,50" swept 10 and 50 and exited 0: the value between the commas was lost
    out = tmp_path / "s"
    argv = ["sweep", "quickstart", "--grid", f"protocol.period={values}", "--set", "workload.jobs=50", "--out", out]
    argv += ["--backend", "inprocess"]
    expect_error(capsys, argv, "protocol.period", f"--grid 'protocol.period={values}'", which, "is empty")
    assert not out.exists()


@pytest.mark.parametrize("column", ["walltime", "priority"])
def test_an_infinite_walltime_or_priority_in_a_job_list_is_named(tmp_path, capsys, column):
    # both were taken as given (workload.priority = inf on a poisson workload is refused)
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(f"release,size,site,{column}\n0,1,0,5\n1,2,1,inf\n")
    argv = ["validate", "quickstart", "--set", "workload.kind=csv", "--set", f"workload.path={jobs}"]
    expect_error(capsys, argv, f"jobs.csv:3.{column}", "must be a finite number, got inf")
    listed = f"workload.list=[{{release=0, size=1, site=0, {column}=inf}}]"
    expect_error(
        capsys, ["validate", "quickstart", "--set", "workload.kind=jobs", "--set", listed], f"list[0].{column}"
    )


def test_report_names_the_result_file_a_folder_lacks(tmp_path, capsys):
    # a folder with summary.json alone was said to lack "summary.json and jobs.parquet"
    (tmp_path / "summary.json").write_text("{}")
    expect_error(capsys, ["report", tmp_path, "--no-plot"], "not a gridemu run folder (jobs.parquet is missing)")


@pytest.mark.parametrize("key", ["sites..count", ".count", 5], ids=["empty-part", "leading-dot", "number"])
def test_a_malformed_override_key_from_python_is_named(key):
    # "sites..count" was reported as "sites.: unknown key"; 5 was an AttributeError
    with pytest.raises(ScenarioError, match="dotted key path"):
        run("quickstart", backend="inprocess", overrides={key: 3})


def test_a_grid_sweeps_arrays_and_tables_whole():
    # --grid 'workload.rate=[1,2],[3,4]' was cut at every comma ("'[1' is not a TOML value"):
    # commas inside brackets, braces and quotes belong to one value.
    from gridemu.emulator.sweep import parse_grid

    grid = parse_grid(
        ['workload.rate=[1, 2],[3,4]', 'sites.procs={dist="uniform", low=1, high=4},2', 'run.name="a,b",c']
    )
    assert grid == [
        ("workload.rate", [[1, 2], [3, 4]]),
        ("sites.procs", [{"dist": "uniform", "low": 1, "high": 4}, 2]),
        ("run.name", ["a,b", "c"]),
    ]


def test_a_grid_of_per_site_rate_lists_runs(tmp_path):
    from gridemu.emulator.sweep import sweep

    out = tmp_path / "s"
    sweep(
        "quickstart",
        [("workload.rate", [[0.1] * 8, [0.2] * 8])],
        overrides={"workload.jobs": 40, "metrics.counterfactual": "none"},
        out=out,
        backend="inprocess",
        quiet=True,
    )
    import pandas as pd

    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 2 and runs["jobs"].tolist() == [40, 40]


def test_sweep_ticks_of_long_settings_are_short_and_told_apart():
    from gridemu.emulator.sweep_report import _ticks

    assert _ticks([1.0, 5.0, "local"]) == (["1", "5", "local"], "")
    assert _ticks(["[0.1, 0.1, 0.1]", "[0.3, 0.3, 0.3]"]) == (["[0.1]×3", "[0.3]×3"], "")
    ticks, note = _ticks(["[0.1, 0.1, 0.1, 0.5]", "[0.1, 0.1, 0.1, 0.9]"])  # alike once cut
    assert ticks == ["#1", "#2"] and note == "#1: [0.1, 0.1, 0.1, 0.5]; #2: [0.1, 0.1, 0.1, 0.9]"
    ticks, note = _ticks(["[1.6, 0.6, 0.6, 0.6]", "[0.6, 1.6, 0.6, 0.6]"])  # cut but told apart: given whole
    assert ticks == ["[1.6, 0.6, 0.…", "[0.6, 1.6, 0.…"], ticks
    assert note == "[1.6, 0.6, 0.… = [1.6, 0.6, 0.6, 0.6]; [0.6, 1.6, 0.… = [0.6, 1.6, 0.6, 0.6]"


def test_a_user_map_entry_for_a_user_the_trace_lacks_is_said(capsys):
    # It placed nobody, without a word: a typo or another trace's map.
    from gridemu.emulator.cli import main

    assert main(["validate", "shapley", "--set", "workload.user_map={1=0, 99999=2, 88888=1}"]) == 0
    err = capsys.readouterr().err
    assert "gridemu: warning: workload.user_map: user(s) 88888, 99999 submit no job in " in err
    assert main(["validate", "shapley", "--set", "workload.user_map={1=0}"]) == 0
    assert "user_map" not in capsys.readouterr().err


def test_a_trace_s_repeated_job_numbers_are_said(tmp_path, capsys):
    # Two traces joined: every line still runs, but "job 2 of the trace" could be either.
    from gridemu.emulator.cli import main

    line = "{n} {t} 0 10 1 -1 -1 1 20 -1 1 {n} 1 1 1 1 -1 -1\n"
    trace = tmp_path / "joined.swf"
    trace.write_text("".join(line.format(n=n, t=t) for n, t in [(1, 0), (2, 5), (3, 6), (1, 7), (2, 8)]))
    wl = f'workload={{kind="swf", path="{trace}", orgs=2}}'
    assert main(["validate", "quickstart", "--set", "sites.count=2", "--set", wl]) == 0
    err = capsys.readouterr().err
    assert "joined.swf: 2 job numbers appear on more than one line (1, 2; 4 lines in all)" in err
    trace.write_text("".join(line.format(n=n, t=t) for n, t in [(1, 0), (2, 5), (3, 6)]))
    assert main(["validate", "quickstart", "--set", "sites.count=2", "--set", wl]) == 0
    assert "more than one line" not in capsys.readouterr().err


def test_a_job_list_s_huge_processor_count_is_one_short_number(tmp_path, capsys):
    # procs = 1e300 printed all 301 digits of int(1e300)
    (tmp_path / "big.csv").write_text("release,size,site,procs\n0,1,0,1e300\n")
    scenario = tmp_path / "s.toml"
    scenario.write_text('[sites]\ncount = 2\n[workload]\nkind = "csv"\npath = "big.csv"\n')
    expect_error(capsys, ["validate", scenario], "big.csv:2.procs", "needs 1e+300 processors but site site0 has 1")


@pytest.mark.parametrize("key", ["name", "description"])
def test_run_labels_must_be_strings(key, capsys):
    # A list or a number was kept and written to scenario.toml as it came.
    from gridemu.emulator.cli import main
    from gridemu.emulator.scenario import load_scenario
    from gridemu.model.errors import ScenarioError

    with pytest.raises(ScenarioError, match=f"run.{key}: must be a string, got \\[1, 2\\]"):
        load_scenario("quickstart", {f"run.{key}": [1, 2]})
    assert load_scenario("quickstart", {f"run.{key}": "mine"}).data["run"][key].startswith("mine")
    assert main(["validate", "quickstart", "--set", f"run.{key}=5"]) == 2
    assert f"gridemu: error: run.{key}: must be a string, got 5" in capsys.readouterr().err


def test_a_protocol_named_where_a_scenario_goes_says_where_its_keys_are(capsys):
    from gridemu.emulator.cli import main

    assert main(["show", "power_of_d"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'power-of-d'? power_of_d is a protocol: gridemu list power_of_d shows its keys" in err
    assert main(["run", "local"]) == 2
    assert "named 'local'; local is a protocol: gridemu list local shows its keys" in capsys.readouterr().err
    assert main(["show", "nothing"]) == 2
    assert "is a protocol" not in capsys.readouterr().err


def test_a_long_list_in_a_message_names_the_first_and_counts_the_rest():
    from gridemu.model.errors import first_few

    assert first_few(["a", "b"]) == "a, b"
    assert first_few(list(range(8))) == "0, 1, 2, 3, 4 and 3 more"
    assert first_few(list(range(2000)), 2) == "0, 1 and 1,998 more"


def test_a_none_from_python_for_a_key_with_a_default_is_refused_by_key():
    # The fuzzer (seed 7, 300 examples): None passed load_scenario as "not filled yet" and
    # the estimate's traffic hook compared it with a float (a TypeError in gate).
    from gridemu.emulator.scenario import load_scenario

    with pytest.raises(ScenarioError, match="None is no value for this key") as exc:
        load_scenario("averaging-game-learning", {"protocol.period": None})
    assert exc.value.key == "protocol.period"


def test_an_swf_run_in_another_time_unit_is_refused(capsys):
    # time_unit names the unit, it converts nothing: "h" put a trace's seconds under hours
    # (flow times of "100 days" in flow_cdf.png).
    from gridemu.emulator.scenario import load_scenario

    with pytest.raises(ScenarioError, match="an SWF trace's times are seconds") as exc:
        load_scenario(
            {
                "sites": {"count": 3, "procs": 64},
                "workload": {"kind": "swf", "path": str(TINY_SWF)},
                "run": {"time_unit": "h"},
            }
        )
    assert exc.value.key == "run.time_unit"


def test_the_cli_refuses_an_swf_time_unit_and_easy_on_mixed_speeds_with_exit_2(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'[sites]\ncount = 3\nprocs = 64\n\n[workload]\nkind = "swf"\npath = "{TINY_SWF}"\n')
    expect_error(capsys, ["validate", scenario, "--set", 'run.time_unit="h"'], "run.time_unit", "seconds", "'h'")
    mixed = tmp_path / "m.toml"
    mixed.write_text(
        '[[sites]]\nname = "a"\nspeeds = [1.0, 2.0]\n\n[scheduler]\nname = "easy"\n\n[workload]\njobs = 10\n'
    )
    expect_error(
        capsys,
        ["validate", mixed],
        "scheduler.name",
        "the easy scheduler needs identical processors",
        "sites with several speeds: a",
    )
