"""gridemu: emulate multi-organization computational grids (installed as the ``gridemu`` package).

The names a user needs, under the one import name::

    import gridemu
    result = gridemu.run("quickstart", seed=4, backend="inprocess")   # a RunResult: jobs, sites, summary, ...
    result.write("runs/q4")
    again = gridemu.load("runs/q4")                                   # the same tables, from the folder
    runs, orgs, table = gridemu.sweep("quickstart", [("protocol.name", ["local", "random"])], backend="inprocess")

The parts are subpackages: ``gridemu.model`` (job and message columns), ``gridemu.sites``,
``gridemu.scenarios``, ``gridemu.brokers`` (the protocols) and ``gridemu.emulator`` (the
kernel, results, CLI). ``gridemu.plugin`` holds what a protocol author imports
(docs/adding-a-protocol.md). This file lives in ``emulator/root/`` (the repository keeps its
top-level folders; ``pyproject.toml`` maps them under ``gridemu``).
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gridemu")
except PackageNotFoundError:  # pragma: no cover (a source tree that is not installed)
    __version__ = "unknown"

#: name -> (module, attribute), imported on first use: ``import gridemu.model`` stays light
#: (shard actors import the kernel without pandas' result tables).
_NAMES = {
    "run": ("gridemu.emulator.api", "run"),
    "resume": ("gridemu.emulator.api", "resume"),
    "load": ("gridemu.emulator.results", "load"),
    "sweep": ("gridemu.emulator.sweep", "sweep"),
    "load_scenario": ("gridemu.emulator.scenario", "load_scenario"),
    "shipped_scenarios": ("gridemu.emulator.scenario", "shipped_scenarios"),
    "RunResult": ("gridemu.emulator.results", "RunResult"),
    "GridemuError": ("gridemu.model.errors", "GridemuError"),
    "ScenarioError": ("gridemu.model.errors", "ScenarioError"),
    "WorkloadError": ("gridemu.model.errors", "WorkloadError"),
}


def __getattr__(name: str):
    if name in _NAMES:
        module, attr = _NAMES[name]
        return getattr(import_module(module), attr)
    raise AttributeError(f"module 'gridemu' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*_NAMES, "__version__"])


__all__ = sorted(_NAMES)
