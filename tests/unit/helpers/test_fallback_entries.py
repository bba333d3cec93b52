"""The fallback models' settings: read from the environment (a JSON list, or names alone),
checked, their keys masked and put back."""

from __future__ import annotations

import json
import re

import pytest

from helpers.errors import UserError
from helpers.fallback_entries import FallbackEntry, mask_fallbacks, unmask_fallbacks
from helpers.settings import load_settings


def test_cadre_chat_fallbacks_is_a_json_list_of_entries(monkeypatch):
    entries = [
        {"model": "anthropic/claude-sonnet-4", "api_key": "sk-ant"},
        {"model": "openai/gpt-4.1-mini", "api_base": "http://127.0.0.1:4000/v1"},
    ]
    monkeypatch.setenv("CADRE_CHAT_FALLBACKS", json.dumps(entries))
    settings = load_settings()
    assert settings.chat_fallbacks == [
        FallbackEntry(model="anthropic/claude-sonnet-4", api_key="sk-ant"),
        FallbackEntry(model="openai/gpt-4.1-mini", api_base="http://127.0.0.1:4000/v1"),
    ]
    assert settings.util_fallbacks == [] and settings.embed_fallbacks == []


def test_names_alone_are_entries_without_address_or_key(monkeypatch):
    monkeypatch.setenv("CADRE_UTIL_FALLBACKS", "openai/gpt-4.1-mini, ollama/llama3")
    assert [e.model for e in load_settings().util_fallbacks] == ["openai/gpt-4.1-mini",
                                                                "ollama/llama3"]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ('[{"model": "openai/x"', "CADRE_EMBED_FALLBACKS must be a JSON array"),
        # One entry alone, not in a list: not a model named '{"model": ...}'.
        ('{"model": "openai/x"}', "CADRE_EMBED_FALLBACKS must be a JSON array"),
        ('[{"api_key": "k"}]', "(the setting embed_fallbacks): entry 1, model: Field required"),
        (
            '[{"model": "openai/x", "key": "k"}]',
            "CADRE_EMBED_FALLBACKS (the setting embed_fallbacks): entry 1, key: Extra",
        ),
    ],
)
def test_a_wrong_value_is_refused_in_plain_words(monkeypatch, raw, words):
    monkeypatch.setenv("CADRE_EMBED_FALLBACKS", raw)
    with pytest.raises(UserError, match=re.escape(words)) as caught:
        load_settings()
    assert "pydantic" not in str(caught.value) and "unset it" in str(caught.value)


def test_keys_are_masked_and_put_back_by_model():
    stored = [
        FallbackEntry(model="a/one", api_key="k1"),
        FallbackEntry(model="b/two", api_key="k2"),
    ]
    shown = mask_fallbacks([e.model_dump() for e in stored], "***")
    assert [e["api_key"] for e in shown] == ["***", "***"]
    # Reordered by the person, a masked key still finds its model's.
    sent = [shown[1], shown[0], {"model": "c/new", "api_key": "***"}]
    back = unmask_fallbacks(sent, stored, "***")
    assert [e["api_key"] for e in back] == ["k2", "k1", ""]


def test_a_masked_key_stays_with_its_address_when_a_model_is_listed_twice():
    # One model at two addresses (two accounts): the first removed, the second's masked key
    # must be its own, never the first's sent to the second's address.
    stored = [
        FallbackEntry(model="openai/x", api_base="https://one.example/v1", api_key="k-one"),
        FallbackEntry(model="openai/x", api_base="https://two.example/v1", api_key="k-two"),
    ]
    sent = [{"model": "openai/x", "api_base": "https://two.example/v1", "api_key": "***"}]
    assert unmask_fallbacks(sent, stored, "***")[0]["api_key"] == "k-two"


def test_a_backup_without_secrets_holds_no_fallback_key_and_a_restore_keeps_ours():
    from store.backup.secret_settings import restored, without_secrets

    theirs = [{"model": "openai/backup", "api_base": "", "api_key": "k-backup-1234"}]
    emptied = without_secrets(json.dumps({"chat_fallbacks": theirs}))
    assert "k-backup-1234" not in emptied
    ours = [{"model": "openai/backup", "api_base": "", "api_key": "k-ours-5678"}]
    back = json.loads(restored(emptied, json.dumps({"util_fallbacks": [], "chat_fallbacks": ours}),
                               other_source=True))  # fmt: skip
    assert back["chat_fallbacks"][0]["api_key"] == "k-ours-5678"
    # A backup made with its keys, restored without them: ours, never the backup's.
    kept = json.loads(restored(json.dumps({"chat_fallbacks": theirs}), "{}", other_source=True))
    assert kept["chat_fallbacks"][0]["api_key"] == ""


def test_a_refused_value_is_not_echoed_in_the_error(monkeypatch):
    # A key under a misspelt field is refused before any masker knows it: the error (shown
    # and logged at start) must not carry it.
    monkeypatch.setenv("CADRE_CHAT_FALLBACKS", '[{"model": "openai/x", "apikey": "sk-9f8e7d"}]')
    with pytest.raises(UserError, match="apikey") as caught:
        load_settings()
    assert "sk-9f8e7d" not in str(caught.value)
