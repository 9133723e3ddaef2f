"""bench/protocols.py: issue 40's Ray targets get a verdict only where they apply."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def protocols():
    sys.path.insert(0, str(BENCH))
    try:
        import protocols
    finally:
        sys.path.remove(str(BENCH))
    return protocols


def row(engine: str, model: str, call: float, cpu: float) -> dict:
    return {"engine": engine, "model": model, "label": engine, "call_s": call, "wall_s": call, "call_cpu_s": cpu}


def verdicts(protocols, rows: list[dict]) -> dict[str, str | None]:
    return {r["ratio"]: r["verdict"] for r in protocols.ratios(rows)}


def test_two_shards_on_pod10000_are_judged_against_issue_40s_targets(protocols, monkeypatch):
    monkeypatch.setattr(protocols.os, "cpu_count", lambda: 2)
    fast = verdicts(protocols, [row("inprocess", "pod10000", 25.5, 25.8), row("ray2", "pod10000", 15.2, 28.6)])
    assert fast["pod10000: ray 2 shards faster than in-process, whole call (issue 40)"] == "PASS"
    assert fast["pod10000: ray 2 shards' call CPU (every process) / in-process call CPU (issue 40)"] == "PASS"
    slow = verdicts(protocols, [row("inprocess", "pod10000", 25.5, 25.8), row("ray2", "pod10000", 18.0, 40.0)])
    assert slow["pod10000: ray 2 shards faster than in-process, whole call (issue 40)"] == "MISS"  # 1.42x < 1.5x
    assert slow["pod10000: ray 2 shards' call CPU (every process) / in-process call CPU (issue 40)"] == "MISS"


def test_sixteen_shards_get_no_verdict_on_a_machine_with_fewer_cores(protocols, monkeypatch):
    rows = [row("inprocess", "neighbors10000", 11.4, 11.5), row("ray16", "neighbors10000", 3.5, 40.0)]
    key = "neighbors10000: ray 16 shards faster than in-process, whole call (issue 40)"
    monkeypatch.setattr(protocols.os, "cpu_count", lambda: 2)
    assert verdicts(protocols, rows)[key] is None
    monkeypatch.setattr(protocols.os, "cpu_count", lambda: 16)
    assert verdicts(protocols, rows)[key] == "MISS"  # 3.26x < 8x


def test_issue_13s_withdrawn_target_is_shown_without_a_verdict(protocols):
    rows = [row("inprocess", "10000x1M", 1.7, 1.8), row("ray2", "10000x1M", 2.6, 4.3)]
    got = verdicts(protocols, rows)
    assert got["10000x1M: ray 2 shards faster than in-process, whole call (issue 13, withdrawn)"] is None
