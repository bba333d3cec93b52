"""The incremental reader of a streaming reply: however the reply is cut into chunks,
what it shows after each chunk is what reading the whole text so far at once shows
(`extract_partial`, whose readings test_extract_tools.py pins down)."""

from __future__ import annotations

import random

import pytest

from core.reply.partial_reply import PartialReader, PartialReply, extract_partial
from tests.unit.core.test_extract_tools import PARTIAL_REPLIES

MORE_REPLIES = [
    pytest.param(
        '{"headline": "a\\ud83d\\ude00b\\ud83dx", "tool_name": "response",'
        ' "tool_args": {"text": "\\\\\\\\\\"q\\u00e9"}}',
        id="surrogates-and-backslashes",
    ),
    pytest.param(
        "{headline: 'x', tool_name: \"response\", tool_args: {text: 'it\\'s \\u00e9'},"
        " flag: true, n: 12345}",
        id="unquoted-keys",
    ),
    pytest.param(
        "{"
        + "k" * 50
        + 'headline: "no", headline: "yes", tool: "t", "tool_args": {'
        + "q" * 40
        + 'text: "not this", text: "this"}}',
        id="long-bare-words",
    ),
    pytest.param(
        'Sure, I will fill in {name} later. ```json\n{"thoughts": ["a", "b\\n"],'
        ' "thought": "z", "tool": "resp", "args": {"nested": {"text": "no"}, "text": "x"}}'
        ' and {"headline": "after"}',
        id="prose-around",
    ),
]


def chunkings(text: str) -> list[list[str]]:
    rng = random.Random(len(text))
    ways = [[text[i : i + size] for i in range(0, len(text), size)] for size in (1, 2, 3, 7)]
    cuts = sorted(rng.sample(range(1, len(text)), min(12, len(text) - 1)))
    ways.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    return ways


def shown(partial: PartialReply) -> tuple[object, ...]:
    return partial.headline, partial.thoughts, partial.tool_name, partial.text


@pytest.mark.parametrize("text", PARTIAL_REPLIES + MORE_REPLIES)
def test_any_chunking_shows_what_the_whole_text_shows(text: str) -> None:
    for chunks in chunkings(text):
        reader, fed = PartialReader(), ""
        for chunk in chunks:
            reader.feed(chunk)
            fed += chunk
            assert shown(reader.snapshot()) == shown(extract_partial(fed)), (chunks, fed)


def test_a_snapshot_leaves_the_reader_as_it_was() -> None:
    reader = PartialReader()
    reader.feed('{"thoughts": ["one", "tw')
    first = reader.snapshot()
    first.thoughts.append("changed by the caller")
    assert reader.snapshot() == PartialReply(thoughts=["one", "tw"])
    reader.feed('o"], "tool_args": {"text": "Hi')
    assert reader.snapshot() == PartialReply(thoughts=["one", "two"], text="Hi")


def test_a_long_reply_read_in_small_chunks() -> None:
    head = '{"thoughts": ["long"], "headline": "h", "tool_name": "response",'
    head += ' "tool_args": {"text": "'
    body = 'words \\"quoted\\" \\u00e9\\n' * 8_000
    reader = PartialReader()
    text = head + body
    for at in range(0, len(text), 16):
        reader.feed(text[at : at + 16])
    assert reader.snapshot() == extract_partial(text)
    assert reader.snapshot().text == 'words "quoted" \u00e9\n' * 8_000


def test_nothing_after_the_first_object_counts() -> None:
    reader = PartialReader()
    for chunk in ('{"headline": "a"}', ' {"headline": "b"', "}"):
        reader.feed(chunk)
    assert reader.snapshot() == PartialReply(headline="a")
