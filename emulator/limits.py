"""What a run may take before gridemu refuses it: the machine's memory, a wall-time budget,
and the calibrated costs (``emulator/costs.json``, measured by ``bench/calibrate.py``) that
turn a run's size into bytes and seconds. ``--force`` goes past the budgets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from gridemu.model.inputs import available_memory

COSTS_FILE = Path(__file__).resolve().parent / "costs.json"
#: The wall time a run may be estimated to take before it is refused (24 hours).
DEFAULT_MAX_HOURS = 24.0
#: A sweep's runs (settings x repeats), listed before any starts.
MAX_SWEEP_RUNS = 1_000_000


@dataclass(frozen=True)
class Costs:
    """Bytes and seconds per site, processor, job, message and window, and seconds per unit
    of each protocol's own work (``Protocol.work``), by protocol name (``costs.json``)."""

    memory: dict[str, float]
    seconds: dict[str, float]
    measured: str
    machine: str
    work: dict[str, float] = field(default_factory=dict)


@lru_cache(maxsize=1)
def costs() -> Costs:
    raw = json.loads(COSTS_FILE.read_text())
    return Costs(raw["memory_bytes"], raw["seconds"], raw["measured"], raw["machine"], raw.get("work_seconds", {}))


@dataclass(frozen=True)
class Limits:
    """What an estimate is held to; ``force`` lets a run past the memory and time budgets."""

    memory_bytes: float
    wall_seconds: float = DEFAULT_MAX_HOURS * 3600
    force: bool = False

    @classmethod
    def here(cls, force: bool = False) -> Limits:
        return cls(float(available_memory()), DEFAULT_MAX_HOURS * 3600, force)
