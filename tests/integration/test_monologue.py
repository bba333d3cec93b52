"""The monologue loop end to end: real litellm against the fake model server."""

from __future__ import annotations

import pytest

from core.agent_types import UserMessage
from core.tooling.tool_loader import tool_names
from helpers.errors import RunError
from tests.support.agents import answer, history_text, log_types, make_profile, reply
from tests.support.fake_llm import Reply

ECHO_TOOL = """
from core.tool import Response, Tool, ToolArgs

class EchoArgs(ToolArgs):
    text: str
    times: int = 1

class Echo(Tool):
    Args = EchoArgs

    async def execute(self, args):
        return Response(message=" ".join([args.text] * args.times))
"""


def test_answer_reaches_the_user_and_the_log(make_context, llm):
    llm.script(Reply(answer("Hello **there**")))
    context = make_context()
    assert context.communicate(UserMessage("hi")).result(30) == "Hello **there**"
    assert log_types(context) == ["user", "agent", "response"]
    agent_item, response_item = context.log.items[1], context.log.items[2]
    assert agent_item.heading == "A0: Answering"
    assert agent_item.kvps["thoughts"] == ["I will use response."]
    assert response_item.content == "Hello **there**"
    sent = llm.chat_requests()[0].messages
    assert sent[0]["role"] == "system" and "### response" in sent[0]["content"]
    assert sent[-1] == {"role": "user", "content": "hi"}


def test_tool_result_goes_back_to_the_model(make_context, llm, usr_dir):
    make_profile(usr_dir, "echoer", tools={"echo": ECHO_TOOL})
    llm.script(Reply(reply("echo", text="ping", times=2)), Reply(answer("done")))
    context = make_context(agent_profile="echoer")
    assert context.communicate(UserMessage("go")).result(30) == "done"
    second_prompt = llm.chat_requests()[1].messages
    assert "[Result of tool `echo`]\nping ping" in second_prompt[-1]["content"]
    tool_item = next(i for i in context.log.items if i.type == "tool")
    assert tool_item.kvps == {"text": "ping", "times": 2} and tool_item.content == "ping ping"


def test_reading_stops_at_the_first_complete_object(make_context, llm):
    rambling = answer("short") + "\n\nAnd now some more text " * 50
    llm.script(Reply(rambling, chunk_size=16))
    context = make_context()
    assert context.communicate(UserMessage("hi")).result(30) == "short"
    stored = context.agent0.history.current.messages[-1].content
    assert stored == answer("short")


@pytest.mark.parametrize(
    ("bad_reply", "warning_part"),
    [
        ("I think the answer is 42.", "not usable"),
        ('{"thoughts": ["x"], "tool_args": {}}', "tool_name is missing"),
        (reply("teleport", where="mars"), 'no tool named "teleport"'),
        (reply("response", txt="missing text"), "Invalid arguments for tool 'response': text"),
    ],
    ids=["prose", "no-tool-name", "unknown-tool", "invalid-args"],
)
def test_unusable_reply_is_fed_back_and_recovered(make_context, llm, bad_reply, warning_part):
    llm.script(Reply(bad_reply), Reply(answer("recovered")))
    context = make_context()
    assert context.communicate(UserMessage("hi")).result(30) == "recovered"
    second_prompt = "\n".join(m["content"] for m in llm.chat_requests()[1].messages)
    assert warning_part in second_prompt
    [rejected] = [i for i in context.log.items if i.kvps.get("status") == "rejected"]
    assert warning_part in rejected.kvps["reason"] and rejected.kvps["reply"] == bad_reply
    warnings = [i for i in context.log.items if i.type == "warning"]
    assert len(warnings) == 1 and "asked again" in warnings[0].content


def test_each_rejected_reply_keeps_its_own_reason_and_text(make_context, llm):
    """Two unusable replies in a row: the row of each says why it was not used and holds
    what the model sent (the second's reason once replaced the first's, and the rows
    were empty: "A0: Rejected")."""
    unknown = reply("teleport", where="mars")
    llm.script(Reply("I think the answer is 42."), Reply(unknown), Reply(answer("recovered")))
    context = make_context()
    assert context.communicate(UserMessage("hi")).result(30) == "recovered"
    rejected = [i for i in context.log.items if i.kvps.get("status") == "rejected"]
    assert [i.kvps["reply"] for i in rejected] == ["I think the answer is 42.", unknown]
    first, second = (i.kvps["reason"] for i in rejected)
    assert "not usable" in first and "teleport" not in first
    assert 'no tool named "teleport"' in second
    assert rejected[0].heading == "A0: Reply not usable"
    [warning] = [i for i in context.log.items if i.type == "warning"]
    assert "(2 of " in warning.heading


def test_unknown_tool_warning_lists_available_tools(make_context, llm):
    llm.script(Reply(reply("teleport")), Reply(answer("ok")))
    context = make_context()
    context.communicate(UserMessage("hi")).result(30)
    warning = llm.chat_requests()[1].messages[-1]["content"]
    # search_engine is offered only with a SearXNG instance set, a2a_call with remote agents.
    offered = [n for n in tool_names("agent0") if n not in ("search_engine", "a2a_call")]
    shipped = ", ".join(offered)
    assert "call_subordinate, " in shipped and "response" in shipped
    assert f"Use one of these tools: {shipped}." in warning


def test_repeated_reply_is_called_out(make_context, llm, usr_dir):
    make_profile(usr_dir, "echoer", tools={"echo": ECHO_TOOL})
    same = reply("echo", text="again")
    llm.script(Reply(same), Reply(same), Reply(answer("fine")))
    context = make_context(agent_profile="echoer")
    assert context.communicate(UserMessage("go")).result(30) == "fine"
    assert "exactly the same reply" in llm.chat_requests()[2].messages[-1]["content"]
    # The repeated call was not executed a second time.
    assert sum(1 for i in context.log.items if i.type == "tool") == 1


def test_breaker_stops_a_model_that_keeps_failing(make_context, llm):
    llm.script(*(Reply(f"nonsense {n}") for n in range(3)))
    context = make_context(max_unusable_replies=3)
    with pytest.raises(RunError, match="3 unusable replies"):
        context.communicate(UserMessage("hi")).result(30)
    assert len(llm.chat_requests()) == 3
    error = context.log.items[-1]
    assert error.type == "error" and "unusable replies" in error.content
    # The chat stays usable.
    llm.script(Reply(answer("back")))
    assert context.communicate(UserMessage("again")).result(30) == "back"


def test_usable_reply_resets_the_breaker(make_context, llm, usr_dir):
    make_profile(usr_dir, "echoer", tools={"echo": ECHO_TOOL})
    llm.script(
        Reply("bad 1"),
        Reply(reply("echo", text="a")),
        Reply("bad 2"),
        Reply(answer("made it")),
    )
    context = make_context(agent_profile="echoer", max_unusable_replies=2)
    assert context.communicate(UserMessage("go")).result(30) == "made it"


def test_tool_with_method_and_empty_args(make_context, llm, usr_dir):
    tool = """
from core.tool import Response, Tool

class Clock(Tool):
    async def execute(self, args):
        return Response(message=f"method={self.method} args={self.args}")
"""
    make_profile(usr_dir, "timer", tools={"clock": tool})
    llm.script(Reply(reply("clock:now")), Reply(answer("ok")))
    context = make_context(agent_profile="timer")
    context.communicate(UserMessage("time?")).result(30)
    assert "method=now args={}" in llm.chat_requests()[1].messages[-1]["content"]


def test_reasoning_is_kept_apart_from_the_reply(make_context, llm):
    llm.script(
        Reply(answer("A"), reasoning="Let me think about this."),
        Reply("<think>hidden musing</think>" + answer("B")),
    )
    context = make_context()
    assert context.communicate(UserMessage("one")).result(30) == "A"
    assert context.communicate(UserMessage("two")).result(30) == "B"
    agent_items = [i for i in context.log.items if i.type == "agent"]
    assert agent_items[0].kvps["reasoning"] == "Let me think about this."
    assert agent_items[1].kvps["reasoning"] == "hidden musing"
    assert "hidden musing" not in history_text(context.agent0)


def test_usage_is_recorded_per_agent_and_chat(make_context, llm):
    llm.script(Reply(answer("x"), usage=(120, 30)), Reply(answer("y"), usage=(200, 10)))
    context = make_context()
    context.communicate(UserMessage("1")).result(30)
    context.communicate(UserMessage("2")).result(30)
    assert context.usage.prompt_tokens == 320 and context.usage.completion_tokens == 40
    assert context.agent0.usage.calls == 2


def test_each_user_message_starts_a_topic(make_context, llm):
    llm.script(Reply(answer("1")), Reply(answer("2")))
    context = make_context()
    context.communicate(UserMessage("first")).result(30)
    context.communicate(UserMessage("second")).result(30)
    history = context.agent0.history
    assert len(history.topics) == 1 and history.topics[0].messages[0].content == "first"
    assert history.current.messages[0].content == "second"


def test_a_crashing_tool_is_reported_to_the_model(make_context, llm, usr_dir):
    crashing = """
from core.tool import Response, Tool

class Crash(Tool):
    async def execute(self, args):
        raise FileNotFoundError("no such file: data.csv")
"""
    make_profile(usr_dir, "crashy", tools={"crash": crashing})
    llm.script(Reply(reply("crash")), Reply(answer("I could not read data.csv")))
    context = make_context(agent_profile="crashy")
    assert context.communicate(UserMessage("go")).result(30) == "I could not read data.csv"
    assert (
        "Tool 'crash' failed: FileNotFoundError: no such file: data.csv"
        in (llm.chat_requests()[1].messages[-1]["content"])
    )


def test_a_tool_that_cannot_load_is_reported_to_the_model(make_context, llm, usr_dir):
    # Issue 21: it used to end the run; the model is told instead, and the run goes on.
    make_profile(usr_dir, "broken", tools={"bad": "def oops(:\n"})
    llm.script(Reply(reply("bad")), Reply(answer("That tool is broken.")))
    context = make_context(agent_profile="broken")
    assert context.communicate(UserMessage("go")).result(30) == "That tool is broken."
    system, told = (llm.chat_requests()[i].messages for i in (0, 1))
    assert "bad.py failed to load: SyntaxError" in system[0]["content"]
    assert "Tool 'bad' cannot be used here" in told[-1]["content"]
    assert not [item for item in context.log.items if item.type == "error"]


def test_profile_prompts_override_single_files(make_context, llm, usr_dir):
    make_profile(
        usr_dir, "pirate", prompts={"agent.system.main.role.md": "## Role\nYou are a pirate."}
    )
    llm.script(Reply(answer("Arr")))
    context = make_context(agent_profile="pirate")
    context.communicate(UserMessage("hi")).result(30)
    system = llm.chat_requests()[0].messages[0]["content"]
    assert "You are a pirate." in system
    assert "autonomous agent of Cadre" not in system
    assert "## How you reply" in system  # the other parts still come from prompts/


def test_the_breaker_starts_afresh_with_each_message(make_context, llm):
    llm.script(Reply("bad"), Reply("worse"))
    context = make_context(max_unusable_replies=2)
    with pytest.raises(RunError):
        context.communicate(UserMessage("one")).result(30)
    llm.script(Reply("still bad"), Reply(answer("fine now")))
    assert context.communicate(UserMessage("two")).result(30) == "fine now"


def test_an_empty_reply_leaves_no_empty_assistant_message(make_context, llm):
    llm.script(Reply("", reasoning="hmm"), Reply(answer("ok")))
    context = make_context()
    assert context.communicate(UserMessage("hi")).result(30) == "ok"
    sent = llm.chat_requests()[1].messages
    assert all(m["content"].strip() for m in sent)
    assert [m["role"] for m in sent] == ["system", "user"]
