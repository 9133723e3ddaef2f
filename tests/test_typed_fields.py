"""Typed message fields (model/messages.py): declared types, refused declarations, casts on
send, and the same values of the same types on every backend and shard count."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from gridemu import emulator
from gridemu.brokers import registry
from gridemu.emulator import backends, shard
from gridemu.model.messages import N_FLOAT, N_INT, message, pack_rows, to_batch
from tests import typed_fields_protocol

KIND = typed_fields_protocol.SAMPLE


def _row(kind, **fields) -> tuple:
    return (1.0, 0, 1, 1, 0.0, 2) + kind.payload((), fields)


def _through_an_array(row: tuple) -> tuple:
    """What another process gets of a row: the shards' array, back as a tuple (Shard._deliver)."""
    return to_batch([row]).tolist()[0]


def _seen(kind, row: tuple) -> dict:
    view = kind.view(*row)
    return {f: (getattr(view, f), type(getattr(view, f))) for f in kind.fields}


@pytest.mark.parametrize(
    "fields",
    [
        {"n": 2.0, "x": 3, "flag": 1, "loads": [1, 2, 3]},
        {"n": np.int64(-5), "x": np.float32(0.1), "flag": True, "loads": np.array([0.5, 1.5, 2.5], dtype=np.float32)},
        {"n": 2**62, "x": float("inf"), "flag": np.bool_(False), "loads": (0.0, -0.0, 1e300)},
        {"x": 1.5},  # the others unset: 0, False, zeros
    ],
)
def test_a_row_kept_in_one_process_reads_as_the_same_row_through_an_array(fields):
    row = _row(KIND, **fields)
    seen = _seen(KIND, row)
    assert seen == _seen(KIND, _through_an_array(row))
    assert [t for _, t in seen.values()] == [int, float, bool, tuple]
    assert all(type(v) is float for v in seen["loads"][0])


def test_fields_read_back_as_their_declared_types():
    view = KIND.view(*_row(KIND, n=2.0, x=3, flag=1, loads=[1, 2, 3]))
    assert (view.n, view.x, view.flag, view.loads) == (2, 3.0, True, (1.0, 2.0, 3.0))
    assert repr((view.n, view.x, view.flag)) == "(2, 3.0, True)"
    unset = KIND.view(*_row(KIND))
    assert (unset.n, unset.x, unset.flag, unset.loads) == (0, 0.0, False, (0.0, 0.0, 0.0))


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"n": 2.5}, r"'n' \(int\) got 2.5: not a whole number"),
        ({"n": float("nan")}, r"'n' \(int\) got nan: not a whole number"),
        ({"n": 2**63}, r"'n' \(int\) got 9223372036854775808: out of the 64-bit integer range"),
        ({"n": "3"}, r"'n' \(int\) got '3': not a number"),
        ({"x": "1.5"}, r"'x' \(float\) got '1.5': not a number"),
        ({"flag": 2}, r"'flag' \(bool\) got 2: not True, False, 0 or 1"),
        ({"loads": [1.0, 2.0]}, r"'loads' \(\(float, 3\)\) got \[1.0, 2.0\]: 2 items, not 3"),
        ({"loads": 1.0}, r"'loads' \(\(float, 3\)\) got 1.0"),
        ({"m": 1}, r"a 'sample' message has no field 'm'"),
    ],
)
def test_a_value_that_its_field_cannot_hold_is_refused_on_send(fields, error):
    with pytest.raises(TypeError, match=error):
        KIND.payload((), fields)


def test_a_job_goes_only_in_a_kind_that_carries_one():
    with pytest.raises(TypeError, match="'sample' message carries no job"):
        KIND.payload((1, 0, 0, 0.0, 1.0, 1, 1.0, 0.0, 0, 0, 0, 1.0, -1), {})


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            {"a": (float, N_FLOAT), "b": float},
            rf"field 'b' \(float\) does not fit: a message has {N_FLOAT} float slots and the fields before it leave 0",
        ),
        ({"a": (int, N_INT - 1), "b": bool, "c": int}, rf"field 'c' \(int\) does not fit: a message has {N_INT} int"),
        ({"a": str}, r"field 'a': type str is none of float, int, bool"),
        ({"a": (float, 0)}, r"field 'a': type \(float, 0\) is none of"),
        ({"a": "value"}, r"field 'a': declare its type \(float, int, bool or \(float, n\)\), not a column \('value'\)"),
        ({"a": [float]}, r"field 'a': type \[<class 'float'>\] is none of"),
        ({"a": (float, 2, 3)}, r"field 'a': type \(<class 'float'>, 2, 3\) is none of"),
        ({"class": float}, r"field 'class': the name is taken or not allowed"),
        ({"src": float}, r"field 'src': the name is taken"),
        ({"job": int}, r"job= is True or False"),
        ({"kind": int}, r"field 'kind': the name is taken"),
    ],
)
def test_a_kind_whose_fields_do_not_fit_is_refused_at_declaration_naming_the_field(fields, error):
    with pytest.raises(ValueError, match=error):
        message("bad", **fields)


def test_a_kind_with_a_job_keeps_the_job_columns_names_for_the_job():
    with pytest.raises(ValueError, match="field 'size': the name is taken"):
        message("bad", job=True, size=float)
    assert message("fine", size=float).fields == {"size": float}  # no job: the name is free


def _scenario() -> dict:
    return {
        "run": {"seed": 5},
        "network": {"latency": 1.0},
        "sites": {"count": 4, "procs": 1},
        "workload": {"kind": "poisson", "rate": 0.5, "jobs": 12},
        "protocol": {"name": "typed_fields"},
    }


EXPECTED = {
    (site, src): (
        repr(src * 7),
        repr(float(src * 3)),
        repr(bool(src % 2)),
        repr(tuple(float(np.float32(0.1 * src) * np.float32(i)) for i in range(3))),
    )
    for site in range(4)
    for src in range(4)
    if site != src
}


def _received(result) -> dict:
    ts = result.timeseries
    assert (ts["time"] == 1.0).all()
    return {(int(r.site), int(r.src)): (r.n, r.x, r.flag, r.loads) for r in ts.itertuples()}


@pytest.fixture
def typed_fields():
    registry.register(typed_fields_protocol.PROTOCOL)
    yield typed_fields_protocol.PROTOCOL
    registry.unregister("typed_fields")


@pytest.mark.parametrize("shards", [1, 3])
def test_every_field_type_arrives_the_same_across_in_process_shards(typed_fields, shards):
    assert _received(emulator.run(_scenario(), backend="inprocess", shards=shards)) == EXPECTED


def test_every_field_type_arrives_the_same_when_shards_exchange_packed_rows(typed_fields, monkeypatch):
    # In-process shards hand each other rows; Ray shards hand each other rows packed by column
    # (model.messages.PackedRows), pickled. Shards in one process made to exchange them, through
    # pickle, take the Ray path of every message between shards.
    made = []

    def packed(rows):
        made.append(len(rows))
        return pickle.loads(pickle.dumps(pack_rows(rows)))

    monkeypatch.setattr(backends, "dataclasses", _Columnar())
    monkeypatch.setattr(shard, "pack_rows", packed)
    assert _received(emulator.run(_scenario(), backend="inprocess", shards=3)) == EXPECTED
    assert sum(made) >= 8  # the messages between shards went packed (4 sites on 3 shards: 8 of 12 at least)


class _Columnar:
    """``dataclasses`` as backends.py uses it, except that shards keep exchanging arrays."""

    @staticmethod
    def replace(spec, **changes):
        changes.pop("columnar", None)
        return dataclasses.replace(spec, **changes)


# A protocol registered in the driver travels in the shard spec to the Ray actors (emulator/plugins.py).
@pytest.mark.parametrize("shards", [1, 3])
def test_every_field_type_arrives_the_same_on_ray_shards(typed_fields, ray_session, shards):
    assert _received(emulator.run(_scenario(), backend="ray", shards=shards)) == EXPECTED


def test_packed_rows_come_back_as_they_were_sent():
    nan = float("nan")
    rows = [
        (2.5, 1, 7, 3, 2.0, 5, 0.0, nan, 0.0, 0.0, 4, 0, 0, 0) + (0,) * 13,
        (1.5, 2, 8, 3, 1.0, 5, 0.0, 1.0, 0.0, 0.0, 9, 0, 0, 0) + (0,) * 13,
        (1.5, 2, 9, 0, 1, 6, 0.0, 2.0, 0.0, 0.0, 4, 0, 0, 0) + (0,) * 13,  # an int where a float goes
    ]
    packed = pickle.loads(pickle.dumps(pack_rows(rows)))
    assert len(packed) == 3 and packed.first == 1.5
    back = packed.rows()
    # The rows as sent, each value of its own type (an in-process shard hands over the rows themselves).
    assert repr(back) == repr(rows)
    assert [[type(v) for v in row] for row in back] == [[type(v) for v in row] for row in rows]
    assert to_batch(packed).tobytes() == to_batch(rows).tobytes()  # straight to an array, no rows made
    # A field whose values are all equal goes once: 300 reports filling 8 of 27 fields.
    reports = [(1.0 + i, i % 7, i, 3, 0.5 + i, 2, float(i % 5), 0.0) + (0.0,) * 6 + (0,) * 13 for i in range(300)]
    assert repr(pack_rows(reports).rows()) == repr(reports)
    assert len(pack_rows(reports).data) < len(pickle.dumps(reports)) / 2
    one = pack_rows(rows[:1])
    assert repr(one.rows()) == repr(rows[:1]) and one.first == 2.5
    # A numpy scalar in a row (a destination drawn from an array, a record built from local_jobs)
    # goes as its Python value: marshal would write its raw bytes.
    drawn = [rows[1][:3] + (np.int64(5),) + rows[1][4:], rows[2][:-1] + (np.float64(0.5),)]
    back = pack_rows(drawn).rows()
    assert back == [rows[1][:3] + (5,) + rows[1][4:], rows[2][:-1] + (0.5,)]
    assert type(back[0][3]) is int and type(back[1][-1]) is float
