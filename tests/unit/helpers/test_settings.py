"""Settings: defaults, the file (0600), environment overrides, damaged files."""

from __future__ import annotations

import json
import stat

import pytest

from helpers.errors import UserError
from helpers.settings import (
    Settings,
    load_settings,
    merge_settings,
    save_settings,
    settings_path,
)
from initialize import agent_config


def test_defaults_without_a_file():
    assert load_settings() == Settings()


def test_saved_owner_only_and_loaded_back(usr_dir):
    settings = Settings(chat_model="anthropic/claude-sonnet-4", chat_api_key="secret")
    save_settings(settings)
    path = settings_path()
    assert path.parent == usr_dir
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_settings() == settings


def test_environment_overrides_and_is_not_written(monkeypatch):
    monkeypatch.setenv("CADRE_CHAT_MODEL", "openai/gpt-4.1-mini")
    monkeypatch.setenv("CADRE_CHAT_CTX_LENGTH", "32000")
    monkeypatch.setenv("CADRE_CHAT_KWARGS", '{"temperature": 0.2}')
    monkeypatch.setenv("CADRE_API_KEY", "k-123")
    settings = load_settings()
    assert settings.chat_model == "openai/gpt-4.1-mini"
    assert settings.chat_ctx_length == 32000
    assert settings.chat_kwargs == {"temperature": 0.2}
    assert settings.api_key == "k-123"
    save_settings(Settings())
    assert "k-123" not in settings_path().read_text()


def test_bad_environment_value_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("CADRE_CHAT_CTX_LENGTH", "lots")
    with pytest.raises(UserError, match="chat_ctx_length"):
        load_settings()
    monkeypatch.delenv("CADRE_CHAT_CTX_LENGTH")
    monkeypatch.setenv("CADRE_CHAT_KWARGS", "{not json")
    with pytest.raises(UserError, match="CADRE_CHAT_KWARGS must be a JSON object"):
        load_settings()


@pytest.mark.parametrize(
    "damage",
    [
        '{"chat_model": "x", ',
        '{"chat_kwargs": ' + "[" * 100_000,  # RecursionError had stopped
        json.dumps({"mcp_servers": '{"mcpServers": ' + "[" * 100_000}),
    ],  # Cadre's start
    ids=["cut", "deep", "deep-mcp"],
)
def test_damaged_file_is_kept_aside_not_fatal(usr_dir, damage):
    settings_path().write_text(damage)
    assert load_settings() == Settings()
    kept = list(usr_dir.glob("settings.damaged-*.json"))
    assert len(kept) == 1 and kept[0].read_text() == damage


def test_unknown_keys_in_the_file_are_ignored():
    settings_path().write_text(json.dumps({"chat_model": "m", "from_the_future": 1}))
    assert load_settings().chat_model == "m"


def test_merge_refuses_unknown_fields():
    with pytest.raises(UserError, match="unknown setting"):
        merge_settings(Settings(), {"chat_modle": "typo"})


def test_initialize_agent_applies_overrides(monkeypatch):
    monkeypatch.setenv("CADRE_UTIL_MODEL", "openai/small")
    config = agent_config({"agent_profile": "developer", "llm_retries": 1})
    assert config.profile == "developer"
    assert config.util_model.model == "openai/small"
    assert config.chat_model.retries == 1


def test_usr_dir_moves_everything(usr_dir, tmp_path, monkeypatch):
    other = tmp_path / "elsewhere"
    monkeypatch.setenv("CADRE_USR_DIR", str(other))
    save_settings(Settings())
    assert (other / "settings.json").exists()
    assert not (usr_dir / "settings.json").exists()


def test_list_fields_from_the_environment(monkeypatch):
    monkeypatch.setenv("CADRE_ALLOWED_HOSTS", "cadre.lan, box.local")
    monkeypatch.setenv("CADRE_TRUSTED_PROXIES", '["127.0.0.1"]')
    settings = load_settings()
    assert settings.allowed_hosts == ["cadre.lan", "box.local"]
    assert settings.trusted_proxies == ["127.0.0.1"]
    monkeypatch.setenv("CADRE_ALLOWED_HOSTS", "[not json")
    with pytest.raises(UserError, match="CADRE_ALLOWED_HOSTS must be a JSON array"):
        load_settings()
