"""The remote A2A agents' setting: read from the environment, checked, their keys masked
in the page's view and the log, put back on save, left out of a backup without secrets."""

from __future__ import annotations

import json
import re

import pytest

from helpers.a2a_agents import A2aAgent, mask_agents, unmask_agents
from helpers.errors import UserError
from helpers.secrets import chat_masker
from helpers.settings import load_settings

ENTRIES = [
    {"name": "helper", "url": "http://127.0.0.1:9000/", "key": "k-helper-1234"},
    {"name": "open", "url": "https://agents.example"},
]


def test_cadre_a2a_agents_is_a_json_list_of_entries(monkeypatch):
    monkeypatch.setenv("CADRE_A2A_AGENTS", json.dumps(ENTRIES))
    settings = load_settings()
    assert settings.a2a_agents == [
        A2aAgent(name="helper", url="http://127.0.0.1:9000", key="k-helper-1234"),
        A2aAgent(name="open", url="https://agents.example"),
    ]
    # The key is a secret: whatever an agent writes of it is masked.
    assert chat_masker(settings).mask("sent k-helper-1234") == "sent ***"


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ('[{"name": "a b", "url": "http://x"}]', "entry 1, name: Value error, not a name"),
        ('[{"name": "a", "url": "ftp://x"}]', "entry 1, url: Value error, give the agent's http"),
        ('[{"name": "a", "url": "http://x", "token": "t"}]', "entry 1, token: Extra inputs"),
        ('[{"name": "a", "url": "http://x"}, {"name": "a", "url": "http://y"}]',
         "two remote agents are named a: name each once"),
    ],
)  # fmt: skip
def test_a_wrong_value_is_refused_in_plain_words(monkeypatch, raw, words):
    monkeypatch.setenv("CADRE_A2A_AGENTS", raw)
    with pytest.raises(UserError, match=re.escape(words)) as caught:
        load_settings()
    assert "CADRE_A2A_AGENTS (the setting a2a_agents)" in str(caught.value)


def test_keys_are_masked_and_put_back_only_for_the_same_name_and_address():
    stored = [A2aAgent(name="helper", url="http://h:1", key="k1"),
              A2aAgent(name="other", url="http://o:2", key="k2")]  # fmt: skip
    shown = mask_agents([agent.model_dump() for agent in stored], "***")
    assert [entry["key"] for entry in shown] == ["***", "***"]
    moved = {"name": "other", "url": "http://elsewhere:3", "key": "***"}
    back = unmask_agents([shown[1], shown[0], moved], stored, "***")
    # A key never follows its name to an address it was not given for.
    assert [entry["key"] for entry in back] == ["k2", "k1", ""]


def test_the_settings_view_masks_the_keys():
    from helpers.settings import Settings
    from server.routes.views import masked_settings

    view = masked_settings(Settings(a2a_agents=[A2aAgent(name="h", url="http://h", key="k-9876")]))
    assert view["a2a_agents"] == [{"name": "h", "url": "http://h", "key": "***"}]


def test_a_backup_without_secrets_holds_no_key_and_a_restore_keeps_ours():
    from store.backup.secret_settings import restored, without_secrets

    theirs = [{"name": "helper", "url": "http://h", "key": "k-backup-1234"}]
    emptied = without_secrets(json.dumps({"a2a_agents": theirs}))
    assert "k-backup-1234" not in emptied
    ours = [{"name": "helper", "url": "http://h", "key": "k-ours-5678"}]
    back = json.loads(restored(emptied, json.dumps({"a2a_agents": ours}), other_source=True))
    assert back["a2a_agents"][0]["key"] == "k-ours-5678"


@pytest.mark.parametrize(
    ("url", "place"),
    [
        ("https://agents.example", ("https://agents.example", "/.well-known/agent-card.json")),
        ("http://h:8/sub", ("http://h:8/sub", "/.well-known/agent-card.json")),
        ("http://h:5/a2a/.well-known/agent.json", ("http://h:5", "/a2a/.well-known/agent.json")),
    ],
)  # fmt: skip
def test_the_card_is_read_at_the_well_known_path_or_at_a_json_address(url, place):
    from helpers.a2a_remote import card_place

    assert card_place(url) == place
