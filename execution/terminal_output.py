"""Making a terminal's raw output readable, and reading what it says about its state.

Programs write colour codes, cursor moves, carriage-return progress bars and
sometimes binary bytes; the agent and the page get plain text. The session's
readiness marker (printed by the shell's prompt or the REPL drivers) tells a
finished command apart from one that is quiet, and a question at the end of
the output (`[y/N]`, `Password:`) tells a program waiting for an answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and two-character escapes.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[@-Z\\-_]"
)
_PARTIAL_MARKER = re.compile(r"__CADRE_READY_\w*$")
# Control characters other than tab and newline (after \r and \b are handled).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

#: The end of output of a program asking something (checked on the last line).
_QUESTIONS = [
    re.compile(r"[\[(]\s*y(es)?\s*/\s*n(o)?\s*[\])]", re.IGNORECASE),
    re.compile(r"\byes/no\b", re.IGNORECASE),
    re.compile(r"(password|passphrase|passcode|pin)( for [^:]*)?:\s*$", re.IGNORECASE),
    re.compile(r"press (enter|return|any key)", re.IGNORECASE),
    re.compile(r"\?\s*$"),
    re.compile(r"(>>>|\.\.\.) $"),  # a Python prompt started by the command
    re.compile(r"(enter|input|type)\b[^:]*:\s*$", re.IGNORECASE),
]


def clean(raw: str) -> str:
    """`raw` terminal output as plain text: no escapes, progress bars at their last state."""
    text = _ANSI.sub("", raw).replace("\r\n", "\n")
    lines = []
    for line in text.split("\n"):
        if "\r" in line:  # a line redrawn in place: what is left visible
            line = _overlay(line.split("\r"))
        if "\b" in line:
            line = _backspaced(line)
        lines.append(_CONTROL.sub("", line))
    return "\n".join(lines)


def shown(raw: str) -> str:
    """Cleaned output for the page while it streams: a half-arrived marker is left out."""
    return _PARTIAL_MARKER.sub("", clean(raw))


def _overlay(parts: list[str]) -> str:
    """What a terminal shows after writing `parts` each from the start of the line."""
    shown = ""
    for part in parts:
        shown = part + shown[len(part) :]
    return shown


def _backspaced(line: str) -> str:
    kept: list[str] = []
    for char in line:
        if char == "\b":
            if kept:
                kept.pop()
        else:
            kept.append(char)
    return "".join(kept)


def asks_question(text: str) -> bool:
    """True when the last line of `text` looks like a program waiting for an answer."""
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    if not last.strip():
        return False
    return any(pattern.search(last) for pattern in _QUESTIONS)


Outcome = Literal["done", "question", "first_timeout", "idle_timeout", "total_timeout", "exited"]


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait: for the first output, between outputs, and in all."""

    first: float = 30.0
    between: float = 15.0
    total: float = 180.0


@dataclass
class Collected:
    """What one wait for output brought: the text, why it ended, the exit code if done.

    A huge output keeps its beginning (`before_cut`) and its end (`text`);
    `dropped` characters between them were not kept.
    """

    text: str
    outcome: Outcome
    exit_code: int | None = None
    dropped: int = 0
    before_cut: str = ""
    #: Why Cadre ended the session ("" when it ended by itself or runs on).
    stopped: str = ""
    #: What happened meanwhile that the agent should know (a connection refused...).
    notices: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Marker:
    """The readiness marker of one session: `__CADRE_READY_<token>_<exit code>__`."""

    token: str

    @property
    def prompt(self) -> str:
        """The shell prompt that prints this marker with the last exit code."""
        return f"__CADRE_READY_{self.token}_$?__"

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(rf"__CADRE_READY_{re.escape(self.token)}_(-?\d+)__ ?")

    def find(self, text: str) -> tuple[str, int | None]:
        """`text` without its markers, and the exit code of the last one (None: not ready)."""
        code: int | None = None
        for match in self.pattern.finditer(text):
            code = int(match.group(1))
        return (self.pattern.sub("", text), code) if code is not None else (text, None)


class OutputBuffer:
    """One run's output, bounded: its first `head` and last `tail` characters.

    What falls between is counted, not kept, so a program printing for hours
    cannot fill Cadre's memory.
    """

    def __init__(self, head: int = 1_000_000, tail: int = 15_000_000) -> None:
        self.head_limit = head
        self.tail_limit = tail
        self.head = ""
        self.tail: list[str] = []
        self.tail_size = 0
        self.dropped = 0
        self.last_arrival = 0.0

    def append(self, text: str) -> None:
        if len(self.head) < self.head_limit and not self.tail:
            room = self.head_limit - len(self.head)
            self.head += text[:room]
            text = text[room:]
        if not text:
            return
        self.tail.append(text)
        self.tail_size += len(text)
        while self.tail_size > self.tail_limit:
            extra = self.tail_size - self.tail_limit
            first = self.tail[0]
            if len(first) <= extra:
                self.tail.pop(0)
                self.tail_size -= len(first)
                self.dropped += len(first)
            else:
                self.tail[0] = first[extra:]
                self.tail_size -= extra
                self.dropped += extra

    def end(self, size: int) -> str:
        """The last `size` characters (fewer when there are fewer)."""
        parts: list[str] = []
        have = 0
        for piece in reversed(self.tail):
            parts.append(piece)
            have += len(piece)
            if have >= size:
                break
        text = "".join(reversed(parts))
        if have < size:
            text = self.head + text
        return text[-size:]

    def parts(self) -> tuple[str, str]:
        """What was kept before the dropped part and after it ("" and all when none was)."""
        if not self.dropped:
            return "", self.head + "".join(self.tail)
        return self.head, "".join(self.tail)

    def size(self) -> int:
        """Characters kept now."""
        return len(self.head) + self.tail_size

    def __bool__(self) -> bool:
        return bool(self.head or self.tail)


class Notices:
    """What the agent should hear with a session's next result, the first `limit` kept (a
    command whose connections the proxy refuses in a loop would make thousands)."""

    def __init__(self, limit: int = 20) -> None:
        self.limit = limit
        self._kept: list[str] = []
        self._more = 0

    def add(self, text: str) -> None:
        if len(self._kept) < self.limit:
            self._kept.append(text)
        else:
            self._more += 1

    def take(self) -> list[str]:
        """The notices so far (and how many more came), gone from here."""
        kept, more = self._kept, self._more
        self._kept, self._more = [], 0
        return [*kept, f"... and {more} more like these"] if more else kept
