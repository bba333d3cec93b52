"""The Telegram bridge against the fake Bot API: strangers' updates of every
kind reach no Cadre chat; the bot's token stays out of the log."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest
from telegram import Bot, Update

from server.apis.telegram.config import BotConfig
from server.apis.telegram.connection import Connection
from server.apis.telegram.conversation import Conversation
from server.apis.telegram.turns import Turns
from tests.support.fake_telegram import FakeTelegram

FRIEND, STRANGER, GROUP = 1001, 2002, -100555


class RecordingSide:
    """A CadreSide that notes every call: a stranger must cause none."""

    def __init__(self):
        self.calls = []
        self.chats = self

    def __getattr__(self, name):
        def noted(*args, **kwargs):
            self.calls.append((name, args))
            return None

        return noted


def _msg(user, chat=None, **content):
    chat = chat or user
    kind = "private" if chat > 0 else "supergroup"
    base = {"message_id": 7, "date": 1, "chat": {"id": chat, "type": kind}}
    if user is not None:
        base["from"] = {"id": user, "is_bot": False, "first_name": "x"}
    return {**base, **content}


def _updates():
    photo = [{"file_id": "p", "file_unique_id": "p", "width": 1, "height": 1, "file_size": 3}]
    doc = {"file_id": "d", "file_unique_id": "d", "file_name": "../../x.txt", "file_size": 3}
    voice = {"file_id": "v", "file_unique_id": "v", "duration": 1, "mime_type": "audio/ogg"}
    fwd = {
        "type": "user",
        "date": 1,
        "sender_user": {"id": FRIEND, "is_bot": False, "first_name": "f"},
    }
    friend_msg = _msg(FRIEND, text="mine")
    return {
        "message": {"message": _msg(STRANGER, text="hi")},
        "command_new": {
            "message": _msg(
                STRANGER, text="/new", entities=[{"type": "bot_command", "offset": 0, "length": 4}]
            )
        },
        "command_stop": {"message": _msg(STRANGER, text="/stop")},
        "edited": {"edited_message": _msg(STRANGER, text="edited", edit_date=2)},
        "photo": {"message": _msg(STRANGER, photo=photo, caption="look")},
        "document": {"message": _msg(STRANGER, document=doc)},
        "voice": {"message": _msg(STRANGER, voice=voice)},
        "group_stranger": {"message": _msg(STRANGER, chat=GROUP, text="hi group")},
        "forwarded_from_friend": {"message": _msg(STRANGER, text="fw", forward_origin=fwd)},
        "channel_post": {
            "channel_post": {
                "message_id": 1,
                "date": 1,
                "text": "x",
                "chat": {"id": -1009, "type": "channel"},
            }
        },
        "anonymous_admin": {
            "message": {
                **_msg(1087968824, chat=GROUP, text="anon"),
                "sender_chat": {"id": GROUP, "type": "supergroup"},
            }
        },
        "button": {
            "callback_query": {
                "id": "q",
                "chat_instance": "c",
                "data": "use:abc",
                "from": {"id": STRANGER, "is_bot": False, "first_name": "s"},
                "message": friend_msg,
            }
        },
        "approve_button": {
            "callback_query": {
                "id": "q2",
                "chat_instance": "c",
                "data": "ok:abcdef:item1",
                "from": {"id": STRANGER, "is_bot": False, "first_name": "s"},
                "message": friend_msg,
            }
        },
    }


@pytest.fixture
def telegram():
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


@pytest.mark.parametrize("kind", sorted(_updates()))
def test_a_strangers_update_of_any_kind_reaches_no_cadre_chat(telegram, kind):
    side = RecordingSide()
    config = BotConfig(token=telegram.token, allowed=frozenset({FRIEND}), api_base=telegram.url)

    async def go():
        bot = Bot(telegram.token, base_url=config.base_url, base_file_url=config.base_file_url)
        async with bot:
            update = Update.de_json({"update_id": 1, **_updates()[kind]}, bot)
            await Conversation(side, lambda: config).handle(bot, update)

    asyncio.run(go())
    assert side.calls == []


def test_the_token_stays_out_of_the_log_when_telegram_refuses_it(telegram, caplog):
    wrong = "777:WRONG-but-secret-token-abcdef"  # e.g. a revoked token, or one mistyped
    config = BotConfig(token=wrong, allowed=frozenset({FRIEND}), api_base=telegram.url)
    connection = Connection(config, RecordingSide(), Turns(), lambda: config, lambda _c: False)
    caplog.set_level(logging.DEBUG)
    asyncio.run(asyncio.wait_for(connection.run(), 20))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "refused the bot's token" in logged
    assert wrong not in logged, [line for line in logged.splitlines() if wrong in line]


class FloodedBot:
    """A bot Telegram rate-limits once (429, retry after 1 s), as a flood of strangers'
    refusals (or a long answer) makes it do."""

    def __init__(self):
        self.sent = []
        self.limited = False

    async def send_message(self, chat, text, **kwargs):
        from telegram.error import RetryAfter

        if not self.limited:
            self.limited = True
            raise RetryAfter(1)
        self.sent.append((chat, text))


def test_an_answer_is_not_lost_when_telegram_asks_to_retry_later():
    from server.apis.telegram.watch import Ended

    side = SimpleNamespace(map=SimpleNamespace(telegram_chats_of=lambda chat_id: [FRIEND]))
    config = BotConfig(token="1:x", allowed=frozenset({FRIEND}), api_base="http://x")
    connection = Connection(config, side, Turns(), lambda: config, lambda _c: False)
    connection.bot = FloodedBot()

    async def go():
        await connection.told(connection.ended("c1", Ended("The answer.", "", "", None)))

    import server.apis.telegram.connection as module

    module_produced = module._produced
    module._produced = lambda ended: (None, [])
    try:
        asyncio.run(go())
    finally:
        module._produced = module_produced
    assert connection.bot.sent == [(FRIEND, "The answer.")]


def test_a_stranger_is_told_once_in_a_while_and_never_in_a_group(telegram):
    config = BotConfig(token=telegram.token, allowed=frozenset({FRIEND}), api_base=telegram.url)
    conversation = Conversation(RecordingSide(), lambda: config)
    said = [_msg(STRANGER, text="hi"), _msg(STRANGER, text="again"),
            _msg(STRANGER + 1, chat=GROUP, text="in a group")]  # fmt: skip

    async def go():
        bot = Bot(telegram.token, base_url=config.base_url, base_file_url=config.base_file_url)
        async with bot:
            for n, message in enumerate(said, 1):
                update = Update.de_json({"update_id": n, "message": message}, bot)
                await conversation.handle(bot, update)

    asyncio.run(go())
    assert len(telegram.messages(STRANGER)) == 1 and telegram.messages(GROUP) == []
