"""Plugins' plain handlers hear a chat's events in the order they happened.

A plain handler runs in a worker thread (core/plugin_handlers.py): the calls of two events
handed to the threads at once would race (a run's end was heard before its last history
entry, an event told without being awaited). Each chat has a lane. A call takes its place
in it when its event is told, and runs once it is *due*: at once for an event nothing saves
first, and for one the chat's save goes first (`RunEvents.saves_first`), when its teller
reaches it, so a handler reads the chat's file with the event in it. A due call runs after
the due calls before it; one not yet due lets later ones pass (`ChatSaved`, told inside the
save of a run's end, is heard before that end). A call whose teller stopped before reaching
it (a run stopped) is dropped.

The teller waits for its call at most the handlers' budget: a lane behind never holds a
run longer than the setting says, and the call still runs in its turn.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.chat import Chat
    from core.events import RunEvents


@dataclass(eq=False)
class _Call:
    work: Callable[[], Awaitable[None]]
    done: asyncio.Future[None]
    due: bool


@dataclass(eq=False)
class _Lane:
    calls: list[_Call] = field(default_factory=list)
    #: Whether a task of the chat's runs the due calls.
    running: bool = False


_lanes: weakref.WeakKeyDictionary[Chat, _Lane] = weakref.WeakKeyDictionary()


def queue(chat: Chat, work: Callable[[], Awaitable[None]], kind: type, seconds: float):
    """Place `work` (the calls of an event of type `kind`) in `chat`'s lane now, as its event
    is told (call on the agents' loop); the coroutine its teller awaits: it makes the call
    due, if the event's save kept it waiting, and waits for it at most `seconds`."""
    loop = asyncio.get_running_loop()
    lane = _lanes.setdefault(chat, _Lane())
    call = _Call(work, loop.create_future(), due=not chat.events.saves_first(kind))
    lane.calls.append(call)
    if call.due:
        _run(chat.events, lane)
    reached = _reached(chat.events, lane, call, seconds)
    # Never awaited (the run was stopped before it came to it): the call is not made.
    weakref.finalize(reached, _dropped, loop, lane, call)
    return reached


async def _reached(events: RunEvents, lane: _Lane, call: _Call, seconds: float) -> None:
    if not call.due:
        call.due = True
        _run(events, lane)
    try:
        await asyncio.wait_for(asyncio.shield(call.done), seconds)
    except TimeoutError:
        pass  # the lane is behind (or the handler overran, which it records itself)


def _run(events: RunEvents, lane: _Lane) -> None:
    if not lane.running:
        lane.running = True
        events.spawn(_drain(lane))


async def _drain(lane: _Lane) -> None:
    try:
        while (call := next((c for c in lane.calls if c.due), None)) is not None:
            try:
                await call.work()  # each handler within its time: a stuck one is left
            finally:
                _forget(lane, call)
    finally:
        lane.running = False
        for call in [c for c in lane.calls if c.due]:  # stopped (the chat let go)
            _forget(lane, call)


def _forget(lane: _Lane, call: _Call) -> None:
    if call in lane.calls:
        lane.calls.remove(call)
    if not call.done.done():  # its teller may have been stopped meanwhile
        call.done.set_result(None)


def _dropped(loop: asyncio.AbstractEventLoop, lane: _Lane, call: _Call) -> None:
    def drop() -> None:
        if not call.due:
            _forget(lane, call)

    try:
        loop.call_soon_threadsafe(drop)
    except RuntimeError:  # the loop is closed: nothing runs the lane any more
        pass
