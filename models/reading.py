"""Reading one streamed reply, the same for both clients.

Both litellm and the OpenAI SDK yield OpenAI-shaped chunks (`choices[0].delta` with
`content` and, from reasoning models, `reasoning_content` or `reasoning`; a last chunk
with `usage`), so one reader serves both. It splits reasoning from the reply, hands
each chunk's new text to `on_chunk`, stops when `on_chunk` says it has seen enough,
bounds the reply's length and the silence between chunks, and accounts for the call's
usage however the stream ended.

A chunk costs the shared event loop time in proportion to its own length, never to
the reply's, and chunks read back to back yield to the loop every few milliseconds,
so a provider that sends without pause cannot hold other chats up.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING, Any

from helpers.errors import ReplyTooLong
from models.llm import ChunkHandler, ModelReply, Usage, UsageHandler, priced
from models.llm_stream import YIELD_EVERY, CallClock, ChunkBound, ThinkSplitter, TryFailed
from models.provider_faults import is_transient, provider_message
from models.tokens import count_content, count_tokens

if TYPE_CHECKING:
    from models.llm import ModelConfig

log = logging.getLogger(__name__)


async def consume(
    config: ModelConfig,
    response: Any,
    messages: list[dict[str, Any]],
    on_chunk: ChunkHandler | None,
    on_usage: UsageHandler | None,
    clock: CallClock,
    first: float,
) -> ModelReply:
    """Read the stream `response`; see `StreamReading` for when it stops."""
    reading = StreamReading()
    try:
        await _read(config, response, reading, on_chunk, ChunkBound(clock, first))
    finally:
        if reading.stopped_early or sys.exc_info()[0] is not None:
            await close(response)
        if on_usage and (reading.started or sys.exc_info()[0] is None):
            on_usage(priced(config.model, reading.result(messages).usage))
    return reading.result(messages)


async def _read(
    config: ModelConfig,
    response: Any,
    reading: StreamReading,
    on_chunk: ChunkHandler | None,
    bound: ChunkBound,
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
                if reading.length > config.max_reply_chars:
                    log.warning(
                        "model %s: reply ran past %d characters; call ended",
                        config.model,
                        config.max_reply_chars,
                    )
                    raise ReplyTooLong(config.max_reply_chars)
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


class StreamReading:
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
        #: The provider's reason for ending, from the chunk that carried it (if read).
        self.finish_reason = ""
        self._reply: ModelReply | None = None

    def take(self, chunk: Any) -> tuple[str, str]:
        """Absorb a chunk; returns the reply text and reasoning it added."""
        self.started = True
        chunk_usage = getattr(chunk, "usage", None)
        if chunk_usage:
            self.usage.prompt_tokens = int(getattr(chunk_usage, "prompt_tokens", 0) or 0)
            self.usage.completion_tokens = int(getattr(chunk_usage, "completion_tokens", 0) or 0)
        choices = getattr(chunk, "choices", None)
        if not choices:
            return "", ""
        reason = getattr(choices[0], "finish_reason", None)
        if reason:
            self.finish_reason = str(reason)
        delta = getattr(choices[0], "delta", None)
        # litellm names it `reasoning_content` whatever the provider sent; the SDK passes
        # the provider's own field: `reasoning_content` (DeepSeek, vLLM, llama.cpp) or
        # `reasoning` (OpenRouter, Ollama).
        think = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
        think = think if isinstance(think, str) else ""
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
                self.usage.prompt_tokens = prompt_tokens(messages)
            self._reply = ModelReply(text, reasoning, self.usage, stopped_early=self.stopped_early,
                                     finish_reason=self.finish_reason)  # fmt: skip
        return self._reply


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """An estimate of a prompt's tokens, for a provider that reported none."""
    return sum(count_content(m.get("content", "")) for m in messages)


async def close(response: Any) -> None:
    """Release the HTTP stream we stopped reading early (litellm: `aclose`, the SDK: `close`)."""
    closer = getattr(response, "aclose", None) or getattr(response, "close", None)
    if closer is None:
        return
    try:
        await closer()
    except Exception as exc:  # noqa: BLE001 - closing is best effort, the reply is complete
        log.debug("closing an abandoned stream failed: %s", exc)
