"""The providers the setup offers, and turning a choice into settings.

Each provider's facts (its default chat and utility models, its key and URL with an
example for each field, the embedding model set up alongside, where it lists its
models) are its record in models/provider_table.py, the one table of providers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from helpers.errors import UserError
from models.local_model import is_local
from models.provider_table import OFFERED, Provider

#: The providers the setup offers (the records of models/provider_table.py).
PROVIDERS: dict[str, Provider] = OFFERED


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
    # The usual address is filled in only where the form asks for one: the others keep
    # "" in the settings (the client finds the address, OPENAI_BASE_URL included).
    base = choice.api_base.strip() or (provider.default_url if provider.needs_url else "")
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
