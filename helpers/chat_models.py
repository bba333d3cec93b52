"""The models the settings already name for the chat role, any of which a chat may choose
by name ("any configured model" of the chat header's picker: store/model_choice.py).

They are the settings' chat model, each `chat_fallbacks` entry and each model preset's
chat model (helpers/model_presets.py), in that order, each name once (the first place
that names it gives its address and key). A chat stores only the name (the setting
override `MODEL_KEY`); its address and key are looked up here each time the chat's agents
are configured (core/agent_config.py), so no key is ever written with a chat, and a model
no longer configured is noticed there.

Who may choose which: an admin (and the desktop mode's one person) any; a member any
where the admin lets members choose their own models (`member_models`), and otherwise
only those they could run on already: the settings' chat model (their Default) and the
chat models of the presets marked for members.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from helpers import model_presets

if TYPE_CHECKING:
    from helpers.settings import Settings

#: The override that carries a chat's choice of a model by name (absent: none chosen).
MODEL_KEY = "chosen_model"


@dataclass(frozen=True)
class NamedModel:
    """One configured chat model: its name, where the settings name it ("settings",
    "fallback" or a preset's name), whether members may choose it without
    `member_models`, and the settings it lays for the chat role (its address and key)."""

    model: str
    source: str
    members: bool
    fields: dict[str, Any] = field(default_factory=dict, compare=False)


def configured(base: Settings, under: Settings) -> list[NamedModel]:
    """The chat models `base` (the settings) names; a preset's address and key are filled
    over `under` (`base` with the owner's own settings), as a chosen preset's are."""
    own = {"chat_ctx_length": base.chat_ctx_length}
    found = [NamedModel(base.chat_model, "settings", True, {
        **own, "chat_model": base.chat_model, "chat_api_base": base.chat_api_base,
        "chat_api_key": base.chat_api_key, "chat_kwargs": dict(base.chat_kwargs)})]  # fmt: skip
    for entry in base.chat_fallbacks:
        # A fallback's own parameters are none: the role's were written for its model.
        found.append(NamedModel(entry.model, "fallback", False, {
            **own, "chat_model": entry.model, "chat_api_base": entry.api_base,
            "chat_api_key": entry.api_key, "chat_kwargs": {}}))  # fmt: skip
    for preset in base.model_presets:
        laid = model_presets.fields(preset, under, frozenset({"util"}))
        found.append(NamedModel(preset.chat_model, preset.name, preset.members, laid))
    named: dict[str, NamedModel] = {}
    for one in found:
        if one.model:
            named.setdefault(one.model, one)
    return list(named.values())


def may_choose(model: NamedModel, member: bool, member_models: bool) -> bool:
    """May someone choose `model` (see the module's docstring)?"""
    return not member or member_models or model.members


def usable(base: Settings, under: Settings, member: bool) -> list[NamedModel]:
    """The configured chat models someone may choose."""
    return [m for m in configured(base, under) if may_choose(m, member, base.member_models)]


def find(models: list[NamedModel], name: str) -> NamedModel | None:
    """The model called `name` exactly (a provider may tell names apart by case)."""
    wanted = name.strip()
    return next((m for m in models if m.model == wanted), None)


def unknown_model(name: str, models: list[NamedModel]) -> str:
    """The words for a model name that is not one this person may choose."""
    listed = ", ".join(m.model for m in models) or "none"
    return (f"no configured model {name[:200]!r}: choose one of: {listed} (Settings names "
            "them: the chat model, its fallbacks and the presets' models); or leave the "
            "model out for the settings' model")  # fmt: skip


def laid_for(model: NamedModel, base: Settings) -> dict[str, Any]:
    """The settings choosing `model` lays over the chat's: its own, then the settings'
    chat fallbacks (the admin's, whoever chose it) but for the model itself."""
    fallbacks = [entry for entry in base.chat_fallbacks if entry.model != model.model]
    return {**model.fields, "chat_fallbacks": fallbacks}
