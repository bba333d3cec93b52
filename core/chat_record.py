"""A chat's record: what is saved of a chat and its agents, and how it comes back.

`ChatFile` is the whole of `usr/chats/<id>/chat.json`. Each record sits next
to the two functions that cross it, field by field in the same order:
`snapshot` (a live chat → its record) and `restore` (a record → a live chat).
An agent is saved on purpose, not by a naming rule: each attribute of
`core.agent.Agent` is a field of `AgentRecord` (written by `_agent_record`,
read back by `_restore_agent`, just below it) or named in `AGENT_NOT_SAVED`
with the reason it is not. A new saved field is one change here, and a value
for it in tests/unit/core/test_chat_record.py's sample.

It is core's, beside the agent it records: it reads and sets every saved
attribute of an agent, which no module outside the loop may name. Each agent
comes back configured from today's settings with its saved profile and
overrides (core/agent_config.py). Files (atomic writes, reading, listing,
setting a damaged one aside) are `store.persist_chat`'s; older formats are
`core.chat_migrations`'.

Why one module past 400 lines (when it grows there): its point is that a saved
field, the line that writes it and the line that reads it back are one place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.agent import Agent
from core.agent_config import chat_agent_config
from core.agent_types import AgentConfig, UserMessage
from core.approvals import Held
from core.budget import Grace, Limits, Scope
from core.chat import Chat
from core.chat_migrations import VERSION
from core.delegation import resume
from core.delegation.handover import Handover
from core.log import Log
from core.prompt.history import History
from helpers.runtime import AgentRuntime
from helpers.text_files import FileReads
from models.llm import Usage

log = logging.getLogger(__name__)

#: A masking function: the chat's secrets replaced in any JSON value (or the value itself).
Mask = Callable[[Any], Any]


class MessageRecord(BaseModel):
    """A message as stored whole (an intervention the agent has not read yet)."""

    model_config = ConfigDict(extra="ignore")

    message: str
    attachments: list[str] = Field(default_factory=list)
    system_message: list[str] = Field(default_factory=list)
    #: Its id: a message handed to several agents is one message again when read back.
    id: str = ""


def _message_record(msg: UserMessage | None, mask: Mask) -> MessageRecord | None:
    if msg is None:
        return None
    return MessageRecord(message=mask(msg.message), attachments=mask(list(msg.attachments)),
                         system_message=mask(list(msg.system_message)), id=msg.id)  # fmt: skip


def _restore_message(
    saved: MessageRecord | None, known: dict[str, UserMessage]
) -> UserMessage | None:
    """A saved unread message; one handed to several agents comes back as one message."""
    if saved is None:
        return None
    if saved.id and saved.id in known:
        return known[saved.id]
    fields = {"id": saved.id} if saved.id else {}
    msg = UserMessage(saved.message, list(saved.attachments), list(saved.system_message), **fields)
    known[msg.id] = msg
    return msg


class ScopeRecord(BaseModel):
    """A delegation's budget: its caps, what was spent under it, how far its grace went."""

    model_config = ConfigDict(extra="ignore")

    #: Same key, same budget: a budget bounds its agent's subordinates too, and they
    #: must share it again after a restore (what one spends, all see).
    key: int = Field(ge=0)
    name: str
    limits: Limits
    spent: dict[str, Any] = Field(default_factory=dict)  # with "models": by model
    #: Seconds spent under it so far (the time the process was down does not count).
    seconds: float = Field(default=0.0, ge=0)
    #: `core.budget.Grace`: 0 none, 1 warned, 2 last call given.
    grace: int = Field(default=0, ge=0, le=2)


def _scope_record(scope: Scope, keys: dict[int, int]) -> ScopeRecord:
    """`scope` as stored; `keys` numbers the scopes met so far, so a shared one shares a key."""
    key = keys.setdefault(id(scope), len(keys))
    return ScopeRecord(key=key, name=scope.name, limits=scope.limits, spent=scope.spent.to_dict(),
                       seconds=max(0.0, time.monotonic() - scope.began),
                       grace=scope.grace.value)  # fmt: skip


def _restore_scope(saved: ScopeRecord, known: dict[int, Scope]) -> Scope:
    """A saved budget; one shared by an agent and its subordinates is shared again."""
    if saved.key not in known:
        known[saved.key] = Scope(saved.name, saved.limits, spent=Usage.from_dict(saved.spent),
                                 began=time.monotonic() - saved.seconds,
                                 grace=Grace(saved.grace))  # fmt: skip
    return known[saved.key]


class HandoverRecord(BaseModel):
    """A sibling's answer (or failure) its superior has not received yet."""

    model_config = ConfigDict(extra="ignore")

    text: str
    hint: str = ""
    failed: bool = False


def _handover_record(handed: Handover | None, mask: Mask) -> HandoverRecord | None:
    if handed is None:
        return None
    return HandoverRecord(text=mask(handed.text), hint=handed.hint, failed=handed.failed)


def _restore_handover(saved: HandoverRecord | None) -> Handover | None:
    return Handover(saved.text, saved.hint, saved.failed) if saved is not None else None


class HeldRecord(BaseModel):
    """A tool call held for a person's answer (core/approvals.py) when the chat was saved."""

    model_config = ConfigDict(extra="ignore")

    #: The id of its log item, which is the approval's.
    id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    names: list[str] = Field(default_factory=list)
    call: str
    method: str | None = None


def _held_record(held: Held | None, mask: Mask) -> HeldRecord | None:
    if held is None:
        return None
    return HeldRecord(id=held.id, tool=held.tool, args=mask(dict(held.args)),
                      names=list(held.names), call=held.call, method=held.method)  # fmt: skip


def _restore_held(saved: HeldRecord | None, agent_name: str) -> Held | None:
    if saved is None:
        return None
    return Held(id=saved.id, agent=agent_name, tool=saved.tool, args=dict(saved.args),
                names=list(saved.names), call=saved.call, method=saved.method)  # fmt: skip


# -- an agent ------------------------------------------------------------------


class AgentRecord(BaseModel):
    """One agent as stored: every field it owns that outlives the process."""

    model_config = ConfigDict(extra="ignore")

    number: int = Field(ge=0)
    #: Its name where the number does not tell it (a sibling "A1.2", an agent under one
    #: "A2.2"); "" for "A<number>".
    name: str = Field(default="", max_length=32, pattern=r"^(A\d+(\.\d+)+)?$")
    profile: str
    overrides: dict[str, Any] = Field(default_factory=dict)
    #: Position in `ChatFile.agents` of the agent that delegated to this one.
    superior: int | None = Field(default=None, ge=0)
    #: Replaced by a later delegation of its superior, kept on record (`Agent.retired`):
    #: `superior` names the agent it worked for. A field with a default, not a version.
    retired: bool = False
    #: The task the superior gave it.
    task: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    history: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)  # with "models": by model
    #: A message sent to this agent that it had not read yet.
    intervention: MessageRecord | None = None
    #: A nudge it had not acted on yet.
    nudged: bool = False
    #: Its last reply, so an identical next one is still caught as a repeat.
    last_reply: str = ""
    #: The budgets it works under (besides the chat's), outermost first.
    delegation_budgets: list[ScopeRecord] = Field(default_factory=list)
    #: Real path → digest of the bytes it last saw there (a stale patch is refused).
    file_reads: dict[str, str] = Field(default_factory=dict)
    #: A finished sibling's handover, until its superior has every sibling's.
    handed: HandoverRecord | None = None
    #: Its tool call held for a person's answer (a field with a default, not a version).
    held: HeldRecord | None = None


#: What an `Agent` has that `AgentRecord` leaves out, on purpose: derived from a saved
#: field, a cache, a handle of this process, or the state of one monologue (reset when
#: it starts, and a restored chat always starts a new one).
AGENT_NOT_SAVED = frozenset({
    "chat",  # the chat that holds the agent
    "ctx",  # the agent as tools see it (core/run_context.py)
    "config",  # rebuilt from the saved profile and setting overrides
    "prompts",  # from the profile
    "built_prompt",  # a cache of the system prompt, rebuilt when needed
    "recalled",  # a cache of the last memory search, searched again
    "last_prompt",  # the last call's whole prompt: the next call shows it again
    "wake", "nudge_wake",  # asyncio events of this process
    "compression",  # a task of this process
    "unusable_replies",  # state of one monologue
    "repair_item",
    "loop_guard",
})  # fmt: skip


def _agent_record(agent: Agent, holder: Agent | None, position: dict[int, int],
                  scope_keys: dict[int, int], mask: Mask) -> AgentRecord:  # fmt: skip
    """`agent` as stored; `holder` is the agent it worked for, `position` each agent's place."""
    return AgentRecord(
        number=agent.number,
        name=agent.agent_name if agent.agent_name != f"A{agent.number}" else "",
        profile=agent.config.profile,
        overrides=dict(agent.config.overrides),
        superior=position.get(id(holder)) if holder is not None else None,
        retired=agent.superior is None and holder is not None,
        task=mask(agent.task),
        data=mask(dict(agent.data)),
        history=mask(agent.history.to_dict()),
        usage=agent.usage.to_dict(),
        intervention=_message_record(agent.intervention, mask),
        nudged=agent.nudged,
        last_reply=mask(agent.last_reply),
        delegation_budgets=[_scope_record(s, scope_keys) for s in agent.delegation_budgets],
        file_reads={str(path): digest for path, digest in agent.file_reads.seen.items()},
        handed=_handover_record(agent.handed, mask),
        held=_held_record(agent.held, mask),
    )


def _restore_agent(record: AgentRecord, context: Chat, agents: list[Agent],
                   config_of: Callable[[AgentRecord], AgentConfig],
                   messages: dict[str, UserMessage],
                   scopes: dict[int, Scope]) -> Agent:  # fmt: skip
    """The agent of `record`, linked to its superior among `agents` (those restored so far)."""
    if record.superior is None:
        agent = context.agent0  # made with the chat, from this record's config
    else:
        agent = Agent(record.number, config_of(record), context, record.name)
        superior = agents[record.superior]
        if record.retired:  # kept on record only: linked to nothing that runs
            superior.retired.append(agent)
        else:
            superior.subordinates.append(agent)
            agent.superior = superior
    agent.task = record.task
    agent.data.update(record.data)
    agent.history = History.from_dict(record.history)
    agent.usage = Usage.from_dict(record.usage)
    agent.intervention = _restore_message(record.intervention, messages)
    agent.nudged = record.nudged
    agent.last_reply = record.last_reply
    agent.delegation_budgets = [_restore_scope(s, scopes) for s in record.delegation_budgets]
    agent.file_reads = FileReads({Path(path): digest for path, digest in record.file_reads.items()})
    agent.handed = _restore_handover(record.handed)
    agent.held = _restore_held(record.held, agent.agent_name)
    return agent


# -- the chat ------------------------------------------------------------------


class ParentLink(BaseModel):
    """Where a branch came from: its parent chat's id and the log item ("no") it was cut at."""

    model_config = ConfigDict(extra="ignore")

    id: str
    at: int = Field(ge=0)


class ChatFields(BaseModel):
    """What a chat file and its summary both say of a chat."""

    model_config = ConfigDict(extra="ignore")

    id: str
    name: str = ""
    created_at: float
    last_message: float = 0.0
    project: str | None = None
    #: The user whose chat it is (None: from before accounts; the first admin's).
    owner: str | None = None
    paused: bool = False
    #: True while a run was going on when the file was written.
    running: bool = False
    #: Tool calls held for a person's answer (the chat list's badge).
    approvals: int = Field(default=0, ge=0)
    #: The chat it was branched from, and at which log item (core/chat_cut.py); None: not
    #: a branch. A field with a default, not a version. Its parent's branches are the
    #: chats that name it here (the chat list nests them under it).
    parent: ParentLink | None = None


class ChatFile(ChatFields):
    """The whole of `chat.json`."""

    version: int = VERSION
    #: Number of the agent that was working (the deepest one), if any.
    working_agent: int | None = None
    #: Agent 0's own profile while another one talks with the user (a handoff); None:
    #: none (older files have none either: no migration needed).
    home_profile: str | None = None
    #: Positions in `agents` of every agent whose loop was on (siblings working at once,
    #: and the superiors waiting for them); empty in files written before siblings.
    busy: list[int] = Field(default_factory=list)
    #: Agent 0 first; every other agent after its superior.
    agents: list[AgentRecord] = Field(min_length=1)
    log: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)  # with "models": by model
    #: The chat's context variables (core/prompt/chat_variables.py). A field with a default, not
    #: a new version: a file from before they existed simply has none.
    variables: dict[str, str] = Field(default_factory=dict)
    #: Tool calls the person allowed for the rest of this chat ("Allow always").
    allowed_tools: list[str] = Field(default_factory=list)
    #: The chat this one replays (core/replay): `{"id", "tools", "on_difference"}`; None for
    #: any other. A field with a default, not a version.
    replay_of: dict[str, str] | None = None

    @model_validator(mode="after")
    def _links_form_a_tree(self) -> ChatFile:
        first = self.agents[0]
        if first.number != 0 or first.superior is not None:
            raise ValueError("the first agent must be Agent 0, with no superior")
        for index, agent in enumerate(self.agents[1:], start=1):
            if agent.superior is None or agent.superior >= index:
                raise ValueError(f"agent {index} must name a superior saved before it")
        return self


def snapshot(context: Chat) -> ChatFile:
    """The chat as it stands, for writing. Call on the agents' loop (no agent moves).

    Secrets are masked (the chat's one rule, as in the log): a chat file holds none,
    neither in history nor in an agent's data nor in a message not read yet nor in
    the chat's context variables.
    """
    masker = context.log.masker
    mask = masker.mask_value if masker else (lambda value: value)
    on_record = context.agents_on_record()  # the agents replaced by later ones included
    position = {id(agent): index for index, (agent, _) in enumerate(on_record)}
    scope_keys: dict[int, int] = {}
    agents = [_agent_record(a, holder, position, scope_keys, mask) for a, holder in on_record]
    working = context.working_agent
    # An interrupted chat is still owed its run: it stays "running" on disk until resumed.
    running = context.running or context.interrupted
    return ChatFile(
        id=context.id,
        name=context.name,
        created_at=context.created_at,
        last_message=context.last_message,
        project=context.project,
        owner=context.owner,
        paused=context.paused,
        running=running,
        approvals=len(context.approvals.held()),
        parent=ParentLink(**context.parent) if context.parent else None,
        working_agent=working.number if working is not None and running else None,
        home_profile=context.home_profile,
        busy=sorted(position[id(a)] for a in context.busy if id(a) in position) if running else [],
        agents=agents,
        log={
            "guid": context.log.guid,
            "version": context.log.version,
            "items": context.log.to_list(),
        },  # fmt: skip
        usage=context.usage.to_dict(),
        variables=mask(dict(context.variables)),
        allowed_tools=sorted(context.approvals.allowed),
        replay_of=context.replay_of,
    )


def restore(chat: ChatFile, runtime: AgentRuntime | None) -> Chat:
    """A saved chat back in memory: each agent with its own profile and config, linked.

    The chat comes back as it was saved, field by field (tests/integration/test_restore.py);
    what belonged to the stopped process goes, but a tool call held for an answer is held
    again (its agent goes on with it once answered: core/tooling/held_call.py).
    """
    records = chat.agents  # Agent 0 first, each agent after its superior (checked on load)
    chat_log = Log.from_list(chat.log.get("items", []))
    chat_log.version = max(chat_log.version, int(chat.log.get("version", 0)))
    if chat.log.get("guid"):
        chat_log.guid = str(chat.log["guid"])

    def config_of(record: AgentRecord) -> AgentConfig:
        # Each agent comes back with the profile it had (Agent 0 the one it handed to).
        handed = record is records[0] and chat.home_profile is not None
        return chat_agent_config(record.overrides, record.profile, chat.project, handed, chat.owner)

    context = Chat(config_of(records[0]), runtime, id=chat.id, name=chat.name,
                   created_at=chat.created_at, log=chat_log, project=chat.project,
                   owner=chat.owner)  # fmt: skip
    context.last_message = chat.last_message
    context.parent = chat.parent.model_dump() if chat.parent else None
    context.home_profile = chat.home_profile
    context.usage = Usage.from_dict(chat.usage)
    context.variables = dict(chat.variables)
    context.approvals.allowed = set(chat.allowed_tools)
    context.replay_of = chat.replay_of
    agents: list[Agent] = []
    messages: dict[str, UserMessage] = {}
    scopes: dict[int, Scope] = {}
    for record in records:
        agents.append(_restore_agent(record, context, agents, config_of, messages, scopes))
    if chat.paused:
        context.pause()
    if chat.running:
        _restore_interrupted(context, chat, agents)
    return context


def _restore_interrupted(context: Chat, chat: ChatFile, agents: list[Agent]) -> None:
    """A chat saved mid-run: interrupted, owed its run, its working agents as they were."""
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
        log.warning("chat %s: working agent %d is missing; resuming at Agent 0", chat.id, working)
    context.working_agent = found or context.agent0
    _hold_again(context, agents)
    resume.mark_cut(context)  # the step the stop cut, marked so on the page


def _hold_again(context: Chat, agents: list[Agent]) -> None:
    """Each working agent's held call is held again, its item still asking; any other item
    that asked when the process stopped asks no more (its buttons go, as after a stop)."""
    items = {item.id: item for item in context.log.items}
    working = {id(agent) for agent in context.working_agents() or [context.working_agent]}
    for agent in agents:
        held = agent.held
        item = items.get(held.id) if held is not None else None
        if held is None or item is None or id(agent) not in working:
            agent.held = None
            continue
        context.approvals.restore(held)
    for item in context.log.items:
        if item.kvps.get("approval") == "pending" and item.id not in context.approvals.pending():
            item.update(kvps={"approval": "cancelled"})
