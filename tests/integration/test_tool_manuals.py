"""A tool's line in the system prompt, and its manual joining the prompt when the agent needs
it (core/prompt/tool_manuals.py): through the loop, against the fake model server."""

from __future__ import annotations

import json

from core.agent_types import UserMessage
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply

FULL = {"chat_model": "openai/chat-model"}  # a full window: tools listed by their lines


def system(request) -> str:
    return request.messages[0]["content"]


def manual_of(name: str) -> str:
    """A call of the `manual` tool (its argument `tool` is `reply`'s own first parameter)."""
    call = {"thoughts": ["I need its manual."], "headline": "Reading a manual",
            "tool_name": "manual", "tool_args": {"tool": name}}  # fmt: skip
    return json.dumps(call)


def test_a_tools_manual_joins_the_prompt_after_its_first_call(make_context, llm):
    llm.script(
        Reply(reply("notify_user", message="Halfway there.")),
        Reply(reply("text_editor:write", content="no path")),  # a wrong call
        Reply(manual_of("scheduler")),
        Reply(manual_of("nonsense")),
        Reply(answer("done")),
    )
    context = make_context(**FULL)
    assert context.communicate(UserMessage("go")).result(60) == "done"
    first, after_notify, after_wrong, after_asked, after_unknown = llm.chat_requests("chat-model")
    # At first every tool is a line; the manuals are not there.
    assert "- `notify_user`: Shows the user a notification" in system(first)
    assert "### notify_user" not in system(first) and "### text_editor" not in system(first)
    # After the first call: its manual in place of its line; the result is the tool's own.
    assert "### notify_user" in system(after_notify)
    assert "- `notify_user`:" not in system(after_notify)
    assert "manual" not in after_notify.messages[-1]["content"]
    # A wrong call: the error says where the manual is now, and it is there.
    told = after_wrong.messages[-1]["content"]
    assert "path" in told and "manual of `text_editor` is in your instructions now" in told
    assert "### text_editor" in system(after_wrong)
    # Asked for: the manual as the result, and in the prompt from then on.
    assert "### scheduler" in after_asked.messages[-1]["content"]
    assert "### scheduler" in system(after_asked)
    assert 'There is no tool named "nonsense"' in after_unknown.messages[-1]["content"]
    # The prompt grew by the three manuals only: the others are still their lines.
    assert "- `browser`: A web browser" in system(after_unknown)
    # Kept with the agent's data, so a restored chat keeps them in its prompt.
    assert context.agent0.data["manuals_read"] == ["notify_user", "text_editor", "scheduler"]
