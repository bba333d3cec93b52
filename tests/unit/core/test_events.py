"""Run events: subscribers hear of events in order, async work is awaited, failures stay local."""

from __future__ import annotations

import logging

from core.events import ChatSaved, RunEnded, RunEvents, StateChanged


async def test_subscribers_hear_their_kind_in_order_and_async_work_is_awaited():
    events, heard = RunEvents(), []

    async def slow(event: ChatSaved) -> None:
        heard.append(("async", event.chat_id))

    events.subscribe(ChatSaved, lambda e: heard.append(("plain", e.chat_id)))
    events.subscribe(ChatSaved, slow)
    events.subscribe(RunEnded, lambda e: heard.append(("other kind", "")))
    await events.emit(ChatSaved("c1"))
    assert heard == [("plain", "c1"), ("async", "c1")]


async def test_first_goes_before_the_others_and_unsubscribe_stops_it():
    events, heard = RunEvents(), []
    events.subscribe(StateChanged, lambda e: heard.append("late"))
    stop = events.subscribe(StateChanged, lambda e: heard.append("first"), first=True)
    await events.emit(StateChanged("paused"))
    stop()
    await events.emit(StateChanged("resumed"))
    assert heard == ["first", "late", "late"]


async def test_a_failing_subscriber_is_logged_and_the_others_still_hear(caplog):
    events, heard = RunEvents(), []

    def broken(event: RunEnded) -> None:
        raise ValueError("a bug in a listener")

    async def broken_later(event: RunEnded) -> None:
        raise KeyError("another")

    events.subscribe(RunEnded, broken)
    events.subscribe(RunEnded, broken_later)
    events.subscribe(RunEnded, lambda e: heard.append(e.answer))
    with caplog.at_level(logging.ERROR, logger="core.events"):
        await events.emit(RunEnded(answer="42"))
    assert heard == ["42"]
    assert [r.exc_info[0] for r in caplog.records] == [ValueError, KeyError]


async def test_emit_soon_runs_plain_subscribers_at_once_and_returns_the_async_work():
    events, heard = RunEvents(), []
    events.subscribe(ChatSaved, lambda e: heard.append("plain"))
    assert events.emit_soon(ChatSaved("c")) is None  # nothing to wait for
    assert heard == ["plain"]

    async def later(event: ChatSaved) -> None:
        heard.append("async")

    events.subscribe(ChatSaved, later)
    pending = events.emit_soon(ChatSaved("c"))
    assert heard == ["plain", "plain"]
    await pending
    assert heard == ["plain", "plain", "async"]


def test_plain_subscribers_need_no_event_loop():
    """Pausing a chat without a runtime (tests, tools) tells the pusher without a loop."""
    events, heard = RunEvents(), []
    events.subscribe(StateChanged, lambda e: heard.append(e.change))
    assert events.emit_soon(StateChanged("paused")) is None
    assert heard == ["paused"]


def test_wants_says_whether_anyone_listens_to_a_kind():
    # An event that costs something to build (a model call's) is built only while wanted.
    events = RunEvents()
    assert not events.wants(ChatSaved)
    stop = events.subscribe(ChatSaved, lambda e: None)
    assert events.wants(ChatSaved) and not events.wants(RunEnded)
    stop()
    assert not events.wants(ChatSaved)
