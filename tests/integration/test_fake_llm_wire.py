"""The fake LLM server, exercised through the real litellm client, the OpenAI SDK and raw HTTP.

These tests pin down both the server's behaviour and the litellm facts documented in
``tests/support/fake_llm.py`` (exception types, retries, where usage and reasoning
arrive), so a litellm upgrade that changes them fails here first.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import os
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch on import

import litellm  # noqa: E402 - must follow the environment setting above
from litellm.exceptions import MidStreamFallbackError  # noqa: E402

from tests.support.fake_llm import (  # noqa: E402
    NO_SCRIPT_MESSAGE,
    REFUSED_MESSAGE,
    CutStream,
    Fail,
    FakeLLMServer,
    Hang,
    Reply,
    fake_embedding,
    last_user_contains,
    model_is,
    start_fake_llm,
)

NO_RETRIES: dict[str, Any] = {"num_retries": 0, "max_retries": 0}
USER = [{"role": "user", "content": "Hello there, model"}]


@pytest.fixture(autouse=True)
def _quiet_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    """No "Give Feedback" banner on every expected error (tests/conftest.py guards the network)."""
    monkeypatch.setattr(litellm, "suppress_debug_info", True)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(models=("main", "util")) as fake:
        yield fake


async def chat(server: FakeLLMServer, model: str = "main", **kwargs: Any) -> Any:
    """One litellm call against the fake server, without retries."""
    params: dict[str, Any] = {"messages": USER, **NO_RETRIES, **kwargs}
    return await litellm.acompletion(
        model=f"openai/{model}", api_base=server.base_url, api_key="test", **params
    )


async def stream(server: FakeLLMServer, model: str = "main", **kwargs: Any) -> list[Any]:
    """A streamed call with usage requested; returns every chunk litellm yields."""
    response = await chat(
        server, model, stream=True, stream_options={"include_usage": True}, **kwargs
    )
    return [chunk async for chunk in response]


def content_of(chunks: list[Any]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


# --------------------------------------------------------------------------- streaming


async def test_streamed_text_reassembles_exactly(server: FakeLLMServer) -> None:
    text = 'Grüße 🎉 — "quoted"\n{"tool": "x", "args": {"path": "C:\\\\tmp", "n": [1, 2]}}\n\tend'
    server.script(Reply(text, chunk_size=3))

    chunks = await stream(server)

    assert content_of(chunks) == text
    assert chunks[0].choices[0].delta.role == "assistant"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    assert server.pending() == 0


async def test_explicit_chunks_arrive_as_given(server: FakeLLMServer) -> None:
    server.script(Reply(["Hel", "lo, ", "wor", "ld"]))

    chunks = await stream(server)

    pieces = [c.choices[0].delta.content for c in chunks if c.choices]
    assert [p for p in pieces if p] == ["Hel", "lo, ", "wor", "ld"]


async def test_usage_arrives_in_the_final_chunk(server: FakeLLMServer) -> None:
    server.script(Reply("x" * 40), Reply("short", usage=(123, 45)))

    default = await stream(server)
    explicit = await stream(server)

    usage = default[-1].usage
    prompt_chars = len(USER[0]["content"])
    assert (usage.prompt_tokens, usage.completion_tokens) == (prompt_chars // 4, 40 // 4 + 1)
    assert default[-1].choices == []
    assert (explicit[-1].usage.prompt_tokens, explicit[-1].usage.completion_tokens) == (123, 45)
    assert explicit[-1].usage.total_tokens == 168


async def test_no_usage_chunk_unless_requested(server: FakeLLMServer) -> None:
    server.script(Reply("hi"))

    response = await chat(server, stream=True)
    chunks = [chunk async for chunk in response]

    assert content_of(chunks) == "hi"
    assert all(getattr(c, "usage", None) is None for c in chunks)
    assert "stream_options" not in server.chat_requests()[-1].body


async def test_reasoning_arrives_before_content(server: FakeLLMServer) -> None:
    server.script(Reply("The answer is 4.", reasoning="2 + 2 is 4, obviously.", chunk_size=5))

    chunks = await stream(server)

    kinds = []
    reasoning = ""
    for chunk in chunks:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if getattr(delta, "reasoning_content", None):
            reasoning += delta.reasoning_content
            kinds.append("reasoning")
        if delta.content:
            kinds.append("content")
    assert reasoning == "2 + 2 is 4, obviously."
    assert content_of(chunks) == "The answer is 4."
    assert kinds == sorted(kinds, key=lambda kind: kind != "reasoning")


async def test_slow_stream_spaces_its_chunks(server: FakeLLMServer) -> None:
    server.script(Reply("abcd", chunk_size=1, first_delay=0.1, delay=0.05))

    started = time.monotonic()
    chunks = await stream(server)

    assert content_of(chunks) == "abcd"
    assert time.monotonic() - started >= 0.1 + 3 * 0.05


async def test_a_held_stream_sends_the_rest_once_its_hold_is_set(server: FakeLLMServer) -> None:
    rest = threading.Event()
    server.script(Reply(["Hel", "lo, ", "wor", "ld"], reasoning="hmm", holds={2: rest}))
    response = await chat(server, stream=True)
    got: list[str] = []

    async def read() -> None:
        async for chunk in response:
            got.append((chunk.choices[0].delta.content or "") if chunk.choices else "")

    reading = asyncio.ensure_future(read())
    # The reasoning comes first: the holds count content pieces alone.
    for _ in range(500):
        if "".join(got) == "Hello, ":
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.3)
    assert "".join(got) == "Hello, "  # held: nothing more came
    rest.set()
    await asyncio.wait_for(reading, 10)
    assert "".join(got) == "Hello, world"


# --------------------------------------------------------------------------- plain calls


async def test_non_streamed_call(server: FakeLLMServer) -> None:
    server.script(Reply('{"ok": true}', reasoning="thinking", usage=(7, 3)))

    response = await chat(server)

    message = response.choices[0].message
    assert message.content == '{"ok": true}'
    assert message.reasoning_content == "thinking"
    assert response.choices[0].finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (7, 3)


async def test_models_endpoint_lists_configured_models(server: FakeLLMServer) -> None:
    with FakeLLMServer() as bare:
        assert [m["id"] for m in _get_json(bare, "/v1/models")["data"]] == ["fake-model"]
    assert [m["id"] for m in _get_json(server, "/v1/models")["data"]] == ["main", "util"]


# --------------------------------------------------------------------------- errors


async def test_rate_limit_surfaces_without_retries(server: FakeLLMServer) -> None:
    server.script(Fail(429, "slow down"))

    with pytest.raises(litellm.RateLimitError) as caught:
        await chat(server)

    assert caught.value.status_code == 429
    assert "slow down" in str(caught.value)
    assert len(server.chat_requests()) == 1
    assert server.pending() == 0


async def test_openai_sdk_retries_unless_disabled(server: FakeLLMServer) -> None:
    server.script(Fail(429, times=5))

    with pytest.raises(litellm.RateLimitError):
        await litellm.acompletion(
            model="openai/main", api_base=server.base_url, api_key="test", messages=USER
        )

    assert len(server.chat_requests()) == 3  # the SDK's default: two retries
    assert server.pending() == 1  # two of the five failures are left


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (500, litellm.InternalServerError),
        (503, litellm.ServiceUnavailableError),
        (400, litellm.BadRequestError),
        (401, litellm.AuthenticationError),
    ],
)
async def test_http_errors_map_to_litellm_exceptions(
    server: FakeLLMServer, status: int, error: type[Exception]
) -> None:
    server.script(Fail(status, f"scripted {status}"))

    with pytest.raises(error) as caught:
        await stream(server)

    assert isinstance(caught.value, openai.APIError)
    assert getattr(caught.value, "status_code", None) == status
    assert f"scripted {status}" in str(caught.value)


async def test_fail_times_then_reply(server: FakeLLMServer) -> None:
    server.script(Fail(500, times=2), Reply("finally"))

    for _ in range(2):
        with pytest.raises(litellm.InternalServerError):
            await chat(server)
    response = await chat(server)

    assert response.choices[0].message.content == "finally"
    assert server.pending() == 0


async def test_cut_stream_raises_inside_the_loop(server: FakeLLMServer) -> None:
    server.script(CutStream("partial answer that never ends", chunk_size=4))

    received = ""
    response = await chat(server, stream=True)
    with pytest.raises(MidStreamFallbackError) as caught:
        async for chunk in response:
            received += chunk.choices[0].delta.content or ""

    assert received == "partial answer that never ends"
    assert isinstance(caught.value, litellm.ServiceUnavailableError)
    assert isinstance(caught.value.original_exception, litellm.APIConnectionError)
    assert caught.value.generated_content == received


async def test_hang_lets_the_client_time_out(server: FakeLLMServer) -> None:
    server.script(Hang(10))

    started = time.monotonic()
    with pytest.raises(litellm.Timeout):
        await stream(server, timeout=0.3)

    assert time.monotonic() - started < 3


async def test_empty_script_answers_a_clear_500(server: FakeLLMServer) -> None:
    with pytest.raises(litellm.InternalServerError) as caught:
        await chat(server)

    assert NO_SCRIPT_MESSAGE in str(caught.value)
    assert "Hello there, model" in str(caught.value)


# --------------------------------------------------------------------------- scripting


async def test_queue_is_fifo_and_records_prompts(server: FakeLLMServer) -> None:
    server.script(Reply("first"), Reply("second"))

    one = await chat(server, messages=[{"role": "user", "content": "question one"}])
    two = await stream(server, messages=[{"role": "user", "content": "question two"}])

    assert one.choices[0].message.content == "first"
    assert content_of(two) == "second"
    sent = [r.body["messages"][-1]["content"] for r in server.chat_requests()]
    assert sent == ["question one", "question two"]
    last = server.requests[-1]
    assert last.path == "/v1/chat/completions"
    assert last.method == "POST"
    assert last.body["model"] == "main"
    assert last.headers["authorization"] == "Bearer test"
    assert server.requests[0].time <= last.time


async def test_rules_come_before_the_queue(server: FakeLLMServer) -> None:
    server.add_rule(model_is("util"), Reply("utility text"))
    once = server.add_rule(last_user_contains("special"), Reply("special answer"), times=1)
    server.script(Reply("queued"))

    util_a = await chat(server, model="util")
    special = await chat(server, messages=[{"role": "user", "content": "a special request"}])
    util_b = await stream(server, model="util")
    assert server.pending() == 1
    queued = await chat(server, messages=[{"role": "user", "content": "special again"}])

    assert util_a.choices[0].message.content == "utility text"
    assert special.choices[0].message.content == "special answer"
    assert content_of(util_b) == "utility text"
    assert queued.choices[0].message.content == "queued"
    assert once.hits == 1
    assert server.pending() == 0


async def test_a_raising_predicate_does_not_match(server: FakeLLMServer) -> None:
    server.add_rule(lambda body: body["no such key"], Reply("never"))
    server.script(Reply("queued"))

    response = await chat(server)

    assert response.choices[0].message.content == "queued"


async def test_remove_rule_and_reset(server: FakeLLMServer) -> None:
    rule = server.add_rule(model_is("main"), Reply("ruled"))
    server.remove_rule(rule)
    server.script(Reply("a"))
    server.add_rule(model_is("util"), Reply("b"), times=2)
    assert server.pending() == 2

    await chat(server)
    server.reset()

    assert server.pending() == 0
    assert server.requests == []
    with pytest.raises(litellm.InternalServerError):
        await chat(server, model="util")


# --------------------------------------------------------------------------- embeddings


async def test_embeddings_are_deterministic_unit_vectors(server: FakeLLMServer) -> None:
    texts = ["alpha", "beta", "alpha"]

    response = await litellm.aembedding(
        model="openai/emb", api_base=server.base_url, api_key="test", input=texts
    )

    vectors = [item["embedding"] for item in response.data]
    assert len(vectors) == 3
    assert all(len(v) == 8 for v in vectors)
    assert vectors[0] == pytest.approx(fake_embedding("alpha", 8))
    assert vectors[0] == pytest.approx(vectors[2])
    assert vectors[0] != pytest.approx(vectors[1])
    assert all(math.isclose(math.hypot(*v), 1.0) for v in vectors)
    assert response.usage.prompt_tokens > 0
    assert server.embedding_requests()[-1].body["input"] == texts


async def test_embedding_dimension_and_base64(server: FakeLLMServer) -> None:
    with start_fake_llm(embedding_dim=16) as wide:
        response = await litellm.aembedding(
            model="openai/emb", api_base=wide.base_url, api_key="test", input="one text"
        )
    assert response.data[0]["embedding"] == pytest.approx(fake_embedding("one text", 16))

    # The OpenAI SDK asks for base64 when used directly; it must decode to the same vector.
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    direct = await client.embeddings.create(model="emb", input=["one text"])
    await client.close()
    assert direct.data[0].embedding == pytest.approx(fake_embedding("one text", 8), abs=1e-6)


# --------------------------------------------------------------------------- the wire


def _get_json(server: FakeLLMServer, path: str) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("GET", path)
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def test_raw_sse_format_and_keep_alive(server: FakeLLMServer) -> None:
    server.script(Reply("Hi!", chunk_size=2), Fail(429))
    body = {
        "model": "main",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": USER,
    }
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body))
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("transfer-encoding") == "chunked"
        assert response.getheader("content-type") == "text/event-stream"
        raw = response.read().decode()

        conn.request("POST", "/v1/chat/completions", json.dumps({**body, "stream": False}))
        limited = conn.getresponse()
        error = json.loads(limited.read())
    finally:
        conn.close()

    events = raw.split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-2]]
    assert all(e.startswith("data: ") for e in events[:-1])
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert [c["choices"][0]["delta"].get("content") for c in chunks[1:3]] == ["Hi", "!"]
    assert chunks[-2]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "stop",
    }
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 1

    assert limited.status == 429
    assert limited.getheader("retry-after") == "0"
    assert limited.getheader("retry-after-ms") == "1"
    assert error["error"]["type"] == "rate_limit_error"
    assert error["error"]["code"] == "rate_limit_exceeded"
    assert len({r.headers["host"] for r in server.requests}) == 1


def test_unknown_path_is_a_404(server: FakeLLMServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("POST", "/v1/completions", "{}")
        response = conn.getresponse()
        assert response.status == 404
        assert "unknown path" in json.loads(response.read())["error"]["message"]
    finally:
        conn.close()


def _post_chat(server: FakeLLMServer, base_url: str) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        body = json.dumps({"model": "util", "messages": USER})
        conn.request("POST", urlsplit(base_url).path + "/chat/completions", body)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


async def test_a_request_of_an_ended_test_takes_nothing_from_the_next(
    server: FakeLLMServer,
) -> None:
    """A test's late request (a chat's naming, read only once the next test had scripted
    its replies) took that test's first reply; now its URL names its test, and is refused."""
    plain = server.base_url
    server.begin_test()
    earlier = server.base_url
    server.end_test()
    assert server.base_url == plain and _post_chat(server, earlier)[0] == 410  # between tests
    server.begin_test()
    assert server.base_url not in (plain, earlier)
    server.script(Reply("for this test"))

    status, error = _post_chat(server, earlier)
    assert status == 410 and error["error"]["message"] == REFUSED_MESSAGE
    assert server.pending() == 1 and server.requests == []
    refused = [r.path for r in server.refused_requests()]
    assert refused == [urlsplit(earlier).path + "/chat/completions"]
    response = await chat(server, stream=False)  # the test's own URL: its reply is there
    assert response.choices[0].message.content == "for this test"
    assert server.chat_requests()[0].path == "/v1/chat/completions"
    assert _get_json(server, "/v1/models")["data"]  # the plain URL is served to anyone
    server.end_test()


def test_stop_ends_a_hang_and_closes_connections() -> None:
    fake = start_fake_llm()
    fake.script(Hang(30))
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": []}))
    time.sleep(0.1)

    started = time.monotonic()
    fake.stop()
    with pytest.raises((http.client.HTTPException, OSError)):
        conn.getresponse()
    conn.close()

    assert time.monotonic() - started < 2
    with pytest.raises(RuntimeError):
        _ = fake.base_url


# --------------------------------------------------------------------------- load


async def test_fifty_concurrent_streams(server: FakeLLMServer) -> None:
    for i in range(50):
        server.add_rule(last_user_contains(f"question {i}."), Reply(f"answer {i}"), times=1)

    async def ask(i: int) -> str:
        chunks = await stream(server, messages=[{"role": "user", "content": f"question {i}."}])
        return content_of(chunks)

    answers = await asyncio.gather(*(ask(i) for i in range(50)))

    assert answers == [f"answer {i}" for i in range(50)]
    assert len(server.chat_requests()) == 50
    assert server.pending() == 0
