"""gridemu's kernel: virtual time, windows, backends, results, CLI.

>>> from gridemu import emulator
>>> result = emulator.run("quickstart", seed=3, backend="inprocess")
>>> result.jobs.head(); result.summary["global"]["makespan"]
"""

from gridemu.model.errors import GridemuError, InvariantError, ScenarioError, WorkloadError


def __getattr__(name: str):
    # run and RunResult pull in pandas, and scenarios every protocol's checks: shard actors
    # import the kernel without needing either (in a Ray worker, 150 -> 50 ms).
    if name in ("run", "resume", "RunResult"):
        from gridemu.emulator import api, results

        return results.RunResult if name == "RunResult" else getattr(api, name)
    if name in ("load_scenario", "shipped_scenarios"):
        from gridemu.emulator import scenario

        return getattr(scenario, name)
    raise AttributeError(f"module 'gridemu.emulator' has no attribute {name!r}")


__all__ = [
    "run",
    "resume",
    "load_scenario",
    "shipped_scenarios",
    "RunResult",
    "GridemuError",
    "ScenarioError",
    "WorkloadError",
    "InvariantError",
]
