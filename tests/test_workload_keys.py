"""A [workload] key that its kind does not read is said, not silently ignored: a warning
naming it, and it is left out of the resolved scenario (scenario.toml). The claim "not
read" is checked against the generators themselves: with the key put back, every kind draws
the same jobs."""

from __future__ import annotations

import numpy as np
import pytest

from gridemu.emulator.cli import main
from gridemu.emulator.scenario import _KNOWN, load_scenario
from gridemu.scenarios.workload import WORKLOAD_KEYS, generate_jobs

#: A value of every workload key that differs from the bases' own and from the defaults.
SAMPLE = {
    "rate": 0.5,
    "alpha": 3.0,
    "beta": 1.5,
    "jobs": 7,
    "until": 11.0,
    "procs": 2,
    "path": "elsewhere.swf",
    "orgs": 2,
    "user_map": {"1": 2},
    "orgs_by": "user",
    "split_parallel": True,
    "t_start": 5.0,
    "t_end": 50.0,
    "list": [{"release": 0.0, "size": 3.0, "site": 0}],
    "model": "lublin",
    "priority": 2.0,
    "number": 2,
    "X": 8,
    "group": 2,
    "variant": "late",
    "streams": [{"group": "x", "interval": 1.0, "size": 1.0}],
    "duration": 100.0,
    "integral": True,
    "instance": "exponential",
    "jobs_per_machine": 3,
    "max_size": 4,
    "rounds": 3,
    "period": 9.0,
    "warm_start": "fcfs",
    "load": 0.7,
    "too_wide": "skip",
}


def bases(tmp_path):
    """A tiny scenario of every workload kind: (reference, overrides)."""
    csv = tmp_path / "jobs.csv"
    csv.write_text("release,size,site\n0,1.0,0\n1,2.0,1\n2,3.0,0\n")
    two_sites = {"sites": {"count": 2}, "metrics": {"counterfactual": "none"}}
    return {
        "poisson": ("quickstart", {"workload.jobs": 30}),
        "jobs": (
            {**two_sites, "workload": {"kind": "jobs", "list": [{"release": 0.0, "size": 1.0, "site": 1}]}},
            {},
        ),
        "csv": ({**two_sites, "workload": {"kind": "csv", "path": str(csv)}}, {}),
        "swf": ("shapley", {"workload.duration": 5000.0, "run.horizon": 5000.0}),
        "rigid": ("molba", {"workload.jobs": 30}),
        "proposition": ("gm-prop1", {}),
        "streams": ("fairshare-swegrid", {"workload.until": 30.0, "run.horizon": 3600.0}),
        "dedicated": ("dedicated", {"workload.rounds": 2}),
    }


def test_every_workload_key_is_some_kind_s():
    assert set().union(*WORKLOAD_KEYS.values()) == _KNOWN["workload"] - {"kind"}
    assert set(SAMPLE) == _KNOWN["workload"] - {"kind"}


@pytest.mark.parametrize("kind", sorted(WORKLOAD_KEYS))
def test_a_key_its_kind_does_not_read_changes_no_job_and_is_said(kind, tmp_path):
    ref, sets = bases(tmp_path)[kind]
    plain = load_scenario(ref, sets)
    assert plain.workload["kind"] == kind and not plain.extra.get("scenario_warnings")
    jobs, _ = generate_jobs(plain)
    unread = sorted(_KNOWN["workload"] - {"kind"} - WORKLOAD_KEYS[kind])
    assert unread
    for key in unread:
        given = load_scenario(ref, {**sets, f"workload.{key}": SAMPLE[key]})
        (line,) = given.extra["scenario_warnings"]
        assert line.startswith(f"workload.{key} is not read by a workload of kind {kind!r}") and "ignored" in line
        assert key not in given.workload  # not in scenario.toml either: the run as it ran
        # The generator itself, given the key, draws the same jobs: it does not read it.
        given.workload[key] = SAMPLE[key]
        again, _ = generate_jobs(given)
        assert again.tobytes() == jobs.tobytes() or np.array_equal(again, jobs), key


def test_the_cli_says_it(capsys):
    assert main(["validate", "shapley", "--set", "workload.rate=5"]) == 0
    err = capsys.readouterr().err
    assert "gridemu: warning: workload.rate is not read by a workload of kind 'swf'" in err
