"""Where output goes: progress bars and status lines to standard error, so result tables on
standard output stay clean for pipes; result tables to standard output."""

from __future__ import annotations

import sys
from typing import Any


def stderr_console() -> Any:
    from rich.console import Console  # noqa: PLC0415  (rich only when something is shown)

    return Console(stderr=True)


#: Columns of a console writing to a pipe or a file: wide enough that a table keeps its own
#: width (at 160, a sweep's table lost its last column, "score_me"), lines unpadded.
PIPE_WIDTH = 10_000


def stdout_console(width: int = PIPE_WIDTH) -> Any:
    """A console for result tables: the terminal's width, or ``width`` columns in a pipe or a
    file. A reader that stops early (``gridemu report RUN | head``) ends the command with
    exit 0, as :func:`gridemu.emulator.cli.main` handles a broken pipe, where rich would exit 1."""
    from rich.console import Console  # noqa: PLC0415

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    return _Console() if sys.stdout.isatty() else _Console(width=width)
