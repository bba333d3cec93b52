"""Turning settings into agents: a new agent's configuration, a new chat, a saved chat."""

from __future__ import annotations

import dataclasses
from typing import Any

from core.agent_types import AgentConfig
from core.chat import Chat
from helpers.runtime import AgentRuntime
from helpers.settings import Settings, load_settings, merge_settings
from models.llm import ModelConfig
from models.local_model import LOCAL, REPLY_DEFAULTS, LocalSpec, is_local
from profiles.catalog import profile_settings
from profiles.projects import load_project_settings, project_overrides
from store import chat_record
from store.chat_record import ChatFile


def model_config(settings: Settings, prefix: str) -> ModelConfig:
    """The `chat`, `util` or `embed` model described by `settings`."""
    model = getattr(settings, f"{prefix}_model")
    ctx_length = getattr(settings, f"{prefix}_ctx_length")
    local = None
    kwargs = dict(getattr(settings, f"{prefix}_kwargs"))
    if is_local(model):
        local = LocalSpec(
            settings.local_model_path, settings.local_ctx_length, settings.local_threads
        )
        ctx_length = min(ctx_length, settings.local_ctx_length)  # the loaded model's window
        if prefix != "embed":  # reply options: an embedding request takes none
            kwargs = {**REPLY_DEFAULTS, **kwargs}
    return ModelConfig(
        model=model,
        api_base=getattr(settings, f"{prefix}_api_base"),
        api_key=getattr(settings, f"{prefix}_api_key"),
        ctx_length=ctx_length,
        local=local,
        kwargs=kwargs,
        retries=settings.llm_retries,
        retry_delay=settings.llm_retry_delay,
        timeout=settings.llm_timeout,
        first_chunk_timeout=settings.llm_first_chunk_timeout,
        between_chunks_timeout=settings.llm_between_chunks_timeout,
        max_reply_chars=settings.llm_max_reply_chars,
        client=settings.model_client,
    )


def preload_local_models(settings: Settings) -> None:
    """Start loading the local model the settings use (in the background), if any."""
    for prefix in ("chat", "util"):
        config = model_config(settings, prefix)
        if config.local is not None:
            LOCAL.load(config.local)


def agent_config(
    override_settings: dict[str, Any] | None = None, project: str | None = None
) -> AgentConfig:
    """The configuration of a new agent: stored settings, env, what its chat's `project`
    sets (work folder, memory area, secrets), then `override_settings`."""
    base = load_settings()
    from_project = project_overrides(project, base.secrets)
    settings = merge_settings(base, {**from_project, **(override_settings or {})} or None)
    return AgentConfig(
        profile=settings.agent_profile,
        chat_model=model_config(settings, "chat"),
        util_model=model_config(settings, "util"),
        embed_model=model_config(settings, "embed"),
        settings=settings,
        overrides=dict(override_settings or {}),
    )


def chat_agent_config(
    overrides: dict[str, Any], profile: str, project: str | None = None, handed: bool = False
) -> AgentConfig:
    """An agent of a chat with `profile`, whatever the default is now; its overrides stay
    `overrides` (a settings change treats it as before). A profile Agent 0 handed the
    conversation to (`handed`) brings its settings.json, as a subordinate's does."""
    extra = profile_settings(profile, project) if handed else {}
    config = agent_config({**overrides, **extra, "agent_profile": profile}, project)
    return dataclasses.replace(config, overrides=dict(overrides))


def new_context(runtime: AgentRuntime | None, project: str | None = None, **overrides: Any) -> Chat:
    """A new, empty chat with the current settings (in `project`, Agent 0 has the profile
    the project names unless `overrides` name one: kept with the chat, as a choice made
    when it began)."""
    chosen = load_project_settings(project).agent_profile if project else ""
    if chosen and "agent_profile" not in overrides:
        overrides = {**overrides, "agent_profile": chosen}
    return Chat(agent_config(overrides or None, project), runtime, project=project)


def restore_context(chat: ChatFile, runtime: AgentRuntime | None) -> Chat:
    """A saved chat back in memory (`store.chat_record.restore`), each agent configured
    from today's settings with the profile and overrides it was saved with."""
    return chat_record.restore(chat, runtime, chat_agent_config)


class ChatFactory:
    """How the chat store makes chats: new ones from settings, saved ones from disk."""

    def __init__(self, runtime: AgentRuntime | None) -> None:
        self.runtime = runtime

    def new(self, project: str | None = None, **overrides: Any) -> Chat:
        return new_context(self.runtime, project, **overrides)

    def config(self, context: Chat) -> AgentConfig:
        """Agent 0's config from the settings now; a handoff's profile stays the one talking."""
        overrides = context.agent0.config.overrides
        if context.home_profile is None:
            return agent_config(overrides or None, context.project)
        return chat_agent_config(overrides, context.agent0.config.profile, context.project, True)

    def restore(self, chat: ChatFile) -> Chat:
        return restore_context(chat, self.runtime)
