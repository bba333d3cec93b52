"""Guards for every model: only workable tools offered, no going round in circles, a bounded
answer, one warning row for failed replies; and the small-model prompt.

The real loop against the scripted fake model server.
"""

from __future__ import annotations

import json
import re
import threading

import pytest

from core.agent_types import UserMessage
from helpers.errors import RunError
from tests.support.agents import ECHO_TOOL, answer, make_profile, reply, wait_for
from tests.support.fake_llm import Reply

#: Placeholders of the old reply template that a small model copied word for word.
PLACEHOLDERS = ("A short title of this step", "what you know so far", "name_of_tool", "arg_name")


def system_prompt(llm, call: int = 0) -> str:
    return llm.chat_requests()[call].messages[0]["content"]


def test_search_engine_is_offered_only_with_a_searxng_instance(make_context, llm):
    llm.script(Reply(reply("search_engine", query="http 418")), Reply(answer("done")))
    context = make_context()
    assert context.communicate(UserMessage("search")).result(30) == "done"
    assert "`search_engine`" not in system_prompt(llm)
    warning = llm.chat_requests()[1].messages[-1]["content"]
    assert 'no tool named "search_engine"' in warning
    assert not [i for i in context.log.items if i.type == "tool"]  # it never ran

    llm.script(Reply(answer("again")))
    searching = make_context(searxng_url="http://127.0.0.1:9/")
    searching.communicate(UserMessage("search")).result(30)
    assert "- `search_engine`: Searches the web" in system_prompt(llm, 2)  # its line


def test_a_small_model_gets_few_tools_and_whole_examples_not_placeholders(make_context, llm):
    llm.script(Reply(answer("hi")))
    context = make_context(chat_ctx_length=8_192)
    context.communicate(UserMessage("hello")).result(30)
    prompt = system_prompt(llm)
    for placeholder in PLACEHOLDERS:
        assert placeholder not in prompt
    offered = re.findall(r"^### (\w+)", prompt, re.MULTILINE)
    assert offered == [
        "call_subordinate", "code_execution_tool", "memory_save", "response",
    ]  # fmt: skip
    examples = [json.loads(line) for line in prompt.splitlines() if line.startswith('{"thoughts"')]
    assert {e["tool_name"] for e in examples} >= {"response", "code_execution_tool"}
    assert all(e["headline"] and e["thoughts"] and e["tool_args"] for e in examples)


def test_the_system_prompt_is_the_same_text_on_every_call(make_context, llm, usr_dir):
    """llama.cpp's prompt cache holds only while the prompt's start stays byte-identical."""
    make_profile(usr_dir, "echoer", tools={"echo": ECHO_TOOL})
    llm.script(Reply(reply("echo", text="a")), Reply(answer("one")), Reply(answer("two")))
    context = make_context(agent_profile="echoer", chat_ctx_length=8_192)
    context.communicate(UserMessage("first")).result(30)
    context.communicate(UserMessage("second")).result(30)
    assert system_prompt(llm, 0) == system_prompt(llm, 1) == system_prompt(llm, 2)
    # A small model is told to answer once a result is back (it went on calling tools).
    assert "answer now with the `response` tool" in llm.chat_requests()[1].messages[-1]["content"]


def test_calls_that_alternate_without_progress_stop_the_run(make_context, llm, usr_dir):
    make_profile(usr_dir, "echoer", tools={"echo": ECHO_TOOL})
    first, second = reply("echo", text="a"), reply("echo", text="b")
    llm.script(*(Reply(first if n % 2 == 0 else second) for n in range(12)))
    context = make_context(agent_profile="echoer")
    with pytest.raises(RunError, match="going round in circles"):
        context.communicate(UserMessage("go")).result(30)
    # a, b, then three repeats: the third stops the run.
    assert len(llm.chat_requests()) == 5
    assert "with exactly these arguments before" in llm.chat_requests()[3].messages[-1]["content"]
    error = context.log.items[-1]
    assert error.type == "error" and "echo" in error.content


def test_an_answer_past_the_bound_is_sent_back_to_be_shortened(make_context, llm):
    long = " ".join(f"word{n}" for n in range(2_500))  # ~21,900 characters, all different
    llm.script(Reply(answer(long)), Reply(answer("short")))
    context = make_context()
    assert context.communicate(UserMessage("write")).result(120) == "short"
    assert "at most 20,000 are allowed" in llm.chat_requests()[1].messages[-1]["content"]


def test_unusable_replies_in_a_row_share_one_warning_row(make_context, llm):
    llm.script(*(Reply(f"nonsense {n}") for n in range(3)))
    context = make_context(max_unusable_replies=3, chat_ctx_length=8_192)
    with pytest.raises(RunError, match="3 unusable replies"):
        context.communicate(UserMessage("hi")).result(30)
    warnings = [i for i in context.log.items if i.type == "warning"]
    assert len(warnings) == 1 and "(3 of 3 in a row)" in warnings[0].heading
    error = context.log.items[-1]
    assert error.type == "error" and "choose a larger model in Settings" in error.content


def test_a_call_says_what_it_does_before_its_first_words(make_context, llm):
    """The page showed only a spinner for 37 s while the built-in model read its prompt."""
    gate = threading.Event()
    text = answer("hello there")
    llm.script(Reply([text[:12], text[12:]], gate=gate, delay=1.0))
    context = make_context()
    run = context.communicate(UserMessage("hi"))

    def heading() -> str:
        return next((i.heading for i in context.log.items if i.type == "agent"), "")

    wait_for(lambda: heading() == "A0: Reading the prompt…", 10, "the words before the reply")
    gate.set()
    wait_for(lambda: heading() == "A0: Writing…", 10, "the words while it writes")
    assert run.result(30) == "hello there"
    assert heading() == "A0: Answering"  # the reply's own headline, in the end
