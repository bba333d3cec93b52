"""What the settings say about the Telegram bot: its token, who may use it, where the Bot
API is. Read again whenever the settings may have changed (bridge.py)."""

from __future__ import annotations

from dataclasses import dataclass

from helpers.settings import Settings
from helpers.settings_telegram import allowed_ids


@dataclass(frozen=True)
class BotConfig:
    """The bridge's settings; `enabled` once a token is set."""

    token: str = ""
    allowed: frozenset[int] = frozenset()
    api_base: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.token)

    @property
    def base_url(self) -> str:
        """The Bot API's methods: python-telegram-bot appends the token."""
        return f"{self.api_base}/bot"

    @property
    def base_file_url(self) -> str:
        """Where getFile's files are downloaded from (the token appended too)."""
        return f"{self.api_base}/file/bot"

    def connection(self) -> tuple[str, str]:
        """What a running bot depends on: a change of it means a new connection (a change
        of the allowed users alone applies at the next update)."""
        return self.token, self.api_base


def bot_config(settings: Settings) -> BotConfig:
    return BotConfig(
        token=settings.telegram_bot_token.strip(),
        allowed=allowed_ids(settings.telegram_allowed_users),
        api_base=settings.telegram_api_base,
    )
