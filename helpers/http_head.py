"""Reading the head of an HTTP/1 message strictly: the model client's transport
(models/http_transport.py) and the browser's checking proxy (helpers/checking_proxy.py).

Strict because a head read one way here and another way by the peer is how a
header slips past a filter: a bare CR, LF or NUL inside a line, a status line
with two spaces, a header name with space around it are refused (ValueError),
never guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: `HTTP/1.x`, one space, a three-digit status, then an optional reason after one space.
STATUS_LINE = re.compile(rb"(HTTP/1\.[01]) ([1-9][0-9][0-9])(?: ([^\r\n\0]*))?")
Headers = list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class AnswerHead:
    """An answer's status line and headers, as sent."""

    version: bytes
    status: int
    reason: bytes
    headers: Headers


def split_head(raw: bytes) -> tuple[bytes, Headers]:
    """A head (with or without its closing blank line) as its first line and its headers."""
    first, *lines = raw.removesuffix(b"\r\n\r\n").split(b"\r\n")
    if any(c in first for c in b"\r\n\0"):
        raise ValueError(f"a malformed first line: {first[:80]!r}")
    headers = []
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip() or any(c in line for c in b"\r\n\0"):
            raise ValueError(f"a malformed header line: {line[:80]!r}")
        headers.append((name, value.strip(b" \t")))
    return first, headers


def parse_answer_head(raw: bytes) -> AnswerHead:
    """An answer's head; ValueError if it is not a well-formed HTTP/1.0 or 1.1 one."""
    first, headers = split_head(raw)
    status = STATUS_LINE.fullmatch(first)
    if status is None:
        raise ValueError(f"not an HTTP/1.1 answer: {first[:80]!r}")
    return AnswerHead(status[1], int(status[2]), status[3] or b"", headers)
