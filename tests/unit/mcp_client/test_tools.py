"""The compact text of an MCP tool's arguments, as the system prompt shows it."""

from __future__ import annotations

from mcp_client.tools import ARGUMENTS_LIMIT, arguments_text, short, type_text


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


def test_a_tool_can_key_a_cache_and_its_schema_counts():
    from mcp_client.tools import McpToolInfo

    def tool(schema):
        return McpToolInfo("files", "read", "Reads a file.", schema)

    one = tool({"type": "object", "properties": {"path": {"type": "string"}}})
    cache = {(one,): "built"}
    assert cache[(tool({"properties": {"path": {"type": "string"}}, "type": "object"}),)]
    assert (tool({"type": "object", "properties": {}}),) not in cache


def test_any_json_where_a_schema_should_be_is_read_as_any():
    """A server's schema is not trusted to be a schema: no shape of it breaks the prompt."""
    schema = {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "choice": {"anyOf": ["not a schema", {"type": "string"}]},
            "bad_enum": {"enum": 5},
            "bad_type": {"type": {"nested": True}},
            "plain": 7,
        },
        "required": "pair",
    }
    assert arguments_text(schema) == (
        "pair?: any[], choice?: any|string, bad_enum?: any, bad_type?: any, plain?: any"
    )


def test_a_huge_schema_stays_a_short_line():
    huge = "x" * 100_000
    schema = {
        "type": "object",
        "properties": {
            f"field_{n}_{huge}": {"enum": [huge, "b"], "default": huge, "description": huge}
            for n in range(300)
        },
    }
    text = arguments_text(schema)
    assert len(text) <= ARGUMENTS_LIMIT and text.endswith("…")


def test_a_broken_input_schema_checks_nothing_instead_of_failing_the_call():
    """A server's schema is not trusted to be one: a broken one leaves the judging to the
    server, it never ends the agent's step with a crash."""
    from mcp_client.validation import argument_problems

    for schema in ({"type": "nosuch"}, {"type": "object", "properties": 5}, {"$ref": "#/nope"}):
        assert argument_problems(schema, {"a": 1}) == []
    assert argument_problems({"type": "object", "required": ["a"]}, {}) == [
        "tool_args: 'a' is a required property"
    ]
