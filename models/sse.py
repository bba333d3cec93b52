"""The chunks of a streamed chat completion, read straight from the server-sent events.

The lean client lets the `openai` SDK say what to send and turn an HTTP error into its
typed exception, but reads the stream itself: the SDK builds a pydantic model of every
chunk through its generic `construct_type`, about 1 ms of CPU a chunk, more than all
the rest of a chunk's way to the page. Here a chunk is parsed by the C
JSON decoder into plain attribute objects, which the shared reader (models.reading)
takes like the SDK's or litellm's chunks.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any


class StreamBroken(Exception):  # noqa: N818 - named for what the person reads
    """The connection broke while the reply streamed; told as HTTP 503, as litellm tells
    it, so that both clients say the same words."""

    status_code = 503

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StreamError(Exception):
    """The provider sent an error event in the middle of its stream."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status


def _attributes(fields: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(**fields)


class ChunkStream:
    """The chunks of one streamed reply; `aclose` releases its connection."""

    def __init__(self, response: Any) -> None:
        #: The HTTP response (httpx's or the SDK's fork's), its body not read yet.
        self._response = response
        self._closed = False

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[Any]:
        data: list[bytes] = []
        done = False
        try:
            async for line in self._lines():
                if line.startswith(b"data:"):
                    data.append(line[5:].removeprefix(b" "))
                    continue
                if line or not data:
                    continue  # a comment, an `event:` line, or a blank line between events
                event, data = b"\n".join(data), []
                if done or event.startswith(b"[DONE]"):
                    # Read on to the body's end: the connection then goes back to the pool.
                    done = True
                    continue
                # Bytes that are not UTF-8 become U+FFFD, as a text reader would make them.
                chunk = json.loads(event.decode("utf-8", "replace"), object_hook=_attributes)
                error = getattr(chunk, "error", None)
                if error is not None:
                    raise _error_of(error)
                yield chunk
        finally:
            await self.aclose()

    async def _lines(self) -> AsyncIterator[bytes]:
        """The body's lines, split here from its (decompressed) bytes: the HTTP library's
        text and line readers are two more generators per chunk, a tenth of a chunk's
        cost on the way to the page. Lines end with LF, CRLF or CR, as SSE allows."""
        pending: list[bytes] = []
        after_cr = False  # the last block ended with CR: an LF starting the next ends no line
        try:
            async for block in self._response.aiter_bytes():
                if after_cr and block.startswith(b"\n"):
                    block = block[1:]
                after_cr = block.endswith(b"\r")
                *complete, rest = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
                if complete:
                    if pending:
                        complete[0] = b"".join([*pending, complete[0]])
                        pending = []
                    for line in complete:
                        yield line
                if rest:
                    pending.append(rest)
        except Exception as exc:
            # The SDK's HTTP library (httpx, or its fork httpx2 in newer SDKs) is known
            # here by its error's class name, like everywhere in models/.
            if "TransportError" not in {cls.__name__ for cls in type(exc).__mro__}:
                raise
            raise StreamBroken(f"the stream broke off: {exc}") from exc
        if pending:
            yield b"".join(pending)
        yield b""  # a last event the server did not end with a blank line

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._response.aclose()


def _error_of(error: Any) -> StreamError:
    message = getattr(error, "message", None) if not isinstance(error, str) else error
    code = getattr(error, "code", None)
    return StreamError(
        str(message or "the provider reported an error during streaming"),
        code if isinstance(code, int) else None,
    )
