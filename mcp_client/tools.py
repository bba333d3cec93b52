"""An MCP server's tool as Cadre sees it, and the compact text of its arguments.

Each tool costs prompt tokens in every agent's system prompt, so its arguments
are written as one line (`a: integer, b?: string = "x" - what b is`) instead
of the JSON schema, which takes three to five times the tokens.

A server is not trusted to keep that small, nor to list tools that fit: a
server's tools are taken up to TOOLS_LIMIT, a tool's name must be one Cadre
can call and show on one line (TOOL_NAME), and every part of the text is cut
(names, types, defaults, the whole line), whatever shape its schema has.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: Longest description kept in the prompt (a server may ship pages of it).
DESCRIPTION_LIMIT = 300
#: Longest first sentence of a description on a tool's line (before its manual is read).
BRIEF_LIMIT = 120
#: Longest argument description kept in the prompt.
ARGUMENT_LIMIT = 80
#: Longest text of a tool's arguments (a schema may have thousands of them).
ARGUMENTS_LIMIT = 600
#: Longest argument name, type or default kept in the prompt.
PART_LIMIT = 40
#: Most tools taken from one server (each costs every prompt its tokens).
TOOLS_LIMIT = 100
#: A tool name Cadre takes: ASCII letters, digits, `_`, `-` and `.`, as the MCP
#: specification advises (no `:`, space or newline: it is a heading of the prompt).
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class McpToolInfo:
    """One tool of a server, as listed by it."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any] = field(compare=False)
    #: The schema as canonical JSON: what equality and the hash compare (a dict has no
    #: hash, and the system prompt's cache key holds the tools).
    schema_text: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema_text", json.dumps(self.input_schema, sort_keys=True))

    @property
    def full_name(self) -> str:
        """The name agents call it by: `<server>.<tool>`."""
        return f"{self.server}.{self.name}"


def short(text: str, limit: int) -> str:
    """`text` on one line, cut at `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def value_text(value: object) -> str:
    """A value from a schema (an enum's, a default) as JSON, cut at PART_LIMIT."""
    return short(json.dumps(value, ensure_ascii=False, default=str), PART_LIMIT)


def type_text(schema: object, depth: int = 0) -> str:
    """A field's type in a few characters: `integer`, `string[]`, `"a"|"b"`, `object`.

    Any JSON at all may stand where a schema should: what is not one is `any`."""
    if not isinstance(schema, dict) or depth > 4:
        return "any"
    if isinstance(schema.get("enum"), list):
        return "|".join(value_text(value) for value in schema["enum"][:8])
    if "const" in schema:
        return value_text(schema["const"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            kinds = [type_text(option, depth + 1) for option in schema[key][:8]]
            return "|".join(dict.fromkeys(kind for kind in kinds if kind != "null")) or "any"
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return "|".join(short(str(k), PART_LIMIT) for k in kind[:8] if k != "null") or "any"
    if kind == "array":
        return f"{type_text(schema.get('items') or {}, depth + 1)}[]"
    return short(kind, PART_LIMIT) if isinstance(kind, str) else "any"


def brief_text(description: str) -> str:
    """A description's first sentence, for the tool's line in the prompt."""
    flat = " ".join(description.split())
    first = re.split(r"(?<=[.!?])\s", flat, maxsplit=1)[0]
    return short(first, BRIEF_LIMIT)


def argument_names(schema: dict[str, Any]) -> str:
    """The arguments' names alone, `?` marking an optional one (a tool's line)."""
    properties = schema.get("properties")
    listed = schema.get("required")
    required = set(listed) if isinstance(listed, list) else set()
    names = [
        f"{short(str(name), PART_LIMIT)}{'' if name in required else '?'}"
        for name in (properties if isinstance(properties, dict) else {})
    ]
    return short(", ".join(names), ARGUMENTS_LIMIT // 3)


def arguments_text(schema: dict[str, Any]) -> str:
    """The arguments of an input schema on one line; `?` marks an optional one."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    listed = schema.get("required")
    required = (
        {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
    )
    parts: list[str] = []
    length = 0
    for name, given in properties.items():
        if length > ARGUMENTS_LIMIT:
            break  # the line is cut below; the rest need not be written
        prop = given if isinstance(given, dict) else {}
        part = f"{short(name, PART_LIMIT)}{'' if name in required else '?'}: {type_text(prop)}"
        if "default" in prop:
            part += f" = {value_text(prop['default'])}"
        if prop.get("description"):
            part += f" ({short(str(prop['description']), ARGUMENT_LIMIT)})"
        parts.append(part)
        length += len(part) + 2
    return short(", ".join(parts), ARGUMENTS_LIMIT) or "none"
