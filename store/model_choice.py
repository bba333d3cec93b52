"""A chat's model choice: one of the model presets (helpers/model_presets.py), one of the
configured chat models by name (helpers/chat_models.py), or the settings' models
("Default").

The choice is the setting override `model_preset` (or `chosen_model`: a name alone,
never an address or a key) of the chat's Agent 0, stored with the chat
(core/chat_record.py) and laid over the settings wherever the chat's agents are
configured (core/agent_config.py): Agent 0, a restored chat, a handoff, and every
subordinate, which takes the chat's overrides and then its profile's own settings (a
profile that sets its own model keeps it). `ChatManager.choose_model` makes a choice; a
chat between runs takes it at once, a running one from its next run (as a settings
change does: a working agent keeps the model it started with).

Who may choose what: an admin (and the desktop mode's one person) any preset and any
configured model; a member the presets the admin marked for members, and the configured
models where the admin lets members choose their models (`member_models`), else those
they could run on already (helpers/chat_models.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from accounts.spaces import is_member
from core.agent_config import agent_config
from helpers import chat_models, model_presets
from helpers.errors import UserError
from helpers.settings import Settings, load_settings

if TYPE_CHECKING:
    from core.chat import Chat
    from helpers.chat_models import NamedModel

PRESET_KEY = model_presets.PRESET_KEY
MODEL_KEY = chat_models.MODEL_KEY
#: What a refused choice says to send.
BOTH = "send a preset or a model, not both"


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


def usable_models(owner: str | None, settings: Settings | None = None) -> list[NamedModel]:
    """The configured chat models `owner` may choose (helpers/chat_models.py)."""
    base = settings or load_settings()
    # Names alone are wanted here: the keys are looked up when the agents are configured.
    return chat_models.usable(base, base, is_member(owner))


def checked_model(name: str, owner: str | None, settings: Settings | None = None) -> str:
    """The configured chat model `name` as the settings spell it; UserError (a 400) listing
    the models `owner` may choose otherwise."""
    models = usable_models(owner, settings)
    found = chat_models.find(models, name)
    if found is None:
        raise UserError(chat_models.unknown_model(name, models))
    return found.model


def checked_choice(
    preset: str | None, model: str | None, owner: str | None
) -> tuple[str, str] | None:
    """A choice as sent: (preset, model), one of them "" (both: Default); None when
    neither was sent (the chat's choice stays). UserError for both at once, or for a
    preset or model `owner` may not choose."""
    if (preset or "").strip() and (model or "").strip():
        raise UserError(BOTH)
    if (model or "").strip():
        return "", checked_model(str(model), owner)
    if preset is None and model is None:
        return None
    return checked(preset, owner), ""


def with_choice(overrides: dict[str, Any], name: str, model: str = "") -> dict[str, Any]:
    """`overrides` choosing the preset `name`, or else the configured model `model` (both
    "": the settings' models)."""
    changed = {k: v for k, v in overrides.items() if k not in (PRESET_KEY, MODEL_KEY)}
    if name:
        changed[PRESET_KEY] = name
    elif model:
        changed[MODEL_KEY] = model
    return changed


def choice_of(context: Chat) -> str:
    """The preset the chat chose ("" : the settings' models)."""
    return str(context.overrides.get(PRESET_KEY, ""))


def model_of(context: Chat) -> str:
    """The configured model the chat chose by name ("" : none)."""
    return str(context.overrides.get(MODEL_KEY, ""))


def choice_view(context: Chat) -> dict[str, Any]:
    """The chat's model as its state shows it: the preset chosen or the model chosen by
    name (both "" : Default) and the chat model Agent 0 works with now (a running chat's
    choice applies from its next run)."""
    return {"preset": choice_of(context), "model": model_of(context),
            "chat_model": context.agent0.ctx.chat_model.model}  # fmt: skip


def choices(owner: str | None) -> dict[str, Any]:
    """What `owner` may choose for a chat: the settings' models ("Default"), the presets
    theirs to choose, each with its models, and the configured chat models theirs to
    choose by name, each with where the settings name it (never an address or a key)."""
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
        "models": [{"name": m.model, "source": m.source} for m in usable_models(owner, settings)],
    }
