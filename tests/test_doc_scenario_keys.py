"""docs/scenarios.md names every key a scenario may set: each section's keys as the loader
accepts them (``emulator/scenario.py``), ``[faults]``', ``[policy]``'s and every shipped
protocol's ``[protocol]`` keys. A key added to the code without a word on the page fails here.
(The page's defaults are checked by hand; ``gridemu list NAME`` prints the protocols' own.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gridemu.brokers import registry
from gridemu.emulator.scenario import _KNOWN
from gridemu.sites.fairshare_runtime import _KEYS as POLICY_KEYS
from gridemu.sites.faults import KEYS as FAULT_KEYS

DOC = Path(__file__).resolve().parent.parent / "docs" / "scenarios.md"


def named(key: str, text: str) -> bool:
    """``key`` appears as a word of its own (not inside another key such as ``t_end_x``)."""
    return re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", text) is not None


def test_named_is_a_whole_word():
    assert named("t_end", "t_start with t_end or") and not named("end", "t_end") and not named("X", "X_1")


SECTIONS = {
    **{section: sorted(keys) for section, keys in _KNOWN.items()},
    "faults": sorted(FAULT_KEYS),
    "policy": sorted(POLICY_KEYS),
    **{f"protocol {name}": list(p.params.keys()) for name, p in registry.PROTOCOLS.items()},
}


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_every_key_is_on_the_page(section):
    text = DOC.read_text()
    missing = [k for k in SECTIONS[section] if not named(k, text)]
    assert not missing, f"docs/scenarios.md does not name the {section} keys {missing}"
