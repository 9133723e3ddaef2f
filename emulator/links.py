"""Links between Ray shards: a window's messages from shard to shard over TCP, not through Ray.

:mod:`gridemu.emulator.exchange` has every shard send every other one its StepInfo and its
batch after each window. As Ray calls, that is S - 1 actor calls a shard a window, and one
costs hundreds of microseconds of CPU to submit (a profile of 2 shards: 18 % of a shard's
samples in ``ActorHandle._actor_method_call``, one call a window); at 16 shards and 1,491
windows the calls alone took more than the shards' work. Here the shards connect to each
other once, when the backend starts them, and a window's message is one length-prefixed
frame on a socket: a ``sendall`` from the window loop, read by a thread of the receiving
shard that files it by window and sender. A thread reads all the time, so a large frame
never blocks two shards sending to each other.

A frame holds plain values only, written by ``marshal`` (which writes no code and runs
none): the window, the sender's StepInfo fields, the batch (``PackedRows`` as its three
fields, a ``MSG_DTYPE`` array as its bytes), and shard 0's cut flag. Each link starts with
the run's random token, and a shard takes frames only from links that showed it: another
process on the machine that finds the port cannot inject messages. A link that closes (its
shard's process died) makes the waiting shard raise :class:`PeerLost`, which the backend
treats as a lost shard.
"""

from __future__ import annotations

import hmac
import marshal
import selectors
import socket
import struct
import threading
from typing import Any

import numpy as np

from gridemu.emulator.shard import StepInfo
from gridemu.model.errors import GridemuError
from gridemu.model.messages import MSG_DTYPE, PackedRows

_HELLO = struct.Struct("<i32s")  # sender's shard id, the run's token
_LENGTH = struct.Struct("<q")


class PeerLost(GridemuError):
    """A link to another shard closed while this shard waited for its messages."""


def _encode(batch: Any) -> Any:
    if batch is None:
        return None
    if isinstance(batch, PackedRows):
        return (0, batch.n, batch.first, batch.data)
    if isinstance(batch, np.ndarray) and batch.dtype == MSG_DTYPE:
        return (1, batch.tobytes())
    if isinstance(batch, list):  # rows (an empty batch of an in-process engine)
        return (2, batch)
    raise TypeError(f"a batch of type {type(batch).__name__} cannot travel between shards")


def _decode(value: Any) -> Any:
    if value is None:
        return None
    kind = value[0]
    if kind == 0:
        return PackedRows(value[1], value[2], value[3])
    if kind == 1:
        return np.frombuffer(value[1], dtype=MSG_DTYPE).copy()  # writable, as Ray's would not be
    return value[1]


class Links:
    """This shard's links: one socket to each other shard for sending, one from each for
    receiving (read by a thread). Built in two steps, as every shard must listen before any
    connects: ``Links(k, n, token)`` listens, :meth:`connect` links up."""

    def __init__(self, k: int, n: int, token: bytes):
        self.k, self.n, self.token = k, n, token
        host = _node_ip()
        self.server = socket.create_server((host, 0), backlog=max(1, n))
        self.address = (host, self.server.getsockname()[1])
        self.out: dict[int, socket.socket] = {}
        self.mail: dict[int, dict[int, tuple]] = {}
        self.mail_in = threading.Condition()
        self.lost: str | None = None

    def connect(self, addresses: list[tuple[str, int]], timeout: float = 60.0) -> None:
        """Link up with every other shard (``addresses``: each shard's :attr:`address`)."""
        try:
            for j, address in enumerate(addresses):
                if j != self.k:
                    s = socket.create_connection(address, timeout=timeout)
                    s.settimeout(None)
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    s.sendall(_HELLO.pack(self.k, self.token))
                    self.out[j] = s
            links: dict[int, socket.socket] = {}
            self.server.settimeout(timeout)
            while len(links) < self.n - 1:  # the others' links, each named by its hello
                conn, _ = self.server.accept()
                conn.settimeout(timeout)
                try:
                    src, token = _HELLO.unpack(_read_exactly(conn, _HELLO.size))
                except (OSError, struct.error):
                    src, token = -1, b""
                if not hmac.compare_digest(token, self.token) or not 0 <= src < self.n or src in links:
                    conn.close()  # not a shard of this run
                    continue
                conn.settimeout(None)
                links[src] = conn
        except OSError as exc:
            raise GridemuError(
                f"shard {self.k} could not link up with the other shards ({type(exc).__name__}: {exc}); "
                "the Ray nodes must reach each other on any TCP port"
            ) from None
        finally:
            self.server.close()
        threading.Thread(target=self._receive, args=(links,), name="gridemu-links", daemon=True).start()

    def post(self, window: int, info: StepInfo, out: list[Any], cut: bool) -> None:
        """Send every other shard this window's info, its batch and the cut flag."""
        head = (info.next_time, info.bound, info.out_min, info.events, info.done)
        for j, s in self.out.items():
            frame = marshal.dumps((window, head, _encode(out[j] if j in info.out_min else None), cut))
            s.sendall(_LENGTH.pack(len(frame)) + frame)

    def collect(self, window: int) -> dict[int, tuple[StepInfo, Any, bool]]:
        """Every other shard's ``(info, batch or None, cut)`` of ``window``, by sender."""
        with self.mail_in:
            while len(self.mail.get(window, ())) < self.n - 1:
                if self.lost is not None:
                    raise PeerLost(self.lost)
                self.mail_in.wait()
            return self.mail.pop(window, {})

    def _receive(self, links: dict[int, socket.socket]) -> None:
        sel = selectors.DefaultSelector()
        buffers = {}
        for src, conn in links.items():
            conn.setblocking(False)
            sel.register(conn, selectors.EVENT_READ, src)
            buffers[src] = bytearray()
        while sel.get_map():
            for key, _ in sel.select():
                src, conn = key.data, key.fileobj
                try:
                    chunk = conn.recv(1 << 20)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    chunk, why = b"", str(exc)
                else:
                    why = "closed"
                if not chunk:
                    sel.unregister(conn)
                    with self.mail_in:
                        self.lost = f"the link from shard {src} {why} (its process ended)"
                        self.mail_in.notify_all()
                    continue
                buf = buffers[src]
                buf += chunk
                self._file(src, buf)

    def _file(self, src: int, buf: bytearray) -> None:
        """File every whole frame at the head of ``buf``, and drop it from there."""
        got = []
        at = 0
        while len(buf) - at >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(buf, at)
            if len(buf) - at - _LENGTH.size < size:
                break
            window, head, batch, cut = marshal.loads(buf[at + _LENGTH.size : at + _LENGTH.size + size])
            got.append((window, StepInfo(*head), _decode(batch), cut))
            at += _LENGTH.size + size
        if not got:
            return
        del buf[:at]
        with self.mail_in:
            for window, info, batch, cut in got:
                self.mail.setdefault(window, {})[src] = (info, batch, cut)
            self.mail_in.notify_all()

    def close(self) -> None:
        for s in self.out.values():
            s.close()
        self.out = {}


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _node_ip() -> str:
    """The address other Ray nodes reach this one at (loopback outside Ray)."""
    try:
        import ray

        return ray.util.get_node_ip_address()
    except Exception:  # not in a Ray worker: a test in one process
        return "127.0.0.1"
