"""Making chats for the chat store: a new one from the settings, a saved one from its record.

A new agent's configuration is core/agent_config.py's (re-exported here for the
programs that import it from initialize); a saved chat comes back through
core/chat_record.py.
"""

from __future__ import annotations

import logging
from typing import Any

from accounts.spaces import space_of
from core import chat_record
from core.agent_config import agent_config, config_now, model_config
from core.agent_types import AgentConfig
from core.chat import Chat
from core.chat_record import ChatFile
from helpers.runtime import AgentRuntime
from helpers.settings import Settings
from models.local_model import LOCAL
from profiles.projects import ProjectRef, load_project_settings

log = logging.getLogger(__name__)


def preload_local_models(settings: Settings) -> None:
    """Start loading the local model the settings use (in the background), if any."""
    for prefix in ("chat", "util"):
        config = model_config(settings, prefix)
        if config.local is not None:
            LOCAL.load(config.local)


def new_chat(
    runtime: AgentRuntime | None,
    project: str | None = None,
    owner: str | None = None,
    **overrides: Any,
) -> Chat:
    """A new, empty chat of `owner` (None: the desktop mode) with the current settings (in
    their `project`, Agent 0 has the profile the project names unless `overrides` name
    one: kept with the chat, as a choice made when it began)."""
    place = ProjectRef(project, space_of(owner)) if project else None
    chosen = load_project_settings(place).agent_profile if place else ""
    if chosen and "agent_profile" not in overrides:
        overrides = {**overrides, "agent_profile": chosen}
    config = agent_config(overrides or None, project, owner)
    return Chat(config, runtime, project=project, owner=owner)


def restore_chat(chat: ChatFile, runtime: AgentRuntime | None) -> Chat:
    """A saved chat back in memory (`core.chat_record.restore`), each agent configured
    from today's settings with the profile and overrides it was saved with."""
    return chat_record.restore(chat, runtime)


class ChatFactory:
    """How the chat store makes chats: new ones from settings, saved ones from disk."""

    def __init__(self, runtime: AgentRuntime | None) -> None:
        self.runtime = runtime

    def new(self, project: str | None = None, owner: str | None = None, **overrides: Any) -> Chat:
        return new_chat(self.runtime, project, owner, **overrides)

    def config(self, context: Chat) -> AgentConfig:
        """Agent 0's config from the settings now; a handoff's profile stays the one talking."""
        return config_now(context)

    def restore(self, chat: ChatFile) -> Chat:
        return restore_chat(chat, self.runtime)
