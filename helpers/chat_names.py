"""A chat's name, as kept: valid text on one line, bounded.

Names come from people (renaming a chat), from imports and branches, and from the shipped
plugin that names a chat after its first exchange (plugins/chat_naming/).
"""

from __future__ import annotations

from helpers.valid_text import valid_text

#: Longest chat name kept (names come from people and from a model).
NAME_LIMIT = 120


def clean_name(name: str) -> str:
    """`name` as a chat's name: valid text on one line, at most NAME_LIMIT characters."""
    return " ".join(valid_text(name).split())[:NAME_LIMIT]
