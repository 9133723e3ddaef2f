"""What a scenario says about one site: its identity, processors and local scheduler."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SiteSpec:
    site_id: int
    name: str
    org: str
    speeds: tuple[float, ...]
    scheduler: str

    @property
    def procs(self) -> int:
        return len(self.speeds)
