"""The one API-key check of every outside caller: `/api/v1` (and `/api/v1/tasks`), `/v1`,
`/api_message` and `/mcp`.

The key is the `api_key` setting (env `CADRE_API_KEY`), sent as `X-API-Key`,
else as `Authorization: Bearer <key>`, and compared in constant time. An empty
setting turns every API off (403); no key or a wrong one is a 401. Each API
names itself and how its clients send the key (a `KeyCheck`), and puts the
refusal's words in its own protocol's shape (JSON error, OpenAI error, JSON-RPC).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Literal

from flask import request

from helpers.settings import load_settings


def api_key_refusal(x_api_key: str | None, authorization: str | None, expected: str) -> int | None:
    """The key rule: None, let in; 403, the `api_key` setting is empty (the APIs are off);
    401, no key or a wrong one."""
    if not expected:
        return 403
    given = x_api_key or ""
    if not given:
        scheme, _, token = (authorization or "").partition(" ")
        given = token.strip() if scheme.lower() == "bearer" else ""
    return None if hmac.compare_digest(given.encode(), expected.encode()) else 401


@dataclass(frozen=True)
class Refusal:
    """Why a caller is turned away, in plain words for the person setting it up."""

    status: Literal[401, 403]
    message: str


@dataclass(frozen=True)
class KeyCheck:
    """The key check of one API, with the words its refusals use."""

    #: The API as its refusal names it: "the external API".
    api: str
    #: What a 401 says is missing or wrong: how this API's clients send the key.
    sent_as: str

    def refusal(self, x_api_key: str | None, authorization: str | None) -> Refusal | None:
        """None when the key is right; else the refusal (the current setting is read)."""
        refused = api_key_refusal(x_api_key, authorization, load_settings().api_key)
        if refused == 403:
            return Refusal(403, f"{self.api} is disabled: set the api_key setting "
                                "(Settings, or CADRE_API_KEY)")  # fmt: skip
        if refused == 401:
            return Refusal(401, f"missing or wrong {self.sent_as}")
        return None

    def of_request(self) -> Refusal | None:
        """`refusal` for the Flask request being handled."""
        return self.refusal(request.headers.get("X-API-Key"), request.headers.get("Authorization"))
