"""models.sse reads a streamed chat completion from the body's bytes, split anywhere."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from models.sse import ChunkStream, StreamBroken, StreamError


class Body:
    """A response whose body arrives in the given blocks (as the HTTP library hands them)."""

    def __init__(self, blocks: list[bytes], fail: Exception | None = None) -> None:
        self.blocks, self.fail, self.closed = blocks, fail, False

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for block in self.blocks:
            yield block
        if self.fail is not None:
            raise self.fail

    async def aclose(self) -> None:
        self.closed = True


def texts(blocks: list[bytes], fail: Exception | None = None) -> tuple[list[str], Body]:
    body = Body(blocks, fail)

    async def read() -> list[str]:
        return [chunk.choices[0].delta.content async for chunk in ChunkStream(body)]

    return asyncio.run(read()), body


def event(text: str) -> str:
    return "data: " + json.dumps({"choices": [{"delta": {"content": text}}]})


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_every_split_of_the_body_gives_the_same_chunks(newline):
    """Blocks end anywhere: inside a line, between CR and LF, inside a UTF-8 character."""
    lines = [
        ": keep-alive",
        event("Grüße"),
        "",
        "event: x",
        event(" und 👋"),
        "",
        "data: [DONE]",
        "",
    ]
    body = newline.join(lines).encode()
    for cut in range(1, len(body)):
        for second in (cut + 1, cut + 7):
            blocks = [body[:cut], body[cut:second], body[second:]]
            found, read = texts([block for block in blocks if block])
            assert found == ["Grüße", " und 👋"], (newline, cut, second)
            assert read.closed


def test_a_last_event_without_its_blank_line_still_counts():
    assert texts([event("end").encode()])[0] == ["end"]


def test_bytes_that_are_not_utf8_become_replacement_characters():
    body = b'data: {"choices": [{"delta": {"content": "a\xffb"}}]}\n\n'
    assert texts([body])[0] == ["a\ufffdb"]


def test_an_error_event_is_raised_with_its_words():
    body = b'data: {"error": {"message": "overloaded", "code": 529}}\n\n'
    with pytest.raises(StreamError) as caught:
        texts([body])
    assert caught.value.message == "overloaded" and caught.value.status_code == 529


def test_a_transport_error_midway_is_a_broken_stream_and_the_response_is_closed():
    class TransportError(Exception):
        pass

    body = Body([(event("half") + "\n\n").encode()], TransportError("reset by peer"))
    seen: list[str] = []

    async def read() -> None:
        async for chunk in ChunkStream(body):
            seen.append(chunk.choices[0].delta.content)

    with pytest.raises(StreamBroken, match="reset by peer"):
        asyncio.run(read())
    assert seen == ["half"] and body.closed


def test_a_data_line_without_its_space_is_read():
    # SSE's field is "data:"; the one space after the colon may be left out.
    body = b'data:{"choices": [{"delta": {"content": "tight"}}]}\n\n' + event("spaced").encode()
    assert texts([body])[0] == ["tight", "spaced"]
