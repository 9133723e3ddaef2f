"""Messages between sites, moved as columnar batches (numpy structured arrays).

A message carries a fixed set of columns: routing (delivery time, source, source
sequence number, destination, send time, type), two numbers for reports and offers,
and a whole job record for job transfers. Within a window a shard collects rows as
tuples and converts them once; between shards only arrays travel.
"""
from __future__ import annotations

import numpy as np

from gridemu.model.jobs import JOB_DTYPE

#: Message type names; the code is the index. Append only: codes are part of saved runs.
MESSAGE_TYPES: tuple[str, ...] = (
    "job", "load", "offer", "usage", "request", "grant", "refuse", "fragment", "arrival", "completion",
)
MTYPE = {name: code for code, name in enumerate(MESSAGE_TYPES)}

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
#: A message row without a job: routing fields then zeros for the job columns.
NO_JOB: tuple = (-1, 0, 0, 0.0, 0.0, 0, float("nan"), 0.0, -1, 0, 0, float("nan"))


def job_columns(**values) -> tuple:
    """A message's job columns carrying a few numbers of a protocol's own (a report, a
    request): the named fields set, the rest as in ``NO_JOB`` (job_id -1, NaN walltime and
    deadline, zeros)."""
    rec = dict(zip(JOB_DTYPE.names, NO_JOB))
    unknown = set(values) - set(rec)
    if unknown:
        raise KeyError(f"no job column {sorted(unknown)[0]!r}")
    rec.update(values)
    return tuple(rec[name] for name in JOB_DTYPE.names)


def empty_batch() -> np.ndarray:
    return np.zeros(0, dtype=MSG_DTYPE)


def to_batch(rows: list[tuple]) -> np.ndarray:
    """Rows (full message tuples) -> one structured array, sorted in delivery order."""
    if not rows:
        return empty_batch()
    batch = np.array(rows, dtype=MSG_DTYPE)
    order = np.lexsort((batch["seq"], batch["src"], batch["deliver"]))
    return batch[order]
