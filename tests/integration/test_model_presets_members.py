"""Model presets on a real run_ui.py with accounts: saved through the Settings page with
their keys masked like the settings' keys, chosen by a member only where the admin marked
them for members, shown in a chat's export without a key.

The test process's shared server with accounts serves the module (tests/support/
shared_accounts.py), with the module's presets saved meanwhile."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support import shared_accounts
from tests.support.agents import answer
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.live_web import log_in
from tests.support.members import Member, api, ask, page
from tests.support.server_process import ServerProcess
from tests.support.shared_accounts import ADMIN, ADMIN_KEY, ADMIN_PASSWORD

TEAM_KEY = "team-preset-key-1"


@pytest.fixture(scope="module")
def cadre(accounts_server: ServerProcess) -> Iterator[ServerProcess]:
    base = json.loads((accounts_server.usr_dir / "settings.json").read_text())["chat_api_base"]
    presets = [
        {"name": "Team", "chat_model": "openai/team-model", "chat_api_base": base,
         "chat_api_key": TEAM_KEY, "members": True},
        {"name": "Admins", "chat_model": "openai/admins-model"},
    ]  # fmt: skip
    with shared_accounts.for_module(accounts_server, model_presets=presets) as server:
        yield server


@pytest.fixture
def fake(cadre: ServerProcess, llm: FakeLLMServer) -> FakeLLMServer:
    llm.add_rule(model_is("util-model"), Reply("Named"))
    return llm


def test_a_presets_key_is_masked_in_settings_and_kept_when_sent_back(cadre):
    admin = log_in(cadre, ADMIN, ADMIN_PASSWORD)
    shown = page(admin, cadre, "GET", "/api/settings").json()["model_presets"]
    assert [p["chat_api_key"] for p in shown] == ["***", ""]
    assert TEAM_KEY not in json.dumps(shown)
    # The form sends the list back as shown, one preset renamed: the key stays its own.
    shown[0]["name"] = "Crew"
    saved = page(admin, cadre, "POST", "/api/settings", {"model_presets": shown})
    assert saved.status_code == 200, saved.text
    stored = json.loads((cadre.usr_dir / "settings.json").read_text())["model_presets"]
    assert stored[0]["name"] == "Crew" and stored[0]["chat_api_key"] == TEAM_KEY
    shown[0]["name"] = "Team"
    assert page(admin, cadre, "POST", "/api/settings", {"model_presets": shown}).ok
    twice = page(admin, cadre, "POST", "/api/settings",
                 {"model_presets": [shown[0], {**shown[1], "name": "team"}]})  # fmt: skip
    assert twice.status_code == 400
    assert twice.json()["error"] == ("model_presets: two presets are called “team”: give "
                                     "each its own name")  # fmt: skip


def test_a_member_chooses_only_the_presets_marked_for_members(cadre, fake):
    ann = Member(cadre, ADMIN_KEY)
    listed = api(cadre, "GET", "/presets", ann.key).json()["presets"]
    assert [p["name"] for p in listed] == ["Team"]
    refused = api(cadre, "POST", "/message", ann.key, {"message": "Hi", "preset": "Admins"})
    assert refused.status_code == 400
    assert refused.json()["error"] == ("no model preset 'Admins': choose one of: Team; or "
                                       "leave the preset out for the settings' model")  # fmt: skip
    fake.add_rule(model_is("team-model"), Reply(answer("Team model here.")))
    answered = ask(cadre, ann.key, "Hi", preset="team")
    assert answered["response"] == "Team model here."
    assert fake.chat_requests("team-model")[-1].headers["authorization"] == f"Bearer {TEAM_KEY}"
    chat_id = answered["context_id"]
    moved = api(cadre, "PATCH", f"/chats/{chat_id}", ann.key, {"preset": "Admins"})
    assert moved.status_code == 400 and "choose one of: Team" in moved.json()["error"]
    # The export shows the choice by name; its key stays in the settings.
    exported = page(ann.browser, cadre, "GET", f"/api/chats/{chat_id}/export")
    assert exported.status_code == 200
    assert exported.json()["chat"]["agents"][0]["overrides"]["model_preset"] == "Team"
    assert TEAM_KEY not in exported.text
    saved = (cadre.usr_dir / "chats" / chat_id / "chat.json").read_text()
    assert TEAM_KEY not in saved
    assert json.loads(saved)["agents"][0]["overrides"]["model_preset"] == "Team"
    # The admin may choose any.
    fake.add_rule(model_is("admins-model"), Reply(answer("Admins' model here.")))
    assert ask(cadre, ADMIN_KEY, "Hi", preset="Admins")["response"] == "Admins' model here."
