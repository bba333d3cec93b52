"""The settings routes: the form's description, and fields the environment sets
(CADRE_*) neither changed by a save nor written to the file."""

from __future__ import annotations

import json

import pytest

from helpers.settings import Settings


def test_the_form_description_comes_with_the_values(http):
    form = http.get("/api/settings?form=1").json
    assert form["values"]["chat_model"] == "openai/chat-model"
    assert form["values"]["chat_api_key"] == "***"
    fields = {f["name"]: f for f in form["fields"]}
    assert set(fields) == set(Settings.model_fields)
    assert fields["chat_model"]["env"] == "CADRE_CHAT_MODEL" and fields["chat_kwargs"]["env"] == ""
    assert fields["structured_output"]["kind"] == "choice"
    assert "groups" in form and "values" not in http.get("/api/settings").json  # plain as before


def test_a_field_the_environment_sets_is_refused_with_the_variable_named(http, usr_dir):
    refused = http.post("/api/settings", json={"chat_model": "openai/other", "budget_calls": 3})
    assert refused.status_code == 409
    assert refused.json["error"] == "chat_model is set by CADRE_CHAT_MODEL; change it there"
    assert not (usr_dir / "settings.json").exists()  # nothing of the request saved
    key = http.post("/api/settings", json={"chat_api_key": "sk-new"})
    assert key.status_code == 409 and "CADRE_CHAT_API_KEY" in key.json["error"]
    # The right value is refused too: an answer that differed would confirm a guess.
    guess = http.post("/api/settings", json={"chat_api_key": "test-key"})
    assert guess.status_code == 409


def test_the_environments_own_value_is_accepted_and_kept_out_of_the_file(http, usr_dir):
    sent = {"chat_model": "openai/chat-model", "chat_api_key": "***", "budget_calls": 3}
    saved = http.post("/api/settings", json=sent)
    assert saved.status_code == 200 and saved.json["budget_calls"] == 3
    assert saved.json["chat_model"] == "openai/chat-model"
    stored = json.loads((usr_dir / "settings.json").read_text())
    assert stored["budget_calls"] == 3 and stored["chat_model"] == Settings().chat_model
    assert "test-key" not in json.dumps(stored)


@pytest.mark.parametrize("name", ["../../etc", "/etc", "a/b", ".hidden", "..", "x" * 65])
def test_agent_0s_profile_is_a_profile_name(http, usr_dir, name):
    """Was accepted, then every message was a 400 until the setting was fixed by hand."""
    refused = http.post("/api/settings", json={"agent_profile": name})
    assert refused.status_code == 400
    error = refused.json["error"]
    assert error.startswith("agent_profile: ") and "profile name" in error
    assert not (usr_dir / "settings.json").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"searxng_url": "http://search.local/\ud800"},
        {"allowed_hosts": ["cadre.local", "\udc80bad"]},
        {"secrets": {"TOKEN": "a\udfffb"}},
        {"chat_kwargs": {"stop": ["\ud83d"]}},
        {
            "mcp_servers": json.dumps(
                {"mcpServers": {"s": {"url": "http://h/mcp", "headers": {"K": "\ud800"}}}}
            )
        },
    ],
)
def test_text_that_is_not_valid_unicode_is_refused_in_every_text_setting(http, usr_dir, change):
    """A lone surrogate (half of a UTF-16 pair) is no text: it cannot be written as UTF-8."""
    refused = http.post("/api/settings", data=json.dumps(change), content_type="application/json")
    assert refused.status_code == 400, refused.json
    name = next(iter(change))
    error = refused.json["error"]
    assert error.startswith(f"{name}: ") and "not valid text" in error
    assert not (usr_dir / "settings.json").exists()


def test_mcp_servers_nested_too_deeply_are_a_400_not_a_500(http, usr_dir):
    deep = '{"mcpServers": ' + "[" * 100_000
    answer = http.post("/api/settings", json={"mcp_servers": deep})
    assert answer.status_code == 400 and "nested too deeply" in answer.json["error"]
    assert (
        not (usr_dir / "settings.json").exists()
        or deep not in (usr_dir / "settings.json").read_text()
    )
