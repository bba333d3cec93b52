"""Older chat files brought up to date: the format's version and its numbered migrations.

A chat file (`core.chat_record.ChatFile`) carries the version it was written
in. On load, `migrate` runs the migrations from that version to `VERSION` on
the parsed JSON, before it is checked against the records. A new field with a
default needs no migration (an older file simply has none); a field renamed,
moved or reshaped does: a new `VERSION` and one more entry in `MIGRATIONS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

VERSION = 3


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v1 kept the log as a bare list of items and no usage; v2 keeps the log's guid
    and version with its items, and usage per chat and per agent."""
    items = data.get("log") or []
    if isinstance(items, list):
        version = max((int(i.get("version", 0)) for i in items if isinstance(i, dict)), default=0)
        data["log"] = {"items": items, "version": version}
    data.setdefault("usage", {})
    for agent in data.get("agents") or []:
        if isinstance(agent, dict):
            agent.setdefault("usage", {})
    return data


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """v2 kept one chain, linked by agent numbers, the task in the agent's data and an
    unread message as its text; v3 names each agent's superior, keeps the task as a
    field and the message whole."""
    agents = [a for a in data.get("agents") or [] if isinstance(a, dict)]
    agents.sort(key=lambda a: a.get("number", 0) if isinstance(a.get("number"), int) else 0)
    for index, agent in enumerate(agents):
        agent["superior"] = index - 1 if index else None
        saved = agent.get("data")
        if isinstance(saved, dict) and "delegated_task" in saved:
            agent["task"] = saved.pop("delegated_task")
        if isinstance(agent.get("intervention"), str):
            agent["intervention"] = {"message": agent["intervention"]}
    data["agents"] = agents
    return data


#: MIGRATIONS[n] turns a version-n file into a version-(n+1) one.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a parsed file up to `VERSION`; ValueError for a version we cannot read."""
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"no valid format version (found {version!r})")
    if version > VERSION:
        raise ValueError(f"format version {version} is newer than this Cadre reads ({VERSION})")
    while version < VERSION:
        data = MIGRATIONS[version](data)
        version += 1
        data["version"] = version
    return data
