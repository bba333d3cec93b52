"""A chat's model choice: one of the model presets (helpers/model_presets.py), or the
settings' models ("Default").

The choice is the setting override `model_preset` of the chat's Agent 0, stored with
the chat (core/chat_record.py) and laid over the settings wherever the chat's agents are
configured (core/agent_config.py): Agent 0, a restored chat, a handoff, and every
subordinate, which takes the chat's overrides and then its profile's own settings (a
profile that sets its own model keeps it). `ChatManager.choose_model` makes a choice; a
chat between runs takes it at once, a running one from its next run (as a settings
change does: a working agent keeps the model it started with).

Who may choose what: an admin (and the desktop mode's one person) any preset, a member
those the admin marked for members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from accounts.spaces import is_member
from core.agent_config import agent_config
from helpers import model_presets
from helpers.errors import UserError
from helpers.settings import Settings, load_settings

if TYPE_CHECKING:
    from core.chat import Chat

PRESET_KEY = model_presets.PRESET_KEY


def checked(name: str | None, owner: str | None, settings: Settings | None = None) -> str:
    """The preset `name` asks for, by its own spelling ("" for the settings' models: None,
    "" or "Default"); UserError (a 400) listing the presets `owner` may choose otherwise."""
    wanted = (name or "").strip()
    if not wanted or wanted.lower() == "default":
        return ""
    presets = (settings or load_settings()).model_presets
    member = is_member(owner)
    found = model_presets.find(presets, wanted)
    if found is None or not model_presets.may_use(found, member):
        raise UserError(model_presets.unknown_preset(wanted, presets, member))
    return found.name


def with_choice(overrides: dict[str, Any], name: str) -> dict[str, Any]:
    """`overrides` choosing the preset `name` ("" : the settings' models)."""
    changed = {key: value for key, value in overrides.items() if key != PRESET_KEY}
    if name:
        changed[PRESET_KEY] = name
    return changed


def choice_of(context: Chat) -> str:
    """The preset the chat chose ("" : the settings' models)."""
    return str(context.overrides.get(PRESET_KEY, ""))


def choice_view(context: Chat) -> dict[str, Any]:
    """The chat's model as its state shows it: the preset chosen ("" : Default) and the
    chat model Agent 0 works with now (a running chat's choice applies from its next run)."""
    return {"preset": choice_of(context), "chat_model": context.agent0.ctx.chat_model.model}


def choices(owner: str | None) -> dict[str, Any]:
    """What `owner` may choose for a chat: the settings' models ("Default") and the presets
    theirs to choose, each with its models (never an address or a key)."""
    settings = load_settings()
    member = is_member(owner)
    own = agent_config(None, None, owner)  # their Default: their own models, where they set any
    return {
        "default": {"chat_model": own.chat_model.model, "util_model": own.util_model.model},
        "presets": [
            {"name": p.name, "chat_model": p.chat_model, "util_model": p.util_model}
            for p in settings.model_presets
            if model_presets.may_use(p, member)
        ],
    }
