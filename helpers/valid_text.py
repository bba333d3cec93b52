"""Text from outside made valid Unicode before Cadre keeps it.

A Python string can hold a lone UTF-16 surrogate (`\\ud800`): a JSON escape
in a model's reply or a tool's JSON gives one, and so does a file name that is
not UTF-8 (`os.listdir` maps its bytes to surrogates). Such a string cannot be
encoded as UTF-8, so the chat file, a long result on disk or the memory store
would refuse it, and keep refusing it as long as it stays in history or the
log. History, the log and the other stores pass what they take in through
`valid_text` (or `valid_value` for nested data) once, where it enters.
"""

from __future__ import annotations

from typing import Any


def valid_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (a split pair joined again)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16 a high and low half that follow each other become the one
        # character they stand for; what is left alone is replaced.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def valid_value(value: Any) -> Any:
    """`value` with every string in it valid, dict keys included (nested dicts and lists)."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_value(key): valid_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [valid_value(item) for item in value]
    return value


def is_valid_value(value: Any) -> bool:
    """Whether every string in `value` (nested dicts, keys included, and lists) is valid
    Unicode: where text is refused rather than repaired (a setting). Walked without
    recursion: a value nested a thousand deep is a value like any other."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not (item.isascii() or valid_text(item) is item):
                return False
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return True
