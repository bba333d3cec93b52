"""An agent's conversation, organised for the model's window.

A history is a list of sealed `Topic`s (older work, which compression may
summarise) and older `Bulk`s (merged summaries), plus the `current` topic.
Each user message starts a new topic; a delegation seals the subordinate's
topic when its answer is handed back. Compression itself lives in its own
module; this one only keeps the structure, counts tokens and round-trips JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from helpers.images import ImageRef
from helpers.valid_text import valid_text
from models.tokens import count_tokens

Role = Literal["user", "assistant"]


@dataclass
class Message:
    """One message. `ai` is True for the model's own replies."""

    ai: bool
    content: str
    tokens: int = -1
    #: Saved full text of a long tool result, relative to the chat folder.
    file: str | None = None
    #: A message from the user: never cut or summarised while it is the latest.
    pinned: bool = False
    #: Images the message shows the model (an attachment, what vision_load looked at).
    images: list[ImageRef] = field(default_factory=list)
    #: How many log items the chat had when it was added (-1: unknown, an older file):
    #: where it sits in the log, so a branch at an item keeps what came before it.
    at: int = -1

    def __post_init__(self) -> None:
        # Every message is made here: text from outside enters history valid, once.
        self.content = valid_text(self.content)
        if self.tokens < 0:
            self.tokens = count_tokens(self.content) + sum(i.tokens for i in self.images)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"ai": self.ai, "content": self.content, "tokens": self.tokens}
        if self.file:
            data["file"] = self.file
        if self.pinned:
            data["pinned"] = True
        if self.images:
            data["images"] = [image.to_dict() for image in self.images]
        if self.at >= 0:
            data["at"] = self.at
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            ai=bool(data["ai"]),
            content=str(data["content"]),
            tokens=int(data.get("tokens", -1)),
            file=data.get("file"),
            pinned=bool(data.get("pinned", False)),
            images=[ImageRef.from_dict(i) for i in data.get("images", [])],
            at=int(data.get("at", -1)),
        )


@dataclass
class Topic:
    """Messages about one user request; `summary` replaces them once compressed."""

    messages: list[Message] = field(default_factory=list)
    summary: str = ""

    @property
    def tokens(self) -> int:
        return count_tokens(self.summary) if self.summary else sum(m.tokens for m in self.messages)

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "messages": [m.to_dict() for m in self.messages]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Topic:
        return cls(
            messages=[Message.from_dict(m) for m in data.get("messages", [])],
            summary=str(data.get("summary", "")),
        )


@dataclass
class Bulk:
    """Several old topics merged into one summary."""

    summary: str
    topics: int = 1

    @property
    def tokens(self) -> int:
        return count_tokens(self.summary)

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "topics": self.topics}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Bulk:
        return cls(summary=str(data["summary"]), topics=int(data.get("topics", 1)))


@dataclass
class OutputMessage:
    """A message as the model receives it (its images made content parts, or a note)."""

    role: Role
    content: str
    images: list[ImageRef] = field(default_factory=list)


@dataclass
class History:
    bulks: list[Bulk] = field(default_factory=list)
    topics: list[Topic] = field(default_factory=list)
    current: Topic = field(default_factory=Topic)

    def add_message(
        self,
        ai: bool,
        content: str,
        file: str | None = None,
        pinned: bool = False,
        images: list[ImageRef] | None = None,
        at: int = -1,
    ) -> Message:
        message = Message(ai=ai, content=content, file=file, pinned=pinned, images=images or [],
                          at=at)  # fmt: skip
        self.current.messages.append(message)
        return message

    def new_topic(self) -> None:
        """Seal the current topic (if it has anything) and start an empty one."""
        if self.current.messages:
            self.topics.append(self.current)
            self.current = Topic()

    @property
    def tokens(self) -> int:
        return (
            sum(b.tokens for b in self.bulks)
            + sum(t.tokens for t in self.topics)
            + self.current.tokens
        )

    def last_message(self) -> Message | None:
        for topic in (self.current, *reversed(self.topics)):
            if topic.messages:
                return topic.messages[-1]
        return None

    def output(self) -> list[OutputMessage]:
        """Everything in order, summaries as user-side context, same roles merged.

        Providers reject (or mis-handle) two messages of the same role in a
        row, so consecutive ones are joined.
        """
        raw: list[OutputMessage] = [OutputMessage("user", b.summary) for b in self.bulks]
        for topic in (*self.topics, self.current):
            if topic.summary:
                raw.append(OutputMessage("user", topic.summary))
            else:
                raw.extend(
                    OutputMessage("assistant" if m.ai else "user", m.content, list(m.images))
                    for m in topic.messages
                )
        merged: list[OutputMessage] = []
        for message in raw:
            if merged and merged[-1].role == message.role:
                joined = merged[-1].content + "\n\n" + message.content
                images = merged[-1].images + message.images
                merged[-1] = OutputMessage(message.role, joined, images)
            else:
                merged.append(message)
        return merged

    def to_dict(self) -> dict[str, Any]:
        return {
            "bulks": [b.to_dict() for b in self.bulks],
            "topics": [t.to_dict() for t in self.topics],
            "current": self.current.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> History:
        return cls(
            bulks=[Bulk.from_dict(b) for b in data.get("bulks", [])],
            topics=[Topic.from_dict(t) for t in data.get("topics", [])],
            current=Topic.from_dict(data.get("current", {})),
        )
