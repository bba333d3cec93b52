"""The compact text of an MCP tool's arguments, as the system prompt shows it."""

from __future__ import annotations

from mcp_client.tools import arguments_text, short, type_text


def test_arguments_in_one_line():
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Where to look,\n  relative to the root"},
            "depth": {"type": "integer", "default": 2},
            "mode": {"enum": ["fast", "full"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["path"],
    }
    assert arguments_text(schema) == (
        "path: string (Where to look, relative to the root), depth?: integer = 2, "
        'mode?: "fast"|"full", tags?: string[], limit?: integer'
    )
    assert arguments_text({"type": "object"}) == "none"
    assert type_text({"type": ["string", "null"]}) == "string"


def test_long_text_is_cut_on_one_line():
    assert short("a  b\nc", 10) == "a b c"
    assert short("x" * 20, 10) == "x" * 9 + "…"
