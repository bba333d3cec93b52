"""Model presets: named sets of model settings ("Fast", "Strong", "Local") a chat can run on.

The admin makes them in Settings (the setting `model_presets`, a list of `ModelPreset`);
a chat chooses one for itself (the setting override `model_preset`, stored with the chat:
core/agent_config.py lays the preset's fields over the settings when it builds the chat's
agents). A preset names a chat model, and optionally a utility model; what it leaves
empty is the settings':

- an empty address or key is the settings' one for that role when the preset's model is
  of the same provider (the text before the first "/": `openai/gpt-4.1` and
  `openai/gpt-4.1-mini` share a key), and the provider's usual address and no key
  otherwise (another provider's key must never be sent to this one);
- an empty context window or extra parameters are the settings' ones;
- no utility model: the settings' utility model, as it is;
- a role a preset sets falls back as the settings' fallbacks of that role say (the admin's
  models, whoever chose the preset: core/agent_config.py).

A preset's keys are secrets as the settings' keys are: masked ("***") wherever settings
are shown (`masked`, `unmasked` puts them back on save), emptied in a backup without
secrets, and masked in everything agents write (helpers/secrets.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from helpers.valid_text import is_valid_value

if TYPE_CHECKING:
    from helpers.settings import Settings

#: The override that carries a chat's choice (a preset's name; absent: the settings').
PRESET_KEY = "model_preset"
#: The roles a preset may set, and the fields of each.
ROLES = ("chat", "util")
ROLE_PARTS = ("model", "api_base", "api_key", "ctx_length", "kwargs")
#: The fields of a preset that are keys.
KEY_FIELDS = ("chat_api_key", "util_api_key")
#: What a preset's name may be: it is shown in a menu and typed in API calls.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,39}")
NAME_RULE = "letters, digits, spaces, '-', '_', '.' (at most 40, starting with a letter or digit)"
#: Names the OpenAI-compatible endpoint gives its own models (server/apis/openai_compat).
RESERVED = frozenset({"cadre", "default"})
MASK = "***"


class ModelPreset(BaseModel):
    """One preset: its name, its chat model and optionally a utility model."""

    model_config = ConfigDict(extra="forbid")

    name: str
    chat_model: str = Field(min_length=1, max_length=200)
    chat_api_base: str = Field("", max_length=2_000)
    chat_api_key: str = Field("", max_length=2_000)
    #: None: the settings' context window.
    chat_ctx_length: int | None = Field(None, gt=0)
    #: Empty: the settings' extra parameters.
    chat_kwargs: dict[str, Any] = Field(default_factory=dict)
    #: Empty: the settings' utility model (and its address, key, window, parameters).
    util_model: str = Field("", max_length=200)
    util_api_base: str = Field("", max_length=2_000)
    util_api_key: str = Field("", max_length=2_000)
    util_ctx_length: int | None = Field(None, gt=0)
    util_kwargs: dict[str, Any] = Field(default_factory=dict)
    #: May members (accounts that are not admins) choose it? Admins may choose any.
    members: bool = False

    @field_validator("*")
    @classmethod
    def _valid_text(cls, value: Any) -> Any:
        if not is_valid_value(value):  # a lone surrogate: no text (helpers/valid_text.py)
            raise PydanticCustomError("text", "holds characters that are not valid text")
        return value

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        name = name.strip()
        if not _NAME.fullmatch(name):
            raise PydanticCustomError(
                "preset",
                "“{name}” is no preset name: use {rule}",
                {"name": name[:60], "rule": NAME_RULE},
            )
        if name.lower() in RESERVED:
            raise PydanticCustomError(
                "preset", "“{name}” is a name Cadre uses itself: choose another", {"name": name}
            )
        return name

    @field_validator("chat_model", "util_model")
    @classmethod
    def _stripped(cls, model: str) -> str:
        return model.strip()


def check_unique(presets: list[ModelPreset]) -> list[ModelPreset]:
    """`presets` when no two share a name (any case); an error naming the one twice."""
    seen: set[str] = set()
    for preset in presets:
        if preset.name.lower() in seen:
            raise PydanticCustomError(
                "preset",
                "two presets are called “{name}”: give each its own name",
                {"name": preset.name},
            )
        seen.add(preset.name.lower())
    return presets


def find(presets: list[ModelPreset], name: str) -> ModelPreset | None:
    """The preset called `name` (any case), if any."""
    wanted = name.strip().lower()
    return next((p for p in presets if p.name.lower() == wanted), None)


def may_use(preset: ModelPreset, member: bool) -> bool:
    """May someone choose `preset`? An admin (or the desktop mode's one person) any; a
    member those the admin marked for members."""
    return preset.members or not member


def names_for(presets: list[ModelPreset], member: bool) -> list[str]:
    return [p.name for p in presets if may_use(p, member)]


def unknown_preset(name: str, presets: list[ModelPreset], member: bool) -> str:
    """The words for a preset name that is not one this person may choose."""
    usable = names_for(presets, member)
    listed = ", ".join(usable) if usable else "none is set up (Settings › Model presets)"
    return (f"no model preset {name!r}: choose one of: {listed}; or leave the preset out "
            "for the settings' model")  # fmt: skip


def _provider(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else ""


def fields(
    preset: ModelPreset, under: Settings, skip: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The settings `preset` sets over `under` (the settings it is laid on), for each role
    not in `skip` (a role whose model something more specific sets: a profile's own)."""
    laid: dict[str, Any] = {}
    for role in ROLES:
        model = getattr(preset, f"{role}_model")
        if not model or role in skip:
            continue
        same = _provider(model) == _provider(getattr(under, f"{role}_model"))
        laid[f"{role}_model"] = model
        for part in ("api_base", "api_key"):
            own = getattr(preset, f"{role}_{part}")
            laid[f"{role}_{part}"] = own or (getattr(under, f"{role}_{part}") if same else "")
        if getattr(preset, f"{role}_ctx_length") is not None:
            laid[f"{role}_ctx_length"] = getattr(preset, f"{role}_ctx_length")
        if getattr(preset, f"{role}_kwargs"):
            laid[f"{role}_kwargs"] = dict(getattr(preset, f"{role}_kwargs"))
    return laid


def secret_values(presets: list[ModelPreset]) -> list[str]:
    """Every key the presets hold (masked wherever secrets are)."""
    return [getattr(p, name) for p in presets for name in KEY_FIELDS if getattr(p, name)]


def masked(presets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Presets as the settings views show them: each key set shown as "***"."""
    return [{**p, **{k: MASK for k in KEY_FIELDS if p.get(k)}} for p in presets]


def emptied(presets: list[Any]) -> list[Any]:
    """Presets without their keys (a backup without secrets)."""
    return [{**p, **dict.fromkeys(KEY_FIELDS, "")} if isinstance(p, dict) else p for p in presets]


def unmasked(sent: list[Any], stored: list[Any]) -> list[Any]:
    """`sent` (as the form sends presets back) with each "***" key replaced by the stored
    one: of the stored preset with the same name, else of the one at the same place (a
    preset renamed in the form); "" when there is none."""

    def stored_of(place: int, name: object) -> dict[str, Any]:
        by_name = [p for p in stored if isinstance(p, dict)
                   and str(p.get("name", "")).lower() == str(name).strip().lower()]  # fmt: skip
        if by_name:
            return by_name[0]
        same_place = stored[place] if place < len(stored) else None
        return same_place if isinstance(same_place, dict) else {}

    result = []
    for place, preset in enumerate(sent):
        if isinstance(preset, dict):
            kept = stored_of(place, preset.get("name", ""))
            preset = {**preset, **{k: kept.get(k, "") for k in KEY_FIELDS
                                   if preset.get(k) == MASK}}  # fmt: skip
        result.append(preset)
    return result


def with_keys_from(presets: list[Any], source: list[Any]) -> list[Any]:
    """`presets` (a backup's) with the keys of `source`'s presets of the same names (this
    Cadre's, at a restore that keeps its secrets); a preset `source` lacks has none."""
    keys = {str(p.get("name", "")).lower(): p for p in source if isinstance(p, dict)}
    return [{**p, **{k: keys.get(str(p.get("name", "")).lower(), {}).get(k, "")
                     for k in KEY_FIELDS}} if isinstance(p, dict) else p
            for p in presets]  # fmt: skip
