"""What a saved chat recorded, read for a replay: each agent's steps and Agent 0's runs.

A step is one reply of the model as the agent's history holds it (masked, as every
history is) and what came back before its next reply: the tool's result, a warning, a
subordinate's answer. User messages (pinned in history) end a step: they are fed again,
not compared. Agent 0's runs are the log's "User message" items, in order, with their
attachments; interventions are not fed again (the replies that followed them are).

A topic or an older part of history that compression summarised no longer holds its
replies: the record is then `complete=False`, and the replay goes as far as it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.chat_record import AgentRecord, ChatFile
from core.reply.extract_tools import ReplyFormatError, parse_reply


@dataclass(frozen=True)
class Step:
    """One model call of an agent, as recorded."""

    #: The model's reply, word for word as history kept it.
    reply: str
    #: The tool the reply called ("" when it called none that could be read).
    tool: str
    #: What came back before the agent's next reply (history's messages, in order).
    after: tuple[tuple[str, str | None], ...] = ()

    @property
    def result(self) -> str:
        """What came back, as one text (the messages joined as the model reads them)."""
        return "\n\n".join(text for text, _ in self.after)


@dataclass(frozen=True)
class UserTurn:
    """A message from the user that started a run of Agent 0."""

    message: str
    attachments: tuple[str, ...] = ()


@dataclass
class Recording:
    """A saved chat, as a replay reads it."""

    chat_id: str
    name: str
    #: Each agent's steps by its name (A0, A1, A1.2), in the order it made them.
    steps: dict[str, list[Step]] = field(default_factory=dict)
    turns: list[UserTurn] = field(default_factory=list)
    #: False when compression summarised replies away (the replay holds fewer of them).
    complete: bool = True


def read(chat: ChatFile) -> Recording:
    """The recording of `chat`."""
    recording = Recording(chat.id, chat.name)
    for agent in chat.agents:
        name = agent.name or f"A{agent.number}"
        steps, complete = _steps(agent)
        # A subordinate a later delegation replaced shares its name with the one after it:
        # their steps follow each other, the earlier agent's first (saved first).
        recording.steps.setdefault(name, []).extend(steps)
        recording.complete = recording.complete and complete
    recording.turns = [_turn(item) for item in chat.log.get("items", []) if _is_turn(item)]
    return recording


def _is_turn(item: dict[str, Any]) -> bool:
    return item.get("type") == "user" and item.get("heading") == "User message"


def _turn(item: dict[str, Any]) -> UserTurn:
    attachments = (item.get("kvps") or {}).get("attachments") or []
    return UserTurn(str(item.get("content", "")), tuple(str(a) for a in attachments))


def _steps(agent: AgentRecord) -> tuple[list[Step], bool]:
    history = agent.history
    complete = not history.get("bulks")
    messages: list[dict[str, Any]] = []
    for topic in (*history.get("topics", []), history.get("current", {})):
        if topic.get("summary"):
            complete = False  # its replies are gone: the replay goes on without them
            continue
        messages.extend(topic.get("messages", []))
    steps: list[Step] = []
    for index, message in enumerate(messages):
        if message.get("ai"):
            after = tuple(following(messages[index + 1 :]))
            steps.append(Step(str(message["content"]), tool_of(str(message["content"])), after))
    return steps, complete


def following(messages: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """The messages after a reply that belong to its step: up to the next reply or the
    next message of a person (pinned), each as (text, saved file)."""
    found = []
    for message in messages:
        if message.get("ai") or message.get("pinned"):
            break
        found.append((str(message["content"]), message.get("file")))
    return found


def tool_of(reply: str) -> str:
    """The tool `reply` calls, or "" when none can be read from it."""
    try:
        parsed = parse_reply(reply)
    except ReplyFormatError:
        return ""
    return parsed.tool_name if parsed is not None else ""
