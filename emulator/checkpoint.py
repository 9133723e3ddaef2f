"""Checkpoints at window barriers: every shard's state, the messages between shards, and
the coordinator's counters, enough to go on from that barrier as if nothing had happened.

A barrier is a consistent cut: no shard is inside a window and every message sent so far
is either delivered or in an inbox for the next window. A checkpoint is kept in memory (a
lost Ray shard rebuilds every shard from it and replays the windows since; each shard is
deterministic given its inputs, so the job table is the same; shards travel there as Ray
and pickle serialize them, in memory only) and, with ``--checkpoint SECONDS``, written to
``OUT/checkpoint.gridemu`` (atomically) for ``gridemu resume OUT``. The results, once
written, replace the folder and the checkpoint with it.

The file holds no pickle, so a run folder from anyone can be resumed without running code
of theirs: one header line (JSON: magic, format, the payload's byte count and SHA-256),
then the payload, an ``.npz`` (read with ``allow_pickle=False``) of numpy arrays and of the
object graph as plain JSON nodes (emulator/plain.py: classes named only among gridemu's
own and the run's protocol's, built field by field). A foreign, truncated, changed or
older file is one error line. The checksum finds damage; it is no signature.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import sys
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gridemu.brokers import registry
from gridemu.brokers.protocol import Protocol
from gridemu.emulator import plain
from gridemu.emulator.plugins import (
    _own_classes,
    _own_modules,
    dump_shard,
    load_shard,
    require_registered,
    unsaved_state,
)
from gridemu.emulator.results import marked
from gridemu.emulator.shard import StepInfo
from gridemu.model.errors import GridemuError, ScenarioError

FILE = "checkpoint.gridemu"
#: What an older gridemu wrote (a pickle): never read, it could run code.
OLD_FILE = "checkpoint.pkl"
# 2: shards keep the jobs they drew and report them in status; 3: sites hold received messages
# in an inbox, not their heap; 4: typed payload slots in message rows; 5: a shard holds its
# sites behind an engine; 6: no pickle: a header line with the payload's SHA-256, then an
# .npz of the arrays and the plain-data node table (emulator/plain.py); 7: a site's faults keep
# its outages (outages.parquet), which a state of format 6 lacks.
FORMAT = 7
MAGIC = "gridemu-checkpoint"
#: The header line is read before anything else; a longer first line is no checkpoint's.
HEADER_MAX = 1024


def check_every(seconds: float | None) -> None:
    """``--checkpoint SECONDS`` of run and validate: none, or a number of seconds >= 0."""
    if seconds is not None and not seconds >= 0:
        raise ScenarioError("--checkpoint", f"must be a number of seconds >= 0, got {seconds}")


@dataclass
class Checkpoint:
    """The coordinator's state at a barrier (``shards`` None: as built, before the first window)."""

    windows: int
    infos: list[StepInfo]
    inboxes: list[list[Any]]  # per destination shard: batches (arrays or rows) for the next window
    in_min: list[float]
    shards: list[bytes] | None


def _protocol(data: dict[str, Any]) -> Protocol:
    return registry.get(data["protocol"]["name"])


def _named(protocol: Protocol) -> dict[str, type]:
    """Role name -> class for a protocol that is not shipped: a checkpoint names its agent
    and keys' classes by role, never by the user's module (emulator/plugins.py)."""
    return {} if registry.is_shipped(protocol) else _own_classes(protocol)


def save(
    path: Path, checkpoint: Checkpoint, data: dict[str, Any], source: str | None, backend: str, n_shards: int
) -> None:
    """Write the checkpoint and what a resume needs (the validated scenario) all or nothing.
    The shards' in-memory states (Ray's and the rebuilds' own serialization) are opened
    here and written as plain data."""
    protocol = _protocol(data)
    named = _named(protocol)
    enc = plain.Encoder({cls: role for role, cls in named.items()})
    meta = {
        "scenario": data,
        "source": source,
        "backend": backend,
        "shards": n_shards,
        "windows": checkpoint.windows,
        "infos": checkpoint.infos,
        "inboxes": checkpoint.inboxes,
        "in_min": checkpoint.in_min,
    }
    roots = {"meta": enc.value(meta), "shards": None}
    if checkpoint.shards is not None:
        roots["shards"] = []
        for state in checkpoint.shards:
            shard = load_shard(state, protocol)
            try:
                roots["shards"].append(enc.value(shard))
            except plain.PlainError as exc:
                raise unsaved_state(protocol, exc) from None
            # Its sites and agents refer to each other, and a run pauses the cyclic collector
            # (coordinator.py): unbroken, every checkpoint's copy of the shards stayed until
            # the run's end (quickstart, 400,000 jobs on Ray, one every 2 s: +77 MiB each).
            shard.close()
    graph = json.dumps({"roots": roots, "nodes": enc.nodes}, separators=(",", ":"), allow_nan=False)
    buf = io.BytesIO()
    np.savez(buf, graph=np.frombuffer(graph.encode(), dtype=np.uint8), **enc.arrays, allow_pickle=False)
    payload = buf.getvalue()
    header = {"magic": MAGIC, "format": FORMAT, "sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload)}
    tmp = path.with_name(f".{path.name}.partial")
    try:
        with tmp.open("wb") as fh:
            fh.write(json.dumps(header).encode() + b"\n")
            fh.write(payload)
        os.replace(tmp, path)
    except BaseException:  # a signal while writing: the previous checkpoint stays whole
        tmp.unlink(missing_ok=True)
        raise


def load(folder: Path) -> dict[str, Any]:
    """What :func:`save` wrote in ``folder``; one clear error when there is none, or it is
    foreign, truncated, changed or of another version. Nothing in it is run: see
    emulator/plain.py."""
    path = Path(folder) / FILE
    if not Path(folder).exists():
        raise GridemuError(f"resume: {folder}: no such folder")
    if not path.is_file() or path.is_symlink():
        if (Path(folder) / OLD_FILE).exists():
            raise GridemuError(
                f"resume: {folder} holds a checkpoint of an older gridemu ({OLD_FILE}, a pickle): it is never "
                "read (unpickling runs code); run again"
            )
        if marked(Path(folder)) == "sweep":
            raise GridemuError(f"resume: {folder} is a sweep folder: a sweep is not resumed, sweep again")
        raise GridemuError(f"resume: {folder} holds no checkpoint ({FILE}): run with --checkpoint SECONDS to leave one")
    try:
        with path.open("rb") as fh:
            first = fh.readline(HEADER_MAX)
            header = _header(path, first)
            size = os.fstat(fh.fileno()).st_size - len(first)
            if header.get("bytes") != size:  # checked before reading: a foreign file may be huge
                raise GridemuError(
                    f"resume: {path} is truncated or damaged ({size} bytes after its header, "
                    f"{header.get('bytes')!r} written)"
                )
            payload = fh.read()
    except OSError as exc:
        raise GridemuError(f"resume: cannot read {path}: {exc.strerror or exc}") from None
    if header.get("sha256") != hashlib.sha256(payload).hexdigest():
        raise GridemuError(f"resume: {path} is damaged or was changed: its checksum does not match")
    try:
        return _decode(payload)
    except GridemuError:
        raise
    except (plain.PlainError, ValueError, KeyError, TypeError, OSError, zipfile.BadZipFile, RecursionError) as exc:
        raise GridemuError(f"resume: {path} is not a checkpoint this gridemu can read ({exc})") from None


def _header(path: Path, first: bytes) -> dict[str, Any]:
    """The header line of a checkpoint file: its magic and format checked."""
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("magic") != MAGIC:
        raise GridemuError(f"resume: {path} is not a gridemu checkpoint")
    if header.get("format") != FORMAT:
        raise GridemuError(
            f"resume: {path} is a checkpoint of format {header.get('format')!r}, this gridemu reads {FORMAT}"
        )
    return header


def _decode(payload: bytes) -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        # np.savez stores, never compresses: a compressed member could unpack to any size.
        if any(info.compress_type != zipfile.ZIP_STORED for info in zf.infolist()):
            raise plain.PlainError("a compressed member: not what gridemu writes")
    with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    graph = json.loads(arrays.pop("graph").tobytes())
    if not isinstance(graph, dict) or not isinstance(graph.get("roots"), dict):
        raise plain.PlainError("no roots")
    roots = graph["roots"]
    meta = plain.Decoder(graph.get("nodes"), arrays).value(roots.get("meta"))
    if not isinstance(meta, dict) or not isinstance(meta.get("scenario"), dict):
        raise plain.PlainError("no scenario")
    n = meta.get("shards")
    if not (
        type(n) is int
        and n >= 1
        and type(meta.get("windows")) is int
        and meta.get("backend") in ("inprocess", "ray")
        and (meta.get("source") is None or isinstance(meta["source"], str))
        and isinstance(meta.get("infos"), list)
        and len(meta["infos"]) == n
        and all(isinstance(i, StepInfo) for i in meta["infos"])
        and isinstance(meta.get("inboxes"), list)
        and len(meta["inboxes"]) == n
        and all(isinstance(b, list) for b in meta["inboxes"])
        and isinstance(meta.get("in_min"), list)
        and len(meta["in_min"]) == n
        and all(type(t) is float for t in meta["in_min"])
    ):
        raise plain.PlainError("the coordinator's counters are not a checkpoint's")
    protocol_table = meta["scenario"].get("protocol")
    name = protocol_table.get("name") if isinstance(protocol_table, dict) else None
    if not isinstance(name, str):
        raise plain.PlainError("the scenario names no protocol")
    require_registered(name, "resume")
    protocol = registry.get(name)
    named = _named(protocol)
    # The shards' nodes are read knowing the protocol: its classes by role, its own modules.
    decoder = plain.Decoder(graph["nodes"], arrays, named, tuple(_own_modules(protocol)) if named else ())
    shards = roots.get("shards")
    states = None
    if shards is not None:
        if not isinstance(shards, list) or len(shards) != meta["shards"]:
            raise plain.PlainError("the shards do not match their count")
        states = [dump_shard(decoder.value(s), protocol) for s in shards]
    checkpoint = Checkpoint(meta["windows"], meta["infos"], meta["inboxes"], meta["in_min"], states)
    return {
        "format": FORMAT,
        "scenario": meta["scenario"],
        "source": meta["source"],
        "backend": meta["backend"],
        "shards": meta["shards"],
        "checkpoint": checkpoint,
    }


class StopAtBarrier:
    """While a run writes checkpoints, SIGINT and SIGTERM stop it at the next barrier, after
    one last checkpoint there, instead of in the middle of a window: ``pending`` holds the
    signal until the coordinator has saved, then :meth:`resume_signal` delivers it to the
    handlers that were there before (Ctrl-C's KeyboardInterrupt, the CLI's SIGTERM). A
    second signal stops at once, as without checkpoints. Outside the main thread (or with
    no checkpoint file) nothing changes, nor for a signal the process ignores (a background
    job of a shell without job control, nohup: SIGINT): held, it would be given back to
    SIG_IGN, and the run that said it was stopping would go on."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, active: bool):
        self.pending: int | None = None
        self.previous: dict[int, Any] = {}
        if active and threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self.previous[sig] = signal.signal(sig, self._hold)

    def _hold(self, signum: int, frame: Any) -> None:
        if self.pending is not None:  # the second one: stop now
            self.restore()
            signal.raise_signal(signum)
            return
        self.pending = signum
        print(
            "gridemu: stopping at the next barrier, after a checkpoint (again to stop now)", file=sys.stderr, flush=True
        )

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous = {}

    def resume_signal(self) -> None:
        """Give the held signal to the handlers that were there before (they raise)."""
        self.restore()
        if self.pending is not None:
            signal.raise_signal(self.pending)
