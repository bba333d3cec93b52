"""An MCP server's tool as Cadre sees it, and the compact text of its arguments.

Each tool costs prompt tokens in every agent's system prompt, so its arguments
are written as one line (`a: integer, b?: string = "x" - what b is`) instead
of the JSON schema, which takes three to five times the tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: Longest description kept in the prompt (a server may ship pages of it).
DESCRIPTION_LIMIT = 300
#: Longest argument description kept in the prompt.
ARGUMENT_LIMIT = 80


@dataclass(frozen=True)
class McpToolInfo:
    """One tool of a server, as listed by it."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]

    @property
    def full_name(self) -> str:
        """The name agents call it by: `<server>.<tool>`."""
        return f"{self.server}.{self.name}"


def short(text: str, limit: int) -> str:
    """`text` on one line, cut at `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def type_text(schema: dict[str, Any]) -> str:
    """A field's type in a few characters: `integer`, `string[]`, `"a"|"b"`, `object`."""
    if "enum" in schema:
        return "|".join(json.dumps(value) for value in schema["enum"][:8])
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            kinds = [type_text(option) for option in schema[key]]
            return "|".join(dict.fromkeys(kind for kind in kinds if kind != "null")) or "any"
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind if k != "null") or "any"
    if kind == "array":
        return f"{type_text(schema.get('items') or {})}[]"
    return str(kind)


def arguments_text(schema: dict[str, Any]) -> str:
    """The arguments of an input schema on one line; `?` marks an optional one."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, field in properties.items():
        field = field if isinstance(field, dict) else {}
        part = f"{name}{'' if name in required else '?'}: {type_text(field)}"
        if "default" in field:
            part += f" = {json.dumps(field['default'])}"
        if field.get("description"):
            part += f" ({short(str(field['description']), ARGUMENT_LIMIT)})"
        parts.append(part)
    return ", ".join(parts) or "none"
