"""Write a resolved scenario back as TOML (``scenario.toml`` of every run): the file reads
back to the same scenario, whatever strings it holds. And copy scenario data (copy_tree)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if math.isnan(v):
            return "nan"
        return repr(v)
    if isinstance(value, str):
        # A JSON string is a valid TOML basic string: quotes, backslashes and control
        # characters all come out escaped.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else _toml_value(str(key))


def to_toml(data: dict[str, Any]) -> str:
    """Write a resolved scenario dict as TOML (tables and arrays of tables, one level)."""
    lines: list[str] = []
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict) and not _is_table_list(v)}
    for key, value in scalars.items():
        lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"\n[{_toml_key(key)}]")
            for k, v in value.items():
                lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
        elif _is_table_list(value):
            for item in value:
                lines.append(f"\n[[{_toml_key(key)}]]")
                for k, v in item.items():
                    lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    return "\n".join(lines).lstrip("\n") + "\n"


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


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
