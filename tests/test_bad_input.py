"""Bad input as a user meets it (an audit of the CLI and gridemu.run, branch badinput): values
of the wrong type, keys a table never read, window bounds of a trace, empty --grid values.
Each is one line naming the key and exit 2, never a traceback, and nothing is dropped silently."""

from __future__ import annotations

import pytest

from gridemu.emulator.api import run
from gridemu.model.errors import ScenarioError
from tests.test_errors import expect_error


@pytest.mark.parametrize("value", ["[1]", "{a=1}"], ids=["list", "table"])
def test_a_protocol_name_that_is_no_string_is_named(capsys, value):
    # It was a TypeError (unhashable type) from the registry's lookup, exit 1.
    expect_error(
        capsys, ["validate", "quickstart", "--set", f"protocol.name={value}"], "protocol.name", "unknown value"
    )
    with pytest.raises(ScenarioError, match="protocol.name"):
        run("quickstart", backend="inprocess", overrides={"protocol.name": ["averaging"]})
