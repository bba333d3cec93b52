"""The chat log: typed items the UI renders, streamed as they change.

Every change (a new item, an update, a streamed append) bumps the log's
version and stamps the item with it, so a client that knows version N can ask
for exactly what changed since (`changes_since`), with nothing missed and
nothing twice. Subscribers are called on every change; the web server is one.

Kinds are one closed list (`LogKind`); the browser mirrors it and a test keeps
the two in step. Python sends data; how a kind looks is the UI's business.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Literal, Protocol, get_args

from pydantic import BaseModel, Field, PrivateAttr

from helpers.valid_text import valid_value

LogKind = Literal[
    "user",
    "agent",
    "response",
    "tool",
    "subagent",
    "code_exe",
    "util",
    "warning",
    "error",
    "info",
    "hint",
    "progress",
    "input",
    "notify",
    "mcp_tool",
    "browser",
]
LOG_KINDS: tuple[str, ...] = get_args(LogKind)

Subscriber = Callable[["LogItem"], None]

#: The agent whose task is logging now: (number, name). Siblings (subordinates working at
#: once, core/delegation/call_many.py) share a number; each runs in its own asyncio task,
#: so an item logged for that number from there names its agent ("A1.2") without every
#: caller passing the name.
SPEAKER: ContextVar[tuple[int, str]] = ContextVar("speaker", default=(0, ""))


class LogItem(BaseModel):
    """One entry of the log. `version` is the log version of its last change."""

    no: int
    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    type: LogKind
    heading: str = ""
    content: str = ""
    kvps: dict[str, Any] = Field(default_factory=dict)
    agentno: int = 0
    #: The agent's name where the number alone does not tell it (a sibling "A1.2", or an
    #: agent under one "A2.2"), else "".
    agent: str = ""
    #: The plugin whose tool made the item ("": none): the page draws it with that plugin's
    #: log renderer, if it has one (webui/js/plugin-renderers.js).
    plugin: str = ""
    timestamp: float = Field(default_factory=time.time)
    version: int = 0

    _log: Log | None = PrivateAttr(default=None)

    def update(
        self,
        *,
        type: LogKind | None = None,  # noqa: A002 - the field's own name
        heading: str | None = None,
        content: str | None = None,
        kvps: dict[str, Any] | None = None,
    ) -> None:
        """Replace some fields (kvps are merged) and tell subscribers."""
        log = self._log
        mask = _cleaner(log)
        with log.lock if log else _NO_LOCK:
            if type is not None:
                self.type = type
            if heading is not None:
                self.heading = mask(heading)
            if content is not None:
                self.content = mask(content)
            if kvps:
                self.kvps = {**self.kvps, **mask(kvps)}
            if log:
                log.touch(self)
                log.notify(self)

    def stream(self, *, content: str = "", heading: str = "") -> None:
        """Append text as it is generated."""
        if not content and not heading:
            return
        self.update(heading=self.heading + heading, content=self.content + content)


class _NullLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NullLock()


class Masker(Protocol):
    def mask_value(self, value: Any) -> Any: ...


def _cleaner(log: Log | None) -> Callable[[Any], Any]:
    """What every text entering the log passes: made valid, then masked."""
    masker = log.masker if log is not None else None
    if masker is None:
        return valid_value
    return lambda value: masker.mask_value(valid_value(value))


class Log:
    """The ordered log of one chat. Safe to read from other threads."""

    def __init__(self) -> None:
        self.guid = uuid.uuid4().hex
        self.items: list[LogItem] = []
        self.version = 0
        self.lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        self.progress = ""
        #: Hides secrets in everything logged (set by the chat from its settings).
        self.masker: Masker | None = None
        #: Item number → (its version, the item as a dict) when last dumped. A chat is
        #: saved after every step: dumping only the items changed since keeps that from
        #: growing with the log. (Versions are never reused, so a stale entry never
        #: matches; kept here, not on the item, since pydantic's private attributes
        #: are slow to read.)
        self._dumps: dict[int, tuple[int, dict[str, Any]]] = {}

    def log(
        self,
        type: LogKind,  # noqa: A002 - mirrors LogItem.type
        heading: str = "",
        content: str = "",
        kvps: dict[str, Any] | None = None,
        agentno: int = 0,
        agent: str | None = None,
        plugin: str = "",
    ) -> LogItem:
        """Add an item and tell subscribers (`agent`: the agent's name, see `LogItem.agent`;
        by default the logging task's agent's, when it is the one numbered `agentno`;
        `plugin`: see `LogItem.plugin`)."""
        mask = _cleaner(self)
        if agent is None:
            number, name = SPEAKER.get()
            agent = name if number == agentno and "." in name else ""
        with self.lock:
            item = LogItem(
                no=len(self.items),
                type=type,
                heading=mask(heading),
                content=mask(content),
                kvps=mask(dict(kvps or {})),
                agentno=agentno,
                agent=agent,
                plugin=plugin,
            )
            item._log = self
            self.items.append(item)
            self.touch(item)
            self.notify(item)
        return item

    def touch(self, item: LogItem) -> None:
        """Stamp `item` with a new version (call with the lock held)."""
        self.version += 1
        item.version = self.version

    def notify(self, item: LogItem) -> None:
        """Tell subscribers (called with the lock held, so they hear versions in order;
        a subscriber must be quick and must not wait on another thread)."""
        for subscriber in list(self._subscribers):
            subscriber(item)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call `subscriber` on every change; returns the function that stops it."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def changes_since(self, version: int) -> list[LogItem]:
        """Copies of the items changed after `version`, in log order."""
        with self.lock:
            return [item.model_copy() for item in self.items if item.version > version]

    def reset(self) -> None:
        """Forget every item; the guid changes so clients know to start over."""
        with self.lock:
            self.items.clear()
            self._dumps.clear()
            self.guid = uuid.uuid4().hex
            self.version += 1

    def to_list(self) -> list[dict[str, Any]]:
        """Every item as a dict, shared with later calls until the item changes: the
        caller must not modify them."""
        with self.lock:
            dumps, listed = self._dumps, []
            for item in self.items:
                cached = dumps.get(item.no)
                if cached is None or cached[0] != item.version:
                    cached = dumps[item.no] = (item.version, item.model_dump())
                listed.append(cached[1])
            if len(dumps) > len(listed):  # items cut away (an edited message): forget them
                for no in [no for no in dumps if no >= len(listed)]:
                    del dumps[no]
            return listed

    @classmethod
    def from_list(cls, data: list[dict[str, Any]]) -> Log:
        log = cls()
        for raw in data:
            item = LogItem.model_validate(raw)
            item._log = log
            log.items.append(item)
            log.version = max(log.version, item.version)
        return log
