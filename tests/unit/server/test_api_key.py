"""One key rule for every outside caller (/api/v1, /v1, /mcp): server/apis/key.py."""

from __future__ import annotations

import pytest

from server.apis.key import api_key_refusal


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
