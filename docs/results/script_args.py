"""The command line of the page scripts that read ``sys.argv`` by hand (``--write``, a
folder, a few options): ``--help`` prints the script's docstring, and an option it does not
know stops it before any work. Before, ``--help`` ran the whole study (up to minutes) or
died on a traceback."""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence


def hand_parsed(doc: str | None, argv: Sequence[str], options: Collection[str] = ("--write",)) -> list[str]:
    """``argv`` as given, once ``--help`` (exit 0) and unknown options (exit 2) are handled;
    ``options``: the ones the script reads (``--write=X`` counts as ``--write``)."""
    if {"-h", "--help"} & set(argv):
        print((doc or "").strip())
        sys.exit(0)
    unknown = [a for a in argv if a.startswith("--") and a.partition("=")[0] not in options]
    if unknown:
        print(f"{sys.argv[0]}: unknown option {unknown[0]} (knows {', '.join(options)}; --help)", file=sys.stderr)
        sys.exit(2)
    return list(argv)
