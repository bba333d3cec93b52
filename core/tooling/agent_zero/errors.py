"""Agent Zero's `helpers.errors` (and `python.helpers.errors`), as far as Cadre has it.

`RepairableException` is Cadre's own: a tool raising it has its text shown to the
model, which can fix its call, in Agent Zero as in Cadre. The three small functions
Agent Zero's tools call around an exception are given with the same meaning.
"""

from __future__ import annotations

import asyncio
import traceback

from helpers.errors import RepairableException

__all__ = ["RepairableException", "error_text", "format_error", "handle_error"]


def handle_error(exc: BaseException) -> None:
    """Let a stop through: a cancelled task must stay cancelled, whatever catches it."""
    if isinstance(exc, asyncio.CancelledError):
        raise exc


def error_text(exc: BaseException) -> str:
    return str(exc)


def format_error(exc: BaseException, *_: object, **__: object) -> str:
    """The exception's message first, then its traceback (Agent Zero's trimming options
    are accepted and ignored: Cadre's log keeps the whole of it)."""
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return f"{type(exc).__name__}: {exc}\n\n{''.join(lines)}".rstrip()
