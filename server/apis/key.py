"""The one API-key check of every outside caller: `/api/v1` (and `/api/v1/tasks`), `/v1`,
`/api_message` and `/mcp`.

A key is a user's (accounts/keys.py), or the `api_key` setting (env `CADRE_API_KEY`),
which is the first admin's; it is sent as `X-API-Key`, else as `Authorization: Bearer
<key>`, and acts as its owner. No key set at all turns every API off (403); no key or
a wrong one (or a disabled user's) is a 401. Each API names itself and how its clients
send the key (a `KeyCheck`), and puts the refusal's words in its own protocol's shape
(JSON error, OpenAI error, JSON-RPC).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from flask import current_app, request

from accounts.service import Accounts, KeyHolder
from helpers.settings import load_settings
from server.security.identity import set_user

log = logging.getLogger(__name__)


def given_key(x_api_key: str | None, authorization: str | None) -> str:
    """The key a request sends: `X-API-Key`, else a bearer token."""
    if x_api_key:
        return x_api_key
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


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

    def check(self, x_api_key: str | None, authorization: str | None,
              accounts: Accounts) -> Refusal | KeyHolder:  # fmt: skip
        """Who the key acts as, or the refusal (the current settings and keys are read)."""
        settings = load_settings()
        accounts.sync(settings.auth_login, settings.auth_password)
        if not accounts.any_key(settings.api_key):
            return Refusal(403, f"{self.api} is disabled: set the api_key setting (Settings, "
                                "or CADRE_API_KEY) or make a key of your own")  # fmt: skip
        holder = accounts.key_holder(given_key(x_api_key, authorization), settings.api_key)
        if holder is None:
            return Refusal(401, f"missing or wrong {self.sent_as}")
        return holder

    def of_request(self) -> Refusal | None:
        """`check` for the Flask request being handled; the request then acts as the key's
        owner (server/security/identity.py)."""
        accounts: Accounts = current_app.extensions["cadre.accounts"]
        found = self.check(request.headers.get("X-API-Key"), request.headers.get("Authorization"),
                           accounts)  # fmt: skip
        if isinstance(found, Refusal):
            return found
        set_user(found.user)
        return None
