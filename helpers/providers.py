"""The providers first-run setup offers, and turning a choice into settings.

Each provider names its default chat and utility models (litellm strings,
editable in the form) and whether it needs a key or a URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from helpers.errors import UserError
from helpers.local_model import is_local


@dataclass(frozen=True)
class Provider:
    name: str
    title: str
    chat_model: str
    util_model: str
    needs_key: bool = False
    needs_url: bool = False
    default_url: str = ""
    needs_file: bool = False


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("openai", "OpenAI", "openai/gpt-4.1-mini", "openai/gpt-4.1-nano", needs_key=True),
        Provider("anthropic", "Anthropic", "anthropic/claude-sonnet-4-5",
                 "anthropic/claude-haiku-4-5", needs_key=True),
        Provider("openrouter", "OpenRouter", "openrouter/openai/gpt-4.1-mini",
                 "openrouter/openai/gpt-4.1-nano", needs_key=True),
        Provider("ollama", "Ollama", "ollama/llama3.2", "ollama/llama3.2", needs_url=True,
                 default_url="http://localhost:11434"),
        Provider("compatible", "Any OpenAI-compatible URL", "openai/your-model",
                 "openai/your-model", needs_url=True),
        Provider("local", "A local GGUF file", "local/model", "local/model", needs_file=True),
        Provider("embedded", "The built-in small model (Qwen2.5-Coder 1.5B, 1.1 GB download)",
                 "local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-1.5b"),
    )
}  # fmt: skip


class Choice(BaseModel):
    """What the setup form sends."""

    provider: str
    model: str = Field(default="", max_length=200)
    api_key: str = Field(default="", max_length=500)
    api_base: str = Field(default="", max_length=500)
    path: str = Field(default="", max_length=1000)


def choice_settings(choice: Choice) -> dict[str, Any]:
    """The settings a setup choice stands for (UserError: something missing or unknown)."""
    provider = PROVIDERS.get(choice.provider)
    if provider is None:
        raise UserError(f"unknown provider {choice.provider!r}; one of: {', '.join(PROVIDERS)}")
    if provider.needs_key and not choice.api_key:
        raise UserError(f"{provider.title} needs an API key")
    base = choice.api_base or provider.default_url
    if provider.needs_url and not base.startswith(("http://", "https://")):
        raise UserError(f"{provider.title} needs its URL (http:// or https://)")
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
        util = choice.model if choice.model and provider.chat_model == provider.util_model \
            else provider.util_model  # fmt: skip
    for prefix, model in (("chat", chat), ("util", util)):
        changes[f"{prefix}_model"] = model
        changes[f"{prefix}_api_key"] = choice.api_key
        changes[f"{prefix}_api_base"] = "" if is_local(model) else base
    return changes
