"""What the lean client (models/openai_model.py, models/sse.py) relies on in the OpenAI SDK,
against the fake LLM server, pinned here so that an SDK upgrade which changes it fails
first: the SDK's `auth_headers` and `default_headers` are what its own calls send, it makes
its typed exception of an HTTP error response, and a stream cut off mid-body raises its HTTP
library's TransportError (here through our transport, as the lean client reads it).

Split from test_fake_llm_wire.py (the server through litellm and raw HTTP)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from tests.support.fake_llm import CutStream, Fail, FakeLLMServer, Reply

USER = [{"role": "user", "content": "Hello there, model"}]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(models=("main", "util")) as fake:
        yield fake


#: Headers of one request, not of the client: its length, its host, its retry count...
PER_REQUEST = {"host", "content-length", "accept-encoding", "connection",
               "x-stainless-retry-count", "x-stainless-read-timeout"}  # fmt: skip


@contextlib.asynccontextmanager
async def wire_for(server: FakeLLMServer) -> AsyncIterator[Any]:
    """The lean client's `Wire` for the fake server (SDK client, its HTTP client)."""
    from models.http_transport import lean_client_class
    from models.openai_model import Wire

    async with lean_client_class()(timeout=10) as http:
        client = openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, http_client=http
        )
        yield Wire(client, http)


async def test_the_headers_the_lean_client_sends_are_the_sdks_own(server: FakeLLMServer) -> None:
    server.script(Reply("Hi!"))
    async with wire_for(server) as wire:
        await wire.sdk.chat.completions.create(model="main", messages=USER)

    sent = server.chat_requests()[-1].headers
    ours = {name.lower(): value for name, value in wire.headers.items()}
    assert {name: sent[name] for name in sent if name not in PER_REQUEST} == ours
    assert ours["authorization"] == "Bearer test"
    assert wire.url == f"{server.base_url}/chat/completions"


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
    ],
)
async def test_the_sdk_makes_its_typed_error_of_a_response(
    server: FakeLLMServer, status: int, error: type[Exception]
) -> None:
    server.script(Fail(status, f"scripted {status}"))
    async with wire_for(server) as wire:
        response = await wire.http.post(wire.url, json={"model": "main", "messages": USER})
        made = wire.sdk._make_status_error_from_response(response)

    assert isinstance(made, error)
    assert made.status_code == status  # type: ignore[attr-defined]
    assert f"scripted {status}" in str(made)


async def test_a_cut_stream_raises_a_transport_error_in_the_sdks_http_library(
    server: FakeLLMServer,
) -> None:
    server.script(CutStream("partial answer that never ends", chunk_size=4))

    with pytest.raises(Exception) as caught:  # noqa: PT011 - the class is the library's
        async with wire_for(server) as wire:
            body = {"model": "main", "messages": USER, "stream": True}
            async with wire.http.stream("POST", wire.url, json=body) as response:
                async for _ in response.aiter_lines():
                    pass

    assert "TransportError" in {cls.__name__ for cls in type(caught.value).__mro__}
