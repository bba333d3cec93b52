"""Which client a model's calls go through, and where the lean client sends them."""

from __future__ import annotations

import asyncio

import pytest

from helpers.errors import UserError
from models.llm import ModelConfig
from models.model import for_config
from models.openai_model import Endpoint, MissingKey, endpoint
from models.provider_faults import classify
from models.providers import PROVIDERS


@pytest.mark.parametrize(
    ("model", "client", "picked"),
    [
        ("openai/gpt-4.1-mini", "auto", "openai"),
        ("openrouter/openai/gpt-4.1-mini", "auto", "openai"),
        ("ollama/llama3.2", "auto", "openai"),
        ("hosted_vllm/qwen", "auto", "openai"),
        ("lm_studio/phi", "auto", "openai"),
        ("anthropic/claude-sonnet-4-5", "auto", "litellm"),
        ("gemini/gemini-2.5-flash", "auto", "litellm"),
        ("chat-model", "auto", "litellm"),  # no prefix: litellm says what is missing
        ("openai/gpt-4.1-mini", "litellm", "litellm"),
        ("anthropic/claude-sonnet-4-5", "litellm", "litellm"),
    ],
)
def test_the_setting_and_the_provider_pick_the_client(model, client, picked, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert for_config(ModelConfig(model, client=client)).name == picked


def test_the_lean_client_refuses_a_provider_it_cannot_reach():
    with pytest.raises(UserError, match="not OpenAI-compatible"):
        for_config(ModelConfig("anthropic/claude-sonnet-4-5", client="openai"))
    # With an address of its own, any name is sent there as an OpenAI-compatible server.
    config = ModelConfig("anthropic/claude", api_base="http://127.0.0.1:1/v1", client="openai")
    assert for_config(config).name == "openai"


def where(model: str, **fields) -> Endpoint:
    return asyncio.run(endpoint(ModelConfig(model, **fields)))


def test_each_provider_is_reached_at_its_usual_address(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    assert where("openai/gpt-4.1-mini", api_key="sk") == Endpoint(
        "https://api.openai.com/v1", "sk", "gpt-4.1-mini"
    )
    assert where("openrouter/openai/gpt-4.1-mini", api_key="or") == Endpoint(
        "https://openrouter.ai/api/v1", "or", "openai/gpt-4.1-mini"
    )
    # Ollama's OpenAI API lives under /v1 of the address the setup asks for.
    assert where("ollama/llama3.2", api_base="http://localhost:11434/") == Endpoint(
        "http://localhost:11434/v1", "no-key", "llama3.2"
    )
    assert (
        where("ollama/llama3.2", api_base="http://box:11434/v1").base_url == "http://box:11434/v1"
    )
    assert where("lm_studio/phi").base_url == "http://localhost:1234/v1"


def test_keys_come_from_the_settings_then_the_environment(monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "from-env")
    assert where("openrouter/x/y").api_key == "from-env"
    assert where("openrouter/x/y", api_key="set").api_key == "set"
    # A server of one's own often wants no key: a placeholder is sent, as litellm does.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert where("openai/m", api_base="http://127.0.0.1:8000/v1").api_key == "no-key"


def test_a_missing_key_is_the_key_fault(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingKey) as caught:
        where("openai/gpt-4.1-mini")
    fault = classify(caught.value, model="openai/gpt-4.1-mini")
    assert fault.kind == "key" and "API key" in fault.headline


def test_the_setup_and_the_lean_client_read_one_table(monkeypatch):
    """Each provider is one record (models/provider_table.py): an offered provider's chat
    model goes, through the lean client, to the address the setup lists its models at."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    lean = [p for p in PROVIDERS.values() if p.lean_prefixes and p.default_url]
    assert {p.name for p in lean} == {"openai", "openrouter", "ollama"}
    for provider in lean:
        reached = where(provider.chat_model, api_key="k").base_url
        assert reached == provider.default_url + provider.url_suffix, provider.name
