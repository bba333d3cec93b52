"""The bot's token kept out of the server's log.

python-telegram-bot's HTTP client (httpx) logs each request's URL, which holds the token
(`.../bot<token>/getUpdates`). The server's log masks the secrets it knew at its start
(run_ui.py); a token saved in Settings since is masked here, on httpx's logger."""

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
    """Keep `token` out of httpx's log lines from now on."""
    logger = logging.getLogger("httpx")
    if MASKING not in logger.filters:
        logger.addFilter(MASKING)
    MASKING.tokens.add(token)
