"""Making a terminal's raw output readable, and reading what it says about its state.

Programs write colour codes, cursor moves, carriage-return progress bars and
sometimes binary bytes; the agent and the page get plain text. The session's
readiness marker (printed by the shell's prompt or the REPL drivers) tells a
finished command apart from one that is quiet, and a question at the end of
the output (`[y/N]`, `Password:`) tells a program waiting for an answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
