"""One key rule for every outside caller (/api/v1, /v1, /mcp): server/apis/key.py."""

from __future__ import annotations

import pytest

from server.apis.key import KeyCheck, Refusal, api_key_refusal


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
    if key:
        assert api_key_refusal(x_api_key, authorization, key) is None
    assert api_key_refusal(x_api_key, authorization, "another") == 401


def test_an_empty_setting_turns_every_caller_away():
    assert api_key_refusal("", None, "") == 403
    assert api_key_refusal("k", "Bearer k", "") == 403


def test_each_api_words_the_one_checks_refusal_in_plain_words(monkeypatch):
    """The four APIs share KeyCheck: the rule is one, only the names differ."""
    check = KeyCheck("the external API", "X-API-Key")
    monkeypatch.setenv("CADRE_API_KEY", "")
    off = check.refusal("k", None)
    assert off == Refusal(403, "the external API is disabled: set the api_key setting "
                               "(Settings, or CADRE_API_KEY)")  # fmt: skip
    monkeypatch.setenv("CADRE_API_KEY", "right")
    assert check.refusal("wrong", None) == Refusal(401, "missing or wrong X-API-Key")
    assert check.refusal(None, "Bearer right") is None
