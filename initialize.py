"""Turning settings into an agent's configuration."""

from __future__ import annotations

from typing import Any

from agent import AgentConfig
from helpers.llm import ModelConfig
from helpers.settings import Settings, load_settings, merge_settings


def model_config(settings: Settings, prefix: str) -> ModelConfig:
    """The `chat`, `util` or `embed` model described by `settings`."""
    return ModelConfig(
        model=getattr(settings, f"{prefix}_model"),
        api_base=getattr(settings, f"{prefix}_api_base"),
        api_key=getattr(settings, f"{prefix}_api_key"),
        ctx_length=getattr(settings, f"{prefix}_ctx_length"),
        kwargs=dict(getattr(settings, f"{prefix}_kwargs")),
        retries=settings.llm_retries,
        retry_delay=settings.llm_retry_delay,
        timeout=settings.llm_timeout,
    )


def initialize_agent(override_settings: dict[str, Any] | None = None) -> AgentConfig:
    """The configuration of a new agent: stored settings, env, then `override_settings`."""
    settings = merge_settings(load_settings(), override_settings)
    return AgentConfig(
        profile=settings.agent_profile,
        chat_model=model_config(settings, "chat"),
        util_model=model_config(settings, "util"),
        embed_model=model_config(settings, "embed"),
        settings=settings,
    )
