"""The configured chat models a chat may choose by name: which, in what order, with which
address and key, and which of them members may choose (checked when chosen, and again
each time the chat's agents are configured)."""

from __future__ import annotations

import json
import logging

import pytest

from accounts.users import Users
from core.agent_config import agent_config
from helpers import chat_models
from helpers.errors import UserError
from helpers.settings import Settings
from store import model_choice

SETTINGS = Settings.model_validate({
    "chat_model": "openai/main", "chat_api_base": "https://main.example/v1",
    "chat_api_key": "k-main",
    "chat_fallbacks": [{"model": "other/backup", "api_key": "k-backup"}, "openai/main"],
    "model_presets": [
        {"name": "Fast", "chat_model": "openai/fast", "members": True},
        {"name": "Far", "chat_model": "other/far", "chat_api_key": "k-far"},
        {"name": "Again", "chat_model": "other/backup"},
    ],
})  # fmt: skip


def names(models: list[chat_models.NamedModel]) -> list[str]:
    return [m.model for m in models]


def test_each_model_once_where_the_settings_first_name_it_with_its_address_and_key():
    found = chat_models.configured(SETTINGS, SETTINGS)
    assert [(m.model, m.source) for m in found] == [
        ("openai/main", "settings"), ("other/backup", "fallback"), ("openai/fast", "Fast"),
        ("other/far", "Far"),
    ]  # fmt: skip
    keys = {m.model: (m.fields["chat_api_base"], m.fields["chat_api_key"]) for m in found}
    assert keys == {
        "openai/main": ("https://main.example/v1", "k-main"),
        "other/backup": ("", "k-backup"),
        "openai/fast": ("https://main.example/v1", "k-main"),  # the same provider's
        "other/far": ("", "k-far"),  # another provider's: never the settings' key
    }
    # Chosen, a fallback is not its own fallback.
    laid = chat_models.laid_for(found[1], SETTINGS)
    assert [e.model for e in laid["chat_fallbacks"]] == ["openai/main"]


def test_members_choose_any_only_where_they_may_choose_their_models():
    assert names(chat_models.usable(SETTINGS, SETTINGS, member=False)) == [
        "openai/main", "other/backup", "openai/fast", "other/far"]  # fmt: skip
    # Without `member_models`: what they run on already, the settings' model and the
    # models of the presets marked for members.
    assert names(chat_models.usable(SETTINGS, SETTINGS, member=True)) == [
        "openai/main", "openai/fast"]  # fmt: skip
    open_to_all = SETTINGS.model_copy(update={"member_models": True})
    assert len(chat_models.usable(open_to_all, open_to_all, member=True)) == 4


def test_a_members_chosen_model_is_checked_and_dropped_for_default_when_not_theirs(
    usr_dir, monkeypatch, caplog
):
    people = Users()
    people.add("root", "admin", "the admin's password")
    people.add("ann", "member", "ann's password")
    monkeypatch.setenv("CADRE_CHAT_MODEL", "openai/main")
    monkeypatch.setenv("CADRE_CHAT_FALLBACKS", json.dumps([{"model": "other/backup",
                                                             "api_key": "k-backup"}]))  # fmt: skip
    with pytest.raises(UserError, match="no configured model 'other/backup': choose one of: "
                       "openai/main "):  # fmt: skip
        model_choice.checked_model("other/backup", "ann")
    assert model_choice.checked_model("other/backup", "root") == "other/backup"
    # Chosen while the admin let members choose their models, then no longer.
    monkeypatch.setenv("CADRE_MEMBER_MODELS", "true")
    assert model_choice.checked_model("other/backup", "ann") == "other/backup"
    chosen = {chat_models.MODEL_KEY: "other/backup"}
    assert agent_config(chosen, owner="ann").chat_model.api_key == "k-backup"
    monkeypatch.setenv("CADRE_MEMBER_MODELS", "false")
    with caplog.at_level(logging.WARNING, logger="core.agent_config"):
        config = agent_config(chosen, owner="ann")
    assert config.chat_model.model == "openai/main"
    assert "chosen model 'other/backup' of a chat of ann is not theirs to choose" in caplog.text
