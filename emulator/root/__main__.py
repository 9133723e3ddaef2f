"""``python -m gridemu``: the ``gridemu`` command, for an interpreter whose scripts folder is
not on the PATH (a venv that sees gridemu through the system's site-packages)."""

import sys

from gridemu.emulator.cli import main

sys.exit(main())
