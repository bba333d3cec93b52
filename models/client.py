"""What both model clients share: retries, time bounds, reading, usage, plain-word faults.

`ModelClient` implements the `Model` protocol (models.model) once; a client adds only
its transport: how a streamed chat request is opened (`_open`) and how one batch of
texts is embedded (`_embed_once`). So retries (with the live retry notice), the
reasoning split, usage, cost, structured output, `max_tokens` and the provider faults
in plain words are the same from both, by construction; tests/integration run the
same wire tests against both to keep it so.

Transient provider errors (429, 5xx, connection errors, no first chunk in time) are
retried with exponential backoff, but only before the first chunk arrives: after that
the user has already seen output and a silent restart would duplicate it. Every call
is bounded (see `ModelConfig`): in time as a whole, in the wait for its first chunk, in
the silence between two chunks, and in the length of the reply (`ReplyTooLong`).
Whatever ends a stream closes its HTTP connection.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from helpers.errors import ProviderError
from models import model_facts
from models.llm import (
    ChunkHandler,
    ModelConfig,
    ModelReply,
    RetryHandler,
    RetryNotice,
    Usage,
    UsageHandler,
    litellm_loaded,
    priced,
)
from models.llm_stream import CallClock, Expired, TryFailed, within
from models.local_model import is_local
from models.provider_faults import ProviderFault, classify, is_transient, provider_message
from models.rate_limits import take_turn
from models.reading import consume, prompt_tokens
from models.tokens import count_for_model, count_tokens

log = logging.getLogger(__name__)

T = TypeVar("T")


class ModelClient(ABC):
    """A model from settings. Stateless apart from its config: share freely."""

    #: The client's name, as the `model_client` setting says it.
    name = ""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config

    # -- the transport: what each client does its own way

    @abstractmethod
    async def _request(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        """The streamed chat request's parameters (for a local model: once it is loaded)."""

    @abstractmethod
    async def _send(self, request: dict[str, Any]) -> Any:
        """Send `request`; the stream of chunks once the provider answered.
        Provider errors pass through as raised."""

    @abstractmethod
    async def _embed_once(self, texts: list[str]) -> tuple[list[list[float]], int]:
        """One embedding request: the vectors, and the prompt tokens it used (0: not said)."""

    # -- the protocol

    async def stream(
        self,
        messages: list[dict[str, Any]],
        on_chunk: ChunkHandler | None = None,
        on_usage: UsageHandler | None = None,
        schema: dict[str, Any] | None = None,
        on_retry: RetryHandler | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """Stream a reply; raises ProviderError when the provider fails for good.

        `on_chunk` hears each chunk's new (reply text, reasoning) and returns True to
        stop reading. `schema`, when given, holds the reply to that JSON schema
        (response_format); `max_tokens` caps the reply's length (a utility call's, say).
        `on_retry` hears of each retry before its wait (the page shows it live).

        `on_usage` hears the usage of every attempt that produced output,
        also of one cut short by an intervention, a stop or a broken stream.
        Exceptions raised by `on_chunk` pass through unchanged. A reply longer
        than `max_reply_chars` raises `ReplyTooLong`.
        """
        await self._price_map()

        async def attempt(clock: CallClock) -> ModelReply:
            first = clock.end
            try:
                request = await self._request(messages, schema, max_tokens)
                first = clock.first_chunk()  # counted from the request, not a local model's load
                response = await within(first, self._send(request))
            except asyncio.CancelledError:
                raise
            except Expired:
                raise clock.failure(first, started=False) from None
            except Exception as exc:  # noqa: BLE001 - the provider's; sorted by TryFailed
                raise TryFailed(provider_message(exc), is_transient(exc), exc) from exc
            return await consume(self.config, response, messages, on_chunk, on_usage, clock, first)

        limit = self.config.limit
        tokens = prompt_tokens(messages) if limit is not None and limit.tokens else 0
        return await self._retrying(attempt, on_retry, tokens, lambda got: got.usage.total_tokens)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        on_usage: UsageHandler | None = None,
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """A whole reply without live callbacks (utility work)."""
        return await self.stream(messages, None, on_usage, schema, max_tokens=max_tokens)

    async def embed(
        self, texts: list[str], on_usage: UsageHandler | None = None
    ) -> list[list[float]]:
        """One vector per text (one request: the caller keeps batches within a provider's
        limit); retried like a chat call; ProviderError when it fails for good."""
        await self._price_map()

        async def attempt(clock: CallClock) -> tuple[list[list[float]], int]:
            try:
                return await within(clock.end, self._embed_once(texts))
            except asyncio.CancelledError:
                raise
            except Expired:
                raise clock.failure(clock.end, started=False) from None
            except Exception as exc:  # noqa: BLE001 - the provider's; sorted by TryFailed
                raise TryFailed(provider_message(exc), is_transient(exc), exc) from exc

        limit = self.config.limit
        estimate = sum(map(count_tokens, texts)) if limit is not None and limit.tokens else 0
        vectors, tokens = await self._retrying(attempt, None, estimate, lambda got: got[1])
        if len(vectors) != len(texts):
            message = f"{self.config.model} returned {len(vectors)} vectors for {len(texts)} texts"
            raise ProviderError(message, self._fault(TryFailed(message, False), 1))
        if on_usage is not None:
            spent = Usage(prompt_tokens=tokens or sum(map(count_tokens, texts)), calls=1)
            on_usage(priced(self.config.model, spent))
        return vectors

    async def _price_map(self) -> None:
        """The price map every call is priced by, whichever client makes it: litellm's,
        read without litellm (models/model_facts.py: a first call does not wait seconds
        for litellm's import); where that cannot be read, litellm itself. A local model
        has no price to wait for."""
        if is_local(self.config.model):
            return
        if not await model_facts.readable():
            await litellm_loaded()

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as this model counts them (offline; see models.tokens)."""
        return count_for_model(text, self.config.model)

    # -- shared machinery

    async def _retrying(
        self,
        attempt: Callable[[CallClock], Awaitable[T]],
        on_retry: RetryHandler | None,
        tokens: int = 0,
        spent: Callable[[T], int] | None = None,
    ) -> T:
        """`attempt` until it succeeds, fails for good, or the call's time is up. Each try
        first takes its turn under the provider's limit (models/rate_limits.py: `tokens`
        its estimate, `spent` what a result really used); the first one's wait is not
        counted in the call's time."""
        turn = await take_turn(self.config, tokens, on_retry)
        clock = CallClock(self.config)
        tried = 0
        while True:
            if tried:
                turn = await take_turn(self.config, tokens, on_retry)
            try:
                result = await attempt(clock)
                if turn is not None and spent is not None:
                    turn.spent(spent(result))
                return result
            except TryFailed as failed:
                failure = failed
            tries = f" ({tried + 1} tries)" if tried else ""
            fault = self._fault(failure, tried + 1)
            if not failure.retryable or tried >= self.config.retries:
                raise ProviderError(failure.message + tries, fault) from failure.cause
            delay = self.config.retry_delay * (2**tried)
            if clock.left() <= delay:
                message = f"{clock.too_long_message()}; the last try: {failure.message}"
                raise ProviderError(message, fault) from failure.cause
            tried += 1
            if on_retry is not None:
                on_retry(RetryNotice(tried + 1, self.config.retries + 1, delay, fault))
            log.warning(
                "model %s (%s client) failed (%s); retry %d in %.1fs",
                self.config.model,
                self.name,
                failure.message,
                tried,
                delay,
            )
            await asyncio.sleep(delay)

    def _fault(self, failure: TryFailed, tries: int) -> ProviderFault:
        """The failure in plain words (the detail keeps the technical account)."""
        detail = failure.message if failure.cause is None else ""
        return classify(
            failure.cause,
            model=self.config.model,
            api_base=self.config.api_base,
            tries=tries,
            detail=detail,
        )
