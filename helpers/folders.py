"""Where a chat's things live under usr/: the one place the layout is written down.

usr/chats/<chat id>/chat.json          the saved chat (store/persist_chat.py)
usr/chats/<chat id>/messages/<n>.txt   long tool results (core/prompt/long_results.py)
usr/chats/<chat id>/code/              its code sessions' files (execution/)
usr/chats/<chat id>/mcp/               images and resources MCP tools returned (mcp_client/)
usr/chats/<chat id>/attachments/       files the user attached to its messages

Each person's own things are in their space (accounts/spaces.py: usr/ for the desktop
mode and the first admin, usr/users/<name>/ for anyone else), laid out alike:

<space>/workdir/                       their agents' work folder (for usr/: setting `work_dir`)
<space>/memory/<area>/memory.db        their memory areas (memory/store.py)
<space>/knowledge/                     knowledge files every chat of theirs searches
<space>/projects/<name>/               their projects (profiles/projects.py)
<space>/projects/<name>/knowledge/     a project's own knowledge files (its chats only)
<space>/projects/<name>/work/          a project's own work folder
<space>/agents/<profile>/              their own agent profiles (profiles/catalog.py)
<space>/skills/<skill>/                their own skills (profiles/skills.py)

For usr/ those last two are the shared ones, the admin's, offered to everyone. A person's
own space (`in_personal_space`) holds what that person brought: nothing in it runs as a
program on the host (profiles/personal.py).

A function here that takes `space` reads None as usr/ (the desktop mode's, the first
admin's); code that acts for a person passes theirs (`ctx.space`, `identity.space()`).
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers.exposure import WORKDIR, checked_work_folder, expanded
from helpers.files import usr_dir, usr_path

CHAT_FILE = "chat.json"
MESSAGES = "messages"
CODE = "code"
MCP = "mcp"
#: The folder under usr/ that holds every person's own space but usr/'s (the first admin's
#: and the desktop mode's): accounts/spaces.py's USERS_DIR, which a test holds equal.
PERSONAL_SPACES = "users"


def chats_dir() -> Path:
    """The folder of every saved chat."""
    return usr_path("chats")


def chat_dir(chat_id: str) -> Path:
    """The chat's own folder: its chat.json, saved results and code sessions."""
    return chats_dir() / chat_id


def chat_file(chat_id: str) -> Path:
    return chat_dir(chat_id) / CHAT_FILE


def messages_dir(chat_id: str) -> Path:
    """Where the chat's long tool results are saved, one numbered file each."""
    return chat_dir(chat_id) / MESSAGES


def code_dir(chat_id: str) -> Path:
    return chat_dir(chat_id) / CODE


def mcp_dir(chat_id: str) -> Path:
    """Where the images and resources MCP tools returned to the chat's agents are saved."""
    return chat_dir(chat_id) / MCP


def work_dir(setting: str = "", space: Path | None = None) -> Path:
    """The work folder of agents working for the owner of `space`: `setting` (the agents'
    `work_dir` setting: a project's folder, or the person's own, core/agent_config.py), or
    `<space>/workdir`; its real path, checked now (every tool asks at every use):
    UserError, saying why and what to do, when it has become a link since it was set, is
    a system folder, exposes Cadre or is another person's (helpers/exposure.py)."""
    home = space if space is not None else usr_dir()
    return checked_work_folder(expanded(setting) if setting else home / WORKDIR, space)


def own_work_dir(space: Path) -> Path:
    """The work folder in `space` (`<space>/workdir`), unchecked: what a person's agents
    are given outside a project (the first admin's is the `work_dir` setting's)."""
    return space / WORKDIR


def knowledge_dir(project: str | None = None, space: Path | None = None) -> Path:
    """The knowledge files of every chat of `space`'s owner, or those of their `project`
    (a checked project name)."""
    home = space if space is not None else usr_dir()
    return home / "projects" / project / "knowledge" if project else home / "knowledge"


def in_personal_space(path: Path) -> bool:
    """Does `path` lie in a person's own space (usr/users/<name>/...), as written or where
    it really leads? What lies there came from that person, not from the admin."""
    spaces = usr_path(PERSONAL_SPACES)
    for root, where in ((spaces, path), (Path(os.path.realpath(spaces)), _real(path))):
        if Path(os.path.abspath(where)).is_relative_to(os.path.abspath(root)):
            return True
    return False


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):  # a loop of links, a NUL: taken as written
        return path
