"""The model an evaluation runs on, as its chats' setting overrides.

`--model M` (or the panel's choice) names a model preset (helpers/model_presets.py), a
configured chat model (helpers/chat_models.py), or, from the command line only, any
litellm model name: that one is reached at its provider's usual address with the key
litellm finds in the environment (OPENAI_API_KEY, ...), never the settings' address and
key, which were given for another model. Empty: the settings' models.
"""

from __future__ import annotations

from typing import Any

from helpers import chat_models, model_presets
from helpers.errors import UserError
from helpers.settings import load_settings
from store import model_choice


def overrides_for(model: str, owner: str | None, any_model: bool) -> dict[str, Any]:
    """The overrides that put a chat of `owner` on `model`; UserError when `owner` may not
    choose it (or, without `any_model`, when it is neither a preset nor configured)."""
    wanted = model.strip()
    if not wanted or wanted.lower() == "default":
        return {}
    settings = load_settings()
    preset = model_presets.find(settings.model_presets, wanted)
    if preset is not None:
        return {model_presets.PRESET_KEY: model_choice.checked(wanted, owner, settings)}
    configured = chat_models.find(model_choice.usable_models(owner, settings), wanted)
    if configured is not None:
        return {chat_models.MODEL_KEY: configured.model}
    if not any_model:
        model_choice.checked_model(wanted, owner, settings)  # raises, listing the choices
        raise UserError(f"no model named {wanted!r}")
    if "/" not in wanted:
        raise UserError(
            f"{wanted!r} is no model preset or configured model, nor a litellm model name "
            "(provider/name, e.g. openai/gpt-4.1-mini)"
        )
    return {"chat_model": wanted, "chat_api_base": "", "chat_api_key": ""}
