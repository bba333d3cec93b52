"""The JSON schema of a whole agent reply, built from the tools an agent has.

`{"thoughts": [...], "headline": "...", "tool_name": <one of the agent's
tools>, "tool_args": <that tool's arguments>}`: one variant per tool (and
per method, `text_editor:read`), so a decoder held to it can only write a
reply Cadre parses and runs. Lengths are bounded so that a small model,
held to the grammar, still comes to an end.
"""

from __future__ import annotations

import copy
from typing import Any

from helpers.tool import Tool

#: Bounds that keep a constrained small model from writing forever.
THOUGHTS_MAX = 5
THOUGHT_LENGTH = 400
HEADLINE_LENGTH = 100


def tool_variant(name: str, tool: type[Tool]) -> dict[str, Any]:
    """The reply schema for calling `name` (a tool, or `tool:method`) with its arguments."""
    args = copy.deepcopy(tool.Args.model_json_schema())
    args.pop("title", None)
    args.setdefault("type", "object")
    return {
        "type": "object",
        "properties": {
            "thoughts": {
                "type": "array",
                "items": {"type": "string", "maxLength": THOUGHT_LENGTH},
                "maxItems": THOUGHTS_MAX,
            },
            "headline": {"type": "string", "maxLength": HEADLINE_LENGTH},
            "tool_name": {"const": name},
            "tool_args": args,
        },
        "required": ["thoughts", "headline", "tool_name", "tool_args"],
        "additionalProperties": False,
    }


def reply_schema(tools: dict[str, type[Tool]]) -> dict[str, Any]:
    """One schema for a reply calling any of `tools` (name → Tool class)."""
    variants = []
    for name, tool in sorted(tools.items()):
        methods = tool.methods or (None,)
        for method in methods:
            variants.append(tool_variant(f"{name}:{method}" if method else name, tool))
    schema: dict[str, Any] = {"anyOf": variants} if len(variants) != 1 else variants[0]
    # Pydantic puts nested models under $defs of each tool; gather them at the top.
    defs: dict[str, Any] = {}
    for variant in variants:
        found = variant["properties"]["tool_args"].pop("$defs", None)
        if found:
            defs.update(found)
    if defs:
        schema = {**schema, "$defs": defs}
    return schema
