"""Every protocol gridemu knows: name -> :class:`~gridemu.brokers.protocol.Protocol`.

A new protocol is one module (its agent and its description) and one line here;
``docs/adding-a-protocol.md`` shows how. Tests may :func:`register` a protocol of their own.
"""
from __future__ import annotations

from gridemu.brokers.protocol import Protocol
from gridemu.brokers.protocols import averaging, dedicated, directcontr, divisible, fairshare, gm, local, molba, random

PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        local.PROTOCOL,
        random.PROTOCOL,
        averaging.PROTOCOL,
        divisible.AVERAGING_GAME,
        divisible.BILB,
        molba.PROTOCOL,
        gm.PROTOCOL,
        fairshare.PROTOCOL,
        directcontr.PROTOCOL,
        dedicated.PROTOCOL,
    )
}


def register(protocol: Protocol) -> Protocol:
    """Add a protocol (e.g. a test's or a notebook's own) under its name; returns it."""
    if protocol.name in PROTOCOLS and PROTOCOLS[protocol.name] is not protocol:
        raise ValueError(f"a protocol named {protocol.name!r} is registered already")
    PROTOCOLS[protocol.name] = protocol
    return protocol


def unregister(name: str) -> None:
    PROTOCOLS.pop(name, None)


def get(name: str) -> Protocol:
    return PROTOCOLS[name]


def all_keys() -> set[str]:
    """Every [protocol] key some protocol reads (keys of another protocol may stay in a
    scenario: a sweep over protocol.name sets them all)."""
    return {"name"} | {k for p in PROTOCOLS.values() for k in p.keys}
