"""Every protocol gridemu knows: name -> :class:`~gridemu.brokers.protocol.Protocol`.

A new protocol is one folder (its agent, its algorithms, its description) and one name here;
``docs/adding-a-protocol.md`` shows how. Tests may :func:`register` a protocol of their own.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module

from gridemu.brokers.protocol import CAPABILITIES, Protocol, Report
from gridemu.model.errors import ScenarioError

#: The shipped protocols, in listing order. Protocol NAME lives in its own folder,
#: ``brokers/NAME/``, and is described by the ``PROTOCOL`` of ``brokers/NAME/protocol.py``.
#: A module is imported when its protocol is first asked for: a shard's actor imports the
#: one protocol it runs (0.11 s of imports for all of them).
SHIPPED: tuple[str, ...] = (
    "local",
    "random",
    "averaging",
    "averaging_game",
    "bilb",
    "molba",
    "gm",
    "fairshare",
    "directcontr",
    "scheduling_game",
    "power_of_d",
)


class _Protocols(MutableMapping):
    """name -> Protocol, the shipped ones imported on first use, registered ones as given;
    in shipped order, then in registration order."""

    def __init__(self) -> None:
        self._loaded: dict[str, Protocol] = {}
        self._names: dict[str, None] = dict.fromkeys(SHIPPED)

    def __getitem__(self, name: str) -> Protocol:
        if name not in self._loaded:
            if name not in self._names or name not in SHIPPED:
                raise KeyError(name)
            protocol = import_module(f"gridemu.brokers.{name}.protocol").PROTOCOL
            if protocol.name != name:  # a folder out of step with its protocol's name
                raise RuntimeError(f"registry: brokers/{name}/protocol.py describes {protocol.name!r}, not {name!r}")
            self._loaded[name] = protocol
        return self._loaded[name]

    def __setitem__(self, name: str, protocol: Protocol) -> None:
        self._loaded[name] = protocol
        self._names[name] = None

    def __delitem__(self, name: str) -> None:
        del self._names[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


PROTOCOLS: MutableMapping[str, Protocol] = _Protocols()


def register(protocol: Protocol) -> Protocol:
    """Add a protocol (e.g. a test's or a notebook's own) under its name; returns it."""
    if protocol.name in PROTOCOLS and PROTOCOLS[protocol.name] is not protocol:
        raise ValueError(
            f"a protocol named {protocol.name!r} is registered already (a module imported again, a notebook "
            f"cell run twice: unregister({protocol.name!r}) first)"
        )
    PROTOCOLS[protocol.name] = protocol
    return protocol


def unregister(name: str) -> None:
    PROTOCOLS.pop(name, None)


def get(name: str) -> Protocol:
    return PROTOCOLS[name]


def is_shipped(protocol: Protocol) -> bool:
    """Whether ``protocol`` is the one a shipped folder describes: a process that imports
    gridemu finds it by its name alone (a shard's actor, a resumed run)."""
    return protocol.name in SHIPPED and protocol is import_module(f"gridemu.brokers.{protocol.name}.protocol").PROTOCOL


def all_keys() -> set[str]:
    """Every [protocol] key some protocol reads (keys of another protocol may stay in a
    scenario: a sweep over protocol.name sets them all)."""
    return {"name"} | {k for p in PROTOCOLS.values() for k in p.params.keys()}


def having(capability: str) -> list[str]:
    """The registered protocols that declare ``capability``, in listing order."""
    return [name for name, p in PROTOCOLS.items() if p.can(capability)]


def require(protocol: Protocol, capability: str, key: str, problem: str) -> None:
    """The kernel's one capability check: a ScenarioError on ``key`` saying ``problem`` and
    naming the protocols that have ``capability``, unless ``protocol`` has it."""
    if not protocol.can(capability):
        # A protocol of one's own: its author may declare the capability (docs/adding-a-protocol.md).
        own = "" if is_shipped(protocol) else f" (yours can declare capabilities={{{capability!r}}} in its Protocol)"
        raise ScenarioError(
            key,
            f"{problem}; protocols whose agents {CAPABILITIES[capability]}: {', '.join(having(capability))}{own}",
        )


def report_of(name: str) -> Report:
    """How ``gridemu report`` draws a run of protocol ``name``; the defaults for one no longer
    registered (a test's or a notebook's)."""
    return PROTOCOLS[name].report if name in PROTOCOLS else Report()
