"""What one window's exchange costs on Ray, apart from any simulation.

Each of S actors plays a shard: per window it gets the batches the others sent it in the
last window and returns one batch of ``--rows`` message rows (``MSG_DTYPE``, 178 bytes a
row; 130 before the typed payload slots, when docs/benchmarks.md measured it) for every
other shard, and a small status record. Five ways to run that exchange:

* ``tasks``: one actor task per shard and window with ``num_returns`` = shards + 1: one
  object a destination, each handed on as an object reference (through Ray's object store
  once it passes the 100 KiB inline limit); what ``emulator/backends.py: RayBackend`` did
  before it sent one object a shard;
* ``one object``: what ``RayBackend`` did until 2026-11-27: the same tasks, but a shard's
  batches for every destination go back as one tuple (``num_returns=2``), whose reference
  each destination gets and takes its part of;
* ``pipelined``: the same tasks, but each shard also gets every shard's status record of
  the last window (so the shards could agree the next window among themselves) and the
  driver keeps four windows in flight instead of waiting at every barrier;
* ``links``: what ``RayBackend`` does since 2026-11-27: the shards run the windows in one
  call each and send each other a frame a window over their own TCP links
  (``emulator/links.py``), the driver out of the loop;
* ``compiled``: a Ray Compiled Graph (``experimental_compile``) of the same calls; the
  driver gets each window's batches through shared-memory channels and passes them on as
  the next window's input. Compiling is timed apart, as is the first window.

It prints milliseconds per window for each, nothing else: the exit status is 0 whatever
they are. At 10000x1M (bench/protocols.py) a window carries about 6,000 transfers between
two shards; at 1000x100k about 70.

    python bench/ray_exchange.py                       # 2 shards, 70 and 6,000 rows, 200 windows
    python bench/ray_exchange.py --shards 4 --rows 1000,20000 --windows 100
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from gridemu.emulator.backends import ensure_ray
from gridemu.emulator.links import Links
from gridemu.emulator.shard import StepInfo
from gridemu.model.messages import MSG_DTYPE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--rows", default="70,6000", help="rows a shard sends to each other shard per window (comma list)")
    ap.add_argument("--windows", type=int, default=200)
    args = ap.parse_args()
    if args.shards < 2 or args.windows < 1:
        ap.error("--shards must be at least 2 and --windows at least 1")
    ray = ensure_ray(num_cpus=max(2, args.shards))

    @ray.remote(num_cpus=min(1.0, 2 / args.shards))
    class Shard:
        def __init__(self, k: int, n: int, rows: int):
            self.k, self.n, self.out = k, n, np.zeros(rows, dtype=MSG_DTYPE)

        def step(self, until: float, *batches: np.ndarray) -> tuple:
            received = sum(len(b) for b in batches if isinstance(b, np.ndarray))
            return ((until, received), *[self.out if d != self.k else self.out[:0] for d in range(self.n)])

        def step_one(self, until: float, *outputs: tuple) -> tuple:
            received = sum(len(o[self.k]) for o in outputs)
            return (until, received), tuple(self.out if d != self.k else self.out[:0] for d in range(self.n))

        def listen(self, token: bytes) -> tuple:
            self.links = Links(self.k, self.n, token)
            return self.links.address

        def link(self, addresses: list) -> None:
            self.links.connect(addresses)

        def run_links(self, windows: int) -> int:
            info = StepInfo(0.0, 0.0, {d: 0.0 for d in range(self.n) if d != self.k}, 0, 0)
            out = [self.out if d != self.k else None for d in range(self.n)]
            received = 0
            for w in range(windows):
                self.links.post(w, info, out, False)
                received = sum(len(b) for _, b, _ in self.links.collect(w).values())
            return received

        def step_graph(self, inp: tuple) -> tuple:
            until, batches = inp
            return self.step(until, *batches)

    n = args.shards
    print(
        f"{n} shards, {args.windows} windows; ms per window (medians would need repeats: run it again to see the noise)"
    )
    for rows in [int(r) for r in args.rows.split(",")]:
        actors = [Shard.remote(k, n, rows) for k in range(n)]
        ray.get([a.step.remote(0.0) for a in actors])
        inbox: list[list] = [[] for _ in range(n)]
        t0 = time.perf_counter()
        for w in range(args.windows):
            refs = [a.step.options(num_returns=n + 1).remote(float(w), *inbox[k]) for k, a in enumerate(actors)]
            ray.get([r[0] for r in refs])
            inbox = [[refs[s][1 + d] for s in range(n) if s != d] for d in range(n)]
        tasks_ms = (time.perf_counter() - t0) / args.windows * 1e3

        inbox = [[] for _ in range(n)]
        t0 = time.perf_counter()
        for w in range(args.windows):
            refs = [a.step_one.options(num_returns=2).remote(float(w), *inbox[k]) for k, a in enumerate(actors)]
            got = ray.get([r[0] for r in refs])
            inbox = [[refs[s][1] for s in range(n) if s != d] for d in range(n)]
        one_ms = (time.perf_counter() - t0) / args.windows * 1e3
        assert got[0][1] == (rows * (n - 1) if args.windows > 1 else 0)

        piped_ms = _pipelined_ms(ray, actors, args.windows)

        links_ms = _links_ms(ray, actors, args.windows, rows * (n - 1))

        graph_ms, compile_s, first_ms = _compiled_ms(ray, actors, args.windows, rows * (n - 1))
        for a in actors:
            ray.kill(a)
        print(
            f"  {rows:>9,} rows ({rows * MSG_DTYPE.itemsize / 1024:,.0f} KiB) to each other shard: tasks, one object a "
            f"destination {tasks_ms:.2f} ms; one object a shard {one_ms:.2f} ms; pipelined {piped_ms:.2f} ms; links "
            f"{links_ms:.2f} ms; compiled graph {graph_ms:.2f} ms (compiling {compile_s:.2f} s, first window "
            f"{first_ms:.0f} ms)"
        )


def _pipelined_ms(ray, actors: list, windows: int) -> float:
    """Milliseconds a window when every shard gets every shard's status of the last window with
    its batches (so the shards could agree the window themselves) and the driver keeps four
    windows in flight."""
    n = len(actors)
    t0 = time.perf_counter()
    infos = [None] * n
    inbox = [[] for _ in range(n)]
    lag = []
    for w in range(windows):
        refs = [a.step.options(num_returns=n + 1).remote(float(w), *infos, *inbox[k]) for k, a in enumerate(actors)]
        infos = [r[0] for r in refs]
        inbox = [[refs[s][1 + d] for s in range(n) if s != d] for d in range(n)]
        lag.append(infos)
        if len(lag) > 4:
            ray.get(lag.pop(0))
    ray.get([r for w in lag for r in w])
    return (time.perf_counter() - t0) / windows * 1e3


def _compiled_ms(ray, actors: list, windows: int, expect: int) -> tuple[float, float, float]:
    """Milliseconds a window through a Ray Compiled Graph, seconds compiling, ms of the first window."""
    from ray.dag import InputNode, MultiOutputNode

    n = len(actors)
    t0 = time.perf_counter()
    with InputNode() as inp:
        dag = MultiOutputNode([a.step_graph.bind(inp[k]) for k, a in enumerate(actors)])
    graph = dag.experimental_compile()
    compile_s = time.perf_counter() - t0
    try:
        empty = np.zeros(0, dtype=MSG_DTYPE)
        batches = [[empty] for _ in range(n)]
        t0 = time.perf_counter()
        outs = ray.get(graph.execute(*[(0.0, b) for b in batches]))
        first_ms = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        for w in range(windows):
            batches = [[outs[s][1 + d] for s in range(n) if s != d] for d in range(n)]
            outs = ray.get(graph.execute(*[(float(w), b) for b in batches]))
        graph_ms = (time.perf_counter() - t0) / windows * 1e3
        assert outs[0][0][1] == expect
    finally:
        graph.teardown()
    return graph_ms, compile_s, first_ms


def _links_ms(ray, actors: list, windows: int, expect: int) -> float:
    """Milliseconds a window over the shards' own links, the windows in one call a shard."""
    token = os.urandom(32)
    addresses = ray.get([a.listen.remote(token) for a in actors])
    ray.get([a.link.remote(addresses) for a in actors])
    t0 = time.perf_counter()
    got = ray.get([a.run_links.remote(windows) for a in actors])
    ms = (time.perf_counter() - t0) / windows * 1e3
    assert got[0] == expect
    return ms


if __name__ == "__main__":
    main()
