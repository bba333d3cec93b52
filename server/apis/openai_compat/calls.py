"""One request of the OpenAI-compatible endpoint as a run of Agent 0.

`start_call` picks the chat (the one that answered the conversation so far,
else a new one with the requested profile), hands it the last user message
and returns an `AgentCall` to wait on: the answer, the run's progress
(server/apis/openai_compat/progress.py) and the tokens the run used.

A new chat is told the conversation so far in the message's
`system_message` (rendered from prompts/fw.conversation_so_far.md), not as
made-up history: Cadre's history holds the agents' own JSON replies, which
a client's plain assistant texts are not, and the message keeps the user's
own words as what the UI shows. The transcript is also logged as an `info`
item just before the message, so the chat reads in the UI as the agent saw it.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.agent_types import UserMessage
from helpers.errors import NotFound
from models.llm import Usage
from server.apis import agent_calls
from server.apis.openai_compat.progress import ProgressFeed
from server.apis.openai_compat.wire import Turn, usage_block
from server.routes.payloads import MESSAGE_LIMIT
from store import model_choice

if TYPE_CHECKING:
    from core.chat import Chat
    from core.run_context import RunContext
    from store.chats import ChatManager


@dataclass
class AgentCall:
    """A message handed to a chat: wait for its answer, follow its progress."""

    chat: Chat
    msg: UserMessage
    handle: concurrent.futures.Future[str]
    feed: ProgressFeed
    before: Usage
    #: The chat's usage when the run ended (taken on the loop, before any work that
    #: follows a run, such as naming the chat, adds to it).
    after: Usage | None = None
    #: Set once `after` is taken: the run has ended.
    ended: threading.Event = field(default_factory=threading.Event)

    def run_ended(self, _: object) -> None:
        """The run's future is settled (called on the agents' loop)."""
        self.after = _usage_of(self.chat)
        self.ended.set()
        self.feed.ended()

    def answer(self, timeout: float) -> str:
        """Agent 0's answer (concurrent.futures errors: timeout, stopped; CadreError: failed)."""
        # Waited for through `ended`, not the future itself: the future wakes its waiters
        # before its callbacks run, and `after` must be there when the answer is.
        began = time.monotonic()
        if not self.ended.wait(timeout):
            raise concurrent.futures.TimeoutError
        left = max(timeout - (time.monotonic() - began), 0.0)
        return self.chat.runner.answer_for(self.msg, self.handle, left)

    def usage(self) -> dict[str, int]:
        """Tokens the run used (every agent's calls), from the call's start to the run's end
        (a run started by a message that came as it ended: up to now)."""
        now = self.after if self.after is not None else _usage_of(self.chat)
        return usage_block(now.prompt_tokens - self.before.prompt_tokens,
                           now.completion_tokens - self.before.completion_tokens)  # fmt: skip

    def close(self) -> None:
        self.feed.close()


def _usage_of(context: Chat) -> Usage:
    return Usage.from_dict(context.usage.to_dict())


def find_chat(manager: ChatManager, chat_id: str | None, viewer: str | None) -> Chat | None:
    """The chat `chat_id` if it still exists and is `viewer`'s (a deleted one starts a new
    conversation)."""
    if chat_id is None:
        return None
    try:
        return manager.get(chat_id, viewer)
    except NotFound:
        return None


@dataclass(frozen=True)
class Transcript:
    """The conversation so far, as Agent 0 reads it and as the log shows it."""

    for_agent: str
    for_log: str


def transcript(ctx: RunContext, earlier: list[Turn]) -> Transcript | None:
    """The conversation so far (None for none): the newest turns that fit in
    MESSAGE_LIMIT characters."""
    shown = [t for t in earlier if t.text]
    blocks: list[str] = []
    size = 0
    for turn in reversed(shown):
        block = ctx.read_prompt("fw.conversation_turn.md", role=turn.role, text=turn.text)
        if size + len(block) > MESSAGE_LIMIT:
            break
        blocks.insert(0, block)
        size += len(block)
    if not blocks:
        return None
    omitted = len(shown) - len(blocks)
    turns = "\n\n".join(blocks)
    told = ctx.read_prompt("fw.conversation_so_far.md", conversation=turns,
                             omitted=str(omitted) if omitted else "")  # fmt: skip
    left_out = f"({omitted} earlier messages left out for length.)\n\n" if omitted else ""
    return Transcript(told, left_out + turns)


def start_call(manager: ChatManager, context: Chat | None, profile: str | None,
               earlier: list[Turn], text: str,
               variables: Mapping[str, str] | None = None,
               project: str | None = None, owner: str | None = None,
               preset: str = "") -> AgentCall:  # fmt: skip
    """Hand `text` to `context` (None: a new chat with `profile` in `project`, told
    `earlier`), with `variables` set on the chat first (the request's `metadata`), on the
    model `preset` (checked: store/model_choice.py; "": the settings' models)."""
    fresh = context is None
    if context is None:
        context = agent_calls.new_chat_to_run(manager, profile, project, owner, preset)
    elif model_choice.choice_of(context) != preset:
        manager.choose_model(context, preset)
    chat: Chat = context

    def prepare() -> tuple[UserMessage, ProgressFeed, Usage]:
        if variables:
            chat.set_variables(variables)
        msg = UserMessage(text)
        told = transcript(chat.agent0.ctx, earlier) if fresh else None
        if told is not None:
            msg.system_message.append(told.for_agent)
            chat.log.log("info", "Conversation so far", told.for_log)
        return msg, ProgressFeed(chat), _usage_of(chat)

    msg, feed, before = manager.runtime.call(prepare)
    try:
        handle = chat.communicate(msg)
    except BaseException:
        feed.close()
        raise
    assert isinstance(handle, concurrent.futures.Future)  # the server's chats have a runtime
    call = AgentCall(chat, msg, handle, feed, before)
    # Called on the agents' loop as the run's task settles the future.
    handle.add_done_callback(call.run_ended)
    return call
