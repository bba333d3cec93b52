"""A deleted account's chats and projects: handed over to another user, or deleted with it.

Their runs are stopped first (a chat must not go on working for nobody, nor start
working in its new owner's folders halfway through a step). Handed over, each project
of theirs moves into the heir's projects/, under its own name or, when the heir has a
project (or a memory area) of that name, under `<name>-<theirs>` (a number after it if
that is taken too); a project with its own memory area (named after it) takes that
area along under the new name. Their chats and tasks in a project then name it as it is
called in the heir's space: a chat's project is looked for in its owner's space
(profiles/projects.py), and a name left as it was would find nothing there, or the
heir's own project of that name. Each chat is made again from its record as the heir's
(`ChatManager.hand_over`), so its agents' work folders and memory are the heir's too.
What else was in their folder follows afterwards (accounts/service.py `retire_space`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from accounts.spaces import space_of
from helpers.names import is_plain_name
from memory.store import memory_dir
from profiles.projects import ProjectRef, load_project_settings, projects_dir
from store.chats import ChatManager

if TYPE_CHECKING:
    from core.chat import Chat

log = logging.getLogger(__name__)

#: The longest part of the leaving user's name put after a project's name.
TAG_CHARS = 20


@dataclass(frozen=True)
class HandedOver:
    """What became of a leaving user's chats and projects."""

    #: How many chats they had (handed over or deleted).
    chats: int
    #: Each project moved to the heir: its name → its name in the heir's projects/.
    projects: dict[str, str] = field(default_factory=dict)


def hand_over(chats: ChatManager, owner: str, heir: str | None) -> HandedOver:
    """Give every chat and project of `owner` to `heir`, or delete their chats (None; their
    projects go with their folder)."""
    ids = chats.ids_of(owner)
    if heir is None:
        for chat_id in ids:
            chats.delete(chat_id)
        log.info("accounts: %d chat(s) of %r deleted", len(ids), owner)
        return HandedOver(len(ids))
    for chat_id in ids:  # nothing runs in a project while it moves
        chats.runtime.submit(_halted(chats.get(chat_id))).result(30)
    projects = move_projects(space_of(owner), space_of(heir), owner)
    for chat_id in ids:
        project = chats.get(chat_id).project
        chats.hand_over(chat_id, heir, projects.get(project, project) if project else None)
    log.info("accounts: %d chat(s) and %d project(s) of %r handed over to %r", len(ids),
             len(projects), owner, heir)  # fmt: skip
    return HandedOver(len(ids), projects)


def move_projects(space: Path, heirs: Path, owner: str) -> dict[str, str]:
    """Move each project of `space` (the leaving `owner`'s) into the `heirs` space, with its
    own memory area; their names there, by their names here."""
    found = projects_dir(space)
    moved: dict[str, str] = {}
    if not found.is_dir():
        return moved
    for folder in sorted(found.iterdir()):
        name = folder.name
        if folder.is_symlink() or not folder.is_dir() or not is_plain_name(name):
            continue  # no project of theirs: it stays with the rest of their folder
        own_area = not load_project_settings(ProjectRef(name, space)).memory_area
        area = memory_dir(space) / name

        def taken(candidate: str, own_area: bool = own_area) -> bool:
            return (projects_dir(heirs) / candidate).exists() or (
                own_area and (memory_dir(heirs) / candidate).exists()
            )

        new = free_name(name, owner, taken)
        projects_dir(heirs).mkdir(parents=True, exist_ok=True)
        folder.rename(projects_dir(heirs) / new)
        if own_area and area.is_dir() and not area.is_symlink():
            memory_dir(heirs).mkdir(parents=True, exist_ok=True)
            area.rename(memory_dir(heirs) / new)
        moved[name] = new
        if new != name:
            log.info("accounts: %r's project %r is %r in its new owner's projects (the name "
                     "was taken)", owner, name, new)  # fmt: skip
    return moved


def free_name(name: str, owner: str, taken: Callable[[str], bool]) -> str:
    """`name` when it is not `taken`; else `<name>-<owner>`, then `<name>-<owner>-2`, ...
    (a plain folder name of at most 64 characters, helpers/names.py)."""
    if not taken(name):
        return name
    tag = re.sub(r"[^A-Za-z0-9_-]+", "-", owner)[:TAG_CHARS].strip("-") or "handed-over"
    for number in itertools.count(1):
        suffix = f"-{tag}" if number == 1 else f"-{tag}-{number}"
        candidate = name[: 64 - len(suffix)] + suffix
        if is_plain_name(candidate) and not taken(candidate):
            return candidate
    raise AssertionError("unreachable: the numbers never run out")


async def _halted(context: Chat) -> None:
    """Stop the chat's run, if any, and wait until it has unwound (on the agents' loop)."""
    task = context.task
    if task is not None and not task.done():
        context.stop()
        await asyncio.wait({task}, timeout=10)
