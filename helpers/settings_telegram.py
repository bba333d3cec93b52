"""The settings of the Telegram bot (issue 40, server/apis/telegram/): the fifth part of the
`Settings` schema (helpers/settings_about.py says how the parts chain).

The bridge is off until a token is set; only the Telegram accounts listed may use it.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from helpers.settings_about import about
from helpers.settings_traces import TraceFields

#: Telegram's own Bot API.
TELEGRAM_API = "https://api.telegram.org"


class TelegramFields(TraceFields):
    """The settings' fields up to the Telegram bot."""

    #: The bot's token from Telegram's BotFather; empty: the bridge is off.
    telegram_bot_token: str = Field(
        "", **about("Bot token", "The token Telegram's @BotFather gave your bot; empty: "
                    "Cadre does not use Telegram.", "Telegram", secret=True),
    )  # fmt: skip
    #: Telegram user ids (numbers) allowed to talk to the bot, separated by commas; anyone
    #: else is refused and never reaches an agent. Empty: nobody.
    telegram_allowed_users: str = Field(
        "", **about("Allowed Telegram users", "Their Telegram user ids (numbers), separated "
                    "by commas; anyone else is refused. Empty: nobody.", "Telegram"),
    )  # fmt: skip
    #: The Bot API's address: Telegram's own, or a self-hosted Bot API server.
    telegram_api_base: str = Field(
        TELEGRAM_API,
        **about("Bot API address", "Telegram's own unless you run a Bot API server of your "
                "own.", "Telegram"),
    )  # fmt: skip

    @field_validator("telegram_allowed_users")
    @classmethod
    def _telegram_users(cls, text: str) -> str:
        # Ids, not usernames: a username can be given up and taken by someone else.
        ids = [part.strip() for part in text.split(",") if part.strip()]
        wrong = [part for part in ids if not part.isdigit()]
        if wrong:
            raise PydanticCustomError(
                "telegram_users",
                "not Telegram user ids: {wrong}. Give the numbers (a bot such as @userinfobot"
                " tells you yours), separated by commas", {"wrong": ", ".join(wrong)},
            )  # fmt: skip
        return ",".join(ids)

    @field_validator("telegram_api_base")
    @classmethod
    def _telegram_address(cls, address: str) -> str:
        address = address.strip().rstrip("/") or TELEGRAM_API
        if not re.fullmatch(r"https?://[^\s/?#]+[^\s?#]*", address):
            raise PydanticCustomError(
                "address", "not an address: give the Bot API's http(s):// URL, e.g. " + TELEGRAM_API
            )
        return address


def allowed_ids(text: str) -> frozenset[int]:
    """The user ids of a `telegram_allowed_users` value (checked already)."""
    return frozenset(int(part) for part in text.split(",") if part.strip().isdigit())
