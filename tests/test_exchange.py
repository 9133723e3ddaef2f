"""Windows the shards run among themselves (emulator/exchange.py): the same windows and the same
job table as the coordinator's window-by-window loop, wherever a chunk of windows ends. The
shards run in threads of this process here (as Ray actors run them), and on Ray."""

from __future__ import annotations

import math
import threading

import pytest

import gridemu.emulator as emulator
from gridemu.emulator import coordinator
from gridemu.emulator.backends import InProcessBackend
from gridemu.emulator.exchange import Stall, run_chunk
from tests.conftest import in_threads, small_grid
from tests.golden import digest


class ThreadedBackend(InProcessBackend):
    """In-process shards that run chunks of windows among themselves, a thread each, posting
    their messages into each other's mailboxes (what the links between Ray shards do)."""

    def run_windows(self, plan, infos, in_min, inboxes):
        n = len(self.shards)
        mail: list[dict] = [{} for _ in range(n)]
        lock = threading.Condition()
        errors: list[BaseException] = []

        def post(k):
            def send(window, info, out, cut):
                with lock:
                    for d in range(n):
                        if d != k:
                            mail[d].setdefault(window, {})[k] = (info, out[d] if d in info.out_min else None, cut)
                    lock.notify_all()

            return send

        def collect(k):
            def take(window):
                with lock:
                    while len(mail[k].get(window, ())) < n - 1:
                        if errors:
                            raise RuntimeError("another shard failed")
                        lock.wait(0.1)
                    return mail[k].pop(window, {})

            return take

        def run(k):
            return lambda: run_chunk(self.shards[k], n, plan, infos, min(in_min), list(inboxes[k]), post(k), collect(k))

        ends = in_threads([run(k) for k in range(n)], errors=errors)
        self.chunks = getattr(self, "chunks", 0) + 1
        return ends


def threaded(monkeypatch, seconds: float) -> None:
    monkeypatch.setitem(coordinator.BACKENDS, "inprocess", ThreadedBackend)
    monkeypatch.setattr(coordinator, "CHUNK_SECONDS", seconds)


CASES = {
    "power_of_d": small_grid("power_of_d", jobs=400, sites=7),
    "averaging": small_grid("averaging", jobs=400, sites=7),
    "gm": small_grid("gm", jobs=300, sites=5, scheduler={"name": "planned"}),
    # Site 2 down for good from t = 20: the run stops when nothing can move (Stall).
    "stuck": small_grid(
        "averaging", jobs=200, sites=3, faults={"crash": [{"site": 2, "at": 20.0, "duration": math.inf}]}
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seconds", [0.0, math.inf])
def test_chunks_give_the_windows_and_jobs_of_the_window_by_window_loop(monkeypatch, case, seconds):
    data = CASES[case]
    shards = 1 if case == "gm" and seconds == 0.0 else 3  # one shard: nobody to exchange with
    whole = emulator.run(data, backend="inprocess", shards=shards)
    threaded(monkeypatch, seconds)
    chunked = emulator.run(data, backend="inprocess", shards=shards)
    assert digest(chunked.jobs) == digest(whole.jobs)
    got, want = chunked.summary["global"], whole.summary["global"]
    assert got["windows"] == want["windows"] and got["events"] == want["events"]
    assert got.get("stalled_at") == want.get("stalled_at")
    if case == "stuck":
        assert want["stalled_at"] > 20.0


def test_a_chunk_ends_where_the_stall_watch_must_ask_and_at_shard_zeros_budget(monkeypatch):
    calls = []
    real = ThreadedBackend.run_windows

    def count(self, plan, *args):
        ends = real(self, plan, *args)
        calls.append((plan.budget, ends[0].windows, ends[0].reason))
        return ends

    monkeypatch.setattr(ThreadedBackend, "run_windows", count)
    threaded(monkeypatch, 0.0)
    r = emulator.run(CASES["stuck"], backend="inprocess", shards=3)
    # Budget 0: shard 0 cuts after every window; every chunk is one window.
    assert {(w, why) for _, w, why in calls} <= {(1, "budget"), (1, "stall"), (1, "end"), (0, "end")}
    assert sum(w for _, w, _ in calls) == r.summary["global"]["windows"]
    assert any(why == "stall" for *_, why in calls)
    calls.clear()
    threaded(monkeypatch, math.inf)
    emulator.run(CASES["stuck"], backend="inprocess", shards=3)
    # No budget: chunks end only where the watch asks (then at the run's end).
    assert all(why in ("stall", "end") for *_, why in calls) and calls[-1][2] == "stall"
    assert len(calls) < r.summary["global"]["windows"] / 5


def test_stall_asks_after_span_without_a_finished_job_and_stops_at_the_second_empty_answer():
    s = Stall(10.0)
    assert not s.due(1.0, 5)  # first barrier: counts
    assert not s.due(5.0, 5)
    assert s.due(11.0, 5)  # 10 of virtual time without a job finished
    assert not s.ask(11.0, 0)  # once: not yet
    assert not s.due(15.0, 5) and s.due(21.0, 5)
    assert s.ask(21.0, 0)  # twice in a row nothing live: stuck
    t = Stall(10.0, done=5, since=0.0, seen=1)
    assert t.due(10.0, 5) and not t.ask(10.0, 3)  # something live: counted from here again
    assert not t.due(12.0, 6) and t.seen == 0  # a job finished: the count starts over


def test_ray_shards_running_chunks_of_one_window_give_the_same_job_table(ray_session, monkeypatch):
    data = CASES["power_of_d"]
    whole = emulator.run(data, backend="inprocess", shards=3)
    monkeypatch.setattr(coordinator, "CHUNK_SECONDS", 0.0)
    r = emulator.run(data, backend="ray", shards=3)
    assert digest(r.jobs) == digest(whole.jobs)
    assert r.summary["global"]["windows"] == whole.summary["global"]["windows"]


def test_a_shard_that_fails_mid_chunk_ends_the_ray_run_with_its_own_error(ray_session, capsys):
    # Site 3 (shard 1 of 2) raises at t = 5 while shard 0 waits for its messages: the shard
    # closes its links, shard 0 stops waiting, and the run stops with that error, no rebuild.
    import signal

    from gridemu.brokers import registry
    from gridemu.model.errors import GridemuError
    from tests import failing_protocol

    data = {
        "run": {"seed": 1, "horizon": 50.0},
        "network": {"latency": 0.5},
        "sites": {"count": 4, "procs": 1},
        "workload": {"kind": "poisson", "rate": 0.2, "alpha": 2.0, "beta": 2.0, "jobs": 40},
        "protocol": {"name": "failing"},
    }

    def hang(*_):
        raise AssertionError("the run did not stop")

    registry.register(failing_protocol.PROTOCOL)
    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(120)
    try:
        for backend in ("inprocess", "ray"):
            with pytest.raises(GridemuError, match="failing: site 3 fails at t=5, as the test asks"):
                emulator.run(data, backend=backend, shards=2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        registry.unregister("failing")
    assert "rebuilding" not in capsys.readouterr().err
