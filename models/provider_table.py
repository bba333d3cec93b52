"""Every fact Cadre knows of a model provider, one typed record per provider.

Two readers share it: the lean client (models/openai_model.py) takes from it the
litellm prefixes it calls itself, the usual address, the key's environment variable and
whether a key is needed; the setup dialog (models/providers.py, models/provider_models.py)
takes the default models, the form's fields and examples, the embedding model and how
the provider lists its models. A new provider is one record here (docs/architecture.md,
"How to add a model provider").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: How a provider lists its models (see models.provider_models); "" when it does not.
ModelList = Literal["", "openai", "anthropic", "openrouter", "ollama", "compatible"]


@dataclass(frozen=True)
class Provider:
    """One provider: how its models are called, and how the setup dialog offers it."""

    name: str
    #: Its name in the setup dialog; "" : the setup does not offer it (one names its
    #: models in the settings).
    title: str = ""
    chat_model: str = ""
    util_model: str = ""
    #: The litellm prefixes of its models the lean client calls (models.openai_model);
    #: none: only litellm calls them.
    lean_prefixes: tuple[str, ...] = ()
    #: Its usual address (used when the settings give none; the setup fills it in only
    #: when `needs_url`).
    default_url: str = ""
    #: Appended to the address where the OpenAI API lives below it (Ollama's /v1).
    url_suffix: str = ""
    #: The environment variable litellm reads the key from ("" : none).
    key_env: str = ""
    #: A key must be given (the setup) and found (the lean client: otherwise a
    #: placeholder is sent, local servers want none); `key_field` alone shows an
    #: optional one.
    needs_key: bool = False
    key_field: bool = True
    needs_url: bool = False
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

#: Every provider, the setup dialog's in the order it offers them.
PROVIDER_TABLE: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("openai", "OpenAI", "openai/gpt-4.1-mini", "openai/gpt-4.1-nano",
                 lean_prefixes=("openai/",), default_url="https://api.openai.com/v1",
                 key_env="OPENAI_API_KEY", needs_key=True,
                 key_example="sk-...", model_example="openai/gpt-4.1-mini",
                 embed_model="openai/text-embedding-3-small", models="openai", prefix="openai/"),
        Provider("anthropic", "Anthropic", "anthropic/claude-sonnet-4-5",
                 "anthropic/claude-haiku-4-5", default_url="https://api.anthropic.com/v1",
                 needs_key=True, key_example="sk-ant-...",
                 model_example="anthropic/claude-sonnet-4-5",
                 embed_note=f"{KEYWORDS_ONLY}: Anthropic offers no embedding model.",
                 models="anthropic", prefix="anthropic/"),
        Provider("openrouter", "OpenRouter", "openrouter/openai/gpt-4.1-mini",
                 "openrouter/openai/gpt-4.1-nano", lean_prefixes=("openrouter/",),
                 default_url="https://openrouter.ai/api/v1", key_env="OPENROUTER_API_KEY",
                 needs_key=True, key_example="sk-or-v1-...",
                 model_example="openrouter/openai/gpt-4.1-mini",
                 embed_note=f"{KEYWORDS_ONLY}: OpenRouter offers no embedding model here.",
                 models="openrouter", prefix="openrouter/"),
        Provider("ollama", "Ollama", "ollama/llama3.2", "ollama/llama3.2",
                 lean_prefixes=("ollama/", "ollama_chat/"), default_url="http://localhost:11434",
                 url_suffix="/v1", needs_url=True, url_example="http://localhost:11434",
                 key_example="leave empty: a local Ollama needs none",
                 model_example="ollama/llama3.2",
                 embed_model="ollama/nomic-embed-text", models="ollama", prefix="ollama/"),
        Provider("compatible", "Any OpenAI-compatible URL", needs_url=True,
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
        Provider("hosted_vllm", lean_prefixes=("hosted_vllm/",), key_env="HOSTED_VLLM_API_KEY"),
        Provider("lm_studio", lean_prefixes=("lm_studio/",),
                 default_url="http://localhost:1234/v1", key_env="LM_STUDIO_API_KEY"),
    )
}  # fmt: skip

#: The providers the setup dialog offers, in its order.
OFFERED: dict[str, Provider] = {name: p for name, p in PROVIDER_TABLE.items() if p.title}

#: litellm prefix → the provider whose models under it the lean client calls.
LEAN: dict[str, Provider] = {
    prefix: p for p in PROVIDER_TABLE.values() for prefix in p.lean_prefixes
}


def lean_provider(model: str) -> tuple[str, Provider] | None:
    """The lean client's prefix of a litellm model name, with its provider; None if none."""
    for prefix, provider in LEAN.items():
        if model.startswith(prefix):
            return prefix, provider
    return None
