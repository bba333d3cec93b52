"""What the browser and the API see of chats, agents, settings and profiles.

Every shape sent over the wire is built here, in one place (see protocol.md).
Call the chat functions on the agents' loop (`runtime.call`), where nothing
moves while they read.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from core.prompt.chat_variables import prompt_loader
from core.tooling.tool_status import tool_problems
from helpers import model_presets
from helpers.a2a_agents import mask_agents
from helpers.fallback_entries import FALLBACK_FIELDS, mask_fallbacks
from helpers.mcp_config import mask_mcp_servers
from helpers.settings import Settings
from helpers.settings_form import secret_fields
from models import fallback
from profiles.catalog import AgentProfile, allowed_subordinates, discover_profiles
from profiles.projects import ProjectLike, project_name
from profiles.status import profile_status
from store import model_choice
from store.chats import chat_row

if TYPE_CHECKING:
    from core.chat import AgentEntry, Chat
    from store.notifications import Change

MASK = "***"
#: Marked `secret` where the fields are declared (helpers/settings.py).
SECRET_FIELDS = secret_fields()


def chat_summary(context: Chat) -> dict[str, Any]:
    """A loaded chat's row of the chat list (built in store.chats, with unread chats)."""
    return chat_row(context)


def agent_view(entry: AgentEntry, titles: dict[str, str]) -> dict[str, Any]:
    """One agent of the tree."""
    return {
        "number": entry.number,
        "name": entry.name,
        "superior": entry.superior,
        "profile": entry.profile,
        "title": titles.get(entry.profile, entry.profile),
        "status": entry.status,
        "usage": entry.usage.to_dict(),
        #: Its tool call waiting for a person's answer (the rule name), or None.
        "held": entry.held,
    }


_titles: dict[ProjectLike | None, tuple[float, dict[str, str]]] = {}
#: Seconds profile titles are reused for state updates (sent many times a second).
TITLES_TTL = 2.0


def profile_titles(project: ProjectLike | None) -> dict[str, str]:
    now = time.monotonic()
    cached = _titles.get(project)
    if cached is None or now - cached[0] > TITLES_TTL:
        titles = {name: p.title for name, p in discover_profiles(project).items()}
        _titles[project] = cached = (now, titles)
    return cached[1]


def chat_state(context: Chat) -> dict[str, Any]:
    titles = profile_titles(context.project_ref)
    working = context.working if context.running else None
    busy = context.working_names() if context.running else []
    progress = ""
    # An agent whose call is held says so in place of its step (the status line).
    held = {h.agent: f"{h.agent}: waits for your answer ({h.shown})"
            for h in context.approvals.held()}  # fmt: skip
    if len(busy) > 1:  # siblings at once: each one's step, not only the last to move
        steps = {**_progress(context, busy), **held}
        progress = " · ".join(steps.get(name) or name for name in busy)
    elif working is not None:
        progress = held.get(working.name) or _progress(context, [working.name]).get(
            working.name, ""
        )
    return {
        "chat_id": context.id,
        "running": context.running,
        "paused": context.paused,
        "interrupted": context.interrupted,
        "working_agent": working.number if working is not None else None,
        #: Every agent at work now (several when siblings work at once), by name.
        "working": busy,
        "progress": progress,
        # Those a later delegation replaced too (done): the tree shows every agent that
        # worked in the chat, whose tokens the total counts.
        "agents": [agent_view(entry, titles) for entry in context.tree()],
        "usage": context.usage.to_dict(),
        "talker": talker_view(context, titles),
        # The chat model passed over for a fallback (models/fallback.py), or None.
        "fallback": fallback_view(context),
        # The chat's model choice (store/model_choice.py): the header's picker shows it.
        "model": model_choice.choice_view(context),
    }


def fallback_view(context: Chat) -> dict[str, Any] | None:
    """Which fallback the chat's model calls go to first now, and why (None: its own)."""
    found = fallback.in_use(context.agent0.ctx.chat_model)
    return found.to_dict() if found is not None else None


def _progress(context: Chat, names: list[str]) -> dict[str, str]:
    """The heading of each agent's latest step by its name ({"A1.2": "A1.2: Answering"}).
    An item names its agent (`LogItem.agent`) or leaves it to its number ("A1"): siblings
    A1.1, A1.2 share number 1 with an earlier single A1, whose steps are not theirs. The log
    is read from its end, only until every agent's step is found."""
    wanted = set(names)
    found: dict[str, str] = {}
    for item in reversed(context.log.items):
        if item.type not in ("agent", "tool", "subagent"):
            continue
        name = item.agent or f"A{item.agentno}"
        if name in wanted and name not in found:
            found[name] = item.heading
            if len(found) == len(wanted):
                break
    return found


def talker_view(context: Chat, titles: dict[str, str]) -> dict[str, Any]:
    """Who talks with the user: Agent 0's profile now, and its own one during a handoff."""
    profile, home = context.agent0.ctx.profile, context.home_profile
    return {
        "profile": profile,
        "title": titles.get(profile, profile),
        "home": home,
        "home_title": titles.get(home, home) if home else None,
    }


def log_items(context: Chat, since: int = 0) -> list[dict[str, Any]]:
    return [item.model_dump() for item in context.log.changes_since(since)]


def chat_snapshot(context: Chat, guid: str, since: int) -> dict[str, Any]:
    """What a page subscribing to a chat needs (on the agents' loop): the log after item
    `since`, or all of it when the page's `guid` is an older log's, and the chat's state."""
    reset = guid != context.log.guid
    return {
        "guid": context.log.guid,
        "version": context.log.version,
        "items": log_items(context, 0 if reset else since),
        "state": chat_state(context),
        "reset": reset,
    }


def notification_change(change: Change) -> dict[str, Any]:
    """A change of the notification history as the page's `notifications:delta`."""
    payload: dict[str, Any] = {"kind": change.kind, "unread": change.unread}
    if change.item is not None:
        payload["item"] = change.item.model_dump(mode="json")
    if change.kind == "read":
        payload["ids"] = change.ids
    return payload


def masked_settings(settings: Settings) -> dict[str, Any]:
    data = settings.model_dump(mode="json")
    for name in SECRET_FIELDS & data.keys():
        if data[name]:
            data[name] = MASK
    data["secrets"] = dict.fromkeys(data.get("secrets", {}), MASK)
    # Tokens in MCP servers' env and headers (server/routes/settings.py puts them back on save).
    data["mcp_servers"] = mask_mcp_servers(data.get("mcp_servers", ""), MASK)
    for name in FALLBACK_FIELDS:  # the fallback models' keys (settings.py puts them back)
        data[name] = mask_fallbacks(data.get(name, []), MASK)
    # The presets' keys (server/routes/settings.py puts them back on save).
    data["model_presets"] = model_presets.masked(data.get("model_presets", []))
    # The remote A2A agents' keys (server/routes/settings.py puts them back on save).
    data["a2a_agents"] = mask_agents(data.get("a2a_agents", []), MASK)
    return data


def profile_view(profile: AgentProfile, project: ProjectLike | None = None) -> dict[str, Any]:
    """A profile for the page, with its status: where each file comes from, warnings of
    its prompts, and the tools its agents cannot use (and why)."""
    status = profile_status(profile.name, project)
    prompts = prompt_loader(profile.name, project)
    unavailable = tool_problems(profile.name, project, prompts)
    return {
        "name": profile.name,
        "title": profile.title,
        "description": profile.description,
        "context": profile.context,
        "source": profile.source,
        "available": profile.available,
        "subordinate": profile.subordinate,
        "error": profile.error,
        "status": {
            "files": [asdict(file) for file in status.files],
            "warnings": status.warnings,
            "unavailable_tools": [{"name": n, "reason": why} for n, why in unavailable.items()],
        },
    }


def profile_graph(project: ProjectLike | None) -> dict[str, Any]:
    """Who may call whom: every usable profile with the profiles its agents may call. A
    workflow profile calls no one freely: it runs its steps (`workflow`), and `calls`
    are those steps' profiles, in the order they run."""
    found = {name: p for name, p in discover_profiles(project).items() if p.available}
    return {
        "project": project_name(project) if project else None,
        "profiles": [
            {"name": name, "title": p.title, "subordinate": p.subordinate,
             "calls": list(dict.fromkeys(p.workflow.profiles)) if p.workflow
             else allowed_subordinates(name, project),
             "workflow": _workflow_view(p)}
            for name, p in sorted(found.items())
        ],
    }  # fmt: skip


def _workflow_view(profile: AgentProfile) -> dict[str, Any] | None:
    flow = profile.workflow
    if flow is None:
        return None
    return {"kind": flow.kind, "steps": list(flow.steps), "aggregate": flow.aggregate or None}
