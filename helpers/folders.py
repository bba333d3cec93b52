"""Where a chat's things live under usr/: the one place the layout is written down.

usr/chats/<chat id>/chat.json          the saved chat (store/persist_chat.py)
usr/chats/<chat id>/messages/<n>.txt   long tool results (core/long_results.py)
usr/chats/<chat id>/code/              its code sessions' files (execution/)
usr/chats/<chat id>/mcp/               images and resources MCP tools returned (mcp_client/)
usr/workdir/                           the agents' work folder (setting `work_dir`)
usr/knowledge/                         knowledge files every chat's agents search
usr/projects/<name>/knowledge/         a project's own knowledge files (its chats only)
usr/projects/<name>/work/              a project's own work folder
"""

from __future__ import annotations

from pathlib import Path

from helpers.files import BASE_DIR, usr_dir, usr_path

CHAT_FILE = "chat.json"
MESSAGES = "messages"
CODE = "code"
MCP = "mcp"


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


def work_dir(setting: str = "") -> Path:
    """The agents' work folder: the `work_dir` setting, or `usr/workdir`."""
    return Path(setting).expanduser().resolve() if setting else usr_path("workdir")


def knowledge_dir(project: str | None = None) -> Path:
    """The knowledge files of every chat, or those of `project` (a checked project name)."""
    return usr_path("projects", project, "knowledge") if project else usr_path("knowledge")


#: A project's own work folder, in its folder (`usr/projects/<name>/work`).
PROJECT_WORK = "work"


def exposure(folder: Path) -> str:
    """Why agents working in `folder` (resolved) would reach Cadre's own files ("is
    inside usr/", "holds Cadre's own folder", ...), "" when they would not: it holds
    Cadre's folder or `usr/`, or lies inside them other than in `usr/workdir` or a
    project's `work/` folder. A project's own folder is no work folder either: it holds
    the project's settings and secrets, which a command there would read, and rewrite
    to give itself another work folder. Projects' named folders and the sandbox's
    writable folder are both held to this (profiles/work_folder.py,
    execution/code_sessions.py)."""
    usr = usr_dir().resolve()
    projects = usr / "projects"
    if folder.is_relative_to(projects) and folder != projects:
        inner = folder.relative_to(projects).parts
        if len(inner) >= 2 and inner[1] == PROJECT_WORK:
            return ""  # in a project's work folder: its own files, not Cadre's
        return (f"holds or is among a project's own settings and secrets (a project's"
                f" {PROJECT_WORK!r} folder may be used)")  # fmt: skip
    if folder.is_relative_to(usr / "workdir"):
        return ""
    for guarded, what in ((BASE_DIR.resolve(), "Cadre's own folder"), (usr, "usr/")):
        if folder.is_relative_to(guarded):
            return f"is inside {what}"
        if guarded.is_relative_to(folder):
            return f"holds {what}"
    return ""
