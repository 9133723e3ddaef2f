"""Where progress bars and status lines go: standard error, so result tables on standard
output stay clean for pipes."""

from __future__ import annotations


def stderr_console():
    from rich.console import Console  # noqa: PLC0415  (rich only when something is shown)

    return Console(stderr=True)
