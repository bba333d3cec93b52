"""A run the provider ends: plain words on the page, the retries shown live, no empty
"Generating..." row left, and a Retry that goes on from the failed step."""

from __future__ import annotations

import logging

import pytest

from core import failed_step
from core.agent_types import UserMessage
from helpers.errors import ProviderError, UserError
from tests.support.agents import answer
from tests.support.fake_llm import Fail, Reply

QUESTION = "what does the zebra-quokka say?"


def fail_a_run(make_context, llm):
    llm.script(Fail(status=500, message="the backend is on fire", times=3))
    context = make_context(llm_retries=2)
    headings: list[str] = []
    context.log.subscribe(lambda item: headings.append(item.heading))
    with pytest.raises(ProviderError):
        context.communicate(UserMessage(QUESTION)).result(30)
    return context, headings


def test_the_error_is_in_plain_words_with_the_raw_text_aside(make_context, llm):
    context, _ = fail_a_run(make_context, llm)
    [error] = [i for i in context.log.items if i.type == "error"]
    assert error.heading == (
        "The model provider had an internal error (HTTP 500). Cadre tried 3 times."
    )
    assert error.content == "Retry, or check the provider's status."
    assert "litellm" not in error.heading + error.content
    assert "the backend is on fire" in error.kvps["detail"]
    assert error.kvps["retry"] is True


def test_the_error_the_person_sees_is_in_the_server_log_with_its_traceback(
    make_context, llm, caplog
):
    with caplog.at_level(logging.WARNING, logger="core.runner"):
        context, _ = fail_a_run(make_context, llm)
    [line] = [r for r in caplog.records if r.name == "core.runner"]
    assert context.id in line.getMessage() and "the backend is on fire" in line.getMessage()
    assert line.exc_info is not None and isinstance(line.exc_info[1], ProviderError)


def test_no_generating_row_stays_behind(make_context, llm):
    context, _ = fail_a_run(make_context, llm)
    assert [i.heading for i in context.log.items if "Generating" in i.heading] == []


def test_the_failed_calls_own_row_becomes_the_error(make_context, llm):
    """The row that showed the retries is the error now: no second row for one call."""
    context, _ = fail_a_run(make_context, llm)
    assert [i.type for i in context.log.items if i.type != "user"] == ["error"]
    [error] = [i for i in context.log.items if i.type == "error"]
    assert "retrying" in error.kvps  # the call's row (its retries' line, now ended)


def test_the_retries_show_live_on_the_row(make_context, llm):
    _, headings = fail_a_run(make_context, llm)
    assert "A0: The provider failed (HTTP 500); retrying in 0.0 s, attempt 2 of 3" in headings
    assert "A0: The provider failed (HTTP 500); retrying in 0.0 s, attempt 3 of 3" in headings


def test_retry_goes_on_from_the_failed_step(make_context, llm):
    context, _ = fail_a_run(make_context, llm)
    [error] = [i for i in context.log.items if i.type == "error"]
    llm.script(Reply(answer("all good now")))
    handle = context.runtime.call(failed_step.retry, context, error.id)
    assert handle.result(30) == "all good now"
    # The user's message was not sent again: once in the log, once in the prompt.
    assert [i.content for i in context.log.items if i.type == "user"] == [QUESTION]
    messages = llm.chat_requests()[-1].body["messages"]
    assert sum(str(m["content"]).count("zebra-quokka") for m in messages) == 1
    assert error.kvps["retry"] is False
    with pytest.raises(UserError, match="offers no retry"):
        context.runtime.call(failed_step.retry, context, error.id)


def test_retry_is_refused_once_a_message_came_since(make_context, llm):
    context, _ = fail_a_run(make_context, llm)
    [error] = [i for i in context.log.items if i.type == "error"]
    llm.script(Reply(answer("a new question answered")))
    context.communicate(UserMessage("another question")).result(30)
    with pytest.raises(UserError, match="a message was sent after"):
        context.runtime.call(failed_step.retry, context, error.id)


def test_a_retry_that_gets_through_clears_the_line(make_context, llm):
    llm.script(Fail(status=503), Reply(answer("made it")))
    context = make_context()
    assert context.communicate(UserMessage("hi")).result(30) == "made it"
    assert not any("retrying" in i.heading for i in context.log.items)
