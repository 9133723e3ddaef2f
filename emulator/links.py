"""Links between Ray shards: a window's messages from shard to shard over TCP, not through Ray.

:mod:`gridemu.emulator.exchange` has every shard send every other one its StepInfo and its
batch after each window. As Ray calls, that is S - 1 actor calls a shard a window, and one
costs hundreds of microseconds of CPU to submit (a profile of 2 shards: 18 % of a shard's
samples in ``ActorHandle._actor_method_call``, one call a window); at 16 shards and 1,491
windows that version was no faster than the driver passing the batches on (46.4 s against
47.5 s on one lent 16-core machine; docs/benchmarks.md). Here the shards connect to each
other once, when the backend starts them, and a window's message is one length-prefixed
frame on a socket. Sockets do not block: :meth:`Links.post` sends what the kernel takes at
once and keeps the rest, and :meth:`Links.collect` waits in one ``select`` over every link,
reading the others' frames and sending what is left of its own, until it has every frame of
the window and has sent all of its own. So two shards sending each other large frames never
wait for each other, and there is no thread: a receiving thread would take the interpreter
lock from the window loop each time a frame lands.

A frame is its two sizes, a header of plain values written by ``marshal`` (which writes no
code and runs none: the window, the sender's StepInfo fields, the batch's kind and length,
shard 0's cut flag) and the batch's bytes as they are (``PackedRows``' buffer, a
``MSG_DTYPE`` array's memory), read straight into the frame's buffer on the other side: no
copy in Python on either side, which a 1 MB batch felt (2 shards, 6,000 rows to each other
a window, 2 cores: 5.0 ms a window with the batch inside the ``marshal`` frame). Each link starts with
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
from collections import deque
from typing import Any

import numpy as np

from gridemu.emulator.shard import StepInfo
from gridemu.model.errors import GridemuError
from gridemu.model.messages import MSG_DTYPE, PackedRows

_HELLO = struct.Struct("<i32s")  # sender's shard id, the run's token
_LENGTHS = struct.Struct("<qq")  # a frame's header and payload sizes


class PeerLost(GridemuError):
    """A link to another shard closed while this shard waited for its messages."""


def _encode(batch: Any) -> tuple[int, Any, memoryview | None]:
    """A batch as (kind, what the header says of it, the payload sent as raw bytes)."""
    if batch is None:
        return -1, None, None
    if isinstance(batch, PackedRows):
        return 0, (batch.n, batch.first), memoryview(batch.data)
    if isinstance(batch, np.ndarray) and batch.dtype == MSG_DTYPE:
        return 1, len(batch), memoryview(np.ascontiguousarray(batch).view(np.uint8))
    if isinstance(batch, list):  # rows (an empty batch of an in-process engine)
        return 2, batch, None
    raise TypeError(f"a batch of type {type(batch).__name__} cannot travel between shards")


def _decode(kind: int, meta: Any, frame: bytearray, at: int) -> Any:
    """The batch from its header's part and the frame's payload from ``at``."""
    if kind == -1:
        return None
    if kind == 0:
        return PackedRows(meta[0], meta[1], bytes(memoryview(frame)[at:]))
    if kind == 1:  # the frame's own bytes, writable: no copy
        return np.frombuffer(frame, dtype=MSG_DTYPE, count=meta, offset=at)
    return meta


class _Reading:
    """A link's frame being read: its sizes, then its bytes."""

    __slots__ = ("sizes", "frame", "header", "got")

    def __init__(self) -> None:
        self.sizes = bytearray(_LENGTHS.size)
        self.frame: bytearray | None = None
        self.header = 0
        self.got = 0


class Links:
    """This shard's links: one socket to each other shard for sending, one from each for
    receiving, none of them blocking. Built in two steps, as every shard must listen before any
    connects: ``Links(k, n, token)`` listens, :meth:`connect` links up."""

    def __init__(self, k: int, n: int, token: bytes):
        self.k, self.n, self.token = k, n, token
        host = _node_ip()
        self.server = socket.create_server((host, 0), backlog=max(1, n))
        self.address = (host, self.server.getsockname()[1])
        self.out: dict[int, socket.socket] = {}
        self.unsent: dict[int, deque[memoryview]] = {}  # by destination: what the kernel did not take yet
        self.unread: dict[int, _Reading] = {}  # by sender: the frame being read
        self.mail: dict[int, dict[int, tuple]] = {}  # window -> sender -> (info, batch, cut)
        self.select = selectors.DefaultSelector()

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
                conn.setblocking(False)
                links[src] = conn
        except OSError as exc:
            raise GridemuError(
                f"shard {self.k} could not link up with the other shards ({type(exc).__name__}: {exc}); "
                "the Ray nodes must reach each other on any TCP port"
            ) from None
        finally:
            self.server.close()
        for src, conn in links.items():
            self.select.register(conn, selectors.EVENT_READ, src)
            self.unread[src] = _Reading()
        for j, s in self.out.items():
            s.setblocking(False)
            self.unsent[j] = deque()

    def post(self, window: int, info: StepInfo, out: list[Any], cut: bool) -> None:
        """Send every other shard this window's info, its batch and the cut flag (what the
        kernel does not take at once goes out in :meth:`collect`). A frame is its two sizes,
        a ``marshal`` header and the batch's bytes as they are (no copy on this side)."""
        head = (info.next_time, info.bound, info.out_min, info.events, info.done, info.clock)
        for j in self.out:
            kind, meta, payload = _encode(out[j] if j in info.out_min else None)
            header = marshal.dumps((window, head, kind, meta, cut))
            size = len(payload) if payload is not None else 0
            queue = self.unsent[j]
            queue.append(memoryview(_LENGTHS.pack(len(header), size) + header))
            if size:
                queue.append(payload)
            self._send(j)

    def collect(self, window: int) -> dict[int, tuple[StepInfo, Any, bool]]:
        """Every other shard's ``(info, batch or None, cut)`` of ``window``, by sender, once
        all of this shard's frames are sent."""
        mail = self.mail
        while len(mail.get(window, ())) < self.n - 1 or any(self.unsent.values()):
            for key, events in self.select.select():
                if events & selectors.EVENT_WRITE:
                    self._send(key.data[1])
                if events & selectors.EVENT_READ:
                    self._read(key.data, key.fileobj)
        return mail.pop(window, {})

    def _send(self, j: int) -> None:
        queue, s = self.unsent[j], self.out[j]
        while queue:
            try:
                sent = s.send(queue[0])
            except BlockingIOError:
                break
            except OSError as exc:
                raise PeerLost(f"the link to shard {j} broke ({exc}; its process ended)") from None
            if sent < len(queue[0]):
                queue[0] = queue[0][sent:]
            else:
                queue.popleft()
        # Watched for room while something is left to send (the key's data: ("out", j)).
        watched = s in self.select.get_map()
        if queue and not watched:
            self.select.register(s, selectors.EVENT_WRITE, ("out", j))
        elif watched and not queue:
            self.select.unregister(s)

    def _read(self, src: int, conn: Any) -> None:
        """Read what the link from ``src`` holds, straight into the frame it belongs to."""
        r = self.unread[src]
        while True:
            view = memoryview(r.sizes)[r.got :] if r.frame is None else memoryview(r.frame)[r.got :]
            try:
                got = conn.recv_into(view)
            except BlockingIOError:
                return
            except OSError as exc:
                raise PeerLost(f"the link from shard {src} broke ({exc}; its process ended)") from None
            if not got:
                raise PeerLost(f"the link from shard {src} closed (its process ended, or it failed)")
            r.got += got
            if r.frame is None:
                if r.got == _LENGTHS.size:  # the sizes: now the frame itself
                    r.header, payload = _LENGTHS.unpack(r.sizes)
                    r.frame, r.got = bytearray(r.header + payload), 0
            elif r.got == len(r.frame):
                window, head, kind, meta, cut = marshal.loads(memoryview(r.frame)[: r.header])
                batch = _decode(kind, meta, r.frame, r.header)
                self.mail.setdefault(window, {})[src] = (StepInfo(*head[:5], clock=head[5]), batch, cut)
                r.frame, r.got = None, 0

    def close(self) -> None:
        """Close every link, both ways (the others' waits for this shard end with PeerLost),
        and the listening socket if linking up never finished. Closing twice does nothing."""
        for s in self.out.values():
            s.close()
        self.out = {}
        if self.select.get_map() is not None:  # None once closed
            for key in list(self.select.get_map().values()):
                key.fileobj.close()
            self.select.close()
        self.server.close()


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
