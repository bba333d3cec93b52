"""The plain data an agent is made of and is given: its config, messages to it, and the
state of one iteration of its loop.

They live here, below `agent.py`, so the runner, the chat store and the
tools name them without importing the loop; `agent` re-exports them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from helpers.settings import Settings
from models.llm import ModelConfig
from models.model import Model, for_config

if TYPE_CHECKING:
    from core.log import LogItem
    from core.reply.reply_stream import ReplyStream


#: A chat model with a window this small (or any local model) works in small-model mode:
#: fewer tools (core/tooling/tool_offer.py), a short prompt, a tighter reply schema.
SMALL_WINDOW = 16_384


def is_small(model: ModelConfig) -> bool:
    """Small-model mode: a local model, or a window of at most `SMALL_WINDOW` tokens."""
    return model.local is not None or model.ctx_length <= SMALL_WINDOW


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


@dataclass
class LoopData:
    """State of one iteration of the monologue."""

    system: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    #: Text added to the end of the prompt this iteration (budgets, recalled memories, ...).
    extras: dict[str, str] = field(default_factory=dict)
    #: The live `response` log item when the reply is a `response` tool call.
    response_log: LogItem | None = None
    #: The live view of this iteration's model call.
    stream: ReplyStream | None = None
