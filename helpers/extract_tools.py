"""Tolerant reading of the model's reply: one JSON object naming the tool to run.

Each turn the model answers with a single object::

    {"thoughts": ["..."], "headline": "...", "tool_name": "...", "tool_args": {...}}

Models wrap it in prose or code fences, leave trailing commas, use single
quotes, forget to quote keys, get cut off mid-string, or write a second object
after the first. This module turns such text into something the loop can use,
in three places of the loop (see DESIGN.md, "The loop"):

- `JsonObjectScanner` is fed the stream chunk by chunk and says where the first
  complete top-level object ends, so the loop can stop reading there;
- `extract_partial` pulls the headline, thoughts, tool name and the `response`
  text out of an unfinished reply on every chunk, for live display;
- `parse_reply` reads the finished reply into an `AgentReply`, or raises
  `ReplyFormatError` with a message the model can act on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from json_repair import repair_json

from helpers.errors import RepairableException

__all__ = [
    "AgentReply",
    "JsonObjectScanner",
    "PartialReply",
    "ReplyFormatError",
    "extract_partial",
    "parse_reply",
    "split_tool_name",
]

# Key spellings models produce besides the canonical one (canonical first: it wins).
_TOOL_NAME_KEYS = ("tool_name", "tool")
_TOOL_ARGS_KEYS = ("tool_args", "args", "arguments", "tool_input")
_THOUGHTS_KEYS = ("thoughts", "thought")

# strict=False: models put raw newlines and tabs inside strings.
_LENIENT_JSON = json.JSONDecoder(strict=False)


class ReplyFormatError(RepairableException, ValueError):
    """The reply holds a JSON object, but not one the loop can act on.

    A `RepairableException`, so the loop feeds the text back to the model; also a
    `ValueError`, since it is a malformed value like any other parse failure.
    """


# ---------------------------------------------------------------------------
# Scanner: where does the first complete object end?
# ---------------------------------------------------------------------------

# Outside strings only braces and quote characters matter: a regex search jumps
# straight to the next one. Inside a string, `_closing_quote` jumps with str.find,
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


def _closing_quote(text: str, pos: int, quote: str) -> int:
    """Index of the `quote` that ends a string, searching from `pos`; -1 if none yet.

    `pos` must not fall inside an escape (a quote after an odd run of
    backslashes is escaped; the run is counted back no further than `pos`).
    """
    found = text.find(quote, pos)
    if found < 0 or _backslash_run(text, pos, found) % 2 == 0:
        return found
    # An escaped quote; more tend to follow (code, quoted speech), so walk the rest
    # of the string in C rather than hop from quote to quote in Python.
    rest = _STRING_REST[quote].match(text, found + 1)
    end = rest.end() if rest else found + 1  # it always matches, if only ""
    return end if end < len(text) and text[end] == quote else -1


def _backslash_run(text: str, floor: int, index: int) -> int:
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
                close = _closing_quote(chunk, pos, self._quote)
                if close < 0:
                    self._escape = _backslash_run(chunk, pos, size) % 2 == 1
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


# ---------------------------------------------------------------------------
# Full parse of a finished reply
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentReply:
    """One model turn, read and normalised."""

    thoughts: list[str] = field(default_factory=list)
    headline: str = ""
    tool_name: str
    """The tool's name, without a ``:method`` suffix."""
    tool_method: str | None = None
    """The part after ``:`` in ``"tool_name": "name:method"``, if any."""
    tool_args: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    """The object as parsed, before normalisation."""


def split_tool_name(name: str) -> tuple[str, str | None]:
    """Split ``"name:method"`` into ``("name", "method")``; no method gives None."""
    tool, _, method = name.partition(":")
    return tool.strip(), method.strip() or None


def parse_reply(text: str) -> AgentReply | None:
    """Read the reply object in `text` as an `AgentReply`.

    The reply is the first JSON object that names a tool; objects before it
    without one (braces in prose: "I'll fill in {name}") are passed over.
    Returns None when no JSON object can be found (plain prose, ``[1, 2]``); an
    object inside a list counts, as does an object json_repair can make of
    broken text. Raises `ReplyFormatError` when there are objects but none
    names a tool, or the tool's arguments are not an object.
    """
    first: tuple[dict[str, Any], bool] | None = None
    pos = 0
    for _ in range(_MAX_CANDIDATES):
        start = text.find("{", pos)
        if start < 0:
            break
        obj, end = _read_object(text, start)
        if isinstance(obj, dict):
            if _first(obj, _TOOL_NAME_KEYS) is not None or end is None:
                return _to_reply(obj, truncated=end is None)
            first = first or (obj, False)
        if end is None:
            break
        pos = end
    return _to_reply(first[0], truncated=first[1]) if first else None


def _read_object(text: str, start: int) -> tuple[Any, int | None]:
    """The value starting at `start` and the index after it (None: it never closed)."""
    try:
        # Fast path, the usual case: valid JSON. raw_decode reads one object
        # and ignores what follows, in C, without a scan to find its end.
        return _LENIENT_JSON.raw_decode(text, start)
    except json.JSONDecodeError:
        pass
    scanner = JsonObjectScanner()
    end = scanner.feed(text[start:])
    # Only this object (or all from `{` on, if it never closed) goes to
    # json_repair: it is pure Python (~3 µs a character), and given trailing
    # text it may return a list of several values.
    if end is None:
        return _repair(text[start:]), None
    return _repair(text[start : start + end]), start + end


#: Objects looked at before giving up on finding the one that names a tool.
_MAX_CANDIDATES = 8


def _repair(text: str) -> Any:
    try:
        obj = repair_json(text, return_objects=True)
    except (ValueError, RecursionError):  # absurd nesting; say "no object", not crash
        return None
    if isinstance(obj, list):
        # json_repair yields a list when it sees several values: keep the first object.
        obj = obj[0] if obj else None
    return obj


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if obj.get(key) is not None:
            return obj[key]
    return None


def _to_reply(obj: dict[str, Any], *, truncated: bool) -> AgentReply:
    # If the reply was cut off, say so: "got str" alone would puzzle the model.
    hint = " (the reply ended before the JSON object was closed)" if truncated else ""

    name = _first(obj, _TOOL_NAME_KEYS)
    if name is None or (isinstance(name, str) and not name.strip()):
        keys = ", ".join(str(key) for key in obj) or "none"
        raise ReplyFormatError(f"tool_name is missing (keys present: {keys}){hint}")
    if not isinstance(name, str):
        raise ReplyFormatError(f"tool_name must be a string, got {type(name).__name__}{hint}")
    tool_name, tool_method = split_tool_name(name)
    if not tool_name:
        raise ReplyFormatError(f"tool_name is missing before ':' in {name!r}{hint}")

    args = _first(obj, _TOOL_ARGS_KEYS)
    if args is None:
        args = {}
    elif not isinstance(args, dict):
        raise ReplyFormatError(f"tool_args must be a JSON object, got {type(args).__name__}{hint}")

    headline = obj.get("headline")
    return AgentReply(
        thoughts=_as_strings(_first(obj, _THOUGHTS_KEYS)),
        headline="" if headline is None else _as_string(headline),
        tool_name=tool_name,
        tool_method=tool_method,
        tool_args=args,
        raw=obj,
    )


def _as_string(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _as_strings(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [_as_string(item) for item in value if item is not None]
    return [_as_string(value)]


# ---------------------------------------------------------------------------
# Partial read of a reply still streaming
# ---------------------------------------------------------------------------


@dataclass(slots=True)
class PartialReply:
    """What can be shown of a reply that is still being written.

    Each string is a prefix of its final value; None means "not started yet".
    """

    headline: str | None = None
    thoughts: list[str] = field(default_factory=list)
    """The complete thoughts plus the one being written."""
    tool_name: str | None = None
    """The raw value so far, ``:method`` included."""
    text: str | None = None
    """``tool_args.text`` so far: the `response` tool's reply to the user."""


# The next token outside strings: a quote opening a string (whose end
# `_closing_quote` finds), punctuation, or a bare word (number, literal, unquoted key).
_TOKEN = re.compile(r"""[{}\[\]:,"']|[^\s"'{}\[\]:,]+""")
# A \u escape cut short, or a complete high surrogate whose low half is still to come.
_UNFINISHED_U = re.compile(r"\\u[0-9a-fA-F]{0,3}\Z")
_HIGH_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")
# Decodes, in Python, what the C JSON decoder cannot: single-quoted strings and
# escapes JSON refuses. Those are read as json_repair reads them in `parse_reply`,
# so what is shown while streaming stays a prefix of the final value: `\'` is a
# quote, any other unknown `\x` stays as written.
_ESCAPE = re.compile(
    r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
    r"|u([0-9a-fA-F]{4})|(.))",
    re.DOTALL,
)
_SIMPLE_ESCAPES = dict(zip("ntrbf\"\\/'", "\n\t\r\b\f\"\\/'", strict=True))

# Roles of the containers whose contents extract_partial reports.
_TOP, _THOUGHTS, _ARGS, _OTHER = range(4)


@dataclass(slots=True)
class _Frame:
    """An object or array open at this point of the reply."""

    is_object: bool
    role: int
    key: str | None = None
    want_key: bool = True


def extract_partial(text: str) -> PartialReply:
    """Read what is readable of an unfinished reply. Never raises.

    Cheap enough to run on every streamed chunk: it tokenises from the first
    ``{`` with Python work per token, not per character, and the C JSON decoder
    finds and decodes the strings. Measured on CPython 3.11, a 20 KB reply that is
    mostly response text: ~55 µs for plain prose, ~80 µs with an escape every 20
    characters, ~170 µs for code with an escaped quote every 7; ~400 µs if it is
    full of `\'` (not JSON), ~1.5 ms if full of other escapes JSON refuses.
    """
    out = PartialReply()
    pos = text.find("{")
    if pos < 0:
        return out
    # With one more quote at the end, the string still being written ends there,
    # so the C decoder can read it too (built once per call, not per string). An
    # escape cut short would spoil that, so it is left out until it is complete.
    padded = _trim_unfinished_escape(text) + '"'
    stack: list[_Frame] = []
    while (token := _TOKEN.search(text, pos)) is not None:
        char, pos = text[token.start()], token.end()
        if char in "\"'":
            value, pos, closed = _read_string(text, padded, token.start())
            frame = stack[-1]
            if frame.is_object and frame.want_key:
                frame.key = value
            else:
                _take_string(out, frame, value)
            if not closed:
                break
        elif char in "{[":
            stack.append(_Frame(is_object=char == "{", role=_role(stack, char)))
        elif char in "}]":
            stack.pop()
            if not stack:
                break  # the first object is complete; anything after is not ours
        elif char == ":":
            stack[-1].want_key = False
        elif char == ",":
            stack[-1].want_key, stack[-1].key = True, None
        elif stack[-1].is_object and stack[-1].want_key:
            stack[-1].key = token.group()  # an unquoted key
    return out


def _read_string(text: str, padded: str, at: int) -> tuple[str, int, bool]:
    """Decode the string whose opening quote is at `at`.

    Returns its value (what is written so far if it is unfinished), the index
    just after it, and whether its closing quote has arrived.
    """
    quote = text[at]
    if quote == '"':
        try:
            value, end = _LENIENT_JSON.raw_decode(padded, at)
        except json.JSONDecodeError:
            pass  # an escape JSON refuses: read it below
        else:
            if end < len(padded):
                return value, end, True
            return value, len(text), False  # it ran to the added quote: unfinished
    close = _closing_quote(text, at + 1, quote)
    if close >= 0:
        return _decode_loosely(text[at + 1 : close], quote), close + 1, True
    body = _trim_unfinished_escape(text[at + 1 :])
    return _decode_loosely(body, quote), len(text), False


def _decode_loosely(body: str, quote: str) -> str:
    """Decode a string body that has escapes JSON refuses, or single quotes."""
    if quote == '"' and "\0" not in body:
        # `\'` is the escape models write most that JSON refuses: turn it into `'`
        # and keep decoding in C (a Python call per escape costs ~1 µs). Escaped
        # backslashes are hidden meanwhile, so that `\\'` keeps its meaning.
        fixed = body.replace("\\\\", "\0").replace("\\'", "'").replace("\0", "\\\\")
        try:
            return _LENIENT_JSON.decode(f'"{fixed}"')
        except json.JSONDecodeError:
            pass  # another escape JSON refuses (`\x`, `\u` without four hex digits)
    return _ESCAPE.sub(_unescape, body)


def _role(stack: list[_Frame], opener: str) -> int:
    """What a container opening now holds, judged by the key it is the value of."""
    if not stack:
        return _TOP
    parent = stack[-1]
    if parent.role == _TOP and parent.is_object and not parent.want_key:
        if opener == "{" and parent.key in _TOOL_ARGS_KEYS:
            return _ARGS
        if opener == "[" and parent.key in _THOUGHTS_KEYS:
            return _THOUGHTS
    return _OTHER


def _take_string(out: PartialReply, frame: _Frame, value: str) -> None:
    """Record a string value if it is one of those reported."""
    if frame.role == _THOUGHTS:
        out.thoughts.append(value)
    elif frame.role == _TOP:
        if frame.key == "headline":
            out.headline = value
        elif frame.key in _TOOL_NAME_KEYS:
            out.tool_name = value
        elif frame.key in _THOUGHTS_KEYS:
            out.thoughts = [value]
    elif frame.role == _ARGS and frame.key == "text":
        out.text = value


def _trim_unfinished_escape(body: str) -> str:
    """Cut an escape that the rest of the stream will finish off the end of `body`.

    That is a lone backslash, a short ``\\uXX``, or a high surrogate waiting for
    its low half. Only the tail is searched, so this is O(1) in the body's length.
    """
    if _backslash_run(body, 0, len(body)) % 2 == 1:
        body = body[:-1]
    for pattern in (_UNFINISHED_U, _HIGH_SURROGATE):
        found = pattern.search(body, max(0, len(body) - 6))
        if found and _backslash_run(body, 0, found.start()) % 2 == 0:
            body = body[: found.start()]
    return body


def _unescape(match: re.Match[str]) -> str:
    high, low, code, char = match.groups()
    if high:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
    if code:
        return chr(int(code, 16))
    return _SIMPLE_ESCAPES.get(char, "\\" + char)
