"""The lane of a chat's plain plugin handlers (core/plugin_lanes.py): calls in the order
their events were told, an event the chat saves first placed once its teller comes (what is
told inside the save goes before), a teller stopped before it came places nothing, a teller
waits no longer than its seconds, and a stop that comes as its call ends is not lost."""

from __future__ import annotations

import asyncio

from core import plugin_lanes
from core.events import ChatSaved, RunEnded, RunEvents


class Chat:
    """What a lane needs of a chat: its events (RunEnded saved first, as the store does)."""

    def __init__(self) -> None:
        self.events = RunEvents()

        async def save(event: object) -> None: ...

        self.events.subscribe(RunEnded, save, first=True)


def queue(chat: Chat, work: plugin_lanes.Work, kind: type, seconds: float):
    """What core/plugin_handlers.py does for an event: its call told, its teller's wait."""
    return plugin_lanes.heard(chat, plugin_lanes.told(chat, work, kind), work, seconds)


def work(heard: list[str], name: str, gate: asyncio.Event | None = None):
    async def call() -> None:
        if gate is not None:
            await gate.wait()
        heard.append(name)

    return call


def test_due_calls_run_in_the_order_their_events_were_told():
    async def scenario() -> list[str]:
        chat, heard, gate = Chat(), [], asyncio.Event()
        first = queue(chat, work(heard, "history", gate), ChatSaved, 5)
        second = queue(chat, work(heard, "ended", None), ChatSaved, 5)
        waiting = asyncio.ensure_future(second)  # told later, awaited first
        await asyncio.sleep(0.05)
        assert heard == [] and not waiting.done()
        gate.set()
        await asyncio.gather(first, waiting)
        return heard

    assert asyncio.run(scenario()) == ["history", "ended"]


def test_a_call_the_save_holds_lets_a_later_one_pass_until_its_teller_comes():
    async def scenario() -> list[str]:
        chat, heard = Chat(), []
        ended = queue(chat, work(heard, "ended"), RunEnded, 5)  # save first
        await queue(chat, work(heard, "saved"), ChatSaved, 5)  # inside the save
        assert heard == ["saved"]
        await ended
        return heard

    assert asyncio.run(scenario()) == ["saved", "ended"]


def test_a_teller_stopped_before_it_came_places_nothing():
    async def scenario() -> tuple[list[str], int]:
        chat, heard = Chat(), []
        never = queue(chat, work(heard, "stopped"), RunEnded, 5)
        never.close()  # the run was stopped before it came to the plugins' work
        await queue(chat, work(heard, "next"), ChatSaved, 5)
        return heard, len(plugin_lanes._lanes[chat].calls)

    assert asyncio.run(scenario()) == (["next"], 0)


def test_a_teller_waits_at_most_its_seconds_and_its_call_still_runs_in_turn():
    async def scenario() -> list[str]:
        chat, heard, gate = Chat(), [], asyncio.Event()
        stuck = asyncio.ensure_future(queue(chat, work(heard, "stuck", gate), ChatSaved, 60))
        await queue(chat, work(heard, "behind"), ChatSaved, 0.1)  # returns
        assert heard == []
        gate.set()
        await stuck
        await asyncio.sleep(0.05)
        return heard

    assert asyncio.run(scenario()) == ["stuck", "behind"]


def test_a_stop_that_comes_as_the_call_ends_reaches_the_teller():
    async def scenario() -> bool:
        chat = Chat()
        teller: asyncio.Task[None] | None = None

        async def ends_with_a_stop() -> None:  # the run is stopped as its call ends
            await asyncio.sleep(0.01)  # the teller waits by now
            assert teller is not None
            asyncio.get_running_loop().call_soon(teller.cancel)

        teller = asyncio.ensure_future(queue(chat, ends_with_a_stop, ChatSaved, 5))
        try:
            await teller
        except asyncio.CancelledError:
            return True
        return False  # the stop was swallowed: the run would have gone on

    assert asyncio.run(scenario()) is True
