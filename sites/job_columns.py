"""A site's job columns: one typed array (``array.array``) per field of ``JOB_DTYPE``.

A site holds its jobs as ``c_<field>`` columns indexed by slot (``sites/site.py``): 8, 4 or 1
bytes a value instead of a Python object each, and appendable as jobs arrive.
"""

from __future__ import annotations

from array import array

import numpy as np

from gridemu.model.jobs import JOB_DTYPE

JOB_FIELDS = JOB_DTYPE.names
#: array.array type codes of JOB_DTYPE's field types.
_TYPECODE = {np.dtype(np.float64): "d", np.dtype(np.int64): "q", np.dtype(np.int32): "i", np.dtype(np.int8): "b"}
_SHORT = {"job_id": "id", "submit_site": "submit"}


def typed_column(values: np.ndarray) -> array:
    """A typed array holding a copy of a numpy column (same item type)."""
    col = array(_TYPECODE[values.dtype])
    col.frombytes(np.ascontiguousarray(values).tobytes())
    return col


def own_columns(jobs: np.ndarray) -> tuple[np.ndarray, list[array]]:
    """One site's jobs in (release, job id) order and their typed columns, in ``JOB_FIELDS`` order."""
    if len(jobs) > 1 and not sorted_by_release_and_id(jobs):
        jobs = jobs[np.lexsort((jobs["job_id"], jobs["release"]))]
    return jobs, [typed_column(jobs[name]) for name in JOB_FIELDS]


def split_columns(jobs: np.ndarray, counts: list[int]) -> list[list[array]]:
    """Each site's typed columns, in ``JOB_FIELDS`` order, from the jobs of consecutive sites
    (``counts[i]`` jobs for the i-th): every field is made contiguous once and cut by bytes,
    where one :func:`typed_column` per site and field costs a numpy call each (13 fields at
    100,000 sites: 1.3 million)."""
    fields = []
    for name in JOB_FIELDS:
        col = np.ascontiguousarray(jobs[name])
        fields.append((_TYPECODE[col.dtype], memoryview(col).cast("B"), col.itemsize))
    out: list[list[array]] = []
    lo = 0
    for k in counts:
        cols = []
        for code, raw, size in fields:
            col = array(code)
            col.frombytes(raw[lo * size : (lo + k) * size])
            cols.append(col)
        out.append(cols)
        lo += k
    return out


def sorted_by_release_and_id(jobs: np.ndarray) -> bool:
    rel, ids = jobs["release"], jobs["job_id"]
    step = np.diff(rel)
    return bool((step > 0).all() or ((step >= 0).all() and (np.diff(ids)[step == 0] > 0).all()))


def column_name(field: str) -> str:
    """The Site attribute holding a job field's column (``c_size``, ``c_id``, ...)."""
    return "c_" + _SHORT.get(field, field)


#: ``column_name`` of every field, in ``JOB_FIELDS`` order.
COLUMN_NAMES = tuple(column_name(name) for name in JOB_FIELDS)
