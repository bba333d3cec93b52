"""The model seam on the wire: the same tests through both clients (litellm and the lean
OpenAI-SDK one) against the fake server, for chat, structured and embedding calls, and
embeddings counted in a chat's usage like every other call."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from core.agent_types import UserMessage
from helpers.errors import ProviderError
from memory import memories
from models.llm import ModelConfig, Usage
from models.model import for_config
from tests.support.agents import answer, reply
from tests.support.fake_llm import CutStream, Reply, fake_embedding, last_user_contains

USER = [{"role": "user", "content": "Hello there, model"}]


def config(llm, client: str, model: str = "openai/chat-model", **changes) -> ModelConfig:
    base = ModelConfig(model, api_base=llm.base_url, api_key="k", retries=0, client=client)
    return dataclasses.replace(base, **changes)


@pytest.fixture(params=["litellm", "openai"])
def client(request) -> str:
    return str(request.param)


def test_the_setting_picks_the_client(llm, client):
    assert for_config(config(llm, client)).name == client
    assert for_config(config(llm, "auto")).name == "openai"  # OpenAI-compatible: the lean one


def test_a_stream_splits_reasoning_and_counts_priced_usage(llm, client):
    llm.script(Reply("<think>hidden</think>The answer is 4.", reasoning="2 + 2. ", usage=(10, 5)))
    seen: list[tuple[str, str]] = []
    spent: list[Usage] = []

    async def on_chunk(text: str, thought: str) -> bool:
        seen.append((text, thought))
        return False

    model = for_config(config(llm, client, model="openai/gpt-4.1-mini"))
    got = asyncio.run(model.stream(USER, on_chunk, spent.append))

    assert (got.text, got.reasoning) == ("The answer is 4.", "2 + 2. hidden")
    assert "".join(text for text, _ in seen) == got.text
    assert (got.usage.prompt_tokens, got.usage.completion_tokens, got.usage.calls) == (10, 5, 1)
    # litellm's price map: $0.40 per million prompt tokens, $1.60 per million completion.
    assert spent == [got.usage] and got.usage.cost == pytest.approx(10 * 0.4e-6 + 5 * 1.6e-6)


def test_schema_max_tokens_and_extra_options_reach_the_provider(llm, client):
    llm.script(Reply('{"ok": true}'))
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    model = for_config(config(llm, client, kwargs={"temperature": 0.25, "seed": 7}))

    got = asyncio.run(model.complete(USER, schema=schema, max_tokens=33))

    body = llm.chat_requests()[-1].body
    assert got.text == '{"ok": true}'
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (33, 0.25, 7)
    assert body["model"] == "chat-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_a_satisfied_caller_stops_the_stream(llm, client):
    llm.script(Reply('{"a": 1} and then it rambles on and on', chunk_size=4))

    async def enough(text: str, thought: str) -> bool:
        return "}" in text

    got = asyncio.run(for_config(config(llm, client)).stream(USER, enough))

    assert got.text.startswith('{"a": 1}') and got.stopped_early


def test_a_stream_cut_short_is_told_in_the_same_words(llm, client):
    llm.script(CutStream("partial answer that never ends", chunk_size=4))

    with pytest.raises(ProviderError) as caught:
        asyncio.run(for_config(config(llm, client, retries=2)).complete(USER))

    fault = caught.value.fault
    assert fault is not None and fault.kind == "server"
    assert fault.headline == "The provider's reply broke off in the middle."
    assert len(llm.chat_requests()) == 1  # output had begun: never retried


def test_embeddings_come_back_with_their_usage(llm, client):
    spent: list[Usage] = []
    model = for_config(config(llm, client, model="openai/embed-model"))

    vectors = asyncio.run(model.embed(["alpha", "beta"], spent.append))

    assert vectors == [pytest.approx(fake_embedding(t)) for t in ("alpha", "beta")]
    assert llm.embedding_requests()[-1].body["input"] == ["alpha", "beta"]
    [usage] = spent
    assert usage.calls == 1 and usage.prompt_tokens > 0 and usage.completion_tokens == 0


def test_two_keys_for_one_address_are_each_sent_with_their_own_calls(llm, client):
    """Two chats may call one provider with different keys (a project's own): each call
    carries its own, in one process and on one loop, where the lean client keeps one SDK
    client per address and key."""
    llm.script(Reply("one"), Reply("two"), Reply("one again"))
    first, second = (for_config(config(llm, client, api_key=key)) for key in ("key-1", "key-2"))

    async def calls() -> list[str]:
        return [(await model.complete(USER)).text for model in (first, second, first)]

    assert asyncio.run(calls()) == ["one", "two", "one again"]
    sent = [r.headers.get("authorization") for r in llm.chat_requests()]
    assert sent == ["Bearer key-1", "Bearer key-2", "Bearer key-1"]


def test_fifty_streams_at_once(llm, client):
    for i in range(50):
        llm.add_rule(last_user_contains(f"question {i}."), Reply(f"answer {i}"), times=1)
    model = for_config(config(llm, client))

    async def ask(i: int) -> str:
        return (await model.complete([{"role": "user", "content": f"question {i}."}])).text

    async def everyone() -> list[str]:
        return await asyncio.gather(*(ask(i) for i in range(50)))

    assert asyncio.run(everyone()) == [f"answer {i}" for i in range(50)]


def test_embedding_calls_count_in_the_chats_usage(make_context, llm, model_client):
    """Every model call a chat makes is counted (and so bounded by its budgets): chat,
    utility, and the embeddings of its memories."""
    llm.script(Reply(reply("memory_save", text="Paris is in France")), Reply(answer("saved")))
    context = make_context()

    context.communicate(UserMessage("remember this")).result(30)

    embedded = llm.embedding_requests()
    assert embedded  # the memory was embedded
    assert context.usage.calls == len(llm.chat_requests()) + len(embedded)
    assert context.agent0.usage.calls == context.usage.calls


def test_an_embedding_server_without_a_key_is_used(make_context, llm, model_client, monkeypatch):
    """A server of one's own often wants no key: embeddings, like chat calls, send a
    placeholder rather than fall back to keyword search."""
    monkeypatch.setenv("CADRE_EMBED_API_KEY", "")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    context = make_context()
    store = memories.open_area(context.agent0.config.settings)

    saved = asyncio.run(
        memories.save(store, context.agent0.config.embed_model, "a fact", "main", "test", [])
    )

    assert [r.body["input"] for r in llm.embedding_requests()] == [["a fact"]]
    assert saved.id and store.embed_model() == "openai/embed-model"
    assert llm.embedding_requests()[-1].headers["authorization"] == "Bearer no-key"


def test_the_providers_finish_reason_is_kept(llm, client):
    # What a trace reports (gen_ai.response.finish_reasons, core/tracing/attributes.py).
    llm.script(Reply("Cut at the limit", finish_reason="length"), Reply("Whole."))
    model = for_config(config(llm, client))
    assert asyncio.run(model.stream(USER)).finish_reason == "length"
    assert asyncio.run(model.complete(USER)).finish_reason == "stop"
