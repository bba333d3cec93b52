"""A chat's context variables: named texts the user or a program gives the chat.

They are set through the API (`context` of `POST /api/v1/message`), the
OpenAI-compatible endpoint (`metadata`) and the UI's editor, kept on the chat
(`Chat.variables`) and saved with it. Prompt files read them as
`{{ctx.name}}` and tools as `self.ctx.variables`; nothing else sends
them to the model. The rules for what a chat may hold are here, in one place,
so every way in refuses the same things with the same words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from helpers.errors import UserError
from helpers.valid_text import valid_text
from profiles.catalog import layered_folders
from profiles.projects import ProjectLike
from profiles.prompts import PromptCache, PromptLoader

if TYPE_CHECKING:
    from core.agent import Agent

#: A name as a prompt file can write it after `ctx.` (an identifier, at most 64 characters).
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: Most variables one chat holds.
MAX_VARIABLES = 64
#: Longest value, in characters (a variable is a fact to pass on, not a document).
MAX_VALUE = 8_000

#: The namespace prompt files read them from: `{{ctx.name}}`.
NAMESPACE = "ctx"

#: What a change may say of one name: its new value, or None to remove it.
Change = Mapping[str, str | None]


def check_name(name: object) -> str:
    """`name` if it is a valid variable name; UserError saying what a name may be."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        shown = name if isinstance(name, str) else type(name).__name__
        raise UserError(
            f"the variable name {shown!r} is not allowed: use letters, digits and _, "
            "not starting with a digit, at most 64 characters"
        )
    return name


def check_value(name: str, value: object) -> str:
    """`value` as it is kept; UserError when it is not text or too long."""
    if not isinstance(value, str):
        raise UserError(f"the variable {name!r} must be text, not {type(value).__name__}")
    if len(value) > MAX_VALUE:
        raise UserError(
            f"the variable {name!r} is {len(value):,} characters long; at most {MAX_VALUE:,}"
        )
    return valid_text(value)


def check_change(change: object, *, removals: bool = True) -> dict[str, str | None]:
    """A change as given from outside, checked: names, values (None removes, if allowed)."""
    if not isinstance(change, Mapping):
        raise UserError("the variables must be an object of names and texts")
    if len(change) > MAX_VARIABLES:
        raise UserError(f"{len(change)} variables given; a chat holds at most {MAX_VARIABLES}")
    checked: dict[str, str | None] = {}
    for name, value in change.items():
        check_name(name)
        if value is None and removals:
            checked[name] = None
        else:
            checked[name] = check_value(name, value)
    return checked


def applied(current: Mapping[str, str], change: Change, *, replace: bool = False) -> dict[str, str]:
    """The variables after `change` (over `current`, or instead of it with `replace`).

    A new dict: the chat's variables are swapped whole, so whoever reads them on the
    agents' loop sees the old set or the new one, never half of a change.
    """
    result = {} if replace else dict(current)
    for name, value in check_change(change).items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    if len(result) > MAX_VARIABLES:
        raise UserError(
            f"the chat would hold {len(result)} variables; at most {MAX_VARIABLES} "
            "(remove some first)"
        )
    return result


def for_prompts(agent: object) -> Mapping[str, str]:
    """The `ctx` namespace of `agent`'s prompt files: its chat's variables, with secrets
    masked (a prompt reaches the model, and no secret does: helpers/secrets.py)."""
    chat = cast("Agent", agent).chat
    masker = chat.log.masker
    return masker.mask_value(chat.variables) if masker is not None else chat.variables


#: The namespaces an agent's prompt files read (profiles/prompts.py `{{ns.key}}`).
PROMPT_NAMESPACES = {NAMESPACE: for_prompts}


#: The parsed prompt files every agent's loader shares (keyed by path, checked by stat):
#: each new agent parsed its own copies, a chat's first step and every subordinate's.
SHARED_PROMPT_CACHE = PromptCache()


def prompt_loader(profile: str, project: ProjectLike | None) -> PromptLoader:
    """The prompts of `profile` (in `project`), which read the chat's variables as
    `{{ctx.name}}`. An include no folder has renders as nothing, with a warning: a
    profile made for Agent Zero includes files only Agent Zero ships (the profile's
    status in the settings page lists them)."""
    return PromptLoader(
        layered_folders(profile, "prompts", project),
        cache=SHARED_PROMPT_CACHE,
        namespaces=PROMPT_NAMESPACES,
        missing_includes="warn",
    )


def take_prompt_folders(agent: Agent) -> bool:
    """Give `agent` a prompt loader of its profile's folders as they are now, if they
    changed (a plugin switched on or off since brings or takes its prompts without a
    restart; its tools come and go at the next step too): whether they did."""
    profile, project = agent.config.profile, agent.chat.project_ref
    if tuple(layered_folders(profile, "prompts", project)) == agent.prompts.folders:
        return False
    agent.prompts, agent.built_prompt = prompt_loader(profile, project), None
    return True
