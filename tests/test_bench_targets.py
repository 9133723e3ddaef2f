"""bench/protocols.py and bench/many_sites.py: issue 40's targets get their verdicts, and only where they apply."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def protocols():
    return bench_module("protocols")


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


def size(setup: float, loop: float, gather: float, wall: float, rss: float) -> dict:
    return {"cpu": {"setup": setup, "loop": loop, "gather": gather}, "wall": {"total": wall}, "peak_rss_mib": rss}


def test_many_sites_judges_each_phase_per_site_and_the_large_runs():
    many_sites = bench_module("many_sites")
    runs = {
        1_000: size(0.033, 0.100, 0.045, 0.2, 140),
        10_000: size(0.41, 1.71, 0.32, 2.7, 301),
        100_000: size(5.28, 22.1, 4.61, 36.2, 1_940),
    }
    lines = many_sites.verdicts(runs)
    assert lines[0].startswith("[MISS] setup CPU per site within 1.5x") and "1.60x" in lines[0]  # 33 to 53 us
    assert lines[1].startswith("[MISS] loop CPU per site within 1.5x") and "2.21x" in lines[1]  # 100 to 221 us
    assert lines[2].startswith("[PASS] gather CPU per site within 1.5x")  # 32 to 46 us: 1.44x
    assert lines[3].startswith("[PASS] 100,000 sites < 120 s")
    runs[1_000_000] = size(52.2, 64.9, 28.5, 181.1, 13_000)  # 13,000 MiB: over 12 GiB
    assert many_sites.verdicts(runs)[-1].startswith("[MISS] 1,000,000 sites < 600 s and < 12,288 MiB")
    assert many_sites.verdicts({10_000: runs[10_000]}) == []  # one size: no spread to judge


def test_many_sites_judges_the_medians_of_repeated_runs():
    many_sites = bench_module("many_sites")

    def run(loop: float, rss: float) -> dict:
        r = size(0.04, loop, 0.05, 0.3, rss)
        r["wall"].update(setup=0.04, loop=loop, gather=0.05)
        r["cpu"]["total"] = 0.3
        return {"sites": 1_000, "jobs": 14_964, "windows": 240, **r}

    # One slow run of three (another process took the core) does not make the verdict.
    m = many_sites.median_run([run(0.100, 140), run(0.160, 150), run(0.105, 141)])
    assert m["cpu"]["loop"] == 0.105 and m["wall"]["loop"] == 0.105 and m["peak_rss_mib"] == 150
    big = size(0.38, 1.55, 0.33, 2.6, 300)
    lines = many_sites.verdicts({1_000: m, 10_000: big})
    assert lines[1].startswith("[PASS] loop CPU per site within 1.5x") and "1.48x" in lines[1]  # 105 to 155 us
