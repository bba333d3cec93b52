"""Agent Zero's chat files, read as Cadre chats: through Import, and in usr/chats/ at start.

Agent Zero saves a chat (`usr/chats/<id>/chat.json`) as: `id`, `name`,
`created_at` and `last_message` as ISO dates, the agent chain `agents` (Agent
0 first, each `{"number", "data", "history"}` with the history as JSON text:
store/agent_zero/history.py) and the log `{"guid", "logs": [items]}`, each item
`{"type", "heading", "content", "kvps", "temp", ...}`. It has no format
number, which is how it is told from a Cadre file.

The converted chat is a chat like any other: the agents keep their histories
(the model sees the old turns when the chat goes on), each with the default
profile, Agent 0's or a subordinate's (Agent Zero does not save a subordinate's
profile; one it names that is available here is kept), the log keeps its
items with Agent Zero's kinds in Cadre's words. A file found in usr/chats/ is
converted in place, its original kept beside it as `chat.agent-zero.json`.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
import uuid
from datetime import datetime
from typing import Any

from core.chat_record import AgentRecord, ChatFile
from core.log import LOG_KINDS
from helpers.folders import chat_file
from helpers.settings import load_settings
from profiles.catalog import (
    DEFAULT_SUBORDINATE_PROFILE,
    get_available_agents_dict,
    subordinate_profiles,
)
from store import persist_chat
from store.agent_zero.history import Render, convert_history, shipped_prompts

log = logging.getLogger(__name__)

#: The original of a chat converted in place, beside its new chat.json.
BACKUP = "chat.agent-zero.json"
#: Agent Zero's log kinds that Cadre names otherwise, first; then any kind Cadre has too is
#: kept, and any other is "info". Agent Zero's "browser" items are not Cadre's (no title, URL
#: or screenshot of Cadre's browser tool): they show as a tool's.
KINDS = {"browser": "tool", "mcp": "mcp_tool"}
#: Longest name kept (as for an import of Cadre's own exports).
NAME_LIMIT = 120


def is_agent_zero_chat(data: Any) -> bool:
    """Does `data` (a parsed JSON document) look like Agent Zero's chat file?"""
    if not isinstance(data, dict) or "cadre_export" in data:
        return False
    if isinstance(data.get("version"), int):  # Cadre's files carry a format number
        return False
    if not isinstance(data.get("agents"), list):
        return False
    logged = data.get("log")
    agents = data["agents"]
    return (isinstance(logged, dict) and "logs" in logged) or any(
        isinstance(a, dict) and isinstance(a.get("history"), str) for a in agents
    )


def convert(data: dict[str, Any], chat_id: str, render: Render | None = None) -> ChatFile:
    """The Cadre chat of an Agent Zero chat file, under `chat_id`; ValueError says what
    is wrong (starting "Agent Zero chat: ")."""
    try:
        return _convert(data, chat_id, render or shipped_prompts())
    except ValueError as exc:
        raise ValueError(f"Agent Zero chat: {exc}") from None


def _convert(data: dict[str, Any], chat_id: str, render: Render) -> ChatFile:
    raw_agents = data.get("agents")
    if not isinstance(raw_agents, list) or not raw_agents:
        raise ValueError("no agents")
    # Agent 0 may have any available profile; a subordinate only one offered to subordinates.
    choices = [
        (set(get_available_agents_dict()), load_settings().agent_profile),
        (set(subordinate_profiles()), DEFAULT_SUBORDINATE_PROFILE),
    ]
    agents = []
    for index, raw in enumerate(raw_agents):
        if not isinstance(raw, dict):
            raise ValueError(f"agent {index} is not a JSON object")
        try:
            history = convert_history(raw.get("history"), render)
        except ValueError as exc:
            raise ValueError(f"agent {index}: {exc}") from None
        available, default = choices[min(index, 1)]
        named = raw.get("profile")
        profile = named if isinstance(named, str) and named in available else default
        agents.append(
            AgentRecord(
                number=index,
                profile=profile,
                overrides={"agent_profile": profile} if index else {},
                superior=index - 1 if index else None,
                history=history.to_dict(),
            )
        )
    last = _time(data.get("last_message"))
    created = _time(data.get("created_at")) or last or time.time()
    name = data.get("name") if isinstance(data.get("name"), str) else ""
    return ChatFile(
        id=chat_id,
        name=" ".join(name.split())[:NAME_LIMIT],
        created_at=created,
        last_message=last,
        agents=agents,
        log=_log(data.get("log"), created),
    )


def _time(value: Any) -> float:
    """Seconds since the epoch of an ISO date (a date without a zone is local time, as
    Agent Zero wrote it); 0.0 for none (Agent Zero writes the epoch for none too)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return max(0.0, float(value))
    if not isinstance(value, str):
        return 0.0
    try:
        return max(0.0, datetime.fromisoformat(value).timestamp())
    except (ValueError, OverflowError, OSError):
        return 0.0


def _log(raw: Any, created: float) -> dict[str, Any]:
    """The log as Cadre stores it; a temporary item (a progress line) is not kept."""
    if raw is None:
        return {"items": [], "version": 0}
    items = raw.get("logs") if isinstance(raw, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError("its log has no list of items ('logs')")
    kept = [item for item in items if not item.get("temp")]
    converted = [_log_item(item, no, created) for no, item in enumerate(kept)]
    guid = raw.get("guid") if isinstance(raw.get("guid"), str) and raw["guid"] else None
    return {"guid": guid or uuid.uuid4().hex, "version": len(converted), "items": converted}


def _log_item(item: dict[str, Any], no: int, created: float) -> dict[str, Any]:
    kind = str(item.get("type") or "info")
    kvps = item.get("kvps")
    kvps = dict(kvps) if isinstance(kvps, dict) else ({} if kvps is None else {"value": kvps})
    cadre = KINDS.get(kind) or (kind if kind in LOG_KINDS else "info")
    if cadre != kind:
        kvps["agent_zero_type"] = kind  # the UI shows it as Cadre's kind; what it was stays
    agent = item.get("agent_number", item.get("agentno", 0))
    stamp = item.get("timestamp")
    given = item.get("id")
    return {
        "no": no,
        "id": given if isinstance(given, str) and given else uuid.uuid4().hex[:12],
        "type": cadre,
        "heading": _str(item.get("heading")),
        "content": _str(item.get("content")),
        "kvps": kvps,
        "agentno": agent if isinstance(agent, int) and agent >= 0 else 0,
        "timestamp": float(stamp) if isinstance(stamp, (int, float)) and stamp > 0 else created,
        "version": no + 1,
    }


def _str(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def read_import(document: dict[str, Any], new_id: str) -> ChatFile:
    """An Agent Zero chat sent to Import, as a new chat (ValueError: why it is refused)."""
    return convert(document, new_id)


def load_saved(chat_id: str) -> ChatFile:
    """A saved chat of usr/chats/ (persist_chat.load_chat), an Agent Zero one converted
    first: the converted chat is written in its place, the original kept as BACKUP.
    ValueError (or OSError) says why the chat cannot be read."""
    path = chat_file(chat_id)
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        data = None  # not JSON: persist_chat says so in its own words
    if is_agent_zero_chat(data):
        chat = convert(data, chat_id)
        shutil.copy2(path, path.with_name(BACKUP))  # before the file is replaced
        persist_chat.write_chat(chat)
        log.info("chat %s was Agent Zero's: converted, the original kept as %s", chat_id, BACKUP)
    return persist_chat.load_chat(chat_id)
