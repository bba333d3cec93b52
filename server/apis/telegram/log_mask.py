"""The bot's token kept out of the server's log.

python-telegram-bot's HTTP client (httpx) logs each request's URL, which holds the token
(`.../bot<token>/getUpdates`), and its errors name it. The server's log masks the settings'
secrets (run_ui.py, refreshed at each save: helpers/secrets.py), the token among them; a
connection masks its own token too, on httpx's logger and on the root logger's handlers,
so that it never depends on how it was configured (a connection made on its own, as the
tests make one, has no settings behind it)."""

from __future__ import annotations

import logging

MASK = "***"


class TokenMask(logging.Filter):
    """Replaces the tokens it is given by `***` in httpx's log records."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.tokens:
            text = record.getMessage()
            masked = text
            for token in self.tokens:
                masked = masked.replace(token, MASK)
            if masked != text:
                record.msg, record.args = masked, ()
        return True


#: On httpx's logger from the bridge's first connection on.
MASKING = TokenMask()


def mask_token(token: str) -> None:
    """Keep `token` out of the log from now on: httpx's lines, and every line the server's
    log handlers write (python-telegram-bot's own, ours)."""
    logger = logging.getLogger("httpx")
    if MASKING not in logger.filters:
        logger.addFilter(MASKING)
    for handler in logging.getLogger().handlers:
        if MASKING not in handler.filters:
            handler.addFilter(MASKING)
    MASKING.tokens.add(token)
