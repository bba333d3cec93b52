"""The reply schema of every shipped tool: llama.cpp turns it into a grammar, and each
tool's own prompt example fits it."""

from __future__ import annotations

import json
import re

import pytest

from core.prompt.chat_variables import prompt_loader
from core.reply.reply_schema import reply_schema, tool_classes
from core.tooling.tool_loader import tool_names

EXAMPLE = re.compile(r"~~~json\n(.*?)\n~~~", re.DOTALL)


def shipped_tools():
    return tool_classes("agent0")


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


def test_a_bounded_fraction_is_offered_as_steps_a_grammar_can_hold():
    """llama.cpp bounds integers only: a 270M model wrote a threshold of 75 (at most 1)."""
    schema = reply_schema(shipped_tools())
    for name in ("memory_load", "memory_forget"):
        threshold = variant_for(schema, name)["properties"]["tool_args"]["properties"]["threshold"]
        assert "type" not in threshold and "maximum" not in threshold
        assert threshold["enum"][0] == 0 and threshold["enum"][-1] == 1
        assert {0.6, 0.75} <= set(threshold["enum"])  # the defaults and the prompts' values
        assert all(0 <= value <= 1 for value in threshold["enum"])
    limit = variant_for(schema, "memory_load")["properties"]["tool_args"]["properties"]["limit"]
    assert limit["type"] == "integer" and limit["maximum"] == 50  # integers stay as they were


def test_llama_cpp_accepts_it_as_a_grammar():
    xllamacpp = pytest.importorskip("xllamacpp")
    # llama.cpp answers with a GBNF grammar, or hands the schema to llguidance whole.
    grammar = xllamacpp.json_schema_to_grammar(json.dumps(reply_schema(shipped_tools())))
    assert "root ::=" in grammar or grammar.startswith("%llguidance")
    assert "text_editor:patch" in grammar


@pytest.mark.parametrize("name", tool_names("agent0"))
def test_each_tools_prompt_example_fits_the_schema(name):
    tools = shipped_tools()
    # Found as Agent 0 finds it: a shipped plugin's tool brings its prompt (plugins/notify_user).
    text = prompt_loader("agent0", None).find(f"agent.system.tool.{name}.md").read_text()
    example = json.loads(EXAMPLE.search(text).group(1))
    variant = variant_for(reply_schema(tools), example["tool_name"])
    assert set(variant["required"]) <= set(example)
    assert set(example) <= set(variant["properties"])
    tool = tools[example["tool_name"].split(":")[0]]
    tool.Args.model_validate(example["tool_args"])  # what the schema's tool_args mirrors
    assert len(example["headline"]) <= variant["properties"]["headline"]["maxLength"]


def test_providers_get_an_object_at_the_root():
    from core.reply.reply_schema import loose_schema

    schema = loose_schema(shipped_tools())
    assert schema["type"] == "object" and "anyOf" not in schema
    assert "text_editor:read" in schema["properties"]["tool_name"]["enum"]
    assert schema["properties"]["tool_args"] == {"type": "object"}


def test_which_models_are_held_to_the_schema():
    from core.reply.reply_schema import wanted
    from initialize import agent_config

    local = agent_config({"chat_model": "local/gemma-3-270m", "structured_output": "off"})
    assert wanted(local.chat_model, local.settings)  # our own server: always
    off = agent_config({"chat_model": "openai/gpt-4.1-mini", "structured_output": "off"})
    assert not wanted(off.chat_model, off.settings)
    on = agent_config({"chat_model": "openai/some-model", "structured_output": "on"})
    assert wanted(on.chat_model, on.settings)


def test_an_agents_schema_is_built_once_and_handed_out_as_a_fresh_copy():
    from core.chat import Chat
    from core.reply.reply_schema import for_agent
    from initialize import agent_config

    agent = Chat(agent_config()).agent0  # the built-in model: small-model mode
    offered = tool_classes("agent0", None, agent.available_tools())
    first = for_agent(agent, precise=True)
    assert first == reply_schema(offered, small=True)
    first["anyOf"].clear()  # what a client does to its copy stays there
    second = for_agent(agent, precise=True)
    assert second == reply_schema(offered, small=True) and second is not first
    assert for_agent(agent, precise=False)["properties"]["tool_args"] == {"type": "object"}


def test_a_small_models_schema_bounds_its_answer_and_its_thoughts():
    """An answer of a small model ran 872 tokens; every token costs it a tenth of a second."""
    variant = variant_for(reply_schema(shipped_tools(), small=True), "response")
    assert variant["properties"]["tool_args"]["properties"]["text"]["maxLength"] == 2_000
    assert variant["properties"]["thoughts"]["maxItems"] == 1
    full = variant_for(reply_schema(shipped_tools()), "response")
    assert "maxLength" not in full["properties"]["tool_args"]["properties"]["text"]


def test_a_local_model_that_repeats_itself_is_held_to_an_answer():
    """The built-in model ran the same `ls -la` three times with its result right there."""
    import asyncio

    from core.chat import Chat
    from initialize import agent_config

    def tool_names(schema: dict) -> set[str]:
        variants = schema.get("anyOf", [schema])  # one variant is the schema itself
        return {v["properties"]["tool_name"]["const"] for v in variants}

    agent = Chat(agent_config()).agent0  # the built-in model: held to a grammar
    assert len(tool_names(asyncio.run(agent._reply_schema()))) > 1
    call = ("code_execution_tool", {"runtime": "terminal", "code": "ls -la"}, "notes.txt")
    assert agent.loop_guard.record(*call) is False  # the first time: a step
    assert len(tool_names(asyncio.run(agent._reply_schema()))) > 1
    assert agent.loop_guard.record(*call) is True  # again, the same: no progress
    assert tool_names(asyncio.run(agent._reply_schema())) == {"response"}
