"""What a model preset lays over the settings, and its keys kept secret: masked and put
back in the settings views, emptied in a backup without secrets, masked in what agents
write; a preset gone since a chat chose it leaves the chat on the settings' models."""

from __future__ import annotations

import json
import logging

from core.agent_config import agent_config, preset_fields
from helpers import model_presets
from helpers.secrets import chat_masker
from helpers.settings import Settings
from store.backup.secret_settings import restored, without_secrets

UNDER = Settings(chat_model="openai/gpt-4.1-mini", chat_api_base="https://proxy.example/v1",
                 chat_api_key="sk-settings-key", util_model="openai/gpt-4.1-nano")  # fmt: skip


def preset(**fields) -> model_presets.ModelPreset:
    return model_presets.ModelPreset(name="P", **fields)


def test_an_empty_key_or_address_is_the_settings_only_for_the_same_provider():
    same = model_presets.fields(preset(chat_model="openai/gpt-4.1"), UNDER)
    assert same == {"chat_model": "openai/gpt-4.1", "chat_api_base": "https://proxy.example/v1",
                    "chat_api_key": "sk-settings-key"}  # fmt: skip
    elsewhere = preset(chat_model="anthropic/claude", chat_ctx_length=9000,
                       util_model="anthropic/haiku", util_api_key="ak")  # fmt: skip
    other = model_presets.fields(elsewhere, UNDER)
    assert other["chat_api_key"] == "" and other["chat_api_base"] == ""
    assert other["chat_ctx_length"] == 9000 and other["util_api_key"] == "ak"
    # A role whose model something more specific sets (a profile's own) is left alone.
    skipped = model_presets.fields(preset(chat_model="x/y", util_model="x/z"), UNDER,
                                   frozenset({"chat"}))  # fmt: skip
    assert set(skipped) == {"util_model", "util_api_base", "util_api_key"}


def test_keys_shown_masked_come_back_as_stored_by_name_or_place():
    stored = [{"name": "Fast", "chat_model": "a/b", "chat_api_key": "k-fast"},
              {"name": "Strong", "chat_model": "a/c", "chat_api_key": "k-strong"}]  # fmt: skip
    shown = model_presets.masked(stored)
    assert [p["chat_api_key"] for p in shown] == ["***", "***"]
    # Strong first now, Fast renamed Quick in place: each keeps its own key.
    sent = [{**shown[1]}, {**shown[0], "name": "Quick"}, {"name": "New", "chat_api_key": "***"}]
    back = model_presets.unmasked(sent, stored)
    assert [p["chat_api_key"] for p in back] == ["k-strong", "k-strong", ""]
    sent = [{**shown[0], "name": "Quick"}, shown[1]]
    assert [p["chat_api_key"] for p in model_presets.unmasked(sent, stored)] == [
        "k-fast",
        "k-strong",
    ]


def test_a_backup_without_secrets_holds_no_preset_key_and_a_restore_keeps_ours():
    presets = [{"name": "Fast", "chat_model": "a/b", "chat_api_key": "k-fast-1234"}]
    text = json.dumps({"model_presets": presets})
    emptied = without_secrets(text)
    assert "k-fast-1234" not in emptied
    ours = json.dumps({"model_presets": [{**presets[0], "chat_api_key": "k-ours-5678"}]})
    back = json.loads(restored(emptied, ours, other_source=True))
    assert back["model_presets"][0]["chat_api_key"] == "k-ours-5678"


def test_a_presets_key_is_masked_in_what_agents_write():
    keyed = preset(chat_model="a/b", util_model="a/c", chat_api_key="k-1234",
                   util_api_key="u-5678")  # fmt: skip
    settings = Settings(model_presets=[keyed])
    assert chat_masker(settings).mask("k-1234 and u-5678") == "*** and ***"


def test_a_presets_model_falls_back_as_the_settings_say_whoever_chose_it(usr_dir):
    fallback = {"model": "openai/backup", "api_base": "", "api_key": "b-key"}
    stored = {"chat_fallbacks": [fallback],
              "model_presets": [{"name": "Fast", "chat_model": "openai/fast"}]}  # fmt: skip
    (usr_dir / "settings.json").write_text(json.dumps(stored))
    base = Settings.model_validate(stored)
    # Under a person's own model (whose fallbacks are none: core/agent_config.py).
    laid = preset_fields(base, {"chat_model": "openai/mine", "chat_fallbacks": []}, "Fast", {},
                         None)  # fmt: skip
    assert [e.model for e in laid["chat_fallbacks"]] == ["openai/backup"]
    config = agent_config({"model_preset": "Fast"})
    assert config.chat_model.model == "openai/fast"
    assert [f.model for f in config.chat_model.fallbacks] == ["openai/backup"]


def test_a_preset_gone_since_leaves_the_chat_on_the_settings_models(usr_dir, caplog):
    (usr_dir / "settings.json").write_text(json.dumps({"chat_model": "openai/settings-model"}))
    with caplog.at_level(logging.WARNING):
        config = agent_config({"model_preset": "Gone"})
    assert config.chat_model.model == "openai/settings-model"
    assert config.overrides == {"model_preset": "Gone"}  # the choice stays on record
    assert "model preset 'Gone'" in caplog.text and "is gone" in caplog.text
