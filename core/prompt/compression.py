"""Keeping an agent's history inside its share of the model's window.

The history may take `limit` tokens (context length × history ratio), split
between the current topic, sealed topics and bulks (by default 0.5 / 0.3 /
0.2). Over its share of the window, in this order, each step only as far as needed:

1. oversized messages keep their head and tail (with a pointer to the saved
   full text when there is one);
2. the oldest sealed topics are summarised by the utility model;
3. summarised topics are merged into bulks, and the oldest bulks together;
4. the older steps of the current topic are summarised into one message.

The latest user message and the last tool result are never cut or summarised.
Text from outside stays marked (core/prompt/untrusted.py): a cut keeps every block's
tags, and a summary of marked text is itself marked as data from those sources.
`fit` is the synchronous last resort (when the utility model fails): it drops
the oldest summaries and cuts what is left, so a prompt always fits.

Compression awaits the utility model while the agent's loop may append, so it
changes only the objects it looked at, checked by identity when it applies a
result: nothing appended meanwhile is lost or reordered.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from core.prompt import untrusted
from core.prompt.history import Bulk, History, Message, Topic
from models.tokens import CHARS_PER_TOKEN, count_tokens

log = logging.getLogger(__name__)

#: Turns the text of some history into its summary (the utility model).
Summarize = Callable[[str], Awaitable[str]]
#: The note that replaces a cut message's middle: (tokens cut, saved file or "").
CutNote = Callable[[int, str], str]

#: Compression starts in the background above this share of the limit ...
START_AT = 0.85
#: ... and stops once the history is below this share.
TARGET = 0.6
#: A message may take at most this share of the current topic's tokens.
MESSAGE_SHARE = 0.25
#: Most characters of history handed to one summary call.
SUMMARY_INPUT = 60_000


@dataclass(frozen=True)
class WindowShare:
    """Tokens the history may take, and how they are split."""

    limit: int
    current: float = 0.5
    topics: float = 0.3
    bulks: float = 0.2

    def share(self, part: str) -> int:
        return int(self.limit * getattr(self, part))


def protected(history: History) -> set[int]:
    """Ids of the messages never cut or summarised: the latest user message, the last result."""
    keep: set[int] = set()
    messages = history.current.messages
    for message in reversed(messages):
        if message.pinned:
            keep.add(id(message))
            break
    for message in reversed(messages):
        if not message.ai:
            keep.add(id(message))
            break
    return keep


def cut_message(message: Message, max_tokens: int, note: CutNote) -> bool:
    """Keep `message`'s head and tail within `max_tokens`; True when it was cut."""
    if message.tokens <= max_tokens:
        return False
    if message.images:  # the images go first: the words say what they were
        message.images = []
        message.tokens = count_tokens(message.content)
        if message.tokens <= max_tokens:
            return True
    keep = max(200, max_tokens * CHARS_PER_TOKEN)
    head = keep // 3
    text = message.content
    cut_tokens = message.tokens - max_tokens
    message.content = untrusted.cut(text, head, keep - head, note(cut_tokens, message.file or ""))
    message.tokens = count_tokens(message.content)
    return True


def cut_oversized(history: History, window: WindowShare, note: CutNote) -> None:
    """Step 1: no message larger than its share of the current topic's tokens."""
    keep = protected(history)
    largest = max(200, int(window.share("current") * MESSAGE_SHARE))
    for topic in (*history.topics, history.current):
        for message in topic.messages:
            if id(message) not in keep:
                cut_message(message, largest, note)


class Compressor:
    """Compresses one history toward its window share with `summarize`."""

    def __init__(self, history: History, window: WindowShare, summarize: Summarize, note: CutNote):
        self.history = history
        self.window = window
        self.summarize = summarize
        self.note = note

    def over(self, share: float = 1.0) -> bool:
        return self.history.tokens > self.window.limit * share

    async def run(self) -> None:
        """Bring the history under `TARGET` of its limit, as far as summaries can."""
        cut_oversized(self.history, self.window, self.note)
        if not self.over(TARGET):
            return
        await self.summarize_topics()
        self.merge_into_bulks()
        await self.merge_bulks()
        if self.over(TARGET):
            await self.summarize_current()

    async def summarize_topics(self) -> None:
        """Step 2: summarise sealed topics, oldest first, until topics fit their share."""
        for topic in list(self.history.topics):
            if self._topics_tokens() <= self.window.share("topics") * TARGET:
                return
            if topic.summary or not topic.messages:
                continue
            summary = await self._summary(_text_of(topic.messages))
            if any(t is topic for t in self.history.topics):  # still there: apply
                topic.summary = summary

    def merge_into_bulks(self) -> None:
        """Step 3a: move the oldest summarised topics into one bulk while topics are over."""
        moved: list[Topic] = []
        while self._topics_tokens() > self.window.share("topics") * TARGET:
            oldest = self.history.topics[0] if self.history.topics else None
            if oldest is None or not oldest.summary:
                break
            moved.append(self.history.topics.pop(0))
        if moved:
            summary = "\n\n".join(t.summary for t in moved)
            self.history.bulks.append(Bulk(summary=summary, topics=len(moved)))

    async def merge_bulks(self) -> None:
        """Step 3b: merge the two oldest bulks (or shorten a lone one) while bulks are over."""
        for _ in range(16):  # each round removes a bulk or shortens the last one
            if self._bulks_tokens() <= self.window.share("bulks") * TARGET:
                return
            pair = self.history.bulks[:2]
            if not pair:
                return
            summary = await self._summary("\n\n".join(b.summary for b in pair))
            if self.history.bulks[: len(pair)] != pair or any(
                a is not b for a, b in zip(self.history.bulks, pair, strict=False)
            ):
                return  # changed meanwhile: the next run looks again
            merged = Bulk(summary=summary, topics=sum(b.topics for b in pair))
            self.history.bulks[: len(pair)] = [merged]
            if len(pair) == 1 and merged.tokens >= pair[0].tokens:
                return  # a summary that will not shrink: fit() drops it if it must

    async def summarize_current(self) -> None:
        """Step 4: the older half of the current topic's free steps becomes one summary."""
        topic = self.history.current
        keep = protected(self.history)
        free = [i for i, m in enumerate(topic.messages) if id(m) not in keep and not m.pinned]
        # The most recent steps stay verbatim: the model is in the middle of them.
        older = free[: len(free) // 2]
        if len(older) < 2:
            return
        first, last = older[0], older[-1]
        chosen = topic.messages[first : last + 1]
        chosen = [m for m in chosen if id(m) not in keep and not m.pinned]
        summary = await self._summary(_text_of(chosen))
        # Apply only if every chosen message is still where it was.
        position = next((i for i, m in enumerate(topic.messages) if m is chosen[0]), None)
        if position is None:
            return
        span = topic.messages[position : position + len(chosen)]
        if len(span) != len(chosen) or any(a is not b for a, b in zip(span, chosen, strict=True)):
            return
        # Placed in the log where its last message was: a branch before that point cannot
        # keep half of a summary (core/chat_cut.py refuses it).
        merged = Message(ai=False, content=summary, at=max(m.at for m in chosen))
        topic.messages[position : position + len(chosen)] = [merged]

    async def _summary(self, text: str) -> str:
        """The summary of `text`, marked as data when `text` held text from outside."""
        return untrusted.mark_summary(text, await self.summarize(text))

    def _topics_tokens(self) -> int:
        return sum(t.tokens for t in self.history.topics)

    def _bulks_tokens(self) -> int:
        return sum(b.tokens for b in self.history.bulks)


def fit(history: History, limit: int, note: CutNote) -> None:
    """Make `history` fit `limit` now, without the utility model (the last resort).

    Drops the oldest bulks, then the oldest topics, then cuts the current
    topic's free messages ever shorter; protected messages are cut last.
    """
    while history.tokens > limit and history.bulks:
        history.bulks.pop(0)
    while history.tokens > limit and history.topics:
        history.topics.pop(0)
    keep = protected(history)
    messages = history.current.messages
    for largest in (2_000, 500, 100):
        for message in messages:
            if history.tokens <= limit:
                return
            if id(message) not in keep:
                cut_message(message, largest, note)
    # Only the protected messages are left too large: they must fit the window all the same.
    share = max(100, limit // max(1, len(messages)))
    for message in messages:
        cut_message(message, share, note)
    if history.tokens > limit:
        log.warning("history of %d tokens cannot fit %d tokens", history.tokens, limit)


def _text_of(messages: list[Message]) -> str:
    text = "\n\n".join(("Agent: " if m.ai else "Input: ") + m.content for m in messages)
    if len(text) > SUMMARY_INPUT:
        head = SUMMARY_INPUT // 3
        text = untrusted.cut(text, head, SUMMARY_INPUT - head, "[...]")
    return text
