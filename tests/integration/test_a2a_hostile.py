"""A2A against a real Cadre: hostile input gets a clear JSON-RPC
error and no crash; a foreign origin is refused; the server answers afterwards."""

from __future__ import annotations

import pytest
import requests

from tests.support import shared_desktop
from tests.support.shared_desktop import module_cadre, naming_fake  # noqa: F401 (fixtures)

KEY = shared_desktop.KEY
H = {"X-API-Key": KEY, "Content-Type": "application/json"}


def post(cadre, body: bytes, headers=None):
    return requests.post(
        f"{cadre.url}/a2a", data=body, headers={**H, **(headers or {})}, timeout=30
    )


def alive(cadre):
    got = requests.get(f"{cadre.url}/.well-known/agent-card.json", timeout=10)
    assert got.status_code == 200


@pytest.mark.parametrize(
    "name,body",
    [
        (
            "deep_json",
            b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":'
            + b"[" * 200_000
            + b"]" * 200_000
            + b"}",
        ),
        (
            "invalid_utf8",
            b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"x":"\xff\xfe"}}',
        ),
        ("unknown_method", b'{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod","params":{}}'),
        ("not_json", b"hello"),
        ("array_batch", b'[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]'),
        ("bad_params", b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":5}}'),
        (
            "other_owners_task",
            b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}',
        ),
    ],
)
def test_hostile_input_gets_a_jsonrpc_error(cadre, fake, name, body):
    got = post(cadre, body)
    assert got.status_code < 500, (got.status_code, got.text[:300])
    error = got.json().get("error")
    assert error and error.get("message"), got.text[:300]
    assert fake.chat_requests() == []
    alive(cadre)


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999"])
def test_a_number_json_has_not_is_refused_in_words(cadre, fake, number):
    """Python's JSON reader takes NaN: a task holding one was stored and could never be
    told again (every tasks/get and tasks/list of it failed)."""
    body = (b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{'
            b'"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"},'
            b'{"data":{"x":' + number + b"}}]}}}")  # fmt: skip
    got = post(cadre, body, {"A2A-Version": "1.0"})
    assert got.status_code == 400, got.text[:300]
    words = got.json()["error"]["message"]
    assert number.decode() in words and "send such a value as a string" in words
    assert fake.chat_requests() == []
    alive(cadre)


def test_a_body_over_the_limit_is_refused(cadre, fake):
    got = post(cadre, b'{"x":"' + b"a" * (5 * 1024 * 1024) + b'"}')
    assert got.status_code == 413
    alive(cadre)


def test_a_foreign_origin_is_refused_even_with_the_key(cadre, fake):
    got = post(
        cadre,
        b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}',
        {"Origin": "https://evil.example"},
    )
    assert got.status_code == 403


def test_bearer_and_wrong_keys(cadre, fake):
    body = b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}'
    assert post(cadre, body, {"X-API-Key": "", "Authorization": f"Bearer {KEY}"}).status_code != 401
    assert post(cadre, body, {"X-API-Key": "", "Authorization": "Bearer wrong"}).status_code == 401
    assert post(cadre, body, {"X-API-Key": "", "Authorization": f"Basic {KEY}"}).status_code == 401


def test_the_card_reflects_no_foreign_host(cadre):
    got = requests.get(
        f"{cadre.url}/.well-known/agent-card.json", headers={"Host": "evil.example"}, timeout=10
    )
    assert got.status_code != 200 or "evil.example" not in got.text
