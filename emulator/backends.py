"""Backends run the same :class:`~emulator.shard.Shard` code: as plain objects, or as Ray actors.

The coordinator talks to a backend in three kinds of call: ``status()`` once, then the
windows, then ``results()`` at the end. In-process, it calls ``step()`` once a window, one
call per shard, and hands each shard the rows the others sent it. Ray shards run the
windows among themselves (``run_windows()``, a chunk of windows a call; the rule is in
:mod:`gridemu.emulator.exchange`): after each window a shard sends every other one its
StepInfo and its batch over a TCP link of their own (:mod:`gridemu.emulator.links`), so
neither a window's batches nor a Ray call a window go through the driver. Results come
back column by column (``_ShardActor.results``).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import signal
import socket
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Iterator

from gridemu.emulator.exchange import ChunkEnd, ChunkPlan, run_chunk
from gridemu.emulator.links import Links, PeerLost
from gridemu.emulator.plugins import by_value, dump_shard, load_shard, protocol_of
from gridemu.emulator.shard import Shard, ShardSpec, StepInfo, draw_jobs, numbered, with_drawn_jobs
from gridemu.model.errors import GridemuError, first_line
from gridemu.model.jobs import release_keys
from gridemu.model.messages import PackedRows, to_batch


class ShardLost(GridemuError):
    """A shard's actor died (its process was killed, its node lost)."""


class InProcessBackend:
    name = "inprocess"

    def __init__(self, specs: list[ShardSpec], states: list[bytes] | None = None):
        # Shards in one process hand each other rows, not arrays (nothing is serialized).
        self.protocol = protocol_of(specs[0])
        if states is not None:
            self.shards = [load_shard(b, self.protocol) for b in states]
        else:
            self.shards = [Shard(dataclasses.replace(s, columnar=False)) for s in with_drawn_jobs(specs)]

    def snapshot(self) -> list[bytes]:
        return [dump_shard(s, self.protocol) for s in self.shards]

    def materialize(self, inboxes: list[list[Any]]) -> list[list[Any]]:
        return inboxes  # rows already: nothing refers to another process

    def status(self) -> list[StepInfo]:
        return [s.status() for s in self.shards]

    def step(
        self, until: float, inboxes: list[list[Any]], span: float = -math.inf
    ) -> tuple[list[StepInfo], list[list[Any]]]:
        infos, outs = [], []
        for shard, inbox in zip(self.shards, inboxes):
            info, *out = shard.step(until, *inbox, span=span)
            infos.append(info)
            outs.append(out)
        return infos, outs

    def results(self, horizon: float) -> list[dict[str, Any]]:
        return [s.results(horizon) for s in self.shards]

    def close(self) -> None:
        for shard in self.shards:
            shard.close()
        self.shards = []


#: The parts of a shard's results that are columns (name -> array): a Ray shard sends each
#: column as an object of its own (``_ShardActor.results``).
STREAMED = ("jobs", "usage")


class _ShardActor:
    """Ray actor body: a Shard built inside the actor process (where it draws its own jobs:
    once ``draw`` and ``build`` are called)."""

    def __init__(self, spec: ShardSpec, state: bytes | None = None):
        # The actor lives for one run and its shard makes no reference cycles: no cyclic
        # collection walking the job columns at every window (see coordinator._pause_collector).
        gc.disable()
        self.spec, self.drawn = spec, None
        if state is not None:
            self.shard = load_shard(state, protocol_of(spec))
        elif spec.jobs is not None:
            self.shard = Shard(spec)

    def draw(self) -> Any:
        self.drawn = draw_jobs(self.spec)
        return release_keys(self.drawn)

    def build(self, *keys: Any) -> None:
        self.shard = Shard(numbered(self.spec, self.drawn, list(keys)))
        self.drawn = None

    def snapshot(self) -> bytes:
        return dump_shard(self.shard, protocol_of(self.spec))

    def status(self) -> StepInfo:
        return self.shard.status()

    def listen(self, token: bytes) -> tuple[str, int]:
        """Open this shard's links to the others (:mod:`gridemu.emulator.links`): first a
        socket they connect to, whose address goes back; then :meth:`link`."""
        self.links = Links(self.spec.shard_id, self.spec.n_shards, token)
        return self.links.address

    def link(self, addresses: list[tuple[str, int]]) -> None:
        self.links.connect(addresses)

    def run_windows(self, plan: ChunkPlan, infos: list[StepInfo], in_min: float, *inbox: Any) -> ChunkEnd:
        """A chunk of windows run with the other shards, the driver out of the exchange
        (:mod:`gridemu.emulator.exchange`), the messages over the links."""
        links = self.links
        try:
            return run_chunk(self.shard, links.n, plan, infos, in_min, list(inbox), links.post, links.collect)
        except BaseException:
            links.close()  # the others wait for this shard's messages: a closed link ends their wait
            raise

    def results(self, horizon: float) -> Iterator[Any]:
        """The shard's results in pieces: first what is small, with the names of the columns,
        then each job and usage column on its own. A generator: Ray stores each piece in the
        object store as it is yielded (owned by the caller), and the column is dropped here
        at once, so the actor never holds its columns and their copy in the store together
        (10000x10M, 2 shards: that was the run's peak)."""
        out = self.shard.results(horizon)
        self.shard = None  # the last call: what the shard still holds goes first
        columns = [(part, name) for part in STREAMED for name in out[part]]
        parts = {part: out.pop(part) for part in STREAMED}
        yield out, columns
        for part, name in columns:
            yield parts[part].pop(name)


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Start a local Ray instance (the embedded default) or join ``address``; reuse one already up.

    Workers import gridemu as the driver does, so on a cluster every node needs it
    installed (``pip install gridemu`` or the same checkout with ``pip install -e``).
    """
    import ray

    if ray.is_initialized():
        if address not in (None, "auto"):
            current = ray.get_runtime_context().gcs_address
            if address.split("://", 1)[-1] != current:
                raise GridemuError(
                    f"--address: this process is already connected to the Ray cluster at {current}, not {address!r}"
                )
        return ray
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": False}
    caller = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    if address:
        address, how = resolve_address(address)
        _check_reachable(address)
        try:
            with warnings.catch_warnings():
                # Ray also warns about a failed client connection; the error below says it once.
                warnings.simplefilter("ignore")
                ray.init(address=address, **kwargs)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError or its own types
            raise GridemuError(
                f"--address: cannot reach a Ray cluster at {address!r}: {first_line(exc)} "
                "(start one with `ray start --head`, or leave --address out for a local instance)"
            ) from None
        print(f"gridemu: joined the Ray cluster at {address} ({how})", file=sys.stderr)
    else:
        # "local" starts a private instance even when a cluster from `ray start` runs here.
        _start_reaper(ray)
        try:
            try:
                ray.init(address="local", num_cpus=num_cpus, **kwargs)
            except SystemExit as exc:
                _sigterm_in_init(ray, caller, exc)
                # The caller held the signal (a run with --checkpoint stops after checkpoint
                # zero, which needs the shards): start again; a second SIGTERM stops at once.
                ray.init(address="local", num_cpus=num_cpus, **kwargs)
        except SystemExit as exc:
            _sigterm_in_init(ray, caller, exc)
            raise
        except Exception as exc:  # e.g. "node timed out during startup" on a loaded machine
            _restore_sigterm(caller)
            first = first_line(exc, type(exc).__name__)
            raise GridemuError(
                f"cannot start a local Ray instance ({type(exc).__name__}: {first}); try again when the machine is "
                "less loaded, or run without Ray: --backend inprocess"
            ) from None
    _restore_sigterm(caller)
    _quiet_ray_errors(ray)
    return ray


def _quiet_ray_errors(ray: Any) -> None:
    """No Ray error lines in gridemu's output: the driver's listener prints every error the
    cluster publishes ("(raylet) A worker died ...", a dead raylet's 40 lines of
    ``[state-dump]``) to standard output, where result tables go, and with no regard to
    gridemu's own lines. gridemu says what matters itself: a lost shard is one warning with
    Ray's reason. (``log_to_driver=False`` already keeps the workers' output away; this is
    the switch Ray's own debugger uses to silence the rest.)"""
    if hasattr(ray._private.worker, "_worker_logs_enabled"):
        ray._private.worker._worker_logs_enabled = False


def _sigterm_in_init(ray: Any, caller: Any, exc: SystemExit) -> None:
    """SIGTERM while ray.init ran: Ray's own handler, installed there, exits with code 15 and
    no word. The instance half started is shut down, and the caller's handler gets the signal
    (the CLI: one line, exit 143). A handler that holds it (``checkpoint.StopAtBarrier``:
    stop after checkpoint zero) returns, and so does this: the caller starts Ray again. With
    no handler of the caller's, Ray's exit goes on."""
    if exc.code != signal.SIGTERM:
        raise exc
    try:
        ray.shutdown()
    except Exception:  # what ray.init had not started yet cannot be stopped: nothing to do
        pass
    _restore_sigterm(caller)
    if not callable(caller):
        raise exc
    caller(signal.SIGTERM, None)  # raises unless it holds the signal


def _start_reaper(ray: Any) -> None:
    """Start emulator/reaper.py (once) before this process starts a local Ray instance: once
    this process exits, however (``kill -9`` too), it kills what the instance left behind.
    Its pipe's write end stays open here (not inherited by other children) for this process's
    lifetime; a session of its own keeps a terminal's Ctrl-C away from it."""
    if not sys.platform.startswith("linux") or _REAPER_PIPES:
        return
    read, write = os.pipe()
    null = os.devnull
    reaper = str(Path(__file__).with_name("reaper.py"))
    try:
        os.posix_spawn(
            sys.executable,
            [sys.executable, "-I", reaper, str(os.getpid()), str(Path(ray.__file__).parent)],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read, 0),
                (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0),
            ],
            setsid=True,
        )
    except OSError:  # no reaper: a driver killed with -9 may leave Ray's agents running (docs/reliability.md)
        os.close(write)
    else:
        _REAPER_PIPES.append(write)
    finally:
        os.close(read)


#: Write ends of the reapers' pipes: open while this process lives.
_REAPER_PIPES: list[int] = []


def _restore_sigterm(handler: Any) -> None:
    """Give SIGTERM back to the caller's handler: ray.init installs its own (a bare exit, and
    a C++ stack dump), which would skip closing the shards and gridemu's one-line message."""
    if handler is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def resolve_address(address: str) -> tuple[str, str]:
    """The cluster ``--address`` names, and how it was found. ``auto`` is the cluster that
    ``RAY_ADDRESS`` names, else the one the last ``ray start`` on this machine recorded in
    Ray's address file (``/tmp/ray/ray_current_cluster``, removed by ``ray stop``); never, as
    Ray's own ``auto`` would, any Ray instance it finds running here (another gridemu run's
    private instance is one)."""
    if address != "auto":
        return address, "given"
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env and env != "auto":
        return env, "RAY_ADDRESS"
    from ray._private.utils import get_ray_address_file

    path = Path(get_ray_address_file(None))
    recorded = path.read_text().strip() if path.is_file() else ""
    if not recorded:
        raise GridemuError(
            f"--address auto: no Ray cluster started with `ray start --head` on this machine ({path} is missing; "
            "RAY_ADDRESS is not set): start one with `ray start --head`, or leave --address out for a local instance"
        )
    return recorded, f"started with `ray start`, recorded in {path}"


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast on a host:port nobody listens on (Ray itself retries for minutes)."""
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not (port.isascii() and port.isdigit()):
        raise GridemuError(f"--address: expected auto, host:port or ray://host:port, got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise GridemuError(
            f"--address: cannot reach a Ray cluster at {address!r}: {exc.strerror or exc} "
            "(start one with `ray start --head`, or leave --address out for a local instance)"
        ) from None


def ray_cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class RayBackend:
    name = "ray"

    def __init__(self, specs: list[ShardSpec], states: list[bytes] | None = None):
        import ray

        self.ray = ray
        n = len(specs)
        # Shards share the CPUs when there are more shards than CPUs.
        cpus = min(1.0, ray_cpus() / n)
        actor = ray.remote(num_cpus=cpus, scheduling_strategy="SPREAD")(_ShardActor)
        states = states or [None] * n
        self.actors = []
        try:
            with by_value(specs[0].plugin):  # a protocol registered at run time travels as code
                self.actors = [
                    actor.remote(ray.put(spec), ray.put(state) if state else None) for spec, state in zip(specs, states)
                ]
            if states[0] is None and specs[0].jobs is None:
                # Each shard draws its sites' jobs; their release keys go from actor to actor.
                keys = [a.draw.remote() for a in self.actors]
                self._get([a.build.remote(*keys) for a in self.actors])
            # The shards' links to each other, behind a token of this run (emulator/links.py).
            token = os.urandom(32)
            addresses = self._get([a.listen.remote(token) for a in self.actors])
            self._get([a.link.remote(addresses) for a in self.actors])
        except BaseException:  # a shard lost while drawing (rebuilt by the caller), a signal: no actor left behind
            self.close()
            raise

    def _get(self, refs: list[Any]) -> list[Any]:
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, GridemuError):  # bad input found in a shard: the same line as in one process
                raise exc.cause from None
            raise
        except self.ray.exceptions.RayActorError as exc:
            if getattr(exc, "actor_init_failed", False):
                # Building the shard raised (an import or a bug): a rebuild would raise again.
                lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
                raise GridemuError(
                    f"a shard actor could not be built: {lines[-1] if lines else type(exc).__name__}"
                ) from None
            first = first_line(exc)
            raise ShardLost(f"a shard actor died ({type(exc).__name__}: {first})") from None

    def status(self) -> list[StepInfo]:
        return self._get([a.status.remote() for a in self.actors])

    def run_windows(
        self, plan: ChunkPlan, infos: list[StepInfo], in_min: list[float], inboxes: list[list[Any]]
    ) -> list[ChunkEnd]:
        """A chunk of windows, the shards exchanging their batches and infos among themselves
        (:mod:`gridemu.emulator.exchange`)."""
        first = min(in_min)
        refs = [a.run_windows.remote(plan, infos, first, *inbox) for a, inbox in zip(self.actors, inboxes)]
        # A shard that raises closes its links, and one that dies has them closed by its end:
        # the others stop waiting for it with PeerLost. Its own error (or its death, which Ray
        # reports even where no link closes: a node cut off) is raised as soon as it is seen;
        # the shards still waiting go when the caller closes the backend.
        lost: list[PeerLost] = []
        ends: dict[Any, ChunkEnd] = {}
        pending = refs
        while pending:  # in steps, so that a signal's handler runs while the shards work
            ready, pending = self.ray.wait(pending, num_returns=len(pending), timeout=1.0)
            for ref in ready:
                try:
                    ends[ref] = self._get([ref])[0]
                except PeerLost as exc:
                    lost.append(exc)
        if lost:
            raise ShardLost(f"a shard's link to the others broke ({lost[0]})")
        return [ends[ref] for ref in refs]

    def snapshot(self) -> list[bytes]:
        return self._get([a.snapshot.remote() for a in self.actors])

    def materialize(self, inboxes: list[list[Any]]) -> list[list[Any]]:
        """The next window's batches as a checkpoint stores them: packed rows made arrays (a
        checkpoint holds arrays, which either backend resumes from)."""
        return [[to_batch(b) if isinstance(b, PackedRows) else b for b in inbox] for inbox in inboxes]

    def results(self, horizon: float) -> list[dict[str, Any]]:
        pieces = [a.results.remote(horizon) for a in self.actors]  # the shards run in parallel
        heads = [self._get([next(piece)])[0] for piece in pieces]
        refs = [[next(piece) for _ in columns] for piece, (_, columns) in zip(pieces, heads)]
        values = iter(self._get([ref for shard in refs for ref in shard]))  # one call: few round trips
        out = []
        for head, columns in heads:
            head.update({part: {} for part in STREAMED})
            for part, name in columns:
                head[part][name] = next(values)
            out.append(head)
        return out

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)
        self.actors = []


BACKENDS = {"inprocess": InProcessBackend, "ray": RayBackend}
