"""Errors a user can act on. The CLI prints them as one line and exits with code 2."""

from __future__ import annotations

from collections.abc import Sequence


class GridemuError(Exception):
    """Base class: anything raised as a GridemuError is the user's to fix, not a bug."""


class ScenarioError(GridemuError):
    """A scenario key is missing, malformed or out of range; the message names the key."""

    def __init__(self, key: str, problem: str):
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}")

    def __reduce__(self):  # pickled by its two fields: raised in a Ray actor, it reaches the driver whole
        return type(self), (self.key, self.problem)


class WorkloadError(GridemuError):
    """A workload file (SWF trace, CSV job list) is broken; the message names file and line."""


class InvariantError(GridemuError):
    """A run broke conservation or causality; the message names the job or message."""


def first_line(exc: BaseException, default: str = "") -> str:
    """The first line of an exception's message (Ray's errors carry whole tracebacks), or ``default``."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else default


def first_few(items: Sequence[object], most: int = 5) -> str:
    """The first ``most`` of ``items`` for a message, and how many more: ``a, b and 7 more``."""
    shown = ", ".join(map(str, items[:most]))
    return shown + (f" and {len(items) - most:,} more" if len(items) > most else "")
