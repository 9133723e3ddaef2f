"""How a protocol that gridemu does not ship reaches the shards, the checkpoints and the CLI.

A shipped protocol travels as its name: a shard (a Ray actor's process too) imports its
folder. A protocol registered at run time (``registry.register``: a test, a notebook, a
``--plugin`` module) travels as itself, in the shard spec: Ray's cloudpickle carries the
modules that define its agent and hooks by value (:func:`by_value`), so a worker needs
neither the notebook nor the user's file. A shard's state names that protocol's agent class
instead of pickling it (:func:`dump_shard`): a checkpoint holds no code of the user's and
imports none when it is read; it is resumed with the protocol registered again.
"""

from __future__ import annotations

import importlib.util
import io
import pickle
import sys
from contextlib import contextmanager
from dataclasses import fields
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from gridemu.brokers import registry
from gridemu.brokers.protocol import Protocol
from gridemu.model.errors import GridemuError, InvariantError, first_line

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.emulator.shard import Shard, ShardSpec


def carried(protocol: Protocol) -> Protocol | None:
    """What a shard spec carries of ``protocol``: nothing for a shipped one (its name is
    enough), the protocol itself for any other."""
    return None if registry.is_shipped(protocol) else protocol


def protocol_of(spec: "ShardSpec") -> Protocol:
    """The protocol a shard runs: the one its spec carries, else the shipped one of that name."""
    return spec.plugin if spec.plugin is not None else registry.get(spec.protocol)


def _own_classes(protocol: Protocol) -> dict[str, type]:
    """The classes of a protocol that a shard's state holds instances of: its agent and its
    keys' dataclass (every agent holds the frozen parameters)."""
    return {"agent": protocol.agent, "params": protocol.params}


class _NamingPickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, protocol: Protocol):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.names = {id(cls): name for name, cls in _own_classes(protocol).items()}

    def persistent_id(self, obj: Any) -> Any:
        return self.names.get(id(obj)) if isinstance(obj, type) else None


class _NamingUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, protocol: Protocol):
        super().__init__(file)
        self.protocol = protocol
        self.classes = _own_classes(protocol)

    def persistent_load(self, pid: Any) -> Any:
        if pid not in self.classes:
            raise pickle.UnpicklingError(
                f"a shard's state names {pid!r}, not a class of the {self.protocol.name} protocol"
            )
        return self.classes[pid]


def dump_shard(shard: "Shard", protocol: Protocol) -> bytes:
    """A shard's state as bytes. The agent and parameter classes of a protocol that is not
    shipped are named, not pickled: a by-value class (Ray) cannot be found by its module, and a checkpoint
    must not import the user's module when it is read."""
    try:
        if registry.is_shipped(protocol):
            return pickle.dumps(shard, protocol=pickle.HIGHEST_PROTOCOL)
        buf = io.BytesIO()
        _NamingPickler(buf, protocol).dump(shard)
        return buf.getvalue()
    except (pickle.PicklingError, AttributeError, TypeError) as exc:  # a lambda, an open file...
        raise unsaved_state(protocol, exc) from None


def unsaved_state(protocol: Protocol, exc: Exception) -> InvariantError:
    """The one-line error of a checkpoint that cannot hold an agent's state."""
    return InvariantError(
        f"checkpoint: the {protocol.name} protocol's agents hold state a checkpoint cannot save ({first_line(exc)}); "
        "an agent keeps plain data only: numbers, strings, numpy arrays and generators, lists, tuples, dicts, "
        "sets and objects of its own classes, no lambda, closure, function or open file"
    )


def load_shard(state: bytes, protocol: Protocol) -> "Shard":
    """The shard :func:`dump_shard` wrote, with ``protocol``'s agent class put back."""
    return _NamingUnpickler(io.BytesIO(state), protocol).load()


def _own_modules(protocol: Protocol) -> list[str]:
    """The modules outside gridemu that define the protocol's agent (and its bases) and hooks."""
    objects = [*protocol.agent.__mro__, *(getattr(protocol, f.name) for f in fields(protocol))]
    names = {getattr(o, "__module__", None) for o in objects if isinstance(o, type) or callable(o)}
    return sorted(
        n
        for n in names
        if n and n in sys.modules and n not in ("__main__", "builtins") and not n.startswith("gridemu.")
    )


@contextmanager
def by_value(protocol: Protocol | None) -> Iterator[None]:
    """While the block pickles, Ray's cloudpickle copies ``protocol``'s own modules' classes
    and functions into the pickle instead of naming them (``__main__`` it copies anyway): a
    Ray worker cannot import a test module, a notebook or a ``--plugin`` file."""
    if protocol is None:
        yield
        return
    from ray import cloudpickle

    added = [n for n in _own_modules(protocol) if n not in cloudpickle.list_registry_pickle_by_value()]
    for name in added:
        cloudpickle.register_pickle_by_value(sys.modules[name])
    try:
        yield
    finally:
        for name in added:
            cloudpickle.unregister_pickle_by_value(sys.modules[name])


def require_registered(name: str, what: str) -> None:
    """A run of protocol ``name`` goes on only where it is registered (its checkpoint names it)."""
    if name not in registry.PROTOCOLS:
        raise GridemuError(
            f"{what}: the run's protocol {name!r} is not registered in this process: register it again "
            "(gridemu.plugin.register from Python, or --plugin with the file or module that defines it) before resuming"
        )


def load_plugin(target: str) -> list[str]:
    """Import the user's plug-in, a ``.py`` file or a module name on the path, and register
    the ``PROTOCOL`` it defines (a module may also call ``register`` itself); returns the
    names it added. The user names this code: it runs as their own (a scenario never does).
    A file that fails leaves no module behind."""
    path, before = Path(target), set(registry.PROTOCOLS)
    if not (target.endswith(".py") or path.is_file()):
        try:
            return _register_from(target, import_module(target), before)
        except GridemuError:
            raise
        except Exception as exc:  # its own code: a syntax error, a failed import, anything it raises
            # The gridemu command's path does not hold the current folder (python -m's does).
            here = isinstance(exc, ModuleNotFoundError) and exc.name == target and Path(f"{target}.py").is_file()
            raise GridemuError(
                f"--plugin {target}: importing it failed ({type(exc).__name__}: {first_line(exc)})"
                + (
                    f"; a module name is looked up on Python's path, not in this folder: --plugin {target}.py"
                    if here
                    else ""
                )
            ) from None
    if not path.is_file():
        raise GridemuError(f"--plugin {target}: no such file")
    # A name of its own: the file's stem could shadow a module of the same name.
    name = f"gridemu_plugin_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise GridemuError(f"--plugin {target}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise GridemuError(
                f"--plugin {target}: importing it failed ({type(exc).__name__}: {first_line(exc)})"
            ) from None
        return _register_from(target, module, before)
    except GridemuError:
        sys.modules.pop(name, None)
        raise


def _register_from(target: str, module: Any, before: set[str]) -> list[str]:
    protocol = getattr(module, "PROTOCOL", None)
    if protocol is not None:
        if not isinstance(protocol, Protocol):
            raise GridemuError(
                f"--plugin {target}: PROTOCOL is a {type(protocol).__name__}, not a gridemu.plugin.Protocol"
            )
        try:
            registry.register(protocol)
        except ValueError as exc:
            raise GridemuError(f"--plugin {target}: {exc}") from None
    added = [n for n in registry.PROTOCOLS if n not in before]
    if protocol is None and not added:
        raise GridemuError(f"--plugin {target}: defines no PROTOCOL and registers no protocol")
    return added
