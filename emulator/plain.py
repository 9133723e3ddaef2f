"""An object graph as plain data, and back, without pickle: what a checkpoint file holds.

:func:`encode` turns a graph (a shard: sites, queues, agents, random streams; the
coordinator's counters; the scenario) into a flat table of JSON-able nodes plus numpy
arrays; :func:`decode` builds it again. Nothing in the data can name code to run: a node
names a class only as ``module:qualname`` of a gridemu module (or, for a protocol that is
not shipped, a class of its own modules, already imported), the object is made with
``object.__new__`` and its fields set directly (no ``__init__``, no ``__setstate__``), and
the few reconstructors that are called (``REDUCERS``) are gridemu functions listed here.
Arrays go to an ``.npz`` read with ``allow_pickle=False``; an object array is a list of
nodes. Shared objects stay shared (a node is referenced by its index), cycles included.

A value in a node is a JSON number, string, boolean or null, ``{"f": "inf"}`` for a float
JSON cannot hold, or ``{"r": i}``: node ``i``. A node is a list, its kind first.
"""

from __future__ import annotations

import array
import enum
import math
import sys
import types
from collections import OrderedDict, defaultdict, deque
from fractions import Fraction
from importlib import import_module
from typing import Any, Callable

import numpy as np

#: Functions a node may call to rebuild an object (they are its class's ``__reduce__``):
#: message kinds and their views are classes made at run time from a declaration.
REDUCERS = frozenset(
    (
        "gridemu.model.messages:_kind_of",
        "gridemu.model.messages:_view_of",
        "gridemu.model.messages:MessageKinds",
    )
)
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")
_BUILTIN_TYPES = {t.__name__: t for t in (int, float, bool, str, bytes, list, dict, tuple, set, frozenset, object)}
_BUILTIN_TYPES["NoneType"] = type(None)
_NUMPY_TYPES = {t.__name__: t for t in (np.float64, np.float32, np.int64, np.int32, np.int8, np.uint8, np.bool_)}
_NUMPY_TYPES.update({t.__name__: t for t in (np.uint32, np.uint64, np.int16, np.uint16, np.ndarray)})


class PlainError(ValueError):
    """Data that is not a graph :func:`encode` wrote (read), or an object it cannot write."""


def _name(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


class Encoder:
    """Encode several roots into one table (``nodes``, ``arrays``); ``named``: classes
    written by a role name instead of their module (a protocol that is not shipped)."""

    def __init__(self, named: dict[type, str] | None = None):
        self.nodes: list[Any] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.memo: dict[int, int] = {}
        self.keep: list[Any] = []  # every object memoized: ids stay unique while it encodes
        self.named = named or {}

    def value(self, obj: Any) -> Any:
        t = type(obj)
        if obj is None or t is bool or t is int or t is str:
            return obj
        if t is float:
            return obj if math.isfinite(obj) else {"f": repr(obj)}
        i = self.memo.get(id(obj))
        if i is not None:
            return {"r": i}
        i = len(self.nodes)
        self.memo[id(obj)] = i
        self.keep.append(obj)  # a temporary (a generator's state dict) must not give its id to another
        self.nodes.append(None)
        self.nodes[i] = self._node(obj)
        return {"r": i}

    def _many(self, items: Any) -> list[Any]:
        return [self.value(v) for v in items]

    def _array(self, a: np.ndarray) -> str:
        key = f"a{len(self.arrays)}"
        self.arrays[key] = a
        return key

    def _type(self, t: type) -> list[Any]:
        if t in self.named:
            return ["type", "plugin:" + self.named[t]]
        if t.__module__ == "builtins" and _BUILTIN_TYPES.get(t.__name__) is t:
            return ["type", "builtins:" + t.__name__]
        if t.__module__ == "numpy" and _NUMPY_TYPES.get(t.__name__) is t:
            return ["type", "numpy:" + t.__name__]
        if "<locals>" in t.__qualname__:
            raise PlainError(f"cannot write {t.__qualname__}: a class made inside a function has no name")
        return ["type", _name(t)]

    def _pairs(self, items: Any) -> list[list[Any]]:
        return [[self.value(k), self.value(v)] for k, v in items]

    def _builtin(self, obj: Any) -> list[Any] | None:
        """The node of a container or value of Python's own types, or None for any other."""
        t = type(obj)
        if t is list or t is tuple or t is set or t is frozenset:
            return [t.__name__, self._many(obj)]
        if t is dict or t is OrderedDict:
            return ["dict" if t is dict else "odict", self._pairs(obj.items())]
        if t is defaultdict:
            factory = None if obj.default_factory is None else self.value(obj.default_factory)
            return ["ddict", factory, self._pairs(obj.items())]
        if t is deque:
            return ["deque", self._many(obj), obj.maxlen]
        if t is Fraction:
            return ["fraction", obj.numerator, obj.denominator]
        if t is complex:
            return ["complex", self.value(obj.real), self.value(obj.imag)]
        if t is bytes:
            return ["bytes", self._array(np.frombuffer(obj, dtype=np.uint8))]
        if t is range:
            return ["range", obj.start, obj.stop, obj.step]
        if t is array.array:
            return ["pyarray", obj.typecode, self._array(np.frombuffer(obj.tobytes(), dtype=np.uint8))]
        return None

    def _numpy(self, obj: Any) -> list[Any] | None:
        """The node of an array, a numpy number, a dtype or a random generator, or None."""
        if type(obj) is np.ndarray:
            if obj.dtype.hasobject:
                return ["objarray", list(obj.shape), self._many(obj.ravel().tolist())]
            return ["array", self._array(obj)]
        if isinstance(obj, np.generic):
            if obj.dtype.kind in "biuf":
                return ["npscalar", obj.dtype.str, self.value(obj.item())]
            return ["npscalar0", self._array(np.asarray(obj))]
        if isinstance(obj, np.dtype):
            return ["dtype", self._array(np.empty(0, dtype=obj))]
        if type(obj) is np.random.Generator:
            return ["rng", self.value(obj.bit_generator.state)]
        return None

    def _node(self, obj: Any) -> list[Any]:
        node = self._builtin(obj)
        if node is None:
            node = self._numpy(obj)
        if node is not None:
            return node
        t = type(obj)
        if isinstance(obj, type):
            return self._type(obj)
        if t is types.MethodType and isinstance(obj.__func__, types.FunctionType):
            # A site's own method kept by another object (a callback): its object and name.
            return ["method", self.value(obj.__self__), obj.__func__.__name__]
        if isinstance(obj, enum.Enum):
            return ["enum", self._type(t)[1], obj.name]
        if t.__module__ == "builtins":
            raise PlainError(f"cannot write a {t.__name__} ({obj!r:.80})")
        if getattr(t, "__reduce__", None) is not object.__reduce__ and t not in self.named:
            return self._reduced(obj)
        if isinstance(obj, tuple):  # a namedtuple of gridemu's
            return ["ntuple", self._type(t)[1], self._many(obj)]
        return self._fields(obj)

    def _fields(self, obj: Any) -> list[Any]:
        """An object of a class of gridemu's (or the protocol's): its class and fields."""
        t = type(obj)
        if t.__new__ is not object.__new__:
            raise PlainError(f"cannot write a {t.__qualname__}: it is made by its own __new__")
        fields = dict(getattr(obj, "__dict__", {}))
        for klass in t.__mro__:
            for slot in klass.__dict__.get("__slots__", ()):
                if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                    fields[slot] = getattr(obj, slot)
        return ["obj", self._type(t)[1], [[k, self.value(v)] for k, v in fields.items()]]

    def _reduced(self, obj: Any) -> list[Any]:
        reduced = obj.__reduce__()
        if not isinstance(reduced, tuple) or len(reduced) != 2:
            raise PlainError(f"cannot write a {type(obj).__qualname__}: its __reduce__ is not (function, args)")
        func, args = reduced
        name = _name(func)
        if name not in REDUCERS:
            raise PlainError(f"cannot write a {type(obj).__qualname__}: {name} is not in plain.REDUCERS")
        return ["reduce", name, self.value(args)]


class Decoder:
    """Build the roots an :class:`Encoder` wrote; ``named``: role name -> class (a protocol
    that is not shipped), ``modules``: that protocol's own modules (already imported)."""

    def __init__(
        self,
        nodes: list[Any],
        arrays: dict[str, np.ndarray],
        named: dict[str, type] | None = None,
        modules: tuple[str, ...] = (),
    ):
        if not isinstance(nodes, list):
            raise PlainError("the node table is not a list")
        self.nodes, self.arrays = nodes, arrays
        self.built: dict[int, Any] = {}
        self.named, self.modules = named or {}, modules

    def value(self, v: Any) -> Any:
        if v is None or type(v) in (bool, int, float, str):
            return v
        if type(v) is dict and len(v) == 1:
            if "r" in v and type(v["r"]) is int:
                return self._ref(v["r"])
            if v.get("f") in ("inf", "-inf", "nan"):
                return float(v["f"])
        raise PlainError(f"not a value: {v!r:.80}")

    def _ref(self, i: int) -> Any:
        if i in self.built:
            return self.built[i]
        if not 0 <= i < len(self.nodes):
            raise PlainError(f"a reference to node {i} of {len(self.nodes)}")
        node = self.nodes[i]
        if not isinstance(node, list) or not node or type(node[0]) is not str:
            raise PlainError(f"node {i} is not a node")
        build = _BUILDERS.get(node[0])
        if build is None:
            raise PlainError(f"node {i} is of no known kind ({node[0]!r:.40})")
        try:
            return build(self, i, *node[1:])
        except TypeError as exc:
            raise PlainError(f"node {i} ({node[0]}) is malformed ({exc})") from None

    def _shell(self, i: int, obj: Any) -> Any:
        """Register ``obj`` as node ``i`` before its content is built (cycles find it)."""
        self.built[i] = obj
        return obj

    def _done(self, i: int, obj: Any) -> Any:
        if i in self.built and self.built[i] is not obj:  # a cycle through an immutable node
            raise PlainError(f"node {i} refers to itself through an immutable object")
        self.built[i] = obj
        return obj

    def _list(self, items: Any) -> list[Any]:
        if not isinstance(items, list):
            raise PlainError(f"not a list of values: {items!r:.80}")
        return [self.value(v) for v in items]

    def _pairs(self, items: Any) -> list[tuple[Any, Any]]:
        if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 for p in items):
            raise PlainError("not a list of pairs")
        return [(self.value(k), self.value(v)) for k, v in items]

    def array(self, key: Any) -> np.ndarray:
        if key not in self.arrays:
            raise PlainError(f"no array {key!r:.40}")
        return self.arrays[key]

    def cls(self, name: Any) -> type:
        """The class ``name`` (``module:qualname``) names, if a node may name it."""
        if not isinstance(name, str) or name.count(":") != 1:
            raise PlainError(f"not a class name: {name!r:.80}")
        module, qualname = name.split(":")
        if module == "plugin":
            if qualname not in self.named:
                raise PlainError(f"{name} names no class of the run's protocol")
            return self.named[qualname]
        if module == "builtins" and qualname in _BUILTIN_TYPES:
            return _BUILTIN_TYPES[qualname]
        if module == "numpy" and qualname in _NUMPY_TYPES:
            return _NUMPY_TYPES[qualname]
        if module.startswith("gridemu.") and all(p.isidentifier() for p in module.split(".")):
            try:
                mod = import_module(module)
            except ImportError:
                raise PlainError(f"{name}: no such gridemu module") from None
        elif module in self.modules and module in sys.modules:
            mod = sys.modules[module]
        else:
            raise PlainError(f"{name}: not a class of gridemu or of the run's protocol")
        obj: Any = mod
        for part in qualname.split("."):
            if not part.isidentifier() or part.startswith("__"):
                raise PlainError(f"{name}: not a class name")
            obj = getattr(obj, part, None)
        if not isinstance(obj, type) or _name(obj) != name:
            raise PlainError(f"{name}: no such class")
        return obj


def _b_list(d: Decoder, i: int, items: Any) -> list:
    out = d._shell(i, [])
    out.extend(d._list(items))
    return out


def _b_dict(d: Decoder, i: int, items: Any) -> dict:
    out = d._shell(i, {})
    out.update(d._pairs(items))
    return out


def _b_odict(d: Decoder, i: int, items: Any) -> OrderedDict:
    out = d._shell(i, OrderedDict())
    out.update(d._pairs(items))
    return out


def _b_ddict(d: Decoder, i: int, factory: Any, items: Any) -> defaultdict:
    f = None if factory is None else d.value(factory)
    if f is not None and not isinstance(f, type):
        raise PlainError(f"node {i}: a defaultdict's factory is not a class")
    out = d._shell(i, defaultdict(f))
    out.update(d._pairs(items))
    return out


def _b_set(d: Decoder, i: int, items: Any) -> set:
    out = d._shell(i, set())
    out.update(d._list(items))
    return out


def _b_deque(d: Decoder, i: int, items: Any, maxlen: Any) -> deque:
    if maxlen is not None and type(maxlen) is not int:
        raise PlainError(f"node {i}: a deque's maxlen is not an int")
    out = d._shell(i, deque(maxlen=maxlen))
    out.extend(d._list(items))
    return out


def _b_obj(d: Decoder, i: int, name: Any, fields: Any) -> Any:
    cls = d.cls(name)
    if cls.__new__ is not object.__new__ or getattr(cls, "__reduce__", None) is not object.__reduce__:
        if cls not in d.named.values():
            raise PlainError(f"node {i}: {name} is not made field by field")
    obj = d._shell(i, object.__new__(cls))
    for key, value in d._pairs(fields):
        if not isinstance(key, str) or not key.isidentifier():
            raise PlainError(f"node {i}: a field name {key!r:.40}")
        object.__setattr__(obj, key, value)  # frozen dataclasses too; no __setattr__ of theirs
    return obj


def _b_ntuple(d: Decoder, i: int, name: Any, items: Any) -> tuple:
    cls = d.cls(name)
    if not issubclass(cls, tuple):
        raise PlainError(f"node {i}: {name} is not a tuple")
    return d._done(i, tuple.__new__(cls, d._list(items)))


def _b_enum(d: Decoder, i: int, name: Any, member: Any) -> Any:
    cls = d.cls(name)
    if not issubclass(cls, enum.Enum) or not isinstance(member, str) or member not in cls.__members__:
        raise PlainError(f"node {i}: {member!r:.40} is no member of {name}")
    return d._done(i, cls[member])


def _b_reduce(d: Decoder, i: int, name: Any, args: Any) -> Any:
    if name not in REDUCERS:
        raise PlainError(f"node {i}: {name!r:.80} is not a reconstructor of gridemu's")
    module, qualname = name.split(":")
    func: Callable[..., Any] = getattr(import_module(module), qualname)
    values = d.value(args)
    if not isinstance(values, tuple):
        raise PlainError(f"node {i}: the arguments of {name} are not a tuple")
    try:
        return d._done(i, func(*values))
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise PlainError(f"node {i}: {name} refused its arguments ({exc})") from None


def _b_array(d: Decoder, i: int, key: Any) -> np.ndarray:
    return d._done(i, d.array(key))


def _b_objarray(d: Decoder, i: int, shape: Any, items: Any) -> np.ndarray:
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise PlainError(f"node {i}: not an array shape")
    values = d._list(items)
    if math.prod(shape) != len(values):
        raise PlainError(f"node {i}: {len(values)} items for shape {shape}")
    out = np.empty(len(values), dtype=object)
    out[:] = values if values else out
    return d._done(i, out.reshape(shape))


def _b_npscalar(d: Decoder, i: int, dtype: Any, value: Any) -> Any:
    try:
        dt = np.dtype(dtype) if isinstance(dtype, str) else None
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "biuf":
        raise PlainError(f"node {i}: not a numeric dtype: {dtype!r:.40}")
    return d._done(i, dt.type(d.value(value)))


def _b_npscalar0(d: Decoder, i: int, key: Any) -> Any:
    a = d.array(key)
    if a.shape != ():
        raise PlainError(f"node {i}: not a scalar")
    return d._done(i, a[()])


def _b_dtype(d: Decoder, i: int, key: Any) -> np.dtype:
    return d._done(i, d.array(key).dtype)


def _b_rng(d: Decoder, i: int, state: Any) -> np.random.Generator:
    st = d.value(state)
    name = st.get("bit_generator") if isinstance(st, dict) else None
    if name not in BIT_GENERATORS:
        raise PlainError(f"node {i}: no bit generator of numpy's: {name!r:.40}")
    bits = getattr(np.random, name)()
    try:
        bits.state = st
    except (TypeError, ValueError, KeyError) as exc:
        raise PlainError(f"node {i}: a {name} state numpy refuses ({exc})") from None
    return d._done(i, np.random.Generator(bits))


def _b_type(d: Decoder, i: int, name: Any) -> type:
    return d._done(i, d.cls(name))


def _b_fraction(d: Decoder, i: int, num: Any, den: Any) -> Fraction:
    if type(num) is not int or type(den) is not int or den <= 0:
        raise PlainError(f"node {i}: not a fraction")
    return d._done(i, Fraction(num, den))


def _b_complex(d: Decoder, i: int, re: Any, im: Any) -> complex:
    return d._done(i, complex(float(d.value(re)), float(d.value(im))))


def _b_bytes(d: Decoder, i: int, key: Any) -> bytes:
    return d._done(i, d.array(key).tobytes())


def _b_pyarray(d: Decoder, i: int, typecode: Any, key: Any) -> array.array:
    if typecode not in tuple(array.typecodes):
        raise PlainError(f"node {i}: not an array type code")
    out = array.array(typecode)
    data = d.array(key)
    if data.dtype != np.uint8 or data.size % out.itemsize:
        raise PlainError(f"node {i}: not the bytes of an array of {typecode!r}")
    out.frombytes(data.tobytes())
    return d._done(i, out)


def _b_method(d: Decoder, i: int, owner: Any, name: Any) -> Any:
    obj = d.value(owner)
    cls = type(obj)
    func = getattr(cls, name, None) if isinstance(name, str) and not name.startswith("__") else None
    if not isinstance(func, types.FunctionType) or not (
        cls.__module__.startswith("gridemu.") or cls in d.named.values()
    ):
        raise PlainError(f"node {i}: {name!r:.40} is no method of a gridemu {cls.__qualname__}")
    return d._done(i, types.MethodType(func, obj))


def _b_range(d: Decoder, i: int, *args: Any) -> range:
    if not all(type(a) is int for a in args):
        raise PlainError(f"node {i}: not a range")
    return d._done(i, range(*args))


_BUILDERS: dict[str, Callable[..., Any]] = {
    "list": _b_list,
    "tuple": lambda d, i, items: d._done(i, tuple(d._list(items))),
    "dict": _b_dict,
    "set": _b_set,
    "frozenset": lambda d, i, items: d._done(i, frozenset(d._list(items))),
    "odict": _b_odict,
    "ddict": _b_ddict,
    "deque": _b_deque,
    "fraction": _b_fraction,
    "complex": _b_complex,
    "bytes": _b_bytes,
    "range": _b_range,
    "method": _b_method,
    "pyarray": _b_pyarray,
    "array": _b_array,
    "objarray": _b_objarray,
    "npscalar": _b_npscalar,
    "npscalar0": _b_npscalar0,
    "dtype": _b_dtype,
    "rng": _b_rng,
    "type": _b_type,
    "enum": _b_enum,
    "ntuple": _b_ntuple,
    "obj": _b_obj,
    "reduce": _b_reduce,
}
