"""The scripts behind docs/results/*.md (``python -m gridemu.experiments.NAME``) answer
``--help`` at once, with exit 0, and write nothing: before, some ran their whole study (up
to minutes, one of them saving its figure over the page's) or died on a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.stem for p in (ROOT / "docs" / "results").glob("*.py") if '__name__ == "__main__"' in p.read_text())


def _files() -> dict[str, tuple[int, int]]:
    return {
        str(p): (p.stat().st_mtime_ns, p.stat().st_size)
        for folder in (ROOT / "docs", ROOT / "scenarios" / "data")
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_every_page_script_is_found():
    assert len(SCRIPTS) >= 25 and {"bilb_tables", "power_of_d_staleness", "migration_props"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_page_script_answers_help_and_writes_nothing(name, tmp_path):
    before = _files()
    out = subprocess.run(
        [sys.executable, "-m", f"gridemu.experiments.{name}", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip(), "no help text"
    assert _files() == before
    assert not list(tmp_path.iterdir())
