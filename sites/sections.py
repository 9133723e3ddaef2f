"""Scenario sections a local scheduler reads besides its name: the ``fairshare`` scheduler's
``[policy]``, its share-policy tree. The kernel knows them only through :data:`SECTIONS`,
and calls the same hooks for each: when a scenario is loaded it checks the section; before
the run it builds, from the whole job set's groups, the state every site of the scheduler
shares (each such site's scheduler gets it through ``configure(state)``, and may add
columns of its own to ``sites.parquet`` with ``site_columns()``); after the run it asks for
the section's figures (``summary.json`` gets them under the section's name) and a time
series (``timeseries.parquet``, where the agents recorded none).

The hooks live with the scheduler's other driver-side code and are imported on first use:
a shard actor never needs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pandas only for annotations: shard actors start without it
    import pandas as pd


@dataclass(frozen=True)
class SectionFacts:
    """What a section's ``results`` hook sees once the run is over."""

    state: Any  # what ``shared`` built for the run
    jobs: "pd.DataFrame"  # jobs.parquet: one labelled row per job
    groups: list[str]  # the run's group paths, by code
    sites: "pd.DataFrame"  # sites.parquet, the schedulers' own columns included
    horizon: float
    metrics: dict[str, Any]  # the resolved [metrics] section


@dataclass(frozen=True)
class SectionHooks:
    """``check(conf, n_sites, base)`` raises ScenarioError naming the key (``base``: the
    scenario file's folder, for paths it names); ``shared(conf, groups, used, base)`` gives
    the state the sites share and the warnings to print (``used``: the group codes some job
    has); ``results(facts)`` gives the summary section and the time series' columns."""

    check: Callable[[dict[str, Any], int, Path | None], None]
    shared: Callable[[dict[str, Any], list[str], set[int] | None, Path | None], tuple[Any, list[str]]]
    results: Callable[[SectionFacts], tuple[dict[str, Any], "pd.DataFrame"]]


@dataclass(frozen=True)
class SchedulerSection:
    scheduler: str  # the local scheduler that reads the section
    name: str  # the section's key in a scenario
    needs: str  # what the scheduler needs it for, as its error says
    module: str  # where ``HOOKS`` (a SectionHooks) is

    def hooks(self) -> SectionHooks:
        return import_module(self.module).HOOKS


SECTIONS: dict[str, SchedulerSection] = {
    "fairshare": SchedulerSection("fairshare", "policy", "a share policy", "gridemu.sites.fairshare_runtime"),
}


def given(data: dict[str, Any]) -> list[SchedulerSection]:
    """The scheduler sections a scenario has."""
    return [s for s in SECTIONS.values() if s.name in data]
