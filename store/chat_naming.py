"""A chat's name: from the utility model, bounded, or from the first message alone.

Naming a chat is a free-text utility call. Unbounded, it held a local model's
only slot for 64-110 s while the user waited for the next answer, and it
replaced the chat's prompt in llama.cpp's cache. So the call is capped at a few
tokens, and with a local utility model there is no call at all: the first
words of the user's first message name the chat, at once.
"""

from __future__ import annotations

import re

from models.llm import ModelConfig

#: Most tokens a naming call may write (a name is two to six words).
NAME_TOKENS = 24
#: Words of the first message that make a name.
NAME_WORDS = 6


def uses_model(util_model: ModelConfig) -> bool:
    """Whether the name comes from a model call (not with a local model: see above)."""
    return util_model.local is None


def name_from_message(message: str) -> str:
    """A name of the first words of `message`: 'What is 17*23', 'Write a Python function that…'."""
    words = message.split()
    name = " ".join(words[:NAME_WORDS])
    name = re.sub(r"[\s.,;:!?]+$", "", name)
    if len(words) > NAME_WORDS:
        name += "…"
    return name[:1].upper() + name[1:]
