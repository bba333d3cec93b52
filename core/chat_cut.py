"""Cutting a chat at a log item: what a branch keeps of the chat it came from.

A branch at item `no` keeps the log up to and including that item and, of every
agent, the history it had then. Each history message notes how many log items
the chat had when it was added (`Message.at`), so the messages kept are those
added before item `no + 1` was logged. Agents made after that point are left out
(with the agents under them); one that a later delegation replaced works again.
A point inside a run (the run went on after it) makes a chat whose run was cut
there, as a restart cuts one: interrupted, its working agents the item's agent
and those above it, so Continue (or a message) goes on from there
(core/delegation/resume.py).

A chat saved before messages were noted in the log's terms (their `at` is -1)
is cut by its user messages instead, as core/rerun.py cuts before the last one:
only just before one of the user's messages, or at its last item.

This module decides *what* is kept; store/chat_branches.py makes the new chat.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from core.chat_record import AgentRecord, ChatFile
from core.delegation.resume import CUT_KINDS
from core.prompt.history import History, Topic
from helpers.errors import UserError

if TYPE_CHECKING:
    from core.log import Log

#: The heading of a log item of a message that started a run (see Runner._log_user).
USER_MESSAGE = "User message"

#: Log kinds of an agent's own work: one after the point means the run went on past it.
WORK_KINDS = CUT_KINDS | {"subagent"}

SUMMARISED = (
    "that point of the chat was summarised to fit the model's window, so it cannot be"
    " cut there: branch at a later item"
)
OLD_CHAT = (
    "this chat was saved by an older Cadre, which did not note where each step sits in the"
    " agents' memory: branch it just before one of your messages, or at its last item"
)
NOT_FOUND = (
    "your message at that point can no longer be found in Agent 0's history (it was"
    " summarised or the chat was changed): branch at a later item"
)

_SIBLING = re.compile(r"^A\d+(?:\.\d+)*\.(\d+)$")


def topic_of(topics: list[Topic], text: str) -> int:
    """The index of the last topic in `topics` that a user's message `text` opened; -1 if
    none. Each message that starts a run opens a topic with it (pinned)."""
    for index in range(len(topics) - 1, -1, -1):
        messages = topics[index].messages
        if messages and messages[0].pinned and not messages[0].ai:
            if text in messages[0].content:
                return index
    return -1


def drop_items(chat_log: Log, first: int) -> None:
    """Remove the log's items from `first` on; every page fetches the log whole again."""
    with chat_log.lock:
        del chat_log.items[first:]
        # A new guid tells every page to fetch the log whole (items were removed).
        chat_log.guid = uuid.uuid4().hex
        chat_log.version += 1


def cut_history(history: History, keep: int) -> History:
    """`history` as it was when the log had `keep` items (its messages noted, `at`)."""
    kept: list[Topic] = []
    everything = [*history.topics, history.current]
    for topic in everything:
        before = [m for m in topic.messages if m.at <= keep]
        if len(before) == len(topic.messages):
            kept.append(topic)
            continue
        if topic.summary or (not before and not kept and history.bulks):
            raise UserError(SUMMARISED)  # what it summarised reaches past the point
        if before:
            kept.append(Topic(messages=before))
        break
    kept = [t for t in kept if t.messages or t.summary]
    current = kept.pop() if kept else Topic()
    return History(bulks=list(history.bulks), topics=kept, current=current)


def cut_record(chat: ChatFile, no: int, before: bool = False) -> ChatFile:
    """The chat's record as it stood at log item `no` (kept), or just before it (`before`:
    the item must be a message of the user's, which an edit replaces); UserError says why
    it cannot be cut there."""
    items: list[dict[str, Any]] = list(chat.log.get("items", []))
    if isinstance(no, bool) or not 0 <= no < len(items):
        last = f"0 to {len(items) - 1}" if items else "none yet"
        raise UserError(f"this chat has no item {no!r} to branch at (its items: {last})")
    if before and not _is_user_message(items[no]):
        raise UserError(f"item {no} is not a message of yours to Agent 0: only those can be edited")
    keep = no if before else no + 1
    stamped = any(_stamped(History.from_dict(a.history)) for a in chat.agents)
    if stamped or keep == len(items):
        agents = _agents_at(chat.agents, keep)
    else:
        agents = _agents_before_message(chat.agents, items, keep)
    # A chat that runs now goes on past its latest items too.
    went_on = _went_on(items, keep) or (
        chat.running and not any(_is_user_message(i) for i in items[keep:])
    )
    working, busy = _working_at(agents, items[keep - 1]) if went_on else (None, [])
    version = max((int(i.get("version", 0)) for i in items[:keep]), default=0)
    log = {"guid": uuid.uuid4().hex, "version": version, "items": items[:keep]}
    return chat.model_copy(
        update={
            "agents": agents,
            "log": log,
            "running": went_on,
            "working_agent": working,
            "busy": busy,
            "paused": False,
            "approvals": 0,
        }
    )


def _stamped(history: History) -> bool:
    return any(m.at >= 0 for t in (*history.topics, history.current) for m in t.messages)


def _agents_at(records: list[AgentRecord], keep: int) -> list[AgentRecord]:
    """Every agent that existed when the log had `keep` items, its history as it was then."""
    kept: list[AgentRecord] = []
    place: dict[int, int] = {}  # position in `records` → position in `kept`
    for index, record in enumerate(records):
        history = History.from_dict(record.history)
        if index and (record.superior not in place or not _existed(history, keep)):
            continue  # made after the point (or under one that was)
        place[index] = len(kept)
        superior = place[record.superior] if record.superior is not None else None
        kept.append(_at_point(record, cut_history(history, keep), superior))
    return _revive(kept)


def _existed(history: History, keep: int) -> bool:
    """Had the agent begun by then? (A message from before notes were kept, `at` -1, says
    it had.)"""
    messages = [m for t in (*history.topics, history.current) for m in t.messages]
    return not messages or any(m.at <= keep for m in messages)


def _at_point(record: AgentRecord, history: History, superior: int | None) -> AgentRecord:
    """`record` with `history`; what belonged to the moment after the point is left out
    (an unread message, a nudge, a sibling's answer, a held call: the branch's run makes
    its own)."""
    return record.model_copy(
        update={
            "history": history.to_dict(),
            "superior": superior,
            "intervention": None,
            "nudged": False,
            "last_reply": "",
            "handed": None,
            "held": None,
        }  # fmt: skip
    )


def _revive(agents: list[AgentRecord]) -> list[AgentRecord]:
    """A superior whose subordinates at the point were all replaced later has them again:
    the last one kept (with its siblings of one batch, A1.1 to A1.k) works once more."""
    for superior in range(len(agents)):
        below = [i for i, a in enumerate(agents) if a.superior == superior]
        if not below or any(not agents[i].retired for i in below):
            continue
        batch = [below.pop()]
        number = _sibling_number(agents[batch[0]].name)
        while number > 1 and below and _sibling_number(agents[below[-1]].name) == number - 1:
            batch.append(below.pop())
            number -= 1
        for index in batch:
            agents[index] = agents[index].model_copy(update={"retired": False})
    return agents


def _sibling_number(name: str) -> int:
    match = _SIBLING.match(name)
    return int(match.group(1)) if match else 0


def _agents_before_message(records: list[AgentRecord], items: list[dict[str, Any]],
                           keep: int) -> list[AgentRecord]:  # fmt: skip
    """A chat without notes in its history, cut just before a message of the user's: Agent 0's
    topics before that message's topic, and no subordinate that worked after the point."""
    if not _is_user_message(items[keep]):
        raise UserError(OLD_CHAT)
    history = History.from_dict(records[0].history)
    topics = [*history.topics, history.current]
    end = len(topics)
    # Found from the last message back, each before the one after it: a message sent
    # twice is told apart by its place.
    for item in reversed([i for i in items[keep:] if _is_user_message(i)]):
        end = topic_of(topics[:end], str(item.get("content", "")))
        if end < 0:
            raise UserError(NOT_FOUND)
    cut = History(bulks=list(history.bulks), topics=topics[:end], current=Topic())
    if any(int(i.get("agentno", 0)) > 0 for i in items[keep:]):
        return [_at_point(records[0], cut, None)]  # its subordinates worked on what went
    kept = [_at_point(records[0], cut, None)]
    return kept + [r.model_copy(update={"intervention": None, "held": None, "handed": None})
                   for r in records[1:]]  # fmt: skip


def _is_user_message(item: dict[str, Any]) -> bool:
    return (item.get("type") == "user" and int(item.get("agentno", 0)) == 0
            and item.get("heading") == USER_MESSAGE)  # fmt: skip


def _went_on(items: list[dict[str, Any]], keep: int) -> bool:
    """Did the run of the item before `keep` go on past it (an agent's work follows before
    the user's next message)?"""
    for item in items[keep:]:
        if _is_user_message(item):
            return False
        if item.get("type") in WORK_KINDS:
            return True
    return False


def _working_at(agents: list[AgentRecord], item: dict[str, Any]) -> tuple[int, list[int]]:
    """The working agent's number at `item`, and the positions of the agents busy then:
    the item's agent (with its siblings of a batch) and every agent above it."""
    name = item.get("agent") or f"A{int(item.get('agentno', 0))}"
    named = [i for i, a in enumerate(agents) if (a.name or f"A{a.number}") == name]
    live = [i for i in named if not agents[i].retired]
    found = (live or named or [0])[-1]
    busy = {found}
    superior = agents[found].superior
    if _sibling_number(agents[found].name):  # a batch works at once: each sibling resumes
        busy |= {i for i, a in enumerate(agents) if a.superior == superior and not a.retired}
    while superior is not None:
        busy.add(superior)
        superior = agents[superior].superior
    return agents[found].number, sorted(busy)
