"""The fallback models of a model role as settings hold them, and their keys masked.

`chat_fallbacks`, `util_fallbacks` and `embed_fallbacks` are each a list of
`{"model", "api_base", "api_key"}` entries, tried in order after the role's own model
when it fails in a way retrying will not fix (models/fallback.py). An entry's key is a
secret: the page and the API see it masked, and a masked key sent back keeps the
stored one (`unmask_fallbacks`), as the other keys do.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: The settings that hold fallback lists, one per model role.
FALLBACK_FIELDS = ("chat_fallbacks", "util_fallbacks", "embed_fallbacks")


class FallbackEntry(BaseModel):
    """One fallback model: its name as provider/name, its address and key (empty: the
    provider's usual address, the key from the environment)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    api_base: str = ""
    api_key: str = ""

    @model_validator(mode="before")
    @classmethod
    def _a_name_alone(cls, value: Any) -> Any:
        # "openai/gpt-4.1-mini" is short for {"model": "openai/gpt-4.1-mini"} (the
        # environment's comma-separated form gives names alone).
        return {"model": value} if isinstance(value, str) else value


def mask_fallbacks(entries: list[dict[str, Any]], mask: str) -> list[dict[str, Any]]:
    """`entries` (as dumped to JSON) with every key that is set replaced by `mask`."""
    return [{**entry, "api_key": mask if entry.get("api_key") else ""} for entry in entries]


def unmask_fallbacks(sent: Any, stored: list[FallbackEntry], mask: str) -> Any:
    """`sent` as the page sends it back: an entry whose key is `mask` gets the key stored
    for the same model (`_key_of`). What is not a list of entries comes back as it is, for
    validation to refuse."""
    if not isinstance(sent, list):
        return sent
    keys = [(old.model, old.api_base, old.api_key) for old in stored]
    return [
        {**entry, "api_key": _key_of(place, entry, keys)}
        if isinstance(entry, dict) and entry.get("api_key") == mask
        else entry
        for place, entry in enumerate(sent)
    ]


def emptied(entries: list[Any]) -> list[Any]:
    """`entries` (settings.json's) with every key emptied: a backup without secrets."""
    return [{**entry, "api_key": ""} if isinstance(entry, dict) else entry for entry in entries]


def with_keys_from(entries: list[Any], source: Any) -> list[Any]:
    """`entries` (a backup's) with the keys `source` (this Cadre's list, at a restore that
    keeps its secrets) holds for the same models; an entry `source` lacks has none."""
    found = [e for e in source if isinstance(e, dict)] if isinstance(source, list) else []
    keys = [(str(e.get("model")), str(e.get("api_base") or ""), str(e.get("api_key") or ""))
            for e in found]  # fmt: skip
    return [
        {**entry, "api_key": _key_of(place, entry, keys)} if isinstance(entry, dict) else entry
        for place, entry in enumerate(entries)
    ]


def _key_of(place: int, entry: dict[str, Any], keys: list[tuple[str, str, str]]) -> str:
    """The key `keys` (model, address, key) holds for `entry`'s model: one stored for the
    same address first (a model listed twice, at two accounts' addresses, keeps each its
    own key, never another address's), at the same place first; "" when none."""
    model, base = entry.get("model"), entry.get("api_base") or ""
    ordered = [keys[place]] if place < len(keys) else []
    ordered += keys
    for same_address in (True, False):
        for name, address, key in ordered:
            if name == model and (address == base or not same_address):
                return key
    return ""
