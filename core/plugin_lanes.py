"""Plugins' plain handlers hear a chat's events one at a time, in the order they are told.

A plain handler runs in a worker thread (core/plugin_handlers.py): the calls of two events
handed to the threads at once would race (a run's end was heard before its last history
entry, an event told without being awaited). Each chat has a lane, run by one task of the
chat's at a time. An event's call takes its place in it when the event is told (`told`),
or, for an event the chat's save goes first on (`RunEvents.saves_first`: a run's end...),
once that save is done and its teller comes to the plugins' work (`heard`), so a handler
reads the chat's file with the event in it (and `ChatSaved`, told inside that save, is
heard before the event saved). A teller stopped before it came places nothing.

The teller waits for its call at most the handlers' budget: a lane behind never holds a
run longer than the setting says, and the call still runs in its turn.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.chat import Chat

Work = Callable[[], Awaitable[None]]


@dataclass(eq=False)
class Call:
    """One event's plain handlers' work, and the future its teller waits on."""

    work: Work
    done: asyncio.Future[None]


@dataclass(eq=False)
class _Lane:
    calls: deque[Call] = field(default_factory=deque)
    #: The task running the calls (none, or done: the next call starts one).
    task: asyncio.Future[None] | None = None


_lanes: weakref.WeakKeyDictionary[Chat, _Lane] = weakref.WeakKeyDictionary()


def told(chat: Chat, work: Work, kind: type) -> Call | None:
    """At the telling of an event of type `kind` (on the agents' loop): `work` placed in
    `chat`'s lane now, or None when the chat's save of the event goes first (`heard`
    places it)."""
    if chat.events.saves_first(kind):
        return None
    return _place(chat, work)


async def heard(chat: Chat, placed: Call | None, work: Work, seconds: float) -> None:
    """The teller's wait for its call (placed now if `told` did not), at most `seconds`."""
    call = placed if placed is not None else _place(chat, work)
    try:
        # Not wait_for: on Python 3.11 it can swallow the run's stop when the call ends
        # at the same moment; shielded, a teller stopped leaves the call to run in turn.
        async with asyncio.timeout(seconds):
            await asyncio.shield(call.done)
    except TimeoutError:
        pass  # the lane is behind (or the handler overran, which it records itself)


def _place(chat: Chat, work: Work) -> Call:
    lane = _lanes.setdefault(chat, _Lane())
    call = Call(work, asyncio.get_running_loop().create_future())
    lane.calls.append(call)
    if lane.task is None or lane.task.done():  # also one stopped before its first step
        lane.task = chat.events.spawn(_drain(lane))
    return call


async def _drain(lane: _Lane) -> None:
    try:
        while lane.calls:
            call = lane.calls[0]
            try:
                await call.work()  # each handler within its time: a stuck one is left
            finally:
                lane.calls.popleft()
                _free(call)
    finally:  # stopped (the chat let go, the server stops): the calls left are not made
        while lane.calls:
            _free(lane.calls.popleft())


def _free(call: Call) -> None:
    if not call.done.done():  # its teller may have been stopped meanwhile
        call.done.set_result(None)
