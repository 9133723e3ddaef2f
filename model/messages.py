"""Messages between sites, moved as columnar batches (numpy structured arrays).

Every message has the same columns (``MSG_DTYPE``), so a batch of any kinds is one array:
routing (delivery time, source, source sequence number, destination, send time, kind code),
typed payload slots (``N_FLOAT`` f8 columns ``f0..``, ``N_INT`` i8 columns ``i0..``) and a
whole job record. A protocol declares each kind it sends with :func:`message`, giving each
field a type: ``message("load", load=float, round=int, flag=bool, loads=(float, 4))``. The
kernel stores a float in a float slot, an int or a bool in an int slot and a fixed-size array
in as many consecutive slots of its item type, in declaration order; a kind whose fields do
not fit is refused at declaration, naming the field.

An agent sends with named fields (``site.send(now, dst, "load", load=x, round=r)``) and
receives a named view (``msg.load``, ``msg.round``, ``msg.src``), dispatched to its
``on_load`` method. Values are cast when the message is made (:meth:`MessageKind.payload`),
so a row holds exactly what the array column gives back: a shard keeps its own rows as tuples
within a window and other shards get them through an array, and both deliver the same value
of the same type. An int field takes whole numbers only: 3, 3.0 and True give 3, 2.5 is
refused (never rounded, as an i8 column would truncate it on one backend and not another).
A bool field takes True, False, 0 or 1 and reads back as a bool; an array field reads back
as a tuple. Unset fields are 0 (0.0, False, zeros).

Kind codes are positions in the run's kind table (:class:`MessageKinds`: the kernel's
kinds, then the protocol's); results name kinds, never codes.
"""

from __future__ import annotations

import keyword
import marshal
import operator
from collections import namedtuple
from itertools import repeat
from typing import Any, Iterable, Union

import numpy as np

from gridemu.model.jobs import JOB_DTYPE

#: Payload slots every message has: enough for the shipped protocols' largest kinds (molba's
#: offer: 2 floats and 3 ints; directcontr's report: 3 floats and an int) with room to spare.
N_FLOAT, N_INT = 4, 4
_ROUTING = [
    ("deliver", "f8"),
    ("src", "i4"),
    ("seq", "i8"),
    ("dst", "i4"),
    ("sent", "f8"),
    ("mtype", "i2"),
]
_SLOTS = [(f"f{i}", "f8") for i in range(N_FLOAT)] + [(f"i{i}", "i8") for i in range(N_INT)]
MSG_DTYPE = np.dtype(_ROUTING + _SLOTS + [(f"job_{name}", JOB_DTYPE[name]) for name in JOB_DTYPE.names])
#: Columns before the job record (routing, then the payload slots): ``row[N_ROUTING:]`` is the job.
N_ROUTING = len(_ROUTING) + len(_SLOTS)
#: Where a message's job record starts: its columns are JOB_DTYPE's, in order and packed, so
#: the record is one block of bytes (``job_block``).
JOB_OFFSET = MSG_DTYPE.fields["job_job_id"][1]
assert all(MSG_DTYPE.fields["job_" + f][1] - JOB_OFFSET == JOB_DTYPE.fields[f][1] for f in JOB_DTYPE.names)
assert JOB_OFFSET + JOB_DTYPE.itemsize == MSG_DTYPE.itemsize
#: A message row without a job: zeros for the job columns, job_id -1, NaN walltime and deadline.
NO_JOB: tuple = (-1, 0, 0, 0.0, 0.0, 0, float("nan"), 0.0, -1, 0, 0, float("nan"), -1)
#: The payload slots of a message whose fields are all unset.
NO_FIELDS: tuple = (0.0,) * N_FLOAT + (0,) * N_INT
_NO_PAYLOAD = NO_FIELDS + NO_JOB  # slots unset, no job
_VIEW_ROUTING = ("deliver", "src", "seq", "dst", "sent", "code")
#: Agent hooks that are not messages: a kind of one of these names would shadow it.
AGENT_HOOKS = frozenset({"start", "arrival", "complete", "timer"})
#: A field's declared type: float, int, bool, or a fixed-size array ``(float, 4)``.
FieldType = Union[type, tuple]
_INT_BOUND = 2**63
_INT_RANGE = range(-_INT_BOUND, _INT_BOUND)


def _as_float(value: Any) -> float:
    if isinstance(value, (str, bytes)):
        raise TypeError("not a number")
    return float(value)


def _as_int(value: Any) -> int:
    try:
        v = operator.index(value)  # int, bool, numpy integers
    except TypeError:
        if isinstance(value, (str, bytes)):
            raise TypeError("not a number") from None
        f = float(value)
        if not f.is_integer():
            raise ValueError("not a whole number (an int field is never rounded: round it before sending)") from None
        v = int(f)
    if v not in _INT_RANGE:
        raise ValueError("out of the 64-bit integer range")
    return v


def _as_bool(value: Any) -> int:
    v = _as_int(value)
    if v != 0 and v != 1:
        raise ValueError("not True, False, 0 or 1")
    return v


_CAST = {float: _as_float, int: _as_int, bool: _as_bool}


class MessageKind:
    """One kind of message: its name, its typed fields and the payload slot of each.

    ``job=True``: the message carries a whole job record (a transfer, an offered piece,
    a reported arrival); the view's ``job`` is that record. The view of a received message
    is a named tuple with the routing fields (``deliver``, ``src``, ``seq``, ``dst``,
    ``sent``), the kind's fields and, for a kind that carries a job, the job columns under
    their own names (``job_id``, ``size``, ...).
    """

    __slots__ = ("name", "fields", "job", "view", "_put", "_plans")

    def __init__(self, name: str, job: bool = False, **fields: FieldType):
        if not name.isidentifier():
            raise ValueError(f"message kind {name!r}: the name must be an identifier (agents handle it as on_{name})")
        if name in AGENT_HOOKS:
            raise ValueError(
                f"message kind {name!r}: on_{name} is an agent's own hook; name the kind otherwise (e.g. 'released')"
            )
        if not isinstance(job, bool):  # also message("x", job=int): a field cannot be named job
            raise ValueError(
                f"message kind {name!r}: job= is True or False (whether it carries a job record), not {job!r}"
            )
        taken = set(_VIEW_ROUTING) | {"job", "kind"} | (set(JOB_DTYPE.names) if job else set())
        free = {
            "f": list(range(len(_ROUTING), len(_ROUTING) + N_FLOAT)),
            "i": list(range(len(_ROUTING) + N_FLOAT, N_ROUTING)),
        }
        names: list[str] = list(_VIEW_ROUTING) + ["_"] * (N_ROUTING - len(_ROUTING))
        names += list(JOB_DTYPE.names) if job else ["_"] * len(JOB_DTYPE.names)
        extra: dict[str, Any] = {}
        put: dict[str, tuple] = {}
        for field, declared in fields.items():
            what = f"message kind {name!r}: field {field!r}"
            if not field.isidentifier() or keyword.iskeyword(field) or field.startswith("_") or field in taken:
                raise ValueError(
                    f"{what}: the name is taken or not allowed (routing fields, job, "
                    f"kind{', the job columns' if job else ''}, a leading _)"
                )
            if isinstance(declared, str):  # the form before typed fields named a column
                raise ValueError(
                    f"{what}: declare its type (float, int, bool or (float, n)), not a column ({declared!r})"
                )
            base, n = declared if isinstance(declared, tuple) and len(declared) == 2 else (declared, None)
            if (
                not isinstance(base, type)
                or base not in _CAST
                or (n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1))
            ):
                raise ValueError(
                    f"{what}: type {_spelled(declared)} is none of float, int, bool or (float|int|bool, n) with n >= 1"
                )
            storage = "f" if base is float else "i"
            k = 1 if n is None else n
            if len(free[storage]) < k:
                label = f"{N_FLOAT} float slots" if storage == "f" else f"{N_INT} int slots (ints and bools share them)"
                raise ValueError(
                    f"{what} ({_spelled(declared)}) does not fit: a message has "
                    f"{label} and the fields before it leave {len(free[storage])}"
                )
            pos, free[storage] = free[storage][0], free[storage][k:]
            # Where it goes in the payload; the Python type a value of it may keep as it is.
            put[field] = (pos - len(_ROUTING), base if n is None and base is not bool else None, _CAST[base], n)
            if n is None and base is not bool:
                names[pos] = field
            elif n is None:
                extra[field] = property(lambda v, i=pos: v[i] == 1)
            elif base is bool:
                extra[field] = property(lambda v, a=pos, b=pos + n: tuple(x == 1 for x in v[a:b]))
            else:
                extra[field] = property(lambda v, a=pos, b=pos + n: v[a:b])
            taken.add(field)
        self.name = name
        self.fields = dict(fields)
        self.job = job
        self._put = put
        # The field names of a send, in order -> ((slot, the Python type each value keeps as it
        # is), ...): payload's fast path, learned from the sends whose fields are all scalars
        # (a protocol sends a few combinations, each many times); False for the others.
        self._plans: dict[tuple[str, ...], tuple[tuple[int, type], ...] | bool] = {}
        base_view = namedtuple(f"{name}_message", names, rename=True)
        if job:
            extra["job"] = property(_job_record)
        self.view = type(
            f"{name.title()}Message",
            (base_view,),
            {"__slots__": (), "kind": name, **extra, "__reduce__": lambda v, kind=self: (_view_of, (kind, tuple(v)))},
        )

    def __reduce__(self) -> tuple:
        # The view class is made at run time: a checkpoint rebuilds the kind (and so its view
        # class) from its declaration instead of looking the class up by name.
        return (_kind_of, (self.name, self.job, self.fields))

    def payload(self, job: tuple, fields: dict[str, Any]) -> tuple:
        """The payload columns of one message: the slots, each value cast to its column's type
        (so that a row kept in one process equals one that went through an array), then the job record."""
        if job and not self.job:
            raise TypeError(f"a {self.name!r} message carries no job (declare it with job=True)")
        if not fields:
            return NO_FIELDS + (job or NO_JOB)
        names = tuple(fields)
        plan = self._plans.get(names)
        if plan:
            # Most sends give a float field a float and an int field an int: no cast to make.
            # The row is the whole payload at once where no job follows the slots (one tuple made).
            row = list(NO_FIELDS) if job else list(_NO_PAYLOAD)
            for (pos, exact), value in zip(plan, fields.values()):
                if type(value) is not exact or (exact is int and not -_INT_BOUND <= value < _INT_BOUND):
                    break
                row[pos] = value
            else:
                return tuple(row) + job if job else tuple(row)
        row = list(NO_FIELDS)
        put = self._put
        for field, value in fields.items():
            try:
                pos, exact, cast, n = put[field]
            except KeyError:
                raise TypeError(
                    f"a {self.name!r} message has no field {field!r} (fields: {', '.join(self.fields) or 'none'})"
                ) from None
            if type(value) is exact and (exact is float or -_INT_BOUND <= value < _INT_BOUND):
                row[pos] = value  # already what the column gives back (most sends)
                continue
            try:
                if n is None:
                    row[pos] = cast(value)
                else:
                    items = [cast(x) for x in value]
                    if len(items) != n:
                        raise ValueError(f"{len(items)} items, not {n}")
                    row[pos : pos + n] = items
            except (TypeError, ValueError, OverflowError) as exc:
                raise TypeError(
                    f"a {self.name!r} message's field {field!r} ({_spelled(self.fields[field])}) got {value!r}: {exc}"
                ) from None
        if plan is None:  # learned once per combination; False: one with a bool or a vector field
            plain = all(put[f][1] is not None and put[f][3] is None for f in names)
            self._plans[names] = tuple((put[f][0], put[f][1]) for f in names) if plain else False
        return tuple(row) + (job or NO_JOB)

    def __repr__(self) -> str:
        args = "".join(f", {k}={_spelled(v)}" for k, v in self.fields.items())
        return f"message({self.name!r}{', job=True' if self.job else ''}{args})"


def _spelled(t: FieldType) -> str:
    if isinstance(t, tuple) and len(t) == 2:
        return f"({_spelled(t[0])}, {t[1]!r})"
    return getattr(t, "__name__", repr(t))


def _job_record(view: tuple) -> tuple:
    return tuple(view[N_ROUTING:])


def _kind_of(name: str, job: bool, fields: dict[str, FieldType]) -> "MessageKind":
    return MessageKind(name, job, **fields)


def _view_of(kind: "MessageKind", values: tuple) -> tuple:
    return kind.view(*values)


def message(name: str, job: bool = False, **fields: FieldType) -> MessageKind:
    """Declare a message kind: ``message("grant", slot=int, finish=float)``."""
    return MessageKind(name, job, **fields)


#: The kernel's own kinds, first in every run: a job transfer (``tag`` travels with it, e.g.
#: the processor it is meant for) and a piece of a divisible job offered to another site
#: (held at the sender until the answer; ``slot`` names it there for the answer).
JOB = message("job", job=True, tag=float)
FRAGMENT = message("fragment", job=True, slot=int, tag=float)
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
        return (MessageKinds, (self.kinds[len(KERNEL_KINDS) :],))

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


def to_batch(rows: "list[tuple] | PackedRows") -> np.ndarray:
    """Rows (full message tuples, or packed) -> one structured array, sorted in delivery order."""
    if not len(rows):
        return empty_batch()
    batch = rows.array() if isinstance(rows, PackedRows) else np.array(rows, dtype=MSG_DTYPE)
    order = np.lexsort((batch["seq"], batch["src"], batch["deliver"]))
    return batch[order]


class PackedRows:
    """Message rows bound for another process, as columns in one ``marshal`` buffer: a tuple a
    field, or one value where every row holds the same (most of a row's 27 fields are slots
    its kind leaves unused: a load report fills 8). Ray ships the buffer as one bytes object,
    not as Python objects, and the receiver zips the columns back into the rows that were
    sent, every value of the type it was sent with (in-process shards hand over the rows
    themselves: both paths deliver the same). ``marshal`` writes plain values only, never
    code, and is read back by the same Python (a Ray cluster runs one Python version).

    Per row of power of d's batches at 2,000 sites (docs/kernel.md): pack 1.1 µs (the type
    check included), unpack 0.8, pickle and unpickle 0.1, 79 bytes, against 1.0, 1.4, 0.4
    and 114 for the two numpy arrays a batch it replaced (``be4dd38``)."""

    __slots__ = ("n", "first", "data")

    def __init__(self, n: int, first: float, data: bytes):
        self.n, self.first, self.data = n, first, data

    def __len__(self) -> int:
        return self.n

    def __reduce__(self) -> tuple:
        return (PackedRows, (self.n, self.first, self.data))

    def columns(self) -> list[Any]:
        """Each field's column: a tuple of its values, or an iterator repeating the one value."""
        n = self.n
        return [c if len(c) == n else repeat(c[0], n) for c in marshal.loads(self.data)]

    def rows(self) -> list[tuple]:
        return list(zip(*self.columns()))

    def array(self) -> np.ndarray:
        """The rows as one MSG_DTYPE array, filled column by column (no row is made)."""
        out = np.empty(self.n, dtype=MSG_DTYPE)
        for name, column in zip(MSG_DTYPE.names, marshal.loads(self.data)):
            out[name] = column if len(column) == self.n else column[0]
        return out


#: What ``marshal`` writes as itself. It would write a numpy scalar (a job record an agent
#: built from ``local_jobs``, a destination drawn from an array) as raw bytes, not a number.
_NUMBERS = frozenset((float, int, bool))


def pack_rows(rows: list[tuple]) -> PackedRows:
    """Rows (full message tuples, at least one) -> :class:`PackedRows`; a value that is not a
    Python number (a numpy scalar) goes as the Python number it holds."""
    n = len(rows)
    columns = []
    for column in zip(*rows):
        if column.count(column[0]) == n:
            column = column[:1]
        if not _NUMBERS.issuperset(map(type, column)):
            column = tuple(v.item() if isinstance(v, np.generic) else v for v in column)
        columns.append(column)
    first = columns[0][0] if len(columns[0]) == 1 else min(columns[0])  # the delivery time is the first field
    return PackedRows(n, first, marshal.dumps(columns, 4))
