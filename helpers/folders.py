"""Where a chat's things live under usr/: the one place the layout is written down.

usr/chats/<chat id>/chat.json          the saved chat (store/persist_chat.py)
usr/chats/<chat id>/messages/<n>.txt   long tool results (core/prompt/long_results.py)
usr/chats/<chat id>/code/              its code sessions' files (execution/)
usr/chats/<chat id>/mcp/               images and resources MCP tools returned (mcp_client/)
usr/workdir/                           the agents' work folder (setting `work_dir`)
usr/knowledge/                         knowledge files every chat's agents search
usr/projects/<name>/knowledge/         a project's own knowledge files (its chats only)
usr/projects/<name>/work/              a project's own work folder
"""

from __future__ import annotations

from pathlib import Path

from helpers.exposure import checked_work_folder, expanded
from helpers.files import usr_path

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
    """The agents' work folder: the `work_dir` setting, or `usr/workdir`; its real path,
    checked now (every tool asks at every use): UserError, saying why and what to do,
    when it has become a link since it was set, is a system folder or exposes Cadre
    (helpers/exposure.py)."""
    return checked_work_folder(expanded(setting) if setting else usr_path("workdir"))


def knowledge_dir(project: str | None = None) -> Path:
    """The knowledge files of every chat, or those of `project` (a checked project name)."""
    return usr_path("projects", project, "knowledge") if project else usr_path("knowledge")
