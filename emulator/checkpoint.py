"""Checkpoints at window barriers: every shard's state, the messages between shards, and
the coordinator's counters, enough to go on from that barrier as if nothing had happened.

A barrier is a consistent cut: no shard is inside a window and every message sent so far
is either delivered or in an inbox for the next window. Shards are plain objects whose
state pickles (sites, queues, agents, random streams), so a checkpoint is one pickle per
shard plus the inboxes. A checkpoint is kept in memory (a lost Ray shard rebuilds every
shard from it and replays the windows since; each shard is deterministic given its inputs,
so the job table is the same) and, with ``--checkpoint SECONDS``, written to
``OUT/checkpoint.pkl`` (atomically) for ``gridemu resume OUT``. The results, once written,
replace the folder and the checkpoint with it.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridemu.emulator.shard import StepInfo
from gridemu.model.errors import GridemuError

FILE = "checkpoint.pkl"
# 2: shards keep the jobs they drew and report them in status; 3: sites hold received messages
# in an inbox, not their heap; 4: typed payload slots in message rows; 5: a shard holds its
# sites behind an engine.
FORMAT = 5


@dataclass
class Checkpoint:
    """The coordinator's state at a barrier (``shards`` None: as built, before the first window)."""

    windows: int
    infos: list[StepInfo]
    inboxes: list[list[Any]]  # per destination shard: batches (arrays or rows) for the next window
    in_min: list[float]
    shards: list[bytes] | None


def save(
    path: Path, checkpoint: Checkpoint, data: dict[str, Any], source: str | None, backend: str, n_shards: int
) -> None:
    """Write the checkpoint and what a resume needs (the validated scenario) all or nothing."""
    tmp = path.with_name(f".{path.name}.partial")
    try:
        with tmp.open("wb") as fh:
            pickle.dump(
                {
                    "format": FORMAT,
                    "scenario": data,
                    "source": source,
                    "backend": backend,
                    "shards": n_shards,
                    "checkpoint": checkpoint,
                },
                fh,
                protocol=pickle.HIGHEST_PROTOCOL,
            )
        os.replace(tmp, path)
    except BaseException:  # a signal while writing: the previous checkpoint stays whole
        tmp.unlink(missing_ok=True)
        raise


def load(folder: Path) -> dict[str, Any]:
    """What :func:`save` wrote in ``folder``; one clear error when there is none or it is damaged."""
    path = Path(folder) / FILE
    if not Path(folder).exists():
        raise GridemuError(f"resume: {folder}: no such folder")
    if not path.is_file():
        raise GridemuError(f"resume: {folder} holds no checkpoint ({FILE}): run with --checkpoint SECONDS to leave one")
    try:
        with path.open("rb") as fh:
            state = pickle.load(fh)
    except Exception as exc:  # truncated or foreign file: pickle raises many kinds
        raise GridemuError(f"resume: {path} is damaged ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise GridemuError(f"resume: {path} is not a gridemu checkpoint of this version")
    return state


class StopAtBarrier:
    """While a run writes checkpoints, SIGINT and SIGTERM stop it at the next barrier, after
    one last checkpoint there, instead of in the middle of a window: ``pending`` holds the
    signal until the coordinator has saved, then :meth:`resume_signal` delivers it to the
    handlers that were there before (Ctrl-C's KeyboardInterrupt, the CLI's SIGTERM). A
    second signal stops at once, as without checkpoints. Outside the main thread (or with
    no checkpoint file) nothing changes."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, active: bool):
        self.pending: int | None = None
        self.previous: dict[int, Any] = {}
        if active and threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
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
