"""API keys (kept as digests, each its owner's) and invites (used once, then gone)."""

from __future__ import annotations

import json
import time

from accounts import invites as invites_module
from accounts.invites import Invites
from accounts.keys import Keys
from helpers.files import usr_path


def test_a_key_is_kept_as_a_digest_and_names_its_owner_until_revoked():
    keys = Keys()
    item, key = keys.make("bo", "laptop")
    stored = usr_path("api_keys.json").read_text()
    assert key not in stored and item.digest in stored
    assert usr_path("api_keys.json").stat().st_mode & 0o777 == 0o600
    assert keys.owner_of(key) == "bo"
    assert keys.owner_of(key + "x") is None and keys.owner_of("") is None
    assert [k.id for k in keys.of("bo")] == [item.id] and keys.of("ada") == []
    assert keys.revoke(item.id) == item
    assert keys.owner_of(key) is None


def test_a_damaged_keys_file_lets_no_key_in():
    keys = Keys()
    _, key = keys.make("bo")
    usr_path("api_keys.json").write_text("{not json")
    assert Keys().owner_of(key) is None


def test_an_invite_works_once_and_not_after_it_expires(monkeypatch):
    invites = Invites()
    token, expires = invites.make("bo")
    assert expires > time.time()
    assert invites.peek(token) == "bo" and invites.pending() == {"bo"}
    assert invites.take(token) == "bo"
    assert invites.take(token) is None and invites.peek(token) is None
    assert token not in json.dumps(json.loads(usr_path("invites.json").read_text()))
    monkeypatch.setattr(invites_module, "LIFETIME", -1.0)
    old, _ = invites.make("cy")
    assert invites.peek(old) is None and invites.take(old) is None


def test_a_new_invite_replaces_the_last_one():
    invites = Invites()
    first, _ = invites.make("bo")
    second, _ = invites.make("bo")
    assert invites.peek(first) is None and invites.peek(second) == "bo"
