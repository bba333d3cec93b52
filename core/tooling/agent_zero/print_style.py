"""Agent Zero's `PrintStyle`, which its tools use to print to the console, as logging.

Cadre's library code logs instead of printing; colours and padding mean nothing
in a log, so the style arguments are accepted and ignored.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("agent_zero_tool")


def _text(args: tuple[Any, ...]) -> str:
    return " ".join(str(arg) for arg in args)


class PrintStyle:
    """`PrintStyle(font_color=..., bold=...).print(text)` and `PrintStyle.error(text)`."""

    def __init__(self, **style: Any) -> None:
        self.style = style

    def print(self, *args: Any, **_: Any) -> None:
        log.info("%s", _text(args))

    def stream(self, *args: Any, **_: Any) -> None:
        log.debug("%s", _text(args))

    @staticmethod
    def standard(*args: Any, **_: Any) -> None:
        log.info("%s", _text(args))

    @staticmethod
    def hint(*args: Any, **_: Any) -> None:
        log.info("%s", _text(args))

    @staticmethod
    def info(*args: Any, **_: Any) -> None:
        log.info("%s", _text(args))

    @staticmethod
    def success(*args: Any, **_: Any) -> None:
        log.info("%s", _text(args))

    @staticmethod
    def debug(*args: Any, **_: Any) -> None:
        log.debug("%s", _text(args))

    @staticmethod
    def warning(*args: Any, **_: Any) -> None:
        log.warning("%s", _text(args))

    @staticmethod
    def error(*args: Any, **_: Any) -> None:
        log.error("%s", _text(args))
