"""The lean client: OpenAI-compatible endpoints through the official `openai` SDK.

OpenAI itself, OpenRouter, Ollama (its /v1), vLLM, LM Studio and llama.cpp's server
(the embedded `local/` model included) all speak OpenAI's chat API, and for them
litellm's translation layer is pure cost: 16-28 ms of CPU per call and ~0.5 ms per
streamed chunk, which is what limited how many chats overlap. The SDK (installed with
litellm, and pinned with it) works out the address and headers (key, organization),
makes its typed exception of an HTTP error and runs embeddings; a chat request goes
out through its HTTP client on our transport (models.http_transport), and the stream
is read by models.sse, for a fraction of litellm's cost.

Only the transport lives here; retries, bounds, reading, usage and faults are
`models.client`'s, shared with the litellm client. Settings keep naming models the
litellm way (`openrouter/openai/gpt-4.1-mini`): `endpoint` turns such a name into the
URL, key and model id the SDK sends. The SDK is imported on first use (it takes about
a second) and one SDK client, with its connection pool, is kept per event loop,
address and key.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import weakref
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from models import local_model
from models.client import ModelClient
from models.llm import ModelConfig, openai_loaded, openai_module
from models.provider_table import Provider, lean_provider
from models.sse import ChunkStream


@dataclass(frozen=True)
class Endpoint:
    """Where the SDK sends a model's calls."""

    base_url: str
    api_key: str
    #: The model id the server knows (the litellm name without its prefix).
    model: str


class MissingKey(Exception):  # noqa: N818 - named for what the person reads
    """No API key for a provider that needs one (told as HTTP 401: the "key" fault)."""

    status_code = 401


def speaks_openai(config: ModelConfig) -> bool:
    """True when the lean client can call this model (what `auto` asks)."""
    return config.local is not None or lean_provider(config.model) is not None


async def endpoint(config: ModelConfig) -> Endpoint:
    """The address, key and model id of `config` for the SDK (a local model: once loaded)."""
    if config.local is not None:
        name = config.model.removeprefix(local_model.PREFIX)
        return Endpoint(await local_model.LOCAL.endpoint(config.local), "local", name)
    found = lean_provider(config.model)
    if found is None:  # `openai` chosen for any model: the address given is compatible
        prefix, provider = config.model.split("/", 1)[0] + "/", Provider("")
    else:
        prefix, provider = found
    base = config.api_base or (prefix == "openai/" and _env_base()) or provider.default_url
    base = base.rstrip("/")
    if provider.url_suffix and not base.endswith(provider.url_suffix):
        base += provider.url_suffix
    key = config.api_key or (os.environ.get(provider.key_env, "") if provider.key_env else "")
    if not key:
        if provider.needs_key and not config.api_base:
            raise MissingKey(f"no API key is set for {config.model}")
        # An OpenAI-compatible server of one's own often wants no key, but the
        # SDK refuses to send a request without one.
        key = "no-key"
    return Endpoint(base, key, config.model.removeprefix(prefix))


def _env_base() -> str:
    return os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or ""


class OpenAIModel(ModelClient):
    """A model on an OpenAI-compatible endpoint, called through the `openai` SDK."""

    name = "openai"

    async def _client(self) -> tuple[Wire, str]:
        """The SDK client for this model's endpoint, with what a chat call sends, and the
        model id to send."""
        where = await endpoint(self.config)
        sdk = await openai_loaded()
        clients = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
        wire = clients.get((where.base_url, where.api_key))
        if wire is None:
            from models.http_transport import lean_client_class  # imported with the SDK

            # Retries are ours (only before the first chunk): the SDK's are off. The
            # bytes go through our lean transport (models.http_transport), with the
            # SDK's own timeouts, pool bounds and redirects.
            http_client = lean_client_class()(
                timeout=sdk.DEFAULT_TIMEOUT, limits=sdk.DEFAULT_CONNECTION_LIMITS,
                follow_redirects=True,
            )  # fmt: skip
            client = sdk.AsyncOpenAI(
                base_url=where.base_url, api_key=where.api_key, max_retries=0,
                http_client=http_client,
            )  # fmt: skip
            wire = Wire(client, http_client)
            clients[(where.base_url, where.api_key)] = wire
        return wire, where.model

    async def _request(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        wire, model = await self._client()
        # The extra options go into the body as they are (litellm would send them the
        # same way, or drop them).
        body: dict[str, Any] = {
            **self.config.kwargs,
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "agent_reply", "schema": schema},
            }
        return {"wire": wire, "body": body}

    async def _send(self, request: dict[str, Any]) -> ChunkStream:
        """POST the body to the SDK client's address with the headers the SDK sends (its
        key among them), through its HTTP client; an HTTP error becomes the SDK's typed
        exception, made by the SDK, and a failed connection its connection or timeout
        error, as the SDK's own `post` would raise them. The stream is read here
        (models.sse).

        Not the SDK's `post`: building a request through its generic options, header
        merge and URL handling cost more CPU than the rest of sending it (about 0.6 ms
        a call), before the request goes out, which is what 50 chats at once wait on.
        Not `chat.completions.create` either: it walks the whole request through the
        SDK's typed-dict transform (milliseconds, growing with the history) and builds
        a pydantic model of every chunk.
        """
        from models.http_transport import http_module

        http = http_module()
        wire: Wire = request["wire"]
        outgoing = wire.http.build_request(
            "POST", wire.url, content=_json(request["body"]), headers=wire.headers,
            timeout=self.config.timeout,
        )  # fmt: skip
        try:
            response = await wire.http.send(outgoing, stream=True)
        except http.TimeoutException as exc:
            raise openai_module().APITimeoutError(request=outgoing) from exc
        except http.RequestError as exc:
            raise openai_module().APIConnectionError(request=outgoing) from exc
        if response.status_code >= 400:
            await response.aread()  # read whole (and closed): the error quotes its body
            # A private name of the SDK: the lock pins its version, and the wire tests
            # (tests/integration/test_fake_llm_wire.py) fail first if it changes.
            raise wire.sdk._make_status_error_from_response(response)
        return ChunkStream(response)

    async def _embed_once(self, texts: list[str]) -> tuple[list[list[float]], int]:
        wire, model = await self._client()
        client = wire.sdk
        request = _split_extra({**self.config.kwargs}, _embedding_parameters(await openai_loaded()))
        # Floats, not the SDK's default base64, which some local servers do not offer.
        request.update(model=model, input=texts, encoding_format="float")
        response = await client.embeddings.create(**request, timeout=self.config.timeout)
        vectors = [list(map(float, item.embedding)) for item in response.data]
        usage = getattr(response, "usage", None)
        return vectors, int(getattr(usage, "prompt_tokens", 0) or 0)


class Wire:
    """One endpoint's SDK client, its HTTP client, and what every chat call to it sends:
    the address and headers the SDK works out (key, organization, user agent), asked
    once, on the agents' loop (a header names the async library in use)."""

    def __init__(self, sdk: Any, http: Any) -> None:
        self.sdk = sdk
        self.http = http
        self.url = f"{str(sdk.base_url).rstrip('/')}/chat/completions"
        # The SDK sends its key headers, then its defaults over them; a header it would
        # leave out is an Omit, not a string.
        merged = {**sdk.auth_headers, **sdk.default_headers}
        self.headers = {name: value for name, value in merged.items() if isinstance(value, str)}


def _json(body: dict[str, Any]) -> bytes:
    """The body as the SDK writes JSON (compact, UTF-8); text that is not valid Unicode
    (a lone surrogate) is escaped rather than refused."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()


#: One SDK client per event loop, address and key: its connections belong to the loop.
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], Wire]] = (
    weakref.WeakKeyDictionary()
)


def _split_extra(kwargs: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The model's extra options for an SDK call: those the SDK names are passed as they
    are, the others in the request body (litellm would send them the same way, or drop
    them)."""
    extra = {key: kwargs.pop(key) for key in list(kwargs) if key not in known}
    if extra:
        kwargs["extra_body"] = {**kwargs.get("extra_body", {}), **extra}
    return kwargs


@cache
def _embedding_parameters(sdk: ModuleType) -> frozenset[str]:
    return frozenset(inspect.signature(sdk.resources.AsyncEmbeddings.create).parameters)
