"""Write a resolved scenario back as TOML (``scenario.toml`` of every run): the file reads
back to the same scenario, whatever strings it holds. And copy scenario data (copy_tree)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import tomli_w


def _plain(value: Any) -> Any:
    """Scenario data as the types a TOML writer takes: numpy numbers as Python's, tuples as lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def to_toml(data: dict[str, Any]) -> str:
    """Write a resolved scenario dict as TOML with tomli-w: any key or string (non-ASCII
    letters, digits of other scripts, quotes, spaces) is quoted and escaped as TOML wants."""
    return tomli_w.dumps(_plain(data))


def copy_tree(data: Any) -> Any:
    """A deep copy of scenario data: its tables and lists are copied, its numbers and strings
    shared; anything else goes to ``copy.deepcopy``. Linear, and several times faster than
    ``deepcopy`` alone, whose memo costs most of its time on a list of 100,000 site tables."""
    if isinstance(data, dict):
        return {k: copy_tree(v) for k, v in data.items()}
    if isinstance(data, list):
        return [copy_tree(v) for v in data]
    if data is None or isinstance(data, (str, int, float)):
        return data
    return copy.deepcopy(data)
