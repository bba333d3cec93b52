"""The reply schema of every shipped tool: llama.cpp turns it into a grammar, and each
tool's own prompt example fits it."""

from __future__ import annotations

import json
import re

import pytest

from helpers.files import BASE_DIR
from helpers.reply_schema import reply_schema
from helpers.tool_loader import find_tool_file, load_tool_class, tool_names

EXAMPLE = re.compile(r"~~~json\n(.*?)\n~~~", re.DOTALL)


def shipped_tools():
    return {name: load_tool_class(find_tool_file("agent0", name)) for name in tool_names("agent0")}


def variant_for(schema: dict, tool_name: str) -> dict:
    variants = schema.get("anyOf", [schema])
    return next(v for v in variants if v["properties"]["tool_name"]["const"] == tool_name)


def test_every_tool_and_method_has_a_variant():
    tools = shipped_tools()
    schema = reply_schema(tools)
    names = {v["properties"]["tool_name"]["const"] for v in schema["anyOf"]}
    expected = {n for n in tools if not tools[n].methods}
    expected |= {f"{n}:{m}" for n, t in tools.items() for m in t.methods}
    assert names == expected and "text_editor:patch" in names and "response" in names
    args = variant_for(schema, "code_execution_tool")["properties"]["tool_args"]
    assert set(args["properties"]) == {"runtime", "code", "session"}
    assert args["properties"]["runtime"]["enum"] == ["terminal", "python", "nodejs", "output",
                                                     "reset"]  # fmt: skip


def test_llama_cpp_accepts_it_as_a_grammar():
    xllamacpp = pytest.importorskip("xllamacpp")
    # llama.cpp answers with a GBNF grammar, or hands the schema to llguidance whole.
    grammar = xllamacpp.json_schema_to_grammar(json.dumps(reply_schema(shipped_tools())))
    assert "root ::=" in grammar or grammar.startswith("%llguidance")
    assert "text_editor:patch" in grammar


@pytest.mark.parametrize("name", tool_names("agent0"))
def test_each_tools_prompt_example_fits_the_schema(name):
    tools = shipped_tools()
    text = (BASE_DIR / "prompts" / f"agent.system.tool.{name}.md").read_text()
    example = json.loads(EXAMPLE.search(text).group(1))
    variant = variant_for(reply_schema(tools), example["tool_name"])
    assert set(variant["required"]) <= set(example)
    assert set(example) <= set(variant["properties"])
    tool = tools[example["tool_name"].split(":")[0]]
    tool.Args.model_validate(example["tool_args"])  # what the schema's tool_args mirrors
    assert len(example["headline"]) <= variant["properties"]["headline"]["maxLength"]
