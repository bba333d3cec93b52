"""The providers the setup offers, and turning a choice into settings.

Each provider names its default chat and utility models (litellm strings,
editable in the form), its key and URL (with an example for each field), the
embedding model set up alongside (none: memory uses keyword search only), and
where it lists its models, if it does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from helpers.errors import UserError
from models.local_model import is_local

#: How a provider lists its models (see models.provider_models); "" when it does not.
ModelList = Literal["", "openai", "anthropic", "openrouter", "ollama", "compatible"]


@dataclass(frozen=True)
class Provider:
    name: str
    title: str
    chat_model: str
    util_model: str
    #: A key must be given; `key_field` alone shows an optional one.
    needs_key: bool = False
    key_field: bool = True
    needs_url: bool = False
    default_url: str = ""
    needs_file: bool = False
    #: Placeholders of the form's fields (an optional key's says what to leave).
    key_example: str = ""
    url_example: str = ""
    model_example: str = ""
    #: The embedding model set with this provider; "" means keyword search only.
    embed_model: str = ""
    #: Why memory uses keyword search only, when `embed_model` is empty.
    embed_note: str = ""
    models: ModelList = ""
    #: What a listed model id gets in front to be a litellm name.
    prefix: str = ""


KEYWORDS_ONLY = "Memory will use keyword search only"

PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("openai", "OpenAI", "openai/gpt-4.1-mini", "openai/gpt-4.1-nano", needs_key=True,
                 key_example="sk-...", model_example="openai/gpt-4.1-mini",
                 embed_model="openai/text-embedding-3-small", models="openai", prefix="openai/"),
        Provider("anthropic", "Anthropic", "anthropic/claude-sonnet-4-5",
                 "anthropic/claude-haiku-4-5", needs_key=True, key_example="sk-ant-...",
                 model_example="anthropic/claude-sonnet-4-5",
                 embed_note=f"{KEYWORDS_ONLY}: Anthropic offers no embedding model.",
                 models="anthropic", prefix="anthropic/"),
        Provider("openrouter", "OpenRouter", "openrouter/openai/gpt-4.1-mini",
                 "openrouter/openai/gpt-4.1-nano", needs_key=True, key_example="sk-or-v1-...",
                 model_example="openrouter/openai/gpt-4.1-mini",
                 embed_note=f"{KEYWORDS_ONLY}: OpenRouter offers no embedding model here.",
                 models="openrouter", prefix="openrouter/"),
        Provider("ollama", "Ollama", "ollama/llama3.2", "ollama/llama3.2", needs_url=True,
                 default_url="http://localhost:11434", url_example="http://localhost:11434",
                 key_example="leave empty: a local Ollama needs none",
                 model_example="ollama/llama3.2",
                 embed_model="ollama/nomic-embed-text", models="ollama", prefix="ollama/"),
        Provider("compatible", "Any OpenAI-compatible URL", "", "", needs_url=True,
                 url_example="http://localhost:8000/v1",
                 key_example="leave empty if the server needs none",
                 model_example="openai/<model name>",
                 embed_note=f"{KEYWORDS_ONLY}, unless you name the server's embedding model.",
                 models="compatible", prefix="openai/"),
        Provider("local", "A model file on this computer (.gguf)", "local/model", "local/model",
                 needs_file=True, key_field=False,
                 embed_note=f"{KEYWORDS_ONLY}: a local model has no embedding model."),
        Provider("embedded", "The built-in small model (Qwen2.5-Coder 1.5B, 1.1 GB download)",
                 "local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-1.5b", key_field=False,
                 embed_note=f"{KEYWORDS_ONLY}: the built-in model has no embedding model."),
    )
}  # fmt: skip


class Choice(BaseModel):
    """What the setup form sends."""

    provider: str
    model: str = Field(default="", max_length=200)
    api_key: str = Field(default="", max_length=500)
    api_base: str = Field(default="", max_length=500)
    path: str = Field(default="", max_length=1000)
    #: The embedding model; None: the provider's default ("" : keyword search only).
    embed_model: str | None = Field(default=None, max_length=200)
    #: Save even though the test call failed (the person insists).
    force: bool = False


def provider_of(choice: Choice) -> Provider:
    provider = PROVIDERS.get(choice.provider)
    if provider is None:
        raise UserError(f"unknown provider {choice.provider!r}; one of: {', '.join(PROVIDERS)}")
    return provider


def base_url(choice: Choice, provider: Provider) -> str:
    """The URL the choice names (or the provider's default); UserError when one is needed."""
    base = choice.api_base.strip() or provider.default_url
    if provider.needs_url and not base.startswith(("http://", "https://")):
        example = f", e.g. {provider.url_example}" if provider.url_example else ""
        raise UserError(f"{provider.title} needs its URL (http:// or https://{example})")
    return base


def choice_settings(choice: Choice) -> dict[str, Any]:
    """The settings a setup choice stands for (UserError: something missing or unknown)."""
    provider = provider_of(choice)
    if provider.needs_key and not choice.api_key:
        raise UserError(f"{provider.title} needs an API key")
    base = base_url(choice, provider)
    changes: dict[str, Any] = {}
    if provider.name == "embedded":
        changes["local_model_path"] = ""
        chat, util = provider.chat_model, provider.util_model
    elif provider.needs_file:
        path = Path(choice.path).expanduser()
        if path.suffix.lower() != ".gguf" or not path.is_file():
            raise UserError(f"{choice.path!r} is not a .gguf file")
        model = f"local/{path.stem}"
        changes["local_model_path"] = str(path)
        chat, util = model, model
    else:
        chat = choice.model or provider.chat_model
        if not chat:
            raise UserError(f"name the model, e.g. {provider.model_example}")
        util = choice.model if choice.model and provider.chat_model == provider.util_model \
            else provider.util_model  # fmt: skip
    for prefix, model in (("chat", chat), ("util", util)):
        changes[f"{prefix}_model"] = model
        changes[f"{prefix}_api_key"] = choice.api_key
        changes[f"{prefix}_api_base"] = "" if is_local(model) else base
    embed = provider.embed_model if choice.embed_model is None else choice.embed_model.strip()
    changes["embed_model"] = embed
    changes["embed_api_key"] = choice.api_key if embed else ""
    changes["embed_api_base"] = base if embed else ""
    return changes
