"""Kept Telegram answers delivered (server/apis/telegram/connection.py `_deliver`): each
Telegram chat's in order, the "came late" line once however many tries it takes, a chat
Telegram will not take now holding up only its own answers, and an answer whose Cadre
chat the Telegram chat no longer holds dropped; the delivery loop outlives a fault."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest
from telegram.error import RetryAfter

import server.apis.telegram.connection as connection_module
from server.apis.telegram.config import BotConfig
from server.apis.telegram.connection import LATE, Connection
from server.apis.telegram.pending import Pending
from server.apis.telegram.turns import Turns
from server.apis.telegram.watch import Ended


class FakeBot:
    """Records what it sends; `refuse(chat, text)` may raise instead."""

    def __init__(self, refuse=lambda chat, text: None) -> None:
        self.sent: list[tuple[int, str]] = []
        self.refuse = refuse

    async def send_message(self, chat: int, text: str, **_: object) -> SimpleNamespace:
        self.refuse(chat, text)
        self.sent.append((chat, text))
        return SimpleNamespace(message_id=len(self.sent))


@pytest.fixture
def connection(tmp_path, monkeypatch):
    monkeypatch.setattr(connection_module, "_produced", lambda ended: (None, []))
    held = {7: ["c1", "c2"], 8: ["c3"]}
    side = SimpleNamespace(map=SimpleNamespace(
        chats_of=lambda chats: {chat: list(held.get(chat, [])) for chat in chats}))  # fmt: skip
    config = BotConfig(token="1:x", allowed=frozenset({7, 8}), api_base="http://x")
    made = Connection(config, side, Turns(), lambda: config, lambda _c: False,
                      pending=Pending(tmp_path / "pending.json"))  # fmt: skip
    made.held = held
    return made


def keep(connection: Connection, chat: int, chat_id: str, answer: str) -> None:
    connection.pending.keep(chat, chat_id, Ended(answer))


def test_each_chats_answers_go_in_order_with_the_late_line_once(connection):
    connection.bot = FakeBot()
    keep(connection, 7, "c1", "First.")
    keep(connection, 8, "c3", "Other.")
    keep(connection, 7, "c2", "Second.")
    assert asyncio.run(connection._deliver()) is True
    assert [text for chat, text in connection.bot.sent if chat == 7] == [
        LATE, "First.", LATE, "Second."]  # fmt: skip
    assert connection.pending.all() == []


def test_a_chat_telegram_will_not_take_now_holds_up_only_its_own(connection):
    def refuse(chat: int, text: str) -> None:
        if chat == 7 and text != LATE:
            raise RetryAfter(120)  # longer than a send waits

    connection.bot = FakeBot(refuse)
    keep(connection, 7, "c1", "First.")
    keep(connection, 7, "c2", "Second.")
    keep(connection, 8, "c3", "Other.")
    for _ in range(3):
        assert asyncio.run(connection._deliver()) is False
    assert connection.bot.sent == [(7, LATE), (8, LATE), (8, "Other.")]  # the line once
    assert [k.ended.answer for k in connection.pending.all()] == ["First.", "Second."]
    connection.bot.refuse = lambda chat, text: None
    assert asyncio.run(connection._deliver()) is True
    assert connection.bot.sent[3:] == [(7, "First."), (7, LATE), (7, "Second.")]


def test_an_answer_of_a_chat_the_telegram_chat_no_longer_holds_is_dropped(connection):
    connection.bot = FakeBot()
    keep(connection, 7, "c1", "For c1.")
    connection.held[7] = []  # /new and the chat deleted, or the chat map changed
    assert asyncio.run(connection._deliver()) is True
    assert connection.bot.sent == [] and connection.pending.all() == []


def test_the_delivery_loop_outlives_a_fault_of_its_own(connection, caplog, monkeypatch):
    connection.bot = FakeBot()
    keep(connection, 7, "c1", "Kept.")
    real = connection.pending.delivered
    faults = iter([OSError("disk full")])

    def delivered(kept) -> None:
        fault = next(faults, None)
        if fault is not None:
            raise fault
        real(kept)

    monkeypatch.setattr(connection.pending, "delivered", delivered)
    monkeypatch.setattr(connection_module, "FIRST_RETRY", 0.01)

    async def go() -> None:
        loop = asyncio.create_task(connection.delivering())
        for _ in range(200):
            await asyncio.sleep(0.01)
            if not connection.pending.all():
                break
        assert not loop.done()
        loop.cancel()

    with caplog.at_level(logging.ERROR):
        asyncio.run(go())
    assert "disk full" in caplog.text and connection.pending.all() == []
    assert connection.bot.sent == [(7, LATE), (7, "Kept.")]  # once, though removed twice
