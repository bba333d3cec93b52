"""Walking the strings inside nested JSON-like data (tool arguments, log kvps)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """`value` with `fn` applied to every string in it (dict keys are left alone)."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {key: map_strings(item, fn) for key, item in value.items()}
    if isinstance(value, list):
        return [map_strings(item, fn) for item in value]
    return value


def any_string(value: Any, test: Callable[[str], bool]) -> bool:
    """True when some string in `value` passes `test`."""
    if isinstance(value, str):
        return test(value)
    if isinstance(value, dict):
        return any(any_string(item, test) for item in value.values())
    if isinstance(value, list):
        return any(any_string(item, test) for item in value)
    return False
