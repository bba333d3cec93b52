"""Running the user's last message again: as it was ("Resend") or changed ("Edit").

The chat is cut back to just before the last message the user sent to Agent 0
(one that started a run, not an intervention): Agent 0's history loses that
message's topic and everything after it, the log loses that message's item and
everything after it, and the subordinates that worked in the dropped part are
closed. Then the message (edited or not, with its attachments) runs as a new
one. The cut and the start happen in one step on the agents' loop, so no
message can slip in between; the run saves the chat as it takes the message.

This module decides *what* is cut; `Runner.rerun` decides *when*.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.chat_cut import USER_MESSAGE, drop_items, topic_of
from core.prompt.history import Topic
from helpers.errors import UserError

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import UserMessage
    from core.chat import Chat
    from core.runner import RunHandle

log = logging.getLogger(__name__)

NOTHING_TO_RERUN = "this chat has no message of yours to edit or resend yet"
OUT_OF_STEP = (
    "your last message can no longer be found in Agent 0's history (it was summarised or"
    " the chat was changed): send it again as a new message instead"
)


@dataclass(frozen=True)
class LastMessage:
    """The user's last message to Agent 0, where it is in the log and in history."""

    #: Position of its item in the log (everything from here on is dropped).
    log_no: int
    text: str
    attachments: list[str] = field(default_factory=list)
    #: Position of its topic in Agent 0's history: `len(topics)` is the current topic.
    topic: int = 0


def find_last(context: Chat) -> LastMessage:
    """The message to run again; UserError when there is none or history lost it."""
    item = next(
        (
            i
            for i in reversed(context.log.items)
            if i.type == "user" and i.agentno == 0 and i.heading == USER_MESSAGE
        ),
        None,
    )
    if item is None:
        raise UserError(NOTHING_TO_RERUN)
    raw = item.kvps.get("attachments") or []
    attachments = [str(path) for path in raw] if isinstance(raw, list) else []
    history = context.agent0.history
    # Looked for from the end: a message that came in as an intervention but started a
    # run of its own also opened a topic, after this one, and goes with it (as its log
    # item does).
    index = topic_of([*history.topics, history.current], item.content)
    if index < 0:
        raise UserError(OUT_OF_STEP)
    return LastMessage(item.no, item.content, attachments, index)


def cut_back(context: Chat, last: LastMessage) -> None:
    """Drop `last` and everything after it from Agent 0's history and the log (on the loop).

    Subordinates that logged anything in the dropped part worked on it: they are
    closed (unlinked from Agent 0, their background compression cancelled); a new
    delegation makes a fresh one.
    """
    agent0 = context.agent0
    history = agent0.history
    history.topics = history.topics[: last.topic]
    history.current = Topic()
    # What Agent 0 remembered of the dropped turn must not steer the new one.
    agent0.last_reply = ""
    agent0.recalled = None
    agent0.intervention = None
    agent0.nudged = False
    dropped = context.log.items[last.log_no :]
    if any(item.agentno > 0 for item in dropped):
        _close_subordinates(agent0)
    drop_items(context.log, last.log_no)
    context.interrupted = False
    context.working_agent = None
    context.busy = []
    log.info("chat %s: cut back to log item %d to run the last message again",
             context.id, last.log_no)  # fmt: skip


def _close_subordinates(agent0: Agent) -> None:
    for subordinate in agent0.chat.agents()[1:]:
        if subordinate.compression is not None and not subordinate.compression.done():
            subordinate.compression.cancel()
        subordinate.intervention = None
    agent0.unlink_subordinates()


def rerun_last(
    context: Chat,
    make_message: Callable[..., UserMessage],
    text: str | None = None,
) -> RunHandle:
    """Cut the chat back and run the last message again: `text` replaces it when given.

    `make_message` builds the message (`agent.UserMessage`; a helper does not import
    agent.py). Raises UserError when there is nothing to run again, RunError while
    the chat runs (the user stops it first: an edit must not race a run's last save).
    """

    def prepare() -> UserMessage:
        last = find_last(context)
        if text is not None and not text.strip():
            raise UserError("the edited message is empty: write something, or resend it as it was")
        cut_back(context, last)
        return make_message(text if text is not None else last.text, attachments=last.attachments)

    return context.runner.rerun(prepare)
