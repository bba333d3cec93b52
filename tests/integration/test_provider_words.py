"""Provider failures in plain words: both real clients (litellm and the lean OpenAI-SDK one)
against the fake server (and against no server), each failure sorted into what a person can
act on, with the fix; the same words from either."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from helpers.errors import ProviderError
from models.llm import ModelConfig, RetryNotice
from models.model import for_config
from tests.support.fake_llm import Fail, Reply

#: A port nothing listens on (the discard port): connections are refused.
NOWHERE = "http://127.0.0.1:9/v1"


@pytest.fixture(params=["litellm", "openai"])
def client(request) -> str:
    """Each client in turn: the words must not depend on it."""
    return str(request.param)


def failure(config: ModelConfig) -> ProviderError:
    model = for_config(config)
    with pytest.raises(ProviderError) as caught:
        asyncio.run(model.complete([{"role": "user", "content": "hi"}]))
    assert caught.value.fault is not None
    return caught.value


def config(llm, client, model: str = "openai/chat-model", **changes) -> ModelConfig:
    base = ModelConfig(
        model, api_base=llm.base_url, api_key="k", retries=0, retry_delay=0.01, client=client
    )
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize(
    ("status", "kind", "words"),
    [
        (500, "server", "The model provider had an internal error (HTTP 500)."),
        (401, "key", "The provider refused the API key (HTTP 401)."),
        (404, "model", "is unknown to the provider"),
        (429, "rate", "limiting how fast"),
    ],
)
def test_a_status_is_said_in_plain_words(llm, client, status, kind, words):
    llm.script(Fail(status=status, message="raw provider words"))
    fault = failure(config(llm, client)).fault
    assert fault.kind == kind
    assert words in fault.headline
    assert "litellm" not in fault.headline + fault.fix
    assert "raw provider words" in fault.detail  # the raw text is kept, for Details


def test_retries_are_counted_in_the_words(llm, client):
    llm.script(Fail(status=500, times=3))
    fault = failure(config(llm, client, retries=2)).fault
    assert fault.headline == (
        "The model provider had an internal error (HTTP 500). Cadre tried 3 times."
    )
    assert fault.fix == "Retry, or check the provider's status."


def test_a_model_without_provider_prefix_is_told_to_add_it(llm):
    # `auto` picks litellm for a name without a known prefix: it says what is missing.
    fault = failure(config(llm, "auto", model="chat-model")).fault
    assert fault.kind == "prefix"
    assert "Add the provider prefix, e.g. openai/<model>" in fault.fix
    assert "LLM Provider NOT provided" in fault.detail
    assert llm.chat_requests() == []


def test_no_server_at_the_url(llm, client):
    # The OpenAI SDK reports a refused connection as HTTP 500 "Connection error.".
    fault = failure(config(llm, client, api_base=NOWHERE)).fault
    assert fault.kind == "unreachable"
    assert fault.headline == f"No server answers at {NOWHERE}."


def test_each_retry_is_told_before_its_wait(llm, client):
    llm.script(Fail(status=500, times=2), Reply("fine"))
    notices: list[RetryNotice] = []
    model = for_config(config(llm, client, retries=3, retry_delay=0.01))
    reply = asyncio.run(model.stream([{"role": "user", "content": "hi"}], on_retry=notices.append))
    assert reply.text == "fine"
    assert [n.text for n in notices] == [
        "The provider failed (HTTP 500); retrying in 0.0 s, attempt 2 of 4",
        "The provider failed (HTTP 500); retrying in 0.0 s, attempt 3 of 4",
    ]
    assert RetryNotice(2, 3, 4.0, notices[0].fault).text == (
        "The provider failed (HTTP 500); retrying in 4 s, attempt 2 of 3"
    )
