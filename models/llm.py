"""The model behind one small interface: litellm, streamed, retried, measured.

`ChatModel(config).stream(messages, on_chunk)` streams a completion, splits
reasoning (`reasoning_content` deltas or `<think>` tags) from the reply, hands
each chunk's new text to `on_chunk`, stops when `on_chunk` says it has seen
enough, and returns the text with its token usage. Transient provider errors
(429, 5xx, connection errors, no first chunk in time) are retried with
exponential backoff, but only before the first chunk arrives: after that the
user has already seen output and a silent restart would duplicate it.

Every call is bounded (see `ModelConfig`): in time as a whole, in the wait for
its first chunk, in the silence between two chunks, and in the length of the
reply (`ReplyTooLong`). Whatever ends a stream closes its HTTP connection. A
chunk costs the shared event loop time in proportion to its own length, never
to the reply's, and chunks read back to back yield to the loop every few
milliseconds, so a provider that sends without pause cannot hold other chats
up.

litellm costs ~4 s and ~200 MB to import and, without
`LITELLM_LOCAL_MODEL_COST_MAP=True`, fetches its price map from the network
first. It is therefore imported on first use (or by `preload()` in a
background thread at start-up), never at module import time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from helpers.errors import ProviderError, ReplyTooLong
from models import local_model, tokens
from models.llm_stream import (
    YIELD_EVERY,
    CallClock,
    ChunkBound,
    Expired,
    ThinkSplitter,
    TryFailed,
    within,
)
from models.local_model import LocalSpec
from models.provider_faults import ProviderFault, classify, retry_reason
from models.tokens import count_tokens

log = logging.getLogger(__name__)

#: HTTP statuses worth another try: timeouts, conflicts, rate limits, server trouble.
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})

_import_lock = threading.Lock()
_litellm: ModuleType | None = None


def litellm_module() -> ModuleType:
    """Import litellm once, offline-safe and quiet."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            # litellm's own types trip a pydantic notice on every process; not ours to fix.
            warnings.filterwarnings(
                "ignore", message=r".*`ReadOnly` qualifier", category=UserWarning
            )
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            litellm.drop_params = True  # a provider that lacks a parameter ignores it
            _litellm = litellm
        return _litellm


async def litellm_loaded() -> ModuleType:
    """litellm, for code on the agents' loop: an import still going on (seconds, at start)
    is waited for in a thread, so the other chats on the loop go on meanwhile."""
    return _litellm if _litellm is not None else await asyncio.to_thread(litellm_module)


def _preload() -> None:
    litellm_module()
    tokens.preload()


def preload() -> threading.Thread:
    """Import litellm and load the tokenizer in a background thread, off the start-up path."""
    thread = threading.Thread(target=_preload, name="litellm-preload", daemon=True)
    thread.start()
    return thread


@dataclass(frozen=True)
class ModelConfig:
    """One model as settings describe it."""

    model: str
    api_base: str = ""
    api_key: str = ""
    ctx_length: int = 128_000
    kwargs: dict[str, Any] = field(default_factory=dict)
    retries: int = 3
    retry_delay: float = 1.0
    #: Seconds the whole call may take, retries and streaming included (llm_timeout).
    timeout: float = 600.0
    #: Seconds each try waits for its first chunk (llm_first_chunk_timeout); retried.
    first_chunk_timeout: float = 120.0
    #: Seconds of silence between two chunks once the stream began; not retried.
    between_chunks_timeout: float = 60.0
    #: Most characters of reply and reasoning before the call is ended (ReplyTooLong).
    max_reply_chars: int = 200_000
    #: For a `local/<name>` model: the file to run in-process (see local_model).
    local: LocalSpec | None = None


@dataclass
class Usage:
    """Tokens and money spent, summed over calls.

    `cost` is in US dollars from litellm's price map; `uncosted_calls`
    counts calls to models the map does not know (their tokens still count).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cost: float = 0.0
    uncosted_calls: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls
        self.cost += other.cost
        self.uncosted_calls += other.uncosted_calls

    def minus(self, earlier: Usage) -> Usage:
        """What was spent since `earlier` (a copy taken then)."""
        return Usage(
            self.prompt_tokens - earlier.prompt_tokens,
            self.completion_tokens - earlier.completion_tokens,
            self.calls - earlier.calls,
            self.cost - earlier.cost,
            self.uncosted_calls - earlier.uncosted_calls,
        )

    def copy(self) -> Usage:
        return Usage().plus(self)

    def plus(self, other: Usage) -> Usage:
        self.add(other)
        return self

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
            "cost": round(self.cost, 8),
            "uncosted_calls": self.uncosted_calls,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        keys = ("prompt_tokens", "completion_tokens", "calls", "uncosted_calls")
        counts = {key: int(data.get(key, 0)) for key in keys}
        return cls(**counts, cost=float(data.get("cost", 0.0)))


@dataclass
class ModelReply:
    """What one call produced."""

    text: str
    reasoning: str
    usage: Usage
    #: True when `on_chunk` stopped the stream before the provider finished.
    stopped_early: bool = False


#: Called with (new reply text, new reasoning) of each chunk that brought some;
#: returns True to stop reading.
ChunkHandler = Callable[[str, str], Awaitable[bool]]
#: Told the token usage of each call that produced output.
UsageHandler = Callable[["Usage"], None]


@dataclass(frozen=True)
class RetryNotice:
    """A try failed and another follows after `delay` seconds (for a live "retrying" line)."""

    #: The number of the try that comes next (2 for the first retry).
    attempt: int
    #: How many tries the call may make in all.
    of: int
    delay: float
    fault: ProviderFault

    @property
    def text(self) -> str:
        """The live line, e.g. 'The provider failed (HTTP 500); retrying in 4 s, attempt 2 of 4'."""
        delay = self.delay
        seconds = f"{delay:.0f}" if delay >= 10 or delay == int(delay) else f"{delay:.1f}"
        return (
            f"{retry_reason(self.fault)}; retrying in {seconds} s, "
            f"attempt {self.attempt} of {self.of}"
        )


#: Told of each retry before its wait.
RetryHandler = Callable[[RetryNotice], None]


def is_transient(exc: BaseException) -> bool:
    """True for failures another try may cure."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in TRANSIENT_STATUS
    if isinstance(exc, asyncio.TimeoutError | ConnectionError):
        return True
    litellm = litellm_module()
    return isinstance(exc, litellm.APIConnectionError | litellm.Timeout)


def provider_message(exc: BaseException) -> str:
    """The provider's own words, without litellm's long prefixes or a traceback."""
    message = str(getattr(exc, "message", "") or exc).strip()
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    head = f"{kind} ({status})" if status else kind
    return f"{head}: {message}" if message else head


class ChatModel:
    """A chat model from settings. Stateless apart from its config: share freely."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config

    async def _request(
        self,
        messages: list[dict[str, Any]],
        stream: bool,
        schema: dict[str, Any] | None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            **self.config.kwargs,
            "model": self.config.model,
            "messages": messages,
            "stream": stream,
            "timeout": self.config.timeout,
            # Retries are ours (only before the first chunk); litellm and the
            # openai SDK would otherwise retry on their own as well.
            "num_retries": 0,
            "max_retries": 0,
        }
        if stream:
            request["stream_options"] = {"include_usage": True}
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if self.config.api_base:
            request["api_base"] = self.config.api_base
        if self.config.api_key:
            request["api_key"] = self.config.api_key
        elif (
            self.config.api_base
            and self.config.model.startswith("openai/")
            and not os.environ.get("OPENAI_API_KEY")
        ):
            # An OpenAI-compatible server of one's own often wants no key, but the
            # client refuses to send a request without one.
            request["api_key"] = "no-key"
        if self.config.local is not None:
            # An OpenAI-compatible server in this process, loaded on first use.
            name = self.config.model.removeprefix(local_model.PREFIX)
            request["model"] = f"openai/{name}"
            request["api_base"] = await local_model.LOCAL.endpoint(self.config.local)
            request["api_key"] = "local"
            # A small model held to a grammar may still ramble inside a string.
            request.setdefault("max_tokens", LOCAL_MAX_TOKENS)
        if schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "agent_reply", "schema": schema},
            }
        return request

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

        `schema`, when given, holds the reply to that JSON schema (response_format);
        `max_tokens` caps the reply's length (a utility call's, say).
        `on_retry` hears of each retry before its wait (the page shows it live).

        `on_usage` hears the usage of every attempt that produced output,
        also of one cut short by an intervention, a stop or a broken stream.
        Exceptions raised by `on_chunk` pass through unchanged. A reply longer
        than `max_reply_chars` raises `ReplyTooLong`.
        """
        litellm = await litellm_loaded()
        clock = CallClock(self.config)
        attempt = 0
        while True:
            try:
                return await self._try(
                    litellm, messages, on_chunk, on_usage, schema, clock, max_tokens
                )
            except TryFailed as failed:
                failure = failed
            tries = f" ({attempt + 1} tries)" if attempt else ""
            fault = self._fault(failure, attempt + 1)
            if not failure.retryable or attempt >= self.config.retries:
                raise ProviderError(failure.message + tries, fault) from failure.cause
            delay = self.config.retry_delay * (2**attempt)
            if clock.left() <= delay:
                message = f"{clock.too_long_message()}; the last try: {failure.message}"
                raise ProviderError(message, fault) from failure.cause
            attempt += 1
            if on_retry is not None:
                on_retry(RetryNotice(attempt + 1, self.config.retries + 1, delay, fault))
            log.warning(
                "model %s failed (%s); retry %d in %.1fs",
                self.config.model,
                failure.message,
                attempt,
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

    async def _try(
        self,
        litellm: ModuleType,
        messages: list[dict[str, Any]],
        on_chunk: ChunkHandler | None,
        on_usage: UsageHandler | None,
        schema: dict[str, Any] | None,
        clock: CallClock,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """One request and its stream; `TryFailed` says why it failed and whether to retry."""
        first = clock.end
        try:
            request = await self._request(messages, True, schema, max_tokens)
            first = clock.first_chunk()  # counted from the request, not a local model's load
            response = await within(first, litellm.acompletion(**request))
        except asyncio.CancelledError:
            raise
        except Expired:
            raise clock.failure(first, started=False) from None
        except Exception as exc:  # noqa: BLE001 - the provider's; sorted by TryFailed
            raise TryFailed(provider_message(exc), is_transient(exc), exc) from exc
        return await self._consume(response, messages, on_chunk, on_usage, clock, first)

    async def _consume(
        self,
        response: Any,
        messages: list[dict[str, Any]],
        on_chunk: ChunkHandler | None,
        on_usage: UsageHandler | None,
        clock: CallClock,
        first: float,
    ) -> ModelReply:
        """Read the stream; see `_Reading` for when it stops."""
        reading = _Reading()
        try:
            await self._read(response, reading, on_chunk, ChunkBound(clock, first))
        finally:
            if reading.stopped_early or sys.exc_info()[0] is not None:
                await _close(response)
            if on_usage and (reading.started or sys.exc_info()[0] is None):
                on_usage(priced(self.config.model, reading.result(messages).usage))
        return reading.result(messages)

    async def _read(
        self, response: Any, reading: _Reading, on_chunk: ChunkHandler | None, bound: ChunkBound
    ) -> None:
        """Take chunks until the stream ends or must end (a bound, the cap, a rambling model)."""
        iterator = response.__aiter__()
        try:
            async with bound.scope:
                while not reading.stopped_early:
                    # Only the provider's side is inside this try: an exception
                    # raised by `on_chunk` (an intervention, a cancellation) is
                    # the caller's and passes through untouched.
                    try:
                        chunk = await iterator.__anext__()
                    except StopAsyncIteration:
                        return
                    except Exception as exc:  # noqa: BLE001 - the provider's stream broke
                        if reading.satisfied:
                            return  # the reply was complete; a broken tail costs nothing
                        retryable = not reading.started and is_transient(exc)
                        raise TryFailed(provider_message(exc), retryable, exc) from exc
                    now = bound.chunk_arrived()
                    reply, thought = reading.take(chunk)
                    if reading.length > self.config.max_reply_chars:
                        log.warning(
                            "model %s: reply ran past %d characters; call ended",
                            self.config.model,
                            self.config.max_reply_chars,
                        )
                        raise ReplyTooLong(self.config.max_reply_chars)
                    if (reply or thought) and on_chunk and not reading.satisfied:
                        reading.satisfied = await on_chunk(reply, thought)
                    if now >= bound.yield_at:
                        # Chunks already buffered come without a pause: let the
                        # other chats run now and then.
                        await asyncio.sleep(0)
                        bound.yield_at = now + YIELD_EVERY
        except TimeoutError:
            if not bound.scope.expired():
                raise
            if reading.satisfied:
                return  # the reply was complete; only its usage is missing
            raise bound.clock.failure(bound.until, reading.started) from None

    async def complete(
        self,
        messages: list[dict[str, Any]],
        on_usage: UsageHandler | None = None,
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """A whole reply without live callbacks (utility work)."""
        return await self.stream(messages, None, on_usage, schema, max_tokens=max_tokens)


#: Longest reply asked of a local model unless its kwargs say otherwise.
LOCAL_MAX_TOKENS = 1_024


def priced(model: str, usage: Usage) -> Usage:
    """`usage` with its cost from litellm's price map (or counted as uncosted)."""
    try:
        prompt, completion = litellm_module().cost_per_token(
            model=model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
        usage.cost = float(prompt) + float(completion)
    except Exception:  # noqa: BLE001 - litellm raises several kinds for "not in the map"
        usage.cost, usage.uncosted_calls = 0.0, usage.calls
    return usage


class _Reading:
    """The state of one streamed reply.

    Once the caller is satisfied (the first complete JSON object arrived),
    reading goes on only for the provider's closing chunks, which carry the
    token usage; the first further text means the model rambles on, and the
    stream is closed there. A reply cut off before its usage arrived gets an
    estimate from the text, so no call goes unaccounted. The text is kept in
    pieces, joined once at the end: adding to one string would copy it whole
    on every chunk.
    """

    def __init__(self) -> None:
        self.splitter = ThinkSplitter()
        self.text: list[str] = []
        self.reasoning: list[str] = []
        #: Characters of reply and reasoning so far.
        self.length = 0
        self.usage = Usage(calls=1)
        self.started = False
        self.satisfied = False
        self.stopped_early = False
        self._reply: ModelReply | None = None

    def take(self, chunk: Any) -> tuple[str, str]:
        """Absorb a chunk; returns the reply text and reasoning it added."""
        self.started = True
        chunk_usage = getattr(chunk, "usage", None)
        if chunk_usage:
            self.usage.prompt_tokens = int(getattr(chunk_usage, "prompt_tokens", 0) or 0)
            self.usage.completion_tokens = int(getattr(chunk_usage, "completion_tokens", 0) or 0)
        if not chunk.choices:
            return "", ""
        delta = chunk.choices[0].delta
        think = getattr(delta, "reasoning_content", None) or ""
        content = getattr(delta, "content", None) or ""
        if self.satisfied:
            self.stopped_early = bool(content.strip() or think.strip())
            return "", ""
        reply, tagged = self.splitter.feed(content)
        thought = think + tagged
        self._add(reply, thought)
        return reply, thought

    def _add(self, reply: str, thought: str) -> None:
        if reply:
            self.text.append(reply)
        if thought:
            self.reasoning.append(thought)
        self.length += len(reply) + len(thought)

    def result(self, messages: list[dict[str, Any]]) -> ModelReply:
        """The reply so far, with usage estimated where the provider sent none."""
        if self._reply is None:
            self._add(*self.splitter.flush())
            text, reasoning = "".join(self.text), "".join(self.reasoning)
            if not self.usage.completion_tokens:
                self.usage.completion_tokens = count_tokens(text + reasoning)
            if not self.usage.prompt_tokens:
                self.usage.prompt_tokens = _prompt_tokens(messages)
            self._reply = ModelReply(text, reasoning, self.usage, stopped_early=self.stopped_early)
        return self._reply


def _prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(count_tokens(str(m.get("content", ""))) for m in messages)


async def _close(response: Any) -> None:
    """Release the HTTP stream we stopped reading early."""
    closer = getattr(response, "aclose", None)
    if closer is None:
        return
    try:
        await closer()
    except Exception as exc:  # noqa: BLE001 - closing is best effort, the reply is complete
        log.debug("closing an abandoned stream failed: %s", exc)
