"""A protocol's ``[protocol]`` keys as one frozen dataclass: names, types, defaults,
documentation and checks in one place (``docs/adding-a-protocol.md``).

Each key is a field declared with :func:`param`::

    @dataclass(frozen=True)
    class RelayParams(Params):
        hops: int = param(1, "sites each new job travels round the ring", nonneg=True)

:meth:`Params.from_table` checks a ``[protocol]`` table against the fields (by their
annotated type: ``bool``, ``int``, ``float``, ``str`` with ``choices``, ``per_site`` values;
any other type needs its own ``check``), fills the defaults, runs the protocol's
cross-key rules (:meth:`Params.validate`) and returns the frozen instance every agent
of the run receives. Nested values are tuples, so that no agent can change what the
other sites of its shard read. :meth:`Params.table` gives the resolved section back as
plain data (``scenario.toml``, ``summary.json``).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Self

from gridemu.model.checks import check_flag, check_number, choice, did_you_mean, per_site_choices, per_site_values
from gridemu.model.errors import ScenarioError

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.protocol import ScenarioFacts

#: ``check(key, value, scenario)``: a key whose type the annotation does not say enough about
#: (a pair of fractions, "meta" or a number); returns the value to keep.
Check = Callable[[str, Any, "ScenarioFacts"], Any]
_NUMBER_CHECKS = ("positive", "nonneg", "finite", "most")
_NEEDS_CHECK = "{key}: a key of type {kind} needs a check of its own (param(..., check=...))"


def param(
    default: Any,
    doc: str,
    *,
    choices: tuple[str, ...] | None = None,
    per_site: bool = False,
    check: Check | None = None,
    to_table: Callable[[Any], Any] | None = None,
    kind: str | None = None,
    derived: bool = False,
    **numbers: Any,
) -> Any:
    """One key: its default (None: filled by ``validate`` from other keys or the scenario),
    its documentation (``gridemu list PROTOCOL``) and its checks: ``choices`` for a name,
    ``positive``/``nonneg``/``finite``/``most`` for a number, ``per_site`` for a value per
    site (a number, a list or a ``{default = ...}`` table, see ``model.checks``), or
    ``check`` for anything else (``to_table`` writes such a value back as plain data, ``kind``
    names what it takes). ``derived``: not a key; the protocol fills it from the jobs
    (``check_jobs``)."""
    unknown = set(numbers) - set(_NUMBER_CHECKS)
    if unknown:
        raise TypeError(f"param: unknown checks {', '.join(sorted(unknown))}")
    meta = {
        "doc": doc,
        "choices": choices,
        "per_site": per_site,
        "check": check,
        "to_table": to_table,
        "kind": kind,
        "derived": derived,
        "numbers": numbers,
    }
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Params:
    """The keys of a protocol that reads none; subclasses declare theirs with :func:`param`."""

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The ``[protocol]`` keys, besides ``name``, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata.get("derived"))

    @classmethod
    def docs(cls) -> list[tuple[str, str, Any, str]]:
        """(key, type, default, documentation) of every key: what ``gridemu list PROTOCOL`` prints."""
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            if f.metadata.get("derived"):
                continue
            meta = f.metadata
            kind = meta.get("kind") or (
                " | ".join(f'"{c}"' for c in meta["choices"]) if meta.get("choices") else _type_name(hints[f.name])
            )
            if meta.get("per_site"):
                kind = (
                    ("a name" if meta.get("choices") else "a number")
                    + " per site (or one for all)"
                    + (f": {kind}" if meta.get("choices") else "")
                )
            out.append((f.name, kind, _plain(f.default), meta.get("doc", "")))
        return out

    @classmethod
    def from_table(cls, table: Mapping[str, Any], scenario: ScenarioFacts, ignore: Collection[str] = ()) -> Self:
        """The checked, defaulted, frozen parameters of a ``[protocol]`` table (``name`` and
        the keys in ``ignore``, another protocol's, are skipped). Every error is a
        ScenarioError naming ``protocol.<key>``."""
        own = cls.keys()
        for key in table:
            if key != "name" and key not in own and key not in ignore:
                keys = ("name", *own)
                raise ScenarioError(
                    f"protocol.{key}", f"unknown key{did_you_mean(key, keys)} (allowed: {', '.join(keys)})"
                )
        hints = typing.get_type_hints(cls)
        values = {}
        for f in dataclasses.fields(cls):
            if f.metadata.get("derived"):
                continue
            value = table.get(f.name, f.default)
            if value is None and f.default is not None:  # a dict's None (TOML has none): no value
                raise ScenarioError(
                    f"protocol.{f.name}", f"None is no value for this key: leave it out for its default, {f.default!r}"
                )
            values[f.name] = None if value is None else _checked(f, hints[f.name], value, scenario)
        return cls(**values).validate(scenario)

    @classmethod
    def check_declaration(cls) -> None:
        """Refuse, when the protocol is made, a key that no table could set: one whose type
        none of ``from_table``'s checks reads and that has no ``check`` of its own (found
        otherwise only when a scenario gives it, or at validate)."""
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # annotations that cannot be resolved here: judged when a table is read
            return
        for f in dataclasses.fields(cls):
            if not f.metadata.get("derived") and _needs_check(f, hints[f.name]):
                raise TypeError(_NEEDS_CHECK.format(key=f.name, kind=hints[f.name]))

    def validate(self, scenario: ScenarioFacts) -> Self:
        """Rules across keys, and what the scenario must be for the protocol; raises
        ScenarioError naming the key. Returns the parameters, with the defaults that depend on
        other keys or on the scenario filled in (``dataclasses.replace``)."""
        return self

    def table(self) -> dict[str, Any]:
        """The keys and their resolved values as plain data (lists, tables), in key order; a
        key still None (not given, and its default is no value, e.g. fairshare's
        ``services``) is left out."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not f.metadata.get("derived") and value is not None:
                out[f.name] = f.metadata["to_table"](value) if f.metadata.get("to_table") else _plain(value)
        return out


def for_site(value: Any, site_id: int) -> Any:
    """A ``per_site`` key's value at site ``site_id``: a key given as one value keeps it (the
    resolved scenario says what was given), a list or ``{default = ...}`` table is a tuple of
    one value per site."""
    return value[site_id] if isinstance(value, tuple) else value


def _needs_check(f: dataclasses.Field, kind: Any) -> bool:
    """Whether no check of ``from_table``'s reads the key: a type other than bool, int, float
    or str (or one of them ``| None``), neither per site nor with a ``check`` of its own."""
    meta = f.metadata
    return not (meta.get("check") is not None or meta.get("per_site") or _unwrapped(kind) in (bool, int, float, str))


def _unwrapped(kind: Any) -> Any:
    args = typing.get_args(kind)
    if type(None) in args and len(args) == 2:  # ``float | None``: a default that validate fills
        return next(a for a in args if a is not type(None))
    return kind


def _checked(f: dataclasses.Field, kind: Any, value: Any, scenario: ScenarioFacts) -> Any:
    meta, key = f.metadata, f"protocol.{f.name}"
    kind = _unwrapped(kind)
    numbers, choices = meta.get("numbers", {}), meta.get("choices")
    if meta.get("check") is not None:
        return meta["check"](key, value, scenario)
    if meta.get("per_site"):
        n = len(scenario.sites)
        if choices:
            return tuple(per_site_choices(key, value, n, choices))
        values = per_site_values(key, value, n, **numbers)
        # A single number stays one (the resolved scenario says what was given).
        return tuple(values) if isinstance(value, (list, dict)) else values[0]
    if kind is bool:
        return check_flag(key, value)
    if kind is int:
        return int(check_number(key, value, integer=True, **numbers))
    if kind is float:
        return check_number(key, value, **numbers)
    if kind is str:
        if choices:
            return choice(key, value, choices)
        if not isinstance(value, str):
            raise ScenarioError(key, f"must be a string, got {value!r}")
        return value
    raise TypeError(_NEEDS_CHECK.format(key=f.name, kind=kind))


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


#: How the documentation names a key's type: as TOML writes it.
_TOML_TYPES = {bool: "true | false", int: "integer", float: "number", str: "string"}


def _type_name(kind: Any) -> str:
    names = [
        _TOML_TYPES.get(k, "list" if typing.get_origin(k) is tuple else str(k))
        for k in typing.get_args(kind) or (kind,)
    ]
    return " or ".join(n for n in names if n != str(type(None)))
