"""The model an evaluation runs on: a preset, a configured chat model, or (from the command
line only) any litellm name, reached at its provider's own address."""

from __future__ import annotations

import json

import pytest

from evals.model_choice import overrides_for
from helpers.errors import UserError


@pytest.fixture
def preset(monkeypatch: pytest.MonkeyPatch) -> None:
    presets = [{"name": "fast", "chat_model": "openai/fast-model"}]
    monkeypatch.setenv("CADRE_MODEL_PRESETS", json.dumps(presets))
    monkeypatch.setenv("CADRE_CHAT_MODEL", "openai/chat-model")
    monkeypatch.setenv("CADRE_CHAT_API_BASE", "http://127.0.0.1:9/v1")


def test_a_preset_a_configured_model_or_the_default(preset):
    assert overrides_for("fast", None, any_model=False) == {"model_preset": "fast"}
    assert overrides_for("openai/chat-model", None, any_model=False) == {
        "chosen_model": "openai/chat-model"}  # fmt: skip
    assert overrides_for("", None, any_model=False) == {}
    assert overrides_for("Default", None, any_model=True) == {}


def test_any_litellm_name_from_the_command_line_without_the_settings_address(preset):
    assert overrides_for("anthropic/claude-x", None, any_model=True) == {
        "chat_model": "anthropic/claude-x", "chat_api_base": "", "chat_api_key": ""}  # fmt: skip
    with pytest.raises(UserError, match="nor a litellm model name"):
        overrides_for("claude", None, any_model=True)


def test_the_page_offers_only_what_is_configured(preset):
    with pytest.raises(UserError):
        overrides_for("anthropic/claude-x", None, any_model=False)
