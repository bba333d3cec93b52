"""What a chat file holds: the records of a chat and its agents, and their migrations.

`ChatFile` is the whole of `usr/chats/<id>/chat.json`. An agent is saved
field by field, on purpose (`AgentRecord`; what an agent has that is not
saved is named in `agent.Agent.NOT_SAVED`, with why). The format carries a
version; older files are brought up to date by numbered migrations on load.
Reading, writing and taking a live chat's snapshot live in `persist_chat`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.budget import Limits

VERSION = 3


class MessageRecord(BaseModel):
    """A message as stored whole (an intervention the agent has not read yet)."""

    model_config = ConfigDict(extra="ignore")

    message: str
    attachments: list[str] = Field(default_factory=list)
    system_message: list[str] = Field(default_factory=list)
    #: Its id: a message handed to several agents is one message again when read back.
    id: str = ""


class ScopeRecord(BaseModel):
    """A delegation's budget: its caps, what was spent under it, how far its grace went."""

    model_config = ConfigDict(extra="ignore")

    #: Same key, same budget: a budget bounds its agent's subordinates too, and they
    #: must share it again after a restore (what one spends, all see).
    key: int = Field(ge=0)
    name: str
    limits: Limits
    spent: dict[str, float] = Field(default_factory=dict)
    #: Seconds spent under it so far (the time the process was down does not count).
    seconds: float = Field(default=0.0, ge=0)
    #: `core.budget.Grace`: 0 none, 1 warned, 2 last call given.
    grace: int = Field(default=0, ge=0, le=2)


class HandoverRecord(BaseModel):
    """A sibling's answer (or failure) its superior has not received yet."""

    model_config = ConfigDict(extra="ignore")

    text: str
    hint: str = ""
    failed: bool = False


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
    #: The task the superior gave it.
    task: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    history: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, float] = Field(default_factory=dict)
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
    #: Replaced by a later delegation of its superior, kept on record (`Agent.retired`):
    #: `superior` names the agent it worked for. A field with a default, not a version.
    retired: bool = False


class ChatFields(BaseModel):
    """What a chat file and its summary both say of a chat."""

    model_config = ConfigDict(extra="ignore")

    id: str
    name: str = ""
    created_at: float
    last_message: float = 0.0
    project: str | None = None
    paused: bool = False
    #: True while a run was going on when the file was written.
    running: bool = False


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
    usage: dict[str, float] = Field(default_factory=dict)
    #: The chat's context variables (core/chat_variables.py). A field with a default, not
    #: a new version: a file from before they existed simply has none.
    variables: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _links_form_a_tree(self) -> ChatFile:
        first = self.agents[0]
        if first.number != 0 or first.superior is not None:
            raise ValueError("the first agent must be Agent 0, with no superior")
        for index, agent in enumerate(self.agents[1:], start=1):
            if agent.superior is None or agent.superior >= index:
                raise ValueError(f"agent {index} must name a superior saved before it")
        return self


# -- migrations ----------------------------------------------------------------


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
