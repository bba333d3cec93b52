"""The model seam: one `Model` protocol for chat, utility and embedding calls alike.

`for_config(config)` picks the client a model's calls go through, by its
`ModelConfig.client` (the `model_client` setting):

- `auto`: the lean OpenAI-SDK client (models.openai_model) where the provider speaks
  OpenAI's API (`openai/`, `openrouter/`, `ollama/`, `hosted_vllm/`, `lm_studio/`,
  `local/`), litellm (models.litellm_model) for every other provider;
- `litellm`: litellm for every model;
- `openai`: the lean client for every model; a prefix it does not know is sent to the
  model's API address as an OpenAI-compatible server.

Both clients share retries, bounds, reading, usage and faults (models.client), so the
caller cannot tell them apart but by speed. Usage reaches the caller's `on_usage` from
all three kinds of call; the agent counts it, and its budgets, in `record_usage`.

A model with fallbacks (`ModelConfig.fallbacks`) is a `FallbackModel` (models.fallback):
the same protocol, moving a call to the next model when one fails for good. Every try
of every client first takes its turn under its provider's limit (models.rate_limits).
"""

from __future__ import annotations

from typing import Any, Protocol

from helpers.errors import UserError
from models.client import ModelClient
from models.fallback import FallbackModel
from models.litellm_model import LitellmModel
from models.llm import (
    ChunkHandler,
    ModelConfig,
    ModelReply,
    RetryHandler,
    UsageHandler,
)
from models.openai_model import OpenAIModel, speaks_openai


class Model(Protocol):
    """A model, whichever client calls it."""

    config: ModelConfig
    #: The client's name: "litellm" or "openai".
    name: str

    async def stream(
        self,
        messages: list[dict[str, Any]],
        on_chunk: ChunkHandler | None = None,
        on_usage: UsageHandler | None = None,
        schema: dict[str, Any] | None = None,
        on_retry: RetryHandler | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """A streamed reply (see models.client.ModelClient.stream)."""
        ...

    async def complete(
        self,
        messages: list[dict[str, Any]],
        on_usage: UsageHandler | None = None,
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """A whole reply, without live callbacks."""
        ...

    async def embed(
        self, texts: list[str], on_usage: UsageHandler | None = None
    ) -> list[list[float]]:
        """One vector per text."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as this model counts them."""
        ...


def for_config(config: ModelConfig) -> Model:
    """The model `config` describes, behind the client its `client` choice picks; with
    fallbacks, a `FallbackModel` (models/fallback.py) that moves a call along them."""
    if config.fallbacks:
        return FallbackModel(config, client_for)
    return client_for(config)


def client_for(config: ModelConfig) -> Model:
    """The client of `config`'s model alone (its fallbacks are `for_config`'s)."""
    kind: type[ModelClient]
    if config.client == "litellm":
        kind = LitellmModel
    elif config.client == "openai":
        if not (speaks_openai(config) or config.api_base):
            raise UserError(
                f"model_client 'openai' cannot call {config.model!r}: its provider is not "
                "OpenAI-compatible and no API address is set. Choose 'auto' or 'litellm'."
            )
        kind = OpenAIModel
    else:
        kind = OpenAIModel if speaks_openai(config) else LitellmModel
    return kind(config)
