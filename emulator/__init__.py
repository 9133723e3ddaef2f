"""gridemu's kernel: virtual time, windows, backends, results, CLI.

    >>> import emulator
    >>> result = emulator.run("quickstart", seed=3, backend="inprocess")
    >>> result.jobs.head(); result.summary["global"]["makespan"]
"""
from emulator.api import run
from emulator.errors import GridemuError, InvariantError, ScenarioError, WorkloadError
from emulator.results import RunResult
from emulator.scenario import load_scenario, shipped_scenarios

__all__ = ["run", "load_scenario", "shipped_scenarios", "RunResult", "GridemuError", "ScenarioError", "WorkloadError", "InvariantError"]
