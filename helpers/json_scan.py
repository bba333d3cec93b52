"""Scanning JSON text as it streams: where strings end, where the first object ends.

Models write their reply a few characters at a time, and the loop must know
as soon as the first top-level object is complete. These are the low-level
pieces, shared by the reply's readers (`extract_tools`, `partial_reply`):
`closing_quote` finds where a string ends, jumping in C over its body, and
`JsonObjectScanner` follows depth and quotes across chunks, each character
once.
"""

from __future__ import annotations

import json
import re

__all__ = ["LENIENT_JSON", "JsonObjectScanner", "backslash_run", "closing_quote"]

#: strict=False: models put raw newlines and tabs inside strings.
LENIENT_JSON = json.JSONDecoder(strict=False)

# Outside strings only braces and quote characters matter: a regex search jumps
# straight to the next one. Inside a string, `closing_quote` jumps with str.find,
# which is memchr-fast; a regex over the body is ~5x slower on plain text but
# beats hopping quote by quote in Python once escaped quotes show up.
_STRUCTURE = re.compile(r"""[{}"']""")
# The rest of a string body: it stops at the closing quote, at a lone backslash
# ending the text, or at the end. Unrolled and possessive, so it never backtracks
# (possessive is ~1.8x faster here than the plain unrolled form).
_STRING_REST = {
    '"': re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL),
    "'": re.compile(r"[^'\\]*+(?:\\.[^'\\]*+)*+", re.DOTALL),
}


def closing_quote(text: str, pos: int, quote: str) -> int:
    """Index of the `quote` that ends a string, searching from `pos`; -1 if none yet.

    `pos` must not fall inside an escape (a quote after an odd run of
    backslashes is escaped; the run is counted back no further than `pos`).
    """
    found = text.find(quote, pos)
    if found < 0 or backslash_run(text, pos, found) % 2 == 0:
        return found
    # An escaped quote; more tend to follow (code, quoted speech), so walk the rest
    # of the string in C rather than hop from quote to quote in Python.
    rest = _STRING_REST[quote].match(text, found + 1)
    end = rest.end() if rest else found + 1  # it always matches, if only ""
    return end if end < len(text) and text[end] == quote else -1


def backslash_run(text: str, floor: int, index: int) -> int:
    """How many backslashes come right before `index`, counting no further back than `floor`."""
    run = index
    while run > floor and text[run - 1] == "\\":
        run -= 1
    return index - run


class JsonObjectScanner:
    """Find the end of the first complete top-level JSON object in a stream.

    Feed chunks as they arrive; each chunk is scanned once, with depth, the open
    quote and a pending escape carried over, so a whole stream costs O(length).
    Text before the first ``{`` (prose, a ```json fence) is skipped. Braces inside
    double- or single-quoted strings do not count.
    """

    __slots__ = ("_chunks", "_length", "_depth", "_quote", "_escape", "_start", "_end")

    def __init__(self) -> None:
        # Chunks are kept in a list, not concatenated on each feed: `str +=` on an
        # attribute copies the whole text every time, which is quadratic per stream.
        self._chunks: list[str] = []
        self._length = 0
        self._depth = 0
        self._quote: str | None = None  # the quote character of the open string
        self._escape = False  # the last chunk ended on an escape's backslash
        self._start: int | None = None
        self._end: int | None = None

    @property
    def text(self) -> str:
        """Everything fed so far."""
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    @property
    def length(self) -> int:
        """How many characters were fed so far."""
        return self._length

    @property
    def start(self) -> int | None:
        """Index of the first object's opening ``{``, once seen."""
        return self._start

    @property
    def end(self) -> int | None:
        """Index just after the first object's closing ``}``, once seen."""
        return self._end

    def feed(self, chunk: str) -> int | None:
        """Add `chunk`; return the end of the first complete object, or None so far."""
        base = self._length
        self._chunks.append(chunk)
        self._length += len(chunk)
        if self._end is None:
            self._scan(chunk, base)
        return self._end

    def _scan(self, chunk: str, base: int) -> None:
        pos, size = 0, len(chunk)
        if self._escape and size:
            pos, self._escape = 1, False  # this chunk opens with the escaped character
        while pos < size:
            if self._quote is not None:
                close = closing_quote(chunk, pos, self._quote)
                if close < 0:
                    self._escape = backslash_run(chunk, pos, size) % 2 == 1
                    return
                self._quote, pos = None, close + 1
            elif self._depth == 0:
                brace = chunk.find("{", pos)
                if brace < 0:
                    return
                self._start, self._depth, pos = base + brace, 1, brace + 1
            else:
                found = _STRUCTURE.search(chunk, pos)
                if found is None:
                    return
                char, pos = found.group(), found.end()
                if char == "{":
                    self._depth += 1
                elif char == "}":
                    self._depth -= 1
                    if self._depth == 0:
                        self._end = base + pos
                        return
                else:
                    self._quote = char
