"""Tolerant reading of the model's reply: one JSON object naming the tool to run.

Each turn the model answers with a single object::

    {"thoughts": ["..."], "headline": "...", "tool_name": "...", "tool_args": {...}}

Models wrap it in prose or code fences, leave trailing commas, use single
quotes, forget to quote keys, get cut off mid-string, or write a second object
after the first. This module turns such text into something the loop can use,
in three places of the loop (docs/architecture.md, "A run, from message to answer"):

- `JsonObjectScanner` (in `json_scan`) is fed the stream chunk by chunk and says
  where the first complete top-level object ends, so the loop can stop reading there;
- `PartialReader` (in `partial_reply`) pulls the headline, thoughts, tool name and
  the `response` text out of the reply as it streams, for live display;
- `parse_reply`, here, reads the finished reply into an `AgentReply`, or raises
  `ReplyFormatError` with a message the model can act on.

The readers of the other two modules are re-exported here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from json_repair import repair_json

from core.reply.partial_reply import (
    THOUGHTS_KEYS,
    TOOL_ARGS_KEYS,
    TOOL_NAME_KEYS,
    PartialReply,
    extract_partial,
)
from helpers.errors import RepairableException
from helpers.json_scan import LENIENT_JSON, JsonObjectScanner

__all__ = [
    "AgentReply",
    "JsonObjectScanner",
    "PartialReply",
    "ReplyFormatError",
    "extract_partial",
    "parse_reply",
    "split_tool_name",
]


class ReplyFormatError(RepairableException, ValueError):
    """The reply holds a JSON object, but not one the loop can act on.

    A `RepairableException`, so the loop feeds the text back to the model; also a
    `ValueError`, since it is a malformed value like any other parse failure.
    """


# ---------------------------------------------------------------------------
# Full parse of a finished reply
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentReply:
    """One model turn, read and normalised."""

    thoughts: list[str] = field(default_factory=list)
    headline: str = ""
    tool_name: str
    """The tool's name, without a ``:method`` suffix."""
    tool_method: str | None = None
    """The part after ``:`` in ``"tool_name": "name:method"``, if any."""
    tool_args: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    """The object as parsed, before normalisation."""


def split_tool_name(name: str) -> tuple[str, str | None]:
    """Split ``"name:method"`` into ``("name", "method")``; no method gives None."""
    tool, _, method = name.partition(":")
    return tool.strip(), method.strip() or None


def parse_reply(text: str) -> AgentReply | None:
    """Read the reply object in `text` as an `AgentReply`.

    The reply is the first JSON object that names a tool; objects before it
    without one (braces in prose: "I'll fill in {name}") are passed over.
    Returns None when no JSON object can be found (plain prose, ``[1, 2]``); an
    object inside a list counts, as does an object json_repair can make of
    broken text. Raises `ReplyFormatError` when there are objects but none
    names a tool, or the tool's arguments are not an object.
    """
    first: tuple[dict[str, Any], bool] | None = None
    pos = 0
    for _ in range(_MAX_CANDIDATES):
        start = text.find("{", pos)
        if start < 0:
            break
        obj, end = _read_object(text, start)
        if isinstance(obj, dict):
            if _first(obj, TOOL_NAME_KEYS) is not None or end is None:
                return _to_reply(obj, truncated=end is None)
            first = first or (obj, False)
        if end is None:
            break
        pos = end
    return _to_reply(first[0], truncated=first[1]) if first else None


def _read_object(text: str, start: int) -> tuple[Any, int | None]:
    """The value starting at `start` and the index after it (None: it never closed)."""
    try:
        # Fast path, the usual case: valid JSON. raw_decode reads one object
        # and ignores what follows, in C, without a scan to find its end.
        return LENIENT_JSON.raw_decode(text, start)
    except json.JSONDecodeError:
        pass
    scanner = JsonObjectScanner()
    end = scanner.feed(text[start:])
    # Only this object (or all from `{` on, if it never closed) goes to
    # json_repair: it is pure Python (~3 µs a character), and given trailing
    # text it may return a list of several values.
    if end is None:
        return _repair(text[start:]), None
    return _repair(text[start : start + end]), start + end


#: Objects looked at before giving up on finding the one that names a tool.
_MAX_CANDIDATES = 8


def _repair(text: str) -> Any:
    try:
        obj = repair_json(text, return_objects=True)
    except (ValueError, RecursionError):  # absurd nesting; say "no object", not crash
        return None
    if isinstance(obj, list):
        # json_repair yields a list when it sees several values: keep the first object.
        obj = obj[0] if obj else None
    return obj


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if obj.get(key) is not None:
            return obj[key]
    return None


def _to_reply(obj: dict[str, Any], *, truncated: bool) -> AgentReply:
    # If the reply was cut off, say so: "got str" alone would puzzle the model.
    hint = " (the reply ended before the JSON object was closed)" if truncated else ""

    name = _first(obj, TOOL_NAME_KEYS)
    if name is None or (isinstance(name, str) and not name.strip()):
        keys = ", ".join(str(key) for key in obj) or "none"
        raise ReplyFormatError(f"tool_name is missing (keys present: {keys}){hint}")
    if not isinstance(name, str):
        raise ReplyFormatError(f"tool_name must be a string, got {type(name).__name__}{hint}")
    tool_name, tool_method = split_tool_name(name)
    if not tool_name:
        raise ReplyFormatError(f"tool_name is missing before ':' in {name!r}{hint}")

    args = _first(obj, TOOL_ARGS_KEYS)
    if args is None:
        args = {}
    elif not isinstance(args, dict):
        raise ReplyFormatError(f"tool_args must be a JSON object, got {type(args).__name__}{hint}")

    headline = obj.get("headline")
    return AgentReply(
        thoughts=_as_strings(_first(obj, THOUGHTS_KEYS)),
        headline="" if headline is None else _as_string(headline),
        tool_name=tool_name,
        tool_method=tool_method,
        tool_args=args,
        raw=obj,
    )


def _as_string(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _as_strings(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [_as_string(item) for item in value if item is not None]
    return [_as_string(value)]
