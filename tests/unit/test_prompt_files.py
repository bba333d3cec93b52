"""The shipped prompts: every tool has its prompt and back; Agent 0's prompt fits its budget."""

from __future__ import annotations

import asyncio

from agent import AgentContext
from helpers.files import BASE_DIR
from helpers.system_prompt import build_system_prompt
from helpers.tokens import count_tokens
from initialize import initialize_agent

SYSTEM_PROMPT_BUDGET = 2_500


def shipped_tool_names() -> set[str]:
    return {p.stem for p in (BASE_DIR / "tools").glob("*.py") if not p.stem.startswith("_")}


def test_every_tool_has_a_prompt_file_and_back():
    prompts = {
        p.name.removeprefix("agent.system.tool.").removesuffix(".md")
        for p in (BASE_DIR / "prompts").glob("agent.system.tool.*.md")
    }
    assert shipped_tool_names() == prompts


def test_agent0_default_system_prompt_fits_its_budget():
    context = AgentContext(initialize_agent())
    prompt = asyncio.run(build_system_prompt(context.agent0))
    tokens = count_tokens(prompt)
    assert "{{" not in prompt
    assert 0 < tokens < SYSTEM_PROMPT_BUDGET, f"Agent 0's system prompt is {tokens} tokens"


def test_every_framework_prompt_renders():
    """Each fw.* file renders with the variables the code passes it."""
    agent = AgentContext(initialize_agent()).agent0
    variables = {
        "fw.user_message.md": {"message": "m", "attachments": "", "system_message": ""},
        "fw.intervention.md": {"message": "m", "attachments": "a", "system_message": "s"},
        "fw.tool_result.md": {"tool_name": "t", "result": "r", "hint": "h"},
        "fw.warning.md": {"message": "m"},
        "fw.msg_misformat.md": {"error": "e"},
        "fw.tool_not_found.md": {"tool_name": "t", "tools": "response"},
        "fw.msg_repeat.md": {},
        "fw.msg_nudge.md": {},
    }
    shipped = {p.name for p in (BASE_DIR / "prompts").glob("fw.*.md")}
    assert shipped == set(variables)
    for name, values in variables.items():
        assert agent.read_prompt(name, **values).strip()
