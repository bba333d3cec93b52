"""Turning settings into an agent's configuration: its profile, its three models, its limits.

The stored settings, then the environment, then what the chat's owner set for
themselves (accounts/personal.py: anyone's but the first admin's), then what the chat's
project sets, then the model preset the chat chose (helpers/model_presets.py) or the
configured model it chose by name (helpers/chat_models.py), then the chat's own
overrides (helpers/settings.py merges them). A new chat (initialize.py), a restored
one (core/chat_record.py), a subordinate (core/delegation) and a handoff all build their
agents' configurations here, each given the chat's owner: the project is the owner's
(in their space, accounts/spaces.py), and so is the work folder. The `work_dir` setting is the
first admin's (and the desktop mode's); anyone else's agents work in their own
`<space>/workdir`, or their project's folder, whatever a profile or chat names.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from accounts import personal
from accounts.spaces import is_member, space_of
from core.agent_types import AgentConfig
from helpers import chat_models, model_presets
from helpers.files import usr_dir
from helpers.folders import in_personal_space, own_work_dir
from helpers.settings import Settings, load_settings, merge_settings
from models.llm import ModelConfig
from models.local_model import REPLY_DEFAULTS, LocalSpec, is_local
from models.rate_limits import provider_rate
from profiles.catalog import discover_profiles, profile_settings
from profiles.projects import ProjectRef, place_of, project_overrides

if TYPE_CHECKING:
    from core.chat import Chat

log = logging.getLogger(__name__)


def model_config(settings: Settings, prefix: str) -> ModelConfig:
    """The `chat`, `util` or `embed` model described by `settings`, with its fallbacks
    (`<prefix>_fallbacks`, built with the same limits) and its provider's limit."""
    primary = _one_model(
        settings,
        prefix,
        getattr(settings, f"{prefix}_model"),
        getattr(settings, f"{prefix}_api_base"),
        getattr(settings, f"{prefix}_api_key"),
        dict(getattr(settings, f"{prefix}_kwargs")),
    )
    # A fallback gets none of the role's extra parameters: they were written for its model.
    fallbacks = tuple(
        _one_model(settings, prefix, entry.model, entry.api_base, entry.api_key, {})
        for entry in getattr(settings, f"{prefix}_fallbacks")
    )
    return dataclasses.replace(primary, fallbacks=fallbacks)


def _one_model(
    settings: Settings, prefix: str, model: str, api_base: str, api_key: str, kwargs: dict[str, Any]
) -> ModelConfig:
    ctx_length = getattr(settings, f"{prefix}_ctx_length")
    local = None
    if is_local(model):
        local = LocalSpec(
            settings.local_model_path, settings.local_ctx_length, settings.local_threads
        )
        ctx_length = min(ctx_length, settings.local_ctx_length)  # the loaded model's window
        if prefix != "embed":  # reply options: an embedding request takes none
            kwargs = {**REPLY_DEFAULTS, **kwargs}
    return ModelConfig(
        model=model,
        api_base=api_base,
        api_key=api_key,
        ctx_length=ctx_length,
        local=local,
        kwargs=kwargs,
        retries=settings.llm_retries,
        retry_delay=settings.llm_retry_delay,
        timeout=settings.llm_timeout,
        first_chunk_timeout=settings.llm_first_chunk_timeout,
        between_chunks_timeout=settings.llm_between_chunks_timeout,
        max_reply_chars=settings.llm_max_reply_chars,
        client=settings.model_client,
        cooldown=settings.fallback_cooldown,
        limit=provider_rate(model, settings.provider_limits),
    )


def agent_config(
    override_settings: dict[str, Any] | None = None,
    project: str | None = None,
    owner: str | None = None,
) -> AgentConfig:
    """The configuration of a new agent of `owner`'s chat (None: the desktop mode's, or a
    chat from before accounts: the first admin's): stored settings, env, what the chat's
    `project` (the owner's) sets (work folder, memory area, secrets), then
    `override_settings`; the owner's own work folder (see the module's docstring)."""
    base = load_settings()
    space = space_of(owner)
    own = (
        personal.overrides(base, personal.load(space), is_member(owner))
        if space != usr_dir()
        else {}
    )
    for role in ("chat", "util", "embed"):
        if {f"{role}_model", f"{role}_api_base", f"{role}_api_key"} & own.keys():
            # The server's fallbacks were chosen (and are paid) for the server's model, not
            # for a model, an address or a key a person set for themselves (their key
            # refused, the server would pay for their calls and they would never hear).
            own[f"{role}_fallbacks"] = []
    secrets = own.get("secrets", base.secrets)
    from_project = project_overrides(ProjectRef(project, space) if project else None, secrets)
    explicit = dict(override_settings or {})
    preset = explicit.pop(model_presets.PRESET_KEY, "")
    chosen = explicit.pop(chat_models.MODEL_KEY, "")
    laid = preset_fields(base, {**own, **from_project}, preset, explicit, owner)
    if chosen and not preset:
        laid = chosen_model_fields(base, {**own, **from_project}, chosen, explicit, owner)
    merged = {**own, **from_project, **laid, **explicit}
    if space != usr_dir():
        # Not the first admin's: neither the global setting's folder nor one a profile or
        # a chat names, but the project's (in the owner's space) or the person's own.
        merged["work_dir"] = from_project.get("work_dir") or str(own_work_dir(space))
    settings = merge_settings(base, merged or None)
    return AgentConfig(
        profile=settings.agent_profile,
        chat_model=model_config(settings, "chat"),
        util_model=model_config(settings, "util"),
        embed_model=model_config(settings, "embed"),
        settings=settings,
        overrides=dict(override_settings or {}),
    )


def preset_fields(base: Settings, under: dict[str, Any], name: str, explicit: dict[str, Any],
                  owner: str | None) -> dict[str, Any]:  # fmt: skip
    """What the chat's model preset `name` sets over `base` with `under` (the owner's and the
    project's settings); a role whose model `explicit` sets (a profile's own) keeps it. A
    preset gone since, or not one the owner may choose, is left out: the settings' models,
    and a line in the log (a chat must load and run whatever changed in Settings)."""
    if not name:
        return {}
    preset = model_presets.find(base.model_presets, name)
    if preset is None or not model_presets.may_use(preset, is_member(owner)):
        why = "gone" if preset is None else "not theirs to choose"
        log.warning("model preset %r of a chat of %s is %s: the settings' models are used",
                    name, owner or "the desktop mode", why)  # fmt: skip
        return {}
    skip = frozenset(role for role in model_presets.ROLES if f"{role}_model" in explicit)
    laid = model_presets.fields(preset, merge_settings(base, under or None), skip)
    for role in model_presets.ROLES:
        if f"{role}_model" in laid:  # the admin's model: the admin's fallbacks, whoever chose it
            laid[f"{role}_fallbacks"] = list(getattr(base, f"{role}_fallbacks"))
    return laid


def chosen_model_fields(base: Settings, under: dict[str, Any], name: str,
                        explicit: dict[str, Any], owner: str | None) -> dict[str, Any]:  # fmt: skip
    """What the configured chat model `name` the chat chose sets over `base` (its address
    and key from the settings now: helpers/chat_models.py); nothing when a profile sets its
    own chat model (`explicit`). A model no longer configured, or not one the owner may
    choose, is left out as a gone preset is: the settings' models, and a line in the log."""
    if "chat_model" in explicit:
        return {}
    models = chat_models.configured(base, merge_settings(base, under or None))
    found = chat_models.find(models, name)
    if found is None or not chat_models.may_choose(found, is_member(owner), base.member_models):
        why = "no longer configured" if found is None else "not theirs to choose"
        log.warning("chosen model %r of a chat of %s is %s: the settings' models are used",
                    name, owner or "the desktop mode", why)  # fmt: skip
        return {}
    return chat_models.laid_for(found, base)


def profile_overrides(
    profile: str, project: ProjectRef | None, owner: str | None
) -> dict[str, Any]:
    """What `profile`'s settings.json sets for an agent of `owner`'s chat. A member's own
    profile (profiles/personal.py) chooses models only where the admin lets members choose
    theirs (`member_models`): otherwise its choice is left out, and the log says so."""
    found = profile_settings(profile, project)
    chosen = sorted(set(found) & set(personal.MODEL_FIELDS))
    if not chosen or not is_member(owner) or load_settings().member_models:
        return found
    where = discover_profiles(project).get(profile)
    if where is None or not in_personal_space(where.root):
        return found  # the admin's profile: the admin chose
    log.warning("profile %s of %s: its %s left out (members do not choose models here)",
                profile, owner, ", ".join(chosen))  # fmt: skip
    return {name: value for name, value in found.items() if name not in chosen}


def chat_agent_config(
    overrides: dict[str, Any],
    profile: str,
    project: str | None = None,
    handed: bool = False,
    owner: str | None = None,
) -> AgentConfig:
    """An agent of `owner`'s chat with `profile`, whatever the default is now; its
    overrides stay `overrides` (a settings change treats it as before). A profile Agent 0
    handed the conversation to (`handed`) brings its settings.json, as a subordinate's
    does."""
    where = place_of(project, space_of(owner))  # a member's own profile is theirs, too
    extra = profile_overrides(profile, where, owner) if handed else {}
    config = agent_config({**overrides, **extra, "agent_profile": profile}, project, owner)
    return dataclasses.replace(config, overrides=dict(overrides))


def config_now(chat: Chat) -> AgentConfig:
    """Agent 0's config from the settings now (a settings change between runs); a profile
    Agent 0 was handed to keeps talking (core/delegation/handoff.py)."""
    overrides = chat.agent0.config.overrides
    if chat.home_profile is None:
        return agent_config(overrides or None, chat.project, chat.owner)
    return chat_agent_config(overrides, chat.agent0.config.profile, chat.project, True, chat.owner)
