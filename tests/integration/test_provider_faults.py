"""Provider failures: retried when transient, reported clearly when final."""

from __future__ import annotations

import pytest

from core.agent_types import UserMessage
from helpers.errors import ProviderError
from tests.support.agents import answer
from tests.support.fake_llm import CutStream, Fail, Reply

#: Each test runs through both model clients (litellm, the lean OpenAI-SDK one).
pytestmark = pytest.mark.usefixtures("model_client")


def error_items(context):
    return [i for i in context.log.items if i.type == "error"]


def test_rate_limit_is_retried_then_succeeds(make_context, llm):
    llm.script(Fail(status=429, message="slow down", times=2), Reply(answer("made it")))
    context = make_context()
    assert context.communicate(UserMessage("hi")).result(30) == "made it"
    assert len(llm.chat_requests()) == 3
    assert error_items(context) == []


def test_server_error_until_retries_run_out(make_context, llm):
    llm.script(Fail(status=500, message="the backend is on fire", times=3))
    context = make_context(llm_retries=2)
    with pytest.raises(ProviderError, match="the backend is on fire"):
        context.communicate(UserMessage("hi")).result(30)
    assert len(llm.chat_requests()) == 3  # the first try and two retries
    [error] = error_items(context)
    assert "internal error (HTTP 500)" in error.heading  # plain words; the raw text aside
    assert "the backend is on fire" in error.kvps["detail"]
    assert "Traceback" not in error.kvps["detail"] and 'File "' not in error.kvps["detail"]
    # The next message works again.
    llm.script(Reply(answer("all good now")))
    assert context.communicate(UserMessage("again")).result(30) == "all good now"


def test_client_error_is_not_retried(make_context, llm):
    llm.script(Fail(status=401, message="invalid api key"))
    context = make_context()
    with pytest.raises(ProviderError, match="invalid api key"):
        context.communicate(UserMessage("hi")).result(30)
    assert len(llm.chat_requests()) == 1


def test_cut_stream_ends_the_run_with_an_error(make_context, llm):
    llm.script(CutStream(answer("this reply never ends")[:40]))
    context = make_context()
    with pytest.raises(ProviderError):
        context.communicate(UserMessage("hi")).result(30)
    # Output had begun, so it is not silently retried.
    assert len(llm.chat_requests()) == 1
    assert len(error_items(context)) == 1
    llm.script(Reply(answer("recovered")))
    assert context.communicate(UserMessage("again")).result(30) == "recovered"


def test_cut_after_a_complete_reply_costs_nothing(make_context, llm):
    llm.script(CutStream(answer("complete") + "\n"))
    context = make_context()
    assert context.communicate(UserMessage("hi")).result(30) == "complete"
    assert error_items(context) == []


def test_unreachable_provider_is_reported(make_context, llm, monkeypatch):
    monkeypatch.setenv("CADRE_CHAT_API_BASE", "http://127.0.0.1:9/v1")  # discard port: refused
    context = make_context(llm_retries=1)
    with pytest.raises(ProviderError, match="Connection"):
        context.communicate(UserMessage("hi")).result(30)
    assert len(error_items(context)) == 1
