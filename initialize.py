"""Turning settings into agents: a new agent's configuration, a new chat, a saved chat."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from core.agent import Agent
from core.agent_config import agent_config, chat_agent_config, model_config
from core.agent_types import AgentConfig, UserMessage
from core.budget import Grace, Scope
from core.chat import Chat
from core.delegation import resume
from core.delegation.handover import Handover
from core.history import History
from core.log import Log
from helpers.runtime import AgentRuntime
from helpers.settings import Settings
from helpers.text_files import FileReads
from models.llm import Usage
from models.local_model import LOCAL
from profiles.projects import load_project_settings
from store.chat_records import AgentRecord, ChatFile, MessageRecord, ScopeRecord

log = logging.getLogger(__name__)


def preload_local_models(settings: Settings) -> None:
    """Start loading the local model the settings use (in the background), if any."""
    for prefix in ("chat", "util"):
        config = model_config(settings, prefix)
        if config.local is not None:
            LOCAL.load(config.local)


def new_context(runtime: AgentRuntime | None, project: str | None = None, **overrides: Any) -> Chat:
    """A new, empty chat with the current settings (in `project`, Agent 0 has the profile
    the project names unless `overrides` name one: kept with the chat, as a choice made
    when it began)."""
    chosen = load_project_settings(project).agent_profile if project else ""
    if chosen and "agent_profile" not in overrides:
        overrides = {**overrides, "agent_profile": chosen}
    return Chat(agent_config(overrides or None, project), runtime, project=project)


def restore_context(chat: ChatFile, runtime: AgentRuntime | None) -> Chat:
    """A saved chat back in memory: each agent with its own profile and config, linked.

    The chat comes back as it was saved, field by field (tests/integration/test_restore.py);
    what belonged to the stopped process goes: an approval it waited for is cancelled.
    """
    records = chat.agents  # Agent 0 first, each agent after its superior (checked on load)
    log = Log.from_list(chat.log.get("items", []))
    log.version = max(log.version, int(chat.log.get("version", 0)))
    if chat.log.get("guid"):
        log.guid = str(chat.log["guid"])

    def config_of(record: AgentRecord) -> AgentConfig:
        # Each agent comes back with the profile it had (Agent 0 the one it handed to).
        handed = record is records[0] and chat.home_profile is not None
        return chat_agent_config(record.overrides, record.profile, chat.project, handed)

    context = Chat(
        config_of(records[0]),
        runtime,
        id=chat.id,
        name=chat.name,
        created_at=chat.created_at,
        log=log,
        project=chat.project,
    )
    context.last_message = chat.last_message
    context.home_profile = chat.home_profile
    context.usage = Usage.from_dict(chat.usage)
    context.variables = dict(chat.variables)
    agents: list[Agent] = []
    messages: dict[str, UserMessage] = {}
    scopes: dict[int, Scope] = {}
    for record in records:
        if record.superior is None:
            agent = context.agent0
        elif record.retired:  # kept on record only: linked to nothing that runs
            agent = Agent(record.number, config_of(record), context, record.name)
            agents[record.superior].retired.append(agent)
        else:
            agent = Agent(record.number, config_of(record), context, record.name)
            agents[record.superior].subordinates.append(agent)
            agent.superior = agents[record.superior]
        _restore_agent(agent, record, messages, scopes)
        agents.append(agent)
    if chat.paused:
        context.pause()
    if chat.running:
        context.interrupted = True
        context.log.log(
            "info",
            "Interrupted",
            "Cadre stopped while this chat was working. Send a message, or continue, to resume.",
        )
        working = chat.working_agent if chat.working_agent is not None else 0
        context.busy = [agents[i] for i in chat.busy if i < len(agents)]
        busy_leaves = context.working_agents()
        found = next((a for a in reversed(busy_leaves) if a.number == working), None)
        found = found or next((a for a in context.agents() if a.number == working), None)
        if found is None:
            log.warning(
                "chat %s: working agent %d is missing; resuming at Agent 0", chat.id, working
            )
        context.working_agent = found or context.agent0
        _cancel_approvals(context.log)
        resume.mark_cut(context)  # the step the stop cut, marked so on the page
    return context


def _restore_agent(
    agent: Agent,
    record: AgentRecord,
    messages: dict[str, UserMessage],
    scopes: dict[int, Scope],
) -> None:
    """Every saved field of `record` onto `agent` (the links are the caller's)."""
    agent.task = record.task
    agent.data.update(record.data)
    agent.history = History.from_dict(record.history)
    agent.usage = Usage.from_dict(record.usage)
    agent.intervention = _message(record.intervention, messages)
    agent.nudged = record.nudged
    agent.last_reply = record.last_reply
    agent.delegation_budgets = [_scope(saved, scopes) for saved in record.delegation_budgets]
    agent.file_reads = FileReads({Path(path): digest for path, digest in record.file_reads.items()})
    saved = record.handed
    agent.handed = Handover(saved.text, saved.hint, saved.failed) if saved is not None else None


def _message(saved: MessageRecord | None, known: dict[str, UserMessage]) -> UserMessage | None:
    """A saved unread message; one handed to several agents comes back as one message."""
    if saved is None:
        return None
    if saved.id and saved.id in known:
        return known[saved.id]
    fields = {"id": saved.id} if saved.id else {}
    msg = UserMessage(saved.message, list(saved.attachments), list(saved.system_message), **fields)
    known[msg.id] = msg
    return msg


def _scope(saved: ScopeRecord, known: dict[int, Scope]) -> Scope:
    """A saved budget; one shared by an agent and its subordinates is shared again."""
    if saved.key not in known:
        known[saved.key] = Scope(
            saved.name,
            saved.limits,
            spent=Usage.from_dict(saved.spent),
            began=time.monotonic() - saved.seconds,
            grace=Grace(saved.grace),
        )
    return known[saved.key]


def _cancel_approvals(log: Log) -> None:
    """An action that waited for approval when the process stopped waits no more: its
    buttons go (as after a stop); resumed, the agent asks again if it still wants it."""
    for item in log.items:
        if item.kvps.get("approval") == "pending":
            item.update(kvps={"approval": "cancelled"})


class ChatFactory:
    """How the chat store makes chats: new ones from settings, saved ones from disk."""

    def __init__(self, runtime: AgentRuntime | None) -> None:
        self.runtime = runtime

    def new(self, project: str | None = None, **overrides: Any) -> Chat:
        return new_context(self.runtime, project, **overrides)

    def config(self, context: Chat) -> AgentConfig:
        """Agent 0's config from the settings now; a handoff's profile stays the one talking."""
        overrides = context.agent0.config.overrides
        if context.home_profile is None:
            return agent_config(overrides or None, context.project)
        return chat_agent_config(overrides, context.agent0.config.profile, context.project, True)

    def restore(self, chat: ChatFile) -> Chat:
        return restore_context(chat, self.runtime)
