"""Which chat models are shown images: the chat_vision setting over litellm's model facts."""

from __future__ import annotations

import pytest

from models.llm import ModelConfig
from models.local_model import LocalSpec
from models.vision import sees_images


@pytest.mark.parametrize(
    ("model", "choice", "sees"),
    [
        ("openai/gpt-4o", "auto", True),  # litellm's map says it takes images
        ("openrouter/openai/gpt-4o", "auto", True),  # found without the router's prefix
        ("openai/gpt-3.5-turbo", "auto", False),
        ("openai/some-server-model", "auto", False),  # unknown: a note, never bytes
        ("openai/some-server-model", "on", True),
        ("openai/gpt-4o", "off", False),
    ],
)
def test_the_setting_decides_over_the_model_map(model, choice, sees):
    assert sees_images(ModelConfig(model=model), choice) is sees


def test_the_embedded_local_model_never_sees_images(tmp_path):
    spec = LocalSpec(path=str(tmp_path / "tiny.gguf"), ctx_length=2048, threads=1)
    config = ModelConfig(model="local/tiny", local=spec)
    assert sees_images(config, "on") is False
