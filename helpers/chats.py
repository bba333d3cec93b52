"""The chats of one Cadre process: created, loaded at start, saved, renamed, deleted.

`ChatManager` owns the registry of open chats and keeps each one on disk:
a chat is saved after every loop iteration and run (the context's `persist`
hook), and on rename, reset and import. Saves of one chat never overlap and
the JSON is written in a worker thread; the snapshot itself is taken on the
agents' loop, where nothing moves while it is read.

It builds chats through a `ContextFactory` it is given (initialize.py has
the real one), so this helper never imports `agent.py`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from helpers import persist_chat
from helpers.contexts import ContextRegistry
from helpers.errors import RunError, UserError
from helpers.persist_chat import ChatFile, DamagedChat
from helpers.runtime import AgentRuntime

if TYPE_CHECKING:
    from agent import AgentConfig, AgentContext

log = logging.getLogger(__name__)

#: Longest chat name kept (names come from people and from a model).
NAME_LIMIT = 120


class ContextFactory(Protocol):
    def new(self, project: str | None = None, **overrides: Any) -> AgentContext: ...

    def restore(self, chat: ChatFile) -> AgentContext: ...

    def config(self, overrides: dict[str, Any]) -> AgentConfig: ...


@dataclass(frozen=True)
class ChatEvent:
    """A change of the chat list, for whoever shows it (the web UI sends deltas)."""

    kind: Literal["added", "changed", "removed"]
    chat_id: str


def _first_exchange(context: AgentContext) -> tuple[str, str] | None:
    """The first user message and Agent 0's answer, once there is one."""
    question = next((i.content for i in context.log.items if i.type == "user"), None)
    answer = next(
        (i.content for i in context.log.items if i.type == "response" and i.agentno == 0), None
    )
    return (question[:2000], answer[:2000]) if question and answer else None


class ChatManager:
    """Every chat of this process, kept in step with `usr/chats/`."""

    def __init__(self, runtime: AgentRuntime, factory: ContextFactory) -> None:
        self.runtime = runtime
        self.factory = factory
        self.registry = ContextRegistry()
        self.damaged: list[DamagedChat] = []
        self._save_locks: dict[str, asyncio.Lock] = {}
        self._naming: dict[str, asyncio.Future[None]] = {}
        #: Chats whose Agent 0 has not yet taken the latest settings.
        self._stale: set[str] = set()
        self._listeners: list[Callable[[ChatEvent], None]] = []

    # -- the list --------------------------------------------------------------

    def subscribe(self, listener: Callable[[ChatEvent], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _tell(self, kind: Literal["added", "changed", "removed"], chat_id: str) -> None:
        for listener in list(self._listeners):
            listener(ChatEvent(kind, chat_id))

    def get(self, chat_id: str) -> AgentContext:
        context = self.registry.get(chat_id)
        if context is None:
            raise UserError(f"no chat with id {chat_id!r}")
        return context

    def load_saved(self) -> None:
        """Bring back every saved chat; damaged files are set aside and listed."""
        chats, damaged = persist_chat.load_all()
        self.damaged.extend(damaged)
        for chat in chats:
            self._attach(self.factory.restore(chat))
        if damaged:
            log.error("%d damaged chat file(s) set aside in %s", len(damaged),
                      persist_chat.chats_dir() / persist_chat.DAMAGED)  # fmt: skip

    def _attach(self, context: AgentContext) -> AgentContext:
        async def persist() -> None:
            await self.save(context)

        context.persist = persist
        self.registry.add(context)
        self._tell("added", context.id)
        return context

    # -- saving ----------------------------------------------------------------

    async def save(self, context: AgentContext) -> None:
        """Write the chat (on the agents' loop); overlapping saves of one chat queue up."""
        lock = self._save_locks.setdefault(context.id, asyncio.Lock())
        async with lock:
            if self.registry.get(context.id) is not context:
                return  # deleted meanwhile: do not bring the folder back
            chat = persist_chat.snapshot(context)
            await asyncio.to_thread(persist_chat.write_chat, chat)
        self._tell("changed", context.id)
        self._refresh_config(context)
        if not context.name and not context.running and context.id not in self._naming:
            first = _first_exchange(context)
            if first is not None:
                self._naming[context.id] = asyncio.ensure_future(self._name(context, *first))

    async def _name(self, context: AgentContext, question: str, answer: str) -> None:
        """Name a chat after its first exchange, with the utility model."""
        agent = context.agent0
        try:
            name = await agent.call_utility_model(
                agent.read_prompt("fw.chat_name.sys.md"),
                agent.read_prompt("fw.chat_name.msg.md", question=question, answer=answer),
                heading="Naming the chat",
            )
        except RunError as exc:
            log.warning("chat %s: no name from the utility model: %s", context.id, exc)
            return
        name = " ".join(name.strip().strip("\"'`*#").split())[:NAME_LIMIT]
        if name and not context.name:
            context.name = name
            await self.save(context)

    def save_now(self, context: AgentContext) -> None:
        """Save from any thread and wait until it is on disk."""
        self.runtime.submit(self.save(context)).result(30)

    # -- operations --------------------------------------------------------------

    def new_chat(self, project: str | None = None, **overrides: Any) -> AgentContext:
        context = self._attach(self.factory.new(project, **overrides))
        self.save_now(context)
        return context

    def apply_settings(self) -> None:
        """New settings reach every chat's Agent 0 before its next run.

        A chat that runs now finishes with what it started with (and its
        subordinates keep their own profiles); it takes the new settings
        when the run ends.
        """
        for context in self.registry.all():
            self._stale.add(context.id)
            self.runtime.call_soon(self._refresh_config, context)

    def _refresh_config(self, context: AgentContext) -> None:
        if context.running or context.id not in self._stale:
            return
        self._stale.discard(context.id)
        config = self.factory.config(context.agent0.config.overrides)
        context.config = config
        context.agent0.reconfigure(config)

    def rename(self, chat_id: str, name: str) -> None:
        context = self.get(chat_id)
        context.name = " ".join(name.split())[:NAME_LIMIT]
        self.save_now(context)

    def delete(self, chat_id: str) -> None:
        """Stop the chat if it runs, forget it, remove its folder."""
        context = self.get(chat_id)
        self._stop_and_wait(context)
        self.registry.remove(chat_id)
        self._save_locks.pop(chat_id, None)
        persist_chat.delete_chat_files(chat_id)
        self._tell("removed", chat_id)

    def reset(self, chat_id: str) -> AgentContext:
        """Clear history and log, keep the chat's id, name and Agent 0's profile."""
        old = self.get(chat_id)
        self._stop_and_wait(old)
        fresh = self.factory.restore(
            ChatFile(
                id=old.id,
                name=old.name,
                created_at=old.created_at,
                project=old.project,
                agents=[
                    persist_chat.snapshot(old)
                    .agents[0]
                    .model_copy(update={"history": {}, "data": {}, "usage": {}})
                ],  # fmt: skip
            )
        )
        self.registry.remove(chat_id)
        self._attach(fresh)
        self.save_now(fresh)
        return fresh

    def export(self, chat_id: str) -> dict[str, Any]:
        context = self.get(chat_id)
        chat = self.runtime.call(persist_chat.snapshot, context)
        return persist_chat.export_chat(chat)

    def import_chat(self, document: Any) -> AgentContext:
        """A chat from an export, under a new id; UserError says why one is refused."""
        chat = persist_chat.import_chat(document, uuid.uuid4().hex[:16])
        chat = chat.model_copy(update={"running": False, "working_agent": None})
        return self._attach(self.factory.restore(chat))

    def _stop_and_wait(self, context: AgentContext, timeout: float = 10.0) -> None:
        if not context.running:
            return
        context.stop()
        deadline = time.monotonic() + timeout
        while context.running and time.monotonic() < deadline:
            time.sleep(0.01)
        if context.running:
            raise RunError(f"chat {context.id} did not stop within {timeout:.0f} s")
