"""Whether a chat model is shown images (the `chat_vision` setting and litellm's model facts).

`on` and `off` decide for every model; `auto` asks litellm's model map (bundled,
offline) whether the model takes images, trying the name without its first
prefix too (`openrouter/openai/gpt-4o` is `openai/gpt-4o` there). A model the
map does not know is taken as text-only: it gets a note that an image was
attached, never bytes it may refuse. The embedded local model never sees images
(its server reads text only), whatever the setting says.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Literal

from models import model_facts
from models.llm import ModelConfig, litellm_imported, litellm_module
from models.local_model import is_local

log = logging.getLogger(__name__)

VisionChoice = Literal["auto", "on", "off"]


def sees_images(config: ModelConfig, choice: VisionChoice) -> bool:
    """True when `config`'s model is sent images as image parts."""
    if is_local(config.model) or choice == "off":
        return False
    return choice == "on" or known_to_see(config.model)


@cache
def known_to_see(model: str) -> bool:
    """litellm's model map says the model takes images (False for a model it does not know):
    read without litellm while it imports (models/model_facts.py)."""
    if not litellm_imported() and model_facts.known():
        names = [model] + ([model.split("/", 1)[1]] if model.count("/") >= 2 else [])
        return any(model_facts.supports(name, "vision") for name in names)
    litellm = litellm_module()
    names = [model]
    if model.count("/") >= 2:
        names.append(model.split("/", 1)[1])
    for name in names:
        try:
            if litellm.supports_vision(model=name):
                return True
        except Exception:  # noqa: BLE001 - litellm raises several kinds for "not mapped"
            log.debug("litellm does not know whether %s takes images", name)
    return False
