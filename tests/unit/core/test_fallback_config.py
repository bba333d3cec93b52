"""A model role's config with its fallbacks: built with the role's limits, its provider's
limit found; a person's own model does not take the server's fallbacks (nor its keys)."""

from __future__ import annotations

from accounts import personal
from accounts.spaces import space_of
from accounts.users import Users
from core.agent_config import agent_config, model_config
from helpers.settings import load_settings
from models.llm import ProviderRate

BACKUP = '[{"model": "anthropic/claude", "api_key": "the-servers-key"}]'


def test_the_role_config_carries_its_fallbacks_with_the_same_limits(monkeypatch):
    monkeypatch.setenv("CADRE_CHAT_MODEL", "openai/gpt-4.1")
    monkeypatch.setenv("CADRE_CHAT_KWARGS", '{"temperature": 0.2}')
    monkeypatch.setenv("CADRE_CHAT_FALLBACKS", '[{"model": "anthropic/claude", "api_key": "a"}]')
    monkeypatch.setenv("CADRE_LLM_RETRIES", "5")
    monkeypatch.setenv("CADRE_FALLBACK_COOLDOWN", "30")
    monkeypatch.setenv("CADRE_PROVIDER_LIMITS", '{"anthropic": {"rpm": 50}}')
    config = model_config(load_settings(), "chat")
    [backup] = config.fallbacks
    assert (backup.model, backup.api_key, backup.retries, backup.cooldown) == (
        "anthropic/claude",
        "a",
        5,
        30.0,
    )
    assert backup.kwargs == {} and backup.fallbacks == ()  # the main model's options are its own
    assert config.limit is None and backup.limit == ProviderRate("anthropic", requests=50)


def test_a_persons_own_model_goes_without_the_servers_fallbacks(usr_dir, monkeypatch):
    users = Users()
    users.add("root", "admin", "the admin's password")
    users.add("ann", "member", "ann's password")
    monkeypatch.setenv("CADRE_MEMBER_MODELS", "true")
    monkeypatch.setenv("CADRE_CHAT_FALLBACKS", BACKUP)
    monkeypatch.setenv("CADRE_UTIL_FALLBACKS", BACKUP)
    personal.save(space_of("ann"), {"chat_model": "openai/anns-model", "chat_api_key": "ann-k"})

    anns = agent_config(owner="ann")
    assert anns.chat_model.model == "openai/anns-model" and anns.chat_model.fallbacks == ()
    assert [f.model for f in anns.util_model.fallbacks] == ["anthropic/claude"]  # the server's
    assert [f.model for f in agent_config(owner="root").chat_model.fallbacks] == [
        "anthropic/claude"
    ]


def test_a_persons_own_key_for_the_servers_model_goes_without_the_servers_fallbacks(
    usr_dir, monkeypatch
):
    # Their key refused or out of credit, their calls must not move to the fallbacks the
    # server pays for: they would never hear of their key, and the server would pay.
    users = Users()
    users.add("root", "admin", "the admin's password")
    users.add("ann", "member", "ann's password")
    monkeypatch.setenv("CADRE_MEMBER_MODELS", "true")
    monkeypatch.setenv("CADRE_CHAT_FALLBACKS", BACKUP)
    personal.save(space_of("ann"), {"chat_api_key": "ann-k"})
    anns = agent_config(owner="ann")
    assert anns.chat_model.api_key == "ann-k" and anns.chat_model.fallbacks == ()
