"""The strict HTTP/1 head reader shared by the model transport and the browser's proxy."""

from __future__ import annotations

import pytest

from helpers.http_head import AnswerHead, parse_answer_head, split_head


def test_a_well_formed_answer_is_read_as_sent():
    raw = b"HTTP/1.1 200 OK\r\nContent-Length:  2 \r\nX-Empty:\r\n\r\n"
    assert parse_answer_head(raw) == AnswerHead(
        b"HTTP/1.1", 200, b"OK", [(b"Content-Length", b"2"), (b"X-Empty", b"")]
    )
    assert parse_answer_head(b"HTTP/1.0 204\r\n\r\n") == AnswerHead(b"HTTP/1.0", 204, b"", [])
    assert split_head(b"GET / HTTP/1.1\r\nHost: a") == (b"GET / HTTP/1.1", [(b"Host", b"a")])


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1  200 OK\r\n\r\n",  # two spaces: a peer could read the status otherwise
    b"HTTP/2 200 OK\r\n\r\n",
    b"http/1.1 200 OK\r\n\r\n",
    b"HTTP/1.1 20 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\nConnection: keep-alive\r\n\r\n",  # a bare LF hides a header
    b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n Folded: no\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nName : value\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
])  # fmt: skip
def test_a_head_a_peer_could_read_otherwise_is_refused(raw):
    with pytest.raises(ValueError, match="malformed|not an HTTP/1.1 answer"):
        parse_answer_head(raw)
