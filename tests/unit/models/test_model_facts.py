"""litellm's model map read without litellm: the same answers litellm gives, where a first
call asks them before litellm's import has ended (models/model_facts.py)."""

from __future__ import annotations

import pytest

from models import model_facts
from models.llm import litellm_module

MODELS = ["openai/gpt-4.1-mini", "gpt-4o", "openai/gpt-4o-mini",
          "anthropic/claude-3-haiku-20240307", "openrouter/openai/gpt-4o",
          "gemini/gemini-1.5-flash", "mistral/mistral-large-latest", "ollama/llama3"]  # fmt: skip


@pytest.mark.parametrize("model", MODELS)
def test_prices_and_facts_are_litellms_own(model):
    litellm = litellm_module()
    try:
        prompt, completion = litellm.cost_per_token(
            model=model, prompt_tokens=1000, completion_tokens=200
        )
        theirs = float(prompt) + float(completion)
    except Exception:  # noqa: BLE001 - litellm's "not in the map"
        theirs = None
    ours = model_facts.cost(model, 1000, 200)
    assert ours == pytest.approx(theirs) if theirs is not None else ours in (None, 0.0)
    for feature, asked in (("vision", litellm.supports_vision),
                           ("response_schema", litellm.supports_response_schema)):  # fmt: skip
        try:
            says = bool(asked(model=model))
        except Exception:  # noqa: BLE001 - litellm's "not mapped"
            says = False
        assert model_facts.supports(model, feature) == says, (model, feature)


def test_a_model_the_map_does_not_name_is_unpriced_and_sees_nothing():
    assert model_facts.facts("openai/my-own-server-model") is None
    assert model_facts.cost("openai/my-own-server-model", 10, 10) is None
    assert not model_facts.supports("openai/my-own-server-model", "vision")
