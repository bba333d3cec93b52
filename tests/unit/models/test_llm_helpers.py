"""Pieces of the model client that need no server."""

from __future__ import annotations

import pytest

from models.llm import Usage
from models.llm_stream import ThinkSplitter
from models.provider_faults import is_transient, provider_message


def split_all(chunks: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    reply, thought = "", ""
    for chunk in chunks:
        r, t = splitter.feed(chunk)
        reply, thought = reply + r, thought + t
    r, t = splitter.flush()
    return reply + r, thought + t


@pytest.mark.parametrize(
    "chunks",
    [
        ["<think>plan</think>{}"],
        ["<thi", "nk>pl", "an</th", "ink>{", "}"],
        list("<think>plan</think>{}"),
    ],
)
def test_think_tags_split_across_any_chunk_border(chunks):
    assert split_all(chunks) == ("{}", "plan")


def test_text_that_only_looks_like_a_tag_is_kept():
    assert split_all(["a <thin", "g> b"]) == ("a <thing> b", "")
    assert split_all(["ends with <"]) == ("ends with <", "")


def test_unclosed_think_is_reasoning():
    assert split_all(["<think>still thinking"]) == ("", "still thinking")


class _Status(Exception):
    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message


@pytest.mark.parametrize(
    ("status", "transient"),
    [(429, True), (503, True), (500, True), (400, False), (401, False), (404, False)],
)
def test_transient_statuses(status, transient):
    assert is_transient(_Status(status)) is transient


def test_connection_errors_are_transient():
    assert is_transient(ConnectionResetError())
    assert is_transient(TimeoutError())


def test_provider_message_is_short():
    assert provider_message(_Status(429, "slow down")) == "_Status (429): slow down"


def test_usage_adds_up_and_round_trips():
    total = Usage()
    total.add(Usage(10, 5, 1))
    total.add(Usage(1, 2, 1))
    assert (total.prompt_tokens, total.completion_tokens, total.calls, total.total_tokens) == (
        11, 7, 2, 18)  # fmt: skip
    assert Usage.from_dict(total.to_dict()) == total


def test_a_think_tag_after_reply_text_is_part_of_the_reply():
    text = '{"text": "use <think> tags</think> in HTML"}'
    assert split_all([text]) == (text, "")
    assert split_all(list(text)) == (text, "")
    assert split_all(["  <think>a</think>", '{"x": "<think>"}']) == ('  {"x": "<think>"}', "a")
