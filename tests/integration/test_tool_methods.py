"""A tool with methods, called without one, is refused once by the base class (core/tool.py),
with the tool's own methods named, before its `execute` runs."""

from __future__ import annotations

import pytest

from core.agent_types import UserMessage
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply


@pytest.mark.parametrize(
    ("called", "told"),
    [
        ("text_editor", "text_editor:read, text_editor:write or text_editor:patch"),
        ("skills", "skills:list, skills:load, skills:files or skills:read"),
        ("scheduler", "scheduler:list, scheduler:create, scheduler:update, scheduler:delete or "
                      "scheduler:run"),
        ("browser:fly", "browser:open, browser:read, browser:click"),
    ],
)  # fmt: skip
def test_a_call_without_a_method_is_told_the_methods(make_context, llm, usr_dir, called, told):
    llm.script(Reply(reply(called, path="x.txt")), Reply(answer("done")))
    context = make_context()
    context.communicate(UserMessage("go")).result(30)
    refusal = next(item.content for item in context.log.items if item.type in ("tool", "browser"))
    name = called.split(":")[0]
    assert refusal.startswith(f"{name} needs a method: use tool_name ") and told in refusal
    assert refusal.endswith(f"(got {called!r})")
    # The model reads it as a warning in its history, and the call changed nothing.
    assert any(told in str(message) for message in context.agent0.history.output())
    assert not (usr_dir / "workdir" / "x.txt").exists()
