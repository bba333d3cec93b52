"""Model configs built from settings: what a local model is sent unless the user says otherwise."""

from __future__ import annotations

from helpers.settings import Settings
from initialize import model_config
from models.local_model import REPLY_DEFAULTS


def test_a_local_model_samples_cool_unless_its_kwargs_say_otherwise():
    local = model_config(Settings(chat_model="local/qwen2.5-coder-1.5b"), "chat")
    assert local.kwargs == REPLY_DEFAULTS and REPLY_DEFAULTS["temperature"] < 0.5

    chosen = Settings(chat_model="local/qwen2.5-coder-1.5b", chat_kwargs={"temperature": 0.9})
    assert model_config(chosen, "chat").kwargs == {**REPLY_DEFAULTS, "temperature": 0.9}


def test_a_local_embedding_model_gets_no_reply_options():
    settings = Settings(embed_model="local/qwen2.5-coder-1.5b")
    assert model_config(settings, "embed").kwargs == {}


def test_a_provider_model_gets_only_the_kwargs_it_was_given():
    settings = Settings(chat_model="openai/gpt-4o-mini", chat_kwargs={"top_p": 0.5})
    assert model_config(settings, "chat").kwargs == {"top_p": 0.5}
