"""gridemu's kernel: virtual time, windows, backends, results, CLI.

    >>> from gridemu import emulator
    >>> result = emulator.run("quickstart", seed=3, backend="inprocess")
    >>> result.jobs.head(); result.summary["global"]["makespan"]
"""
from gridemu.model.errors import GridemuError, InvariantError, ScenarioError, WorkloadError
from gridemu.emulator.scenario import load_scenario, shipped_scenarios


def __getattr__(name: str):
    # run and RunResult pull in pandas; shard actors import the kernel without needing it.
    if name in ("run", "RunResult"):
        from gridemu.emulator import api, results

        return api.run if name == "run" else results.RunResult
    raise AttributeError(f"module 'gridemu.emulator' has no attribute {name!r}")

__all__ = ["run", "load_scenario", "shipped_scenarios", "RunResult", "GridemuError", "ScenarioError", "WorkloadError", "InvariantError"]
