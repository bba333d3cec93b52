"""The shipped prompts: every tool has its prompt and back; Agent 0's prompt fits its budget."""

from __future__ import annotations

import asyncio

import pytest

from core.agent_types import LoopData, UserMessage
from core.chat import Chat
from core.prompt import tool_manuals
from core.prompt.system_prompt import build_system_prompt
from helpers.errors import InterventionException, RepairableException
from helpers.files import BASE_DIR
from initialize import agent_config
from models.tokens import count_tokens
from server.apis.openai_compat.calls import transcript
from server.apis.openai_compat.wire import Turn

SYSTEM_PROMPT_BUDGET = 2_000


def shipped_tool_names() -> set[str]:
    return {p.stem for p in (BASE_DIR / "tools").glob("*.py") if not p.stem.startswith("_")}


def test_every_tool_has_a_prompt_file_and_back():
    prompts = {
        p.name.removeprefix("agent.system.tool.").removesuffix(".md")
        for p in (BASE_DIR / "prompts").glob("agent.system.tool.*.md")
    }
    assert shipped_tool_names() == prompts


@pytest.mark.parametrize(
    "settings",
    [{}, {"chat_model": "openai/gpt-4.1-mini", "searxng_url": "http://127.0.0.1:8888"}],
    ids=["built-in model", "every tool of a full window"],
)
def test_agent0_default_system_prompt_fits_its_budget(settings):
    context = Chat(agent_config(settings))
    prompt = asyncio.run(build_system_prompt(context.agent0))
    tokens = count_tokens(prompt)
    assert "{{" not in prompt
    assert 0 < tokens < SYSTEM_PROMPT_BUDGET, f"Agent 0's system prompt is {tokens} tokens"


def test_every_shipped_tool_has_a_line_of_its_own_and_a_manual():
    """The line the system prompt lists it by, and the manual it gets when it needs it
    (core/prompt/tool_manuals.py): a prompt file that gave the same for both would list the
    whole manual as its line."""
    agent = Chat(agent_config({"chat_model": "openai/gpt-4.1-mini"})).agent0
    for name in shipped_tool_names() - set(tool_manuals.ALWAYS):  # those are whole anyway
        line = tool_manuals.brief(agent, name)
        whole = tool_manuals.manual(agent, name)
        assert line and line.splitlines()[0] not in whole and whole.startswith(f"### {name}")


async def test_every_framework_prompt_renders_through_the_code_that_uses_it(llm):
    """Each fw.* file is rendered by the real call that uses it, with its real variables."""
    agent = Chat(agent_config()).agent0
    rendered: set[str] = set()
    real_read = agent.read_prompt

    def spy(file: str, /, **variables: object) -> str:
        rendered.add(file)
        return real_read(file, **variables)

    agent.read_prompt = spy  # type: ignore[method-assign]
    agent.add_user_message(UserMessage("m", attachments=["a.txt"], system_message=["s"]))
    agent.add_user_message(UserMessage("i"), intervention=True)
    agent.add_tool_result("t", "r" * 30_000, hint="h")  # saved, and cut for history
    agent.add_warning("w")
    # A conversation an OpenAI client brings to a new chat (server/apis/openai_compat/calls.py).
    told = transcript(agent.ctx, [Turn("user", "u"), Turn("assistant", "a")])
    assert told is not None and "[assistant]\na" in told.for_agent
    for bad in ("prose", '{"tool_args": {}}', '{"tool_name": "nope"}',
                '{"tool_name": "response", "tool_args": {}}'):  # fmt: skip
        with pytest.raises(RepairableException):
            await agent.process_reply(bad, LoopData())
    agent.last_reply = "same"
    with pytest.raises(RepairableException):
        await agent.process_reply("same", LoopData())
    agent.nudged = True
    with pytest.raises(InterventionException):
        await agent.handle_intervention()
    shipped = {p.name for p in (BASE_DIR / "prompts").glob("fw.*.md")}
    # Rendered by tools and paths that need a running tool (covered by their tests).
    elsewhere = {"fw.hint.call_sub.md", "fw.tool_error.md", "fw.tool_stopped.md",
                 "fw.msg_resumed.md", "fw.msg_resumed_node.md", "fw.secret_unknown.md",
                 "fw.history_summary.md", "fw.msg_cut.md",
                 "fw.msg_too_long.md", "fw.answer_too_long.md",
                 "fw.msg_no_progress.md", "fw.hint.small_answer.md",
                 "fw.tool_unavailable.md", "fw.tool_manual.md",
                 "fw.tool_needs_method.md", "fw.path_refused.md",
                 # the tool policy's: tests/integration/test_tool_approvals.py
                 "fw.tool_refused.md", "fw.tool_denied.md"}  # fmt: skip
    for pattern in (
        "fw.call_sub.*.md",
        "fw.handoff.*.md",
        "fw.call_subordinates.*.md",
        "fw.code.*.md",
        "fw.wait.*.md",
        "fw.budget_*.md",
        "fw.topic_summary.*.md",
        "fw.memor*.md",
        "fw.search_*.md",
        "fw.text_editor.*.md",  # tests/unit/helpers/test_text_files.py, test_text_editor.py
        "fw.scheduler.*.md",
        "fw.document_query.*.md",
        "fw.mcp.*.md",
        "fw.workflow.*.md",
        "fw.skills.*.md",
        "fw.vision_load.*.md",  # tests/integration/test_vision.py
        "fw.image*.md",
        "fw.browser.*.md",
        "fw.untrusted.*.md",  # tests/integration/test_untrusted_text.py
        "fw.eval.*.md",  # the judge of evaluations: tests/integration/test_evals.py
        "fw.a2a.*.md",  # a2a_call's: tests/integration/test_a2a.py
    ):
        elsewhere |= {p.name for p in (BASE_DIR / "prompts").glob(pattern)}
    assert shipped - elsewhere == {f for f in rendered if f.startswith("fw.")}
