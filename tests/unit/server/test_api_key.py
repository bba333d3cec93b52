"""One key rule for every outside caller (/api/v1, /v1, /mcp): server/apis/key.py."""

from __future__ import annotations

import pytest

from accounts.service import Accounts, KeyHolder
from server.apis.key import KeyCheck, Refusal, given_key


@pytest.mark.parametrize(
    ("x_api_key", "authorization", "key"),
    [
        ("k1", None, "k1"),
        (None, "Bearer k2", "k2"),
        (None, "bearer  k3 ", "k3"),
        (None, "Basic k4", ""),
        (None, "k5", ""),
        (None, None, ""),
    ],
)
def test_the_key_comes_from_x_api_key_or_a_bearer_token(x_api_key, authorization, key):
    assert given_key(x_api_key, authorization) == key


def test_each_api_words_the_one_checks_refusal_in_plain_words(monkeypatch):
    """The four APIs share KeyCheck: the rule is one, only the names differ."""
    check = KeyCheck("the external API", "X-API-Key")
    accounts = Accounts()
    monkeypatch.setenv("CADRE_API_KEY", "")
    off = check.check("k", None, accounts)
    assert off == Refusal(403, "the external API is disabled: set the api_key setting (Settings, "
                               "or CADRE_API_KEY) or make a key of your own")  # fmt: skip
    monkeypatch.setenv("CADRE_API_KEY", "right")
    assert check.check("wrong", None, accounts) == Refusal(401, "missing or wrong X-API-Key")
    assert check.check(None, "Bearer right", accounts) == KeyHolder(None)  # the desktop mode


def test_a_key_acts_as_its_owner_and_stops_with_them(monkeypatch):
    """The setting's key is the first admin's; a member's own key is theirs; a disabled
    user's key stops at once."""
    monkeypatch.setenv("CADRE_API_KEY", "admins-key")
    monkeypatch.setenv("CADRE_AUTH_LOGIN", "Ada")
    monkeypatch.setenv("CADRE_AUTH_PASSWORD", "a password")
    check, accounts = KeyCheck("the external API", "X-API-Key"), Accounts()
    admin = check.check("admins-key", None, accounts)
    assert isinstance(admin, KeyHolder) and admin.user is not None
    assert (admin.user.name, admin.user.role) == ("ada", "admin")
    accounts.users.add("bo", "member", "bo's password")
    _, key = accounts.keys.make("bo", "laptop")
    member = check.check(key, None, accounts)
    assert isinstance(member, KeyHolder) and member.user is not None
    assert member.user.name == "bo"
    accounts.users.update("bo", disabled=True)
    assert check.check(key, None, accounts) == Refusal(401, "missing or wrong X-API-Key")
