"""The plain data an agent is made of and is given: its config, and messages to it.

They live here, below `agent.py`, so the runner, the chat store and the
tools name them without importing the loop; `agent` re-exports both.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from helpers.settings import Settings
from models.llm import ModelConfig
from models.model import Model, for_config


@dataclass(frozen=True)
class AgentConfig:
    """What an agent is made of: its profile, its models, its limits."""

    profile: str
    chat_model: ModelConfig
    util_model: ModelConfig
    embed_model: ModelConfig
    settings: Settings
    #: The setting overrides this config was made with (stored with a saved chat).
    overrides: dict[str, Any] = field(default_factory=dict)
    #: How a model config becomes a `Model` (the model seam): the client the settings
    #: pick; a benchmark or an embedding application passes its own.
    model_for: Callable[[ModelConfig], Model] = for_config


@dataclass
class UserMessage:
    """A message from the user (or a superior) to an agent."""

    message: str
    attachments: list[str] = field(default_factory=list)
    #: Extra framework text shown to the model with the message.
    system_message: list[str] = field(default_factory=list)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
