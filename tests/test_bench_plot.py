"""bench/plot_protocols.py: a figure from the benchmark's JSON, one clear line for anything else."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "plot_protocols.py"


def plot(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def row(engine: str, call: float, cpu: float) -> dict:
    return {
        "engine": engine,
        "model": "10000x1M",
        "sites": 10_000,
        "jobs": 1_000_000,
        "messages": 999_890,
        "call_s": call,
        "call_cpu_s": cpu,
        "setup_s": 0.5,
        "loop_s": 0.3,
        "gather_s": 0.6,
    }


def test_a_figure_from_the_benchmark_json(tmp_path):
    data = {
        "environment": {"cpus": 2},
        "rows": [row("heapq", 9.0, 9.0), row("inprocess", 1.7, 1.8), row("ray2", 2.6, 4.3)],
    }
    (tmp_path / "b.json").write_text(json.dumps(data))
    out = tmp_path / "f.png"
    done = plot(str(tmp_path / "b.json"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_file_that_is_not_the_benchmark_json_gets_one_line_and_exit_2(tmp_path):
    (tmp_path / "other.json").write_text("{}")
    for path in (tmp_path / "other.json", tmp_path / "missing.json"):
        done = plot(str(path))
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"plot_protocols.py: {path}: not a bench/protocols.py --json file"
        )
    assert "Traceback" not in done.stderr
