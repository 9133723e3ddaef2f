"""Messages between sites, moved as columnar batches (numpy structured arrays).

Every message has the same columns (``MSG_DTYPE``): routing (delivery time, source,
source sequence number, destination, send time, kind code), two numbers and a whole job
record. What those payload columns mean depends on the message's *kind*: a protocol
declares each kind it sends with :func:`message`, naming the payload fields it uses and
the column each is stored in, e.g. ``message("load", load="value", round="value2")``.
An agent sends with named fields (``site.send(now, dst, "load", load=x, round=r)``) and
receives a named view (``msg.load``, ``msg.round``, ``msg.src``), dispatched to its
``on_load`` method. Between shards only the arrays travel; within a window a shard
collects rows as tuples and converts them once.

Kind codes are positions in the run's kind table (:class:`MessageKinds`: the kernel's
kinds, then the protocol's); results name kinds, never codes.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Iterable

import numpy as np

from gridemu.model.jobs import JOB_DTYPE

_ROUTING = [
    ("deliver", "f8"),
    ("src", "i4"),
    ("seq", "i8"),
    ("dst", "i4"),
    ("sent", "f8"),
    ("mtype", "i2"),
    ("value", "f8"),
    ("value2", "f8"),
]
MSG_DTYPE = np.dtype(_ROUTING + [(f"job_{name}", JOB_DTYPE[name]) for name in JOB_DTYPE.names])
N_ROUTING = len(_ROUTING)
#: Where a message's job record starts: its columns are JOB_DTYPE's, in order and packed, so
#: the record is one block of bytes (``job_block``).
JOB_OFFSET = MSG_DTYPE.fields["job_job_id"][1]
assert all(MSG_DTYPE.fields["job_" + f][1] - JOB_OFFSET == JOB_DTYPE.fields[f][1] for f in JOB_DTYPE.names)
assert JOB_OFFSET + JOB_DTYPE.itemsize == MSG_DTYPE.itemsize
#: A message row without a job: zeros for the job columns, job_id -1, NaN walltime and deadline.
NO_JOB: tuple = (-1, 0, 0, 0.0, 0.0, 0, float("nan"), 0.0, -1, 0, 0, float("nan"), -1)
#: Payload columns a kind may name: the two numbers, then the job columns.
PAYLOAD_COLUMNS: tuple[str, ...] = ("value", "value2") + JOB_DTYPE.names
_VIEW_ROUTING = ("deliver", "src", "seq", "dst", "sent", "code")
#: Agent hooks that are not messages: a kind of one of these names would shadow it.
AGENT_HOOKS = frozenset({"start", "arrival", "complete", "timer"})


class MessageKind:
    """One kind of message: its name and which payload column holds each named field.

    ``job=True``: the message carries a whole job record (a transfer, an offered piece,
    a reported arrival); the view's ``job`` is that record and the job columns cannot be
    renamed. The view of a received message is a named tuple with the routing fields
    (``deliver``, ``src``, ``seq``, ``dst``, ``sent``), the kind's fields, and the job
    columns under their own names (``job_id``, ``size``, ...).
    """

    __slots__ = ("name", "fields", "job", "view", "_slots", "_numbers", "_numbers_only")

    def __init__(self, name: str, job: bool = False, **fields: str):
        if not name.isidentifier():
            raise ValueError(f"message kind {name!r}: the name must be an identifier (agents handle it as on_{name})")
        if name in AGENT_HOOKS:
            raise ValueError(f"message kind {name!r}: on_{name} is an agent's own hook; name the kind otherwise (e.g. 'released')")
        names = list(_VIEW_ROUTING) + list(PAYLOAD_COLUMNS)
        slots: dict[str, int] = {}
        for field, column in fields.items():
            if column not in PAYLOAD_COLUMNS:
                raise ValueError(f"message kind {name!r}: field {field!r} names no payload column {column!r} (one of {PAYLOAD_COLUMNS})")
            if job and column not in ("value", "value2"):
                raise ValueError(f"message kind {name!r} carries a job: field {field!r} may use only value or value2")
            pos = PAYLOAD_COLUMNS.index(column)
            if pos in slots.values():
                raise ValueError(f"message kind {name!r}: two fields in column {column!r}")
            slots[field] = pos
            names[len(_VIEW_ROUTING) + pos] = field
        self.name = name
        self.fields = dict(fields)
        self.job = job
        self._slots = slots
        # Kinds whose fields all sit in the two number columns take a faster path.
        self._numbers = [None, None]
        for field, pos in slots.items():
            if pos < 2:
                self._numbers[pos] = field
        self._numbers_only = all(pos < 2 for pos in slots.values())
        base = namedtuple(f"{name}_message", names)
        self.view = type(
            f"{name.title()}Message", (base,),
            {"__slots__": (), "kind": name, "job": property(_job_record), "__reduce__": lambda v, kind=self: (_view_of, (kind, tuple(v)))},
        )

    def __reduce__(self) -> tuple:
        # The view class is made at run time: a checkpoint rebuilds the kind (and so its view
        # class) from its declaration instead of looking the class up by name.
        return (_kind_of, (self.name, self.job, self.fields))

    def payload(self, job: tuple, fields: dict[str, Any]) -> tuple:
        """The payload columns of one message: (value, value2, *job record)."""
        if not fields:
            return (0.0, 0.0) + (job or NO_JOB)
        if self._numbers_only and len(fields) <= 2:
            first, second = self._numbers
            values = (fields.get(first, 0.0) if first else 0.0, fields.get(second, 0.0) if second else 0.0)
            if len(fields) == (first in fields) + (second in fields):
                return values + (job or NO_JOB)
        row = [0.0, 0.0, *(job or NO_JOB)]
        slots = self._slots
        for field, value in fields.items():
            try:
                row[slots[field]] = value
            except KeyError:
                raise TypeError(f"a {self.name!r} message has no field {field!r} (fields: {', '.join(self.fields) or 'none'})") from None
        return tuple(row)

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.fields.items())
        return f"message({self.name!r}{', job=True' if self.job else ''}{args})"


def _job_record(view: tuple) -> tuple:
    return tuple(view[N_ROUTING:])


def _kind_of(name: str, job: bool, fields: dict[str, str]) -> "MessageKind":
    return MessageKind(name, job, **fields)


def _view_of(kind: "MessageKind", values: tuple) -> tuple:
    return kind.view(*values)


def message(name: str, job: bool = False, **fields: str) -> MessageKind:
    """Declare a message kind: ``message("grant", slot="value", finish="value2")``."""
    return MessageKind(name, job, **fields)


#: The kernel's own kinds, first in every run: a job transfer (``tag`` travels with it, e.g.
#: the processor it is meant for) and a piece of a divisible job offered to another site
#: (held at the sender until the answer; ``slot`` names it there for the answer).
JOB = message("job", job=True, tag="value")
FRAGMENT = message("fragment", job=True, slot="value", tag="value2")
KERNEL_KINDS: tuple[MessageKind, ...] = (JOB, FRAGMENT)


class MessageKinds:
    """The kind table of a run: the kernel's kinds, then the protocol's; codes are positions."""

    def __init__(self, protocol_kinds: Iterable[MessageKind] = ()):
        self.kinds: tuple[MessageKind, ...] = KERNEL_KINDS + tuple(protocol_kinds)
        self.names: tuple[str, ...] = tuple(k.name for k in self.kinds)
        dup = {n for n in self.names if self.names.count(n) > 1}
        if dup:
            raise ValueError(f"message kinds declared twice: {', '.join(sorted(dup))}")
        self.code = {k.name: code for code, k in enumerate(self.kinds)}
        self.views = tuple(k.view for k in self.kinds)

    def __reduce__(self) -> tuple:
        return (MessageKinds, (self.kinds[len(KERNEL_KINDS):],))

    def __len__(self) -> int:
        return len(self.kinds)

    def __getitem__(self, name: str) -> MessageKind:
        return self.kinds[self.code[name]]


def job_block(batch: np.ndarray) -> np.ndarray:
    """The job records of a message batch as a writable (rows, JOB_DTYPE bytes) uint8 view:
    ``job_block(b)[:] = jobs.view(np.uint8).reshape(len(jobs), -1)`` fills them; :func:`jobs_in`
    copies them out."""
    return batch.view(np.uint8).reshape(len(batch), MSG_DTYPE.itemsize)[:, JOB_OFFSET:]


def jobs_in(batch: np.ndarray) -> np.ndarray:
    """The job records a batch carries, as a JOB_DTYPE array (one copy of bytes)."""
    return np.ascontiguousarray(job_block(batch)).view(JOB_DTYPE).reshape(len(batch))


def empty_batch() -> np.ndarray:
    return np.zeros(0, dtype=MSG_DTYPE)


def to_batch(rows: list[tuple]) -> np.ndarray:
    """Rows (full message tuples) -> one structured array, sorted in delivery order."""
    if not rows:
        return empty_batch()
    batch = np.array(rows, dtype=MSG_DTYPE)
    order = np.lexsort((batch["seq"], batch["src"], batch["deliver"]))
    return batch[order]

