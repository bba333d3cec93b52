"""The chats of one Cadre process: created, loaded at start, saved, renamed, deleted.

`ChatManager` owns the registry of open chats and keeps each one on disk. It
saves a chat on its run events (core/events.py: a task taken, every step, a
pause, the run's end) and on rename, reset and import; `save` only saves,
then announces `ChatSaved` (the chat-naming plugin and the web pusher listen). The
snapshot is taken on the agents' loop, where nothing moves while it is read;
store/chat_writes.py writes it in a worker thread, in order. A running
chat's steps do not wait for their writes; the end of a run and every other
save do. Chats are built by the `ChatMaker` it is given
(initialize.ChatFactory): new ones from the settings, saved ones from their
record (core/chat_record.py, which configures their agents through
core/agent_config.py).

Why one module past 400 lines: loading, saving, deleting, resetting, handing over
and letting go of every chat for a restore all work on the same registry, the listed but
unread chats and the lock between them; apart, each would reach into the
others' private state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from core import chat_record
from core.agent_types import UserMessage
from core.chat_record import AgentRecord, ChatFile
from core.events import (
    ChatClosed,
    ChatSaved,
    IterationEnded,
    MonologueStarted,
    RunEnded,
    RunEvent,
    StateChanged,
    StepProgressed,
)
from core.log import LogKind
from helpers import folders
from helpers.chat_names import NAME_LIMIT, clean_name
from helpers.errors import NotFound, RunError, UserError
from helpers.runtime import AgentRuntime
from helpers.secrets import refresh_log_masking, secret_values
from helpers.settings import load_settings
from store import chat_branches, chat_export, model_choice, persist_chat
from store.agent_zero import chat as agent_zero_chat
from store.chat_writes import ChatWrites
from store.open_chats import OpenChats
from store.persist_chat import ChatHeader, DamagedChat
from store.placement import ClusterDown, Placement
from store.shared_chats import SharedFolder

if TYPE_CHECKING:
    from core.agent_types import AgentConfig
    from core.chat import Chat

log = logging.getLogger(__name__)

#: What a chat is told when it could be saved only with parts of it replaced.
REPAIRED = (
    "Part of this chat could not be stored as it was ({problem}). It was saved with that"
    " part replaced (invalid characters by U+FFFD, other data by its description), and"
    " the chat goes on as usual."
)


class ChatMaker(Protocol):
    def new(self, project: str | None = None, owner: str | None = None,
            **overrides: Any) -> Chat: ...  # fmt: skip

    def restore(self, chat: ChatFile) -> Chat: ...

    def config(self, context: Chat) -> AgentConfig: ...


@dataclass(frozen=True)
class ChatEvent:
    """A change of the chat list, for whoever shows it (the web UI sends deltas)."""

    kind: Literal["added", "changed", "removed"]
    chat_id: str
    #: Whose chat it is: only their pages hear of it (None: the desktop mode's one person).
    owner: str | None = None


def _summary(chat_id: str, name: str, created_at: float, last_message: float,
             project: str | None, parent: dict[str, Any] | None,
             **state: bool | int) -> dict[str, Any]:  # fmt: skip
    """A row of the chat list (protocol.md: ChatSummary); `parent`: a branch's `{id, at}`."""
    return {"id": chat_id, "name": name, "created_at": created_at,
            "last_message": last_message, "project": project, "parent": parent,
            **state}  # fmt: skip


def chat_row(context: Chat) -> dict[str, Any]:
    """A loaded chat's row (call on the agents' loop)."""
    return _summary(context.id, context.name, context.created_at, context.last_message,
                    context.project, context.parent, running=context.running,
                    paused=context.paused, interrupted=context.interrupted,
                    approvals=len(context.approvals.held()))  # fmt: skip


def header_summary(header: ChatHeader) -> dict[str, Any]:
    """The row of a chat not read yet: it is not running here; if it was, it is interrupted."""
    return _summary(header.id, header.name, header.created_at, header.last_message,
                    header.project, header.parent.model_dump() if header.parent else None,
                    running=False, paused=header.paused,
                    interrupted=header.running, approvals=header.approvals)  # fmt: skip


class ChatManager(SharedFolder):
    """Every chat of this process, kept in step with `usr/chats/` (which other nodes of a
    cluster share: store/shared_chats.py)."""

    def __init__(self, runtime: AgentRuntime, factory: ChatMaker) -> None:
        self.runtime = runtime
        self.factory = factory
        self.registry = OpenChats()
        self.damaged: list[DamagedChat] = []
        #: Every chat's writes, in order, behind its agents (store/chat_writes.py).
        self._writes = ChatWrites()
        #: Set at shutdown: runs cancelled then must not overwrite what was saved last.
        self._frozen = False
        #: Chats told their last save failed / that saving them needed repairs.
        self._unsaved: set[str] = set()
        self._repaired: set[str] = set()
        #: Saves started in the background, held until done (a task nobody holds may vanish).
        self._background: set[asyncio.Future[None]] = set()
        #: Saved chats listed but not read yet (see load_saved), and the lock reading them.
        self._unloaded: dict[str, ChatHeader] = {}
        self._loading = threading.RLock()
        #: Chats whose Agent 0 has not yet taken the latest settings.
        self._stale: set[str] = set()
        self._listeners: list[Callable[[ChatEvent], None]] = []
        #: Whose the chats from before accounts are (no owner on record): the first admin,
        #: once there is one (server/accounts.py keeps it current); None: desktop mode.
        self.legacy_owner: str | None = None
        #: Where chats run, when this process is one node of a cluster (store/placement.py);
        #: None: a process alone, whose chats are all its own.
        self.placement: Placement | None = None
        #: In a cluster: each chat's file as this node last read or wrote it (its stamp), so
        #: that a chat another node changed since is read again before it is used here.
        self._seen: dict[str, str] = {}

    # -- the list --------------------------------------------------------------

    def subscribe(self, listener: Callable[[ChatEvent], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _tell(self, kind: Literal["added", "changed", "removed"], chat_id: str,
              owner: str | None) -> None:  # fmt: skip
        for listener in list(self._listeners):
            listener(ChatEvent(kind, chat_id, owner))

    def owner_of(self, chat: Chat | ChatHeader) -> str | None:
        """The user whose chat it is (one from before accounts is the first admin's)."""
        return chat.owner or self.legacy_owner

    def recorded(self, owner: str | None) -> str | None:
        """How `owner` is kept on a chat: the first admin as no one (the install's own, as
        their chats of before accounts), so that renaming their login in Settings leaves
        every chat of theirs theirs."""
        return None if owner is not None and owner == self.legacy_owner else owner

    def visible(self, chat: Chat | ChatHeader, viewer: str | None) -> bool:
        """May `viewer` (a user's name; None: Cadre itself, or the one person of the desktop
        mode) see the chat? Each person sees their own chats only, admins included."""
        return viewer is None or self.owner_of(chat) == viewer

    def get(self, chat_id: str, viewer: str | None = None) -> Chat:
        """The chat, read from disk on first use; NotFound when there is none (or it broke)
        or it is not `viewer`'s: the same answer, so that nobody learns another's chat ids."""
        context = self.registry.get(chat_id)
        placement = self.placement
        if placement is not None and not (context is not None and context.running) and not (
                placement.holds(chat_id)):  # fmt: skip
            try:
                placement.check(chat_id)  # Elsewhere: it runs on another node now
            except ClusterDown:
                if context is None:
                    raise
                # Where it runs cannot be known: this node's copy answers (no run starts
                # meanwhile: the run gate refuses it in the same words).
            context = self._fresh(chat_id, context)
        elif placement is not None and context is None and chat_id not in self._unloaded:
            # Held here but never listed: another node made the chat, and this node just
            # took its lease over (its takeover reads it on a thread of its own meanwhile).
            self._fresh(chat_id, None)
        if context is None:
            with self._loading:
                context = self.registry.get(chat_id)
                header = self._unloaded.get(chat_id)
                if context is None and header is not None and self.visible(header, viewer):
                    context = self._load(chat_id)
        if context is None or not self.visible(context, viewer):
            raise NotFound(f"no chat with id {chat_id!r}")
        return context

    def summaries(self, summarise: Callable[[Chat], dict[str, Any]],
                  viewer: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
        """The list entries of `viewer`'s chats (every chat for None), newest first; loaded
        chats through `summarise`."""
        self._catch_up()
        with self._loading:
            every = self.registry.all()
            open_ids = {c.id for c in every}
            loaded = [c for c in every if self.visible(c, viewer)]
            headers = [h for h in self._unloaded.values()
                       if h.id not in open_ids and self.visible(h, viewer)]  # fmt: skip
        entries = [summarise(c) for c in loaded]
        entries += [header_summary(h) for h in headers]
        entries.sort(key=lambda s: max(s["last_message"], s["created_at"]), reverse=True)
        return entries

    def ids_of(self, owner: str | None) -> list[str]:
        """The ids of every chat of `owner` (None: every chat of the desktop mode), read or not."""
        self._catch_up()
        with self._loading:
            loaded = [c.id for c in self.registry.all() if self.owner_of(c) == owner]
            listed = [h.id for h in self._unloaded.values() if self.owner_of(h) == owner]
        return list(dict.fromkeys(loaded + listed))

    def __len__(self) -> int:
        return len(self.registry) + len(self._unloaded)

    def load_saved(self) -> None:
        """List every saved chat; histories are read when a chat is first opened.

        A chat without a current summary is read and restored now (a file that cannot be
        restored is found at once). Damaged files are set aside, listed, and never stop others.
        """
        headers, unknown = persist_chat.scan()
        with self._loading:
            self._unloaded.update({h.id: h for h in headers})
        for chat_id in unknown:
            try:  # an Agent Zero chat.json is converted first (its original kept)
                self._restore(agent_zero_chat.load_saved(chat_id))
            except (OSError, ValueError) as exc:
                self._set_aside(chat_id, str(exc))
        if self.damaged:
            log.error("%d damaged chat file(s) set aside in %s", len(self.damaged),
                      folders.chats_dir() / persist_chat.DAMAGED)  # fmt: skip

    def _load(self, chat_id: str) -> Chat | None:
        """Read and restore a listed chat (with `_loading` held)."""
        try:
            if self.placement is not None:
                self._seen[chat_id] = persist_chat.file_stamp(chat_id)
            context = self._restore(persist_chat.load_chat(chat_id))
        except (OSError, ValueError) as exc:
            self._unloaded.pop(chat_id, None)
            self._set_aside(chat_id, str(exc))
            raise UserError(f"chat {chat_id} is damaged and was set aside: {exc}") from exc
        self._unloaded.pop(chat_id, None)  # only now: it never drops out of the list
        return context

    def _restore(self, chat: ChatFile) -> Chat:
        try:
            context = self.factory.restore(chat)
        except Exception as exc:  # noqa: BLE001 - whatever the content broke: set aside
            raise ValueError(f"cannot be restored: {type(exc).__name__}: {exc}") from exc
        return self._attach(context)

    def _set_aside(self, chat_id: str, reason: str) -> None:
        header = self._unloaded.get(chat_id)
        self.damaged.append(persist_chat.set_aside(chat_id, reason))
        self._tell("removed", chat_id, self.owner_of(header) if header else self.legacy_owner)

    def _attach(self, context: Chat) -> Chat:
        async def persist(event: RunEvent) -> None:
            # A running chat's saves are written behind its steps; the save at a run's
            # end (and any other) returns once the file is on disk.
            await self.save(context, wait=isinstance(event, RunEnded) or not context.running)

        events = context.events
        for kind in (MonologueStarted, IterationEnded, StepProgressed, StateChanged, RunEnded):
            events.subscribe(kind, persist, first=True)  # on disk before others act on it
        # A chat that ran when the settings changed takes them when its run ends.
        events.subscribe(RunEnded, lambda _: self._refresh_config(context))
        context.saver = lambda: self.save(context)
        self.registry.add(context)
        self._tell("added", context.id, self.owner_of(context))
        return context

    # -- saving ----------------------------------------------------------------

    async def save(self, context: Chat, wait: bool = True) -> None:
        """Save the chat (on the agents' loop): its snapshot now, written in a worker thread.

        `wait`: return once it is on disk. Without, return at once: the write follows
        in order, and whatever goes wrong with it is told in the chat all the same
        (store/chat_writes.py; a running chat's steps save this way).
        """
        if self._frozen or self.registry.get(context.id) is not context:
            return  # deleted or replaced meanwhile: do not bring the folder back
        if self.placement is not None and not self.placement.may_write(context.id):
            return  # another node took it over (this node stalled): the file is theirs
        written = self._writes.submit(chat_record.snapshot(context))
        if wait:
            try:
                await asyncio.shield(written)
            except asyncio.CancelledError:
                written.add_done_callback(lambda done: self._written(context, done))
                raise
            except (OSError, ValueError, TypeError):
                pass  # told in the chat just below
            self._written(context, written)
        else:
            written.add_done_callback(lambda done: self._written(context, done))
        await context.events.emit(ChatSaved(context.id))

    def _written(self, context: Chat, written: asyncio.Future[str]) -> None:
        """Tell the chat, once, that a write failed or needed repairs; forget it once one works."""
        if written.cancelled():
            return
        exc = written.exception()
        if exc is not None:
            # A full disk (or a chat not even a repair can write) must not cost the
            # run its answer: say so, once, and go on.
            log.error("chat %s could not be saved: %s", context.id, exc)
            self._tell_once(context, self._unsaved, "error", "Not saved",
                            f"The chat could not be saved: {exc}")  # fmt: skip
            return
        self._unsaved.discard(context.id)
        if self.placement is not None:  # in a cluster: this node's write is the file's now
            with contextlib.suppress(OSError):
                self._seen[context.id] = persist_chat.file_stamp(context.id)
        repairs = written.result()
        if repairs and context.id not in self._repaired:
            log.warning("chat %s was saved with repairs: %s", context.id, repairs)
            self._tell_once(context, self._repaired, "warning", "Saved with repairs",
                            REPAIRED.format(problem=repairs))  # fmt: skip

    @staticmethod
    def _tell_once(context: Chat, told: set[str], kind: LogKind, heading: str, text: str) -> None:
        """A log item about saving, once per chat until `told` forgets it."""
        if context.id not in told:
            told.add(context.id)
            context.log.log(kind, heading, text)

    def save_now(self, context: Chat) -> None:
        """Save from any thread and wait until it is on disk."""
        self.runtime.submit(self.save(context)).result(30)

    def freeze(self) -> None:
        """Save nothing more (shutdown: every chat was just saved as it stands)."""
        self._frozen = True

    # -- operations --------------------------------------------------------------

    def new_chat(self, project: str | None = None, owner: str | None = None,
                 **overrides: Any) -> Chat:  # fmt: skip
        """A new chat of `owner` (None: desktop mode), saved at once."""
        with self._loading:  # not while a restore replaces the chats (`replacing`): after it
            # The owner from the start: their project and work folder are in its config.
            made = self.factory.new(project, self.recorded(owner), **overrides)
            context = self._attach(made)
            self.save_now(context)
        return context

    def apply_settings(self) -> None:
        """New settings reach every chat's Agent 0 before its next run.

        A chat that runs now finishes with what it started with (and its
        subordinates keep their own profiles); it takes the new settings
        when the run ends.
        """
        refresh_log_masking(secret_values(load_settings()))
        for context in self.registry.all():
            self._stale.add(context.id)
            self.runtime.call_soon(self._refresh_config, context)

    def _refresh_config(self, context: Chat) -> None:
        if context.running or context.id not in self._stale:
            return
        self._stale.discard(context.id)
        context.reconfigure(self.factory.config(context))  # a handoff's profile stays
        saving = asyncio.ensure_future(self.save(context))  # settings changed: on disk too
        self._background.add(saving)
        saving.add_done_callback(self._background.discard)

    def choose_model(self, context: Chat, preset: str, model: str = "") -> None:
        """Run `context` on the model preset `preset`, or else the configured model `model`
        (both "": the settings' models), checked by store/model_choice.py: at once between
        runs, from the next run while it runs."""

        def choose() -> None:
            context.keep_overrides(model_choice.with_choice(context.overrides, preset, model))
            self._stale.add(context.id)
            self._refresh_config(context)

        self.runtime.call(choose)
        self.save_now(context)

    def rename(self, chat_id: str, name: str, viewer: str | None = None) -> None:
        context = self.get(chat_id, viewer)
        context.name = clean_name(name)
        self.save_now(context)

    def delete(self, chat_id: str, viewer: str | None = None) -> None:
        """Stop the chat if it runs, forget it, remove its folder."""
        context = self.get(chat_id, viewer)
        self.runtime.submit(self._delete(context)).result(30)
        self._tell("removed", chat_id, self.owner_of(context))

    async def _delete(self, context: Chat) -> None:
        await self._stop(context, closing="this chat is being deleted")
        # Gone from the registry first (no new save), then a write going on finishes and
        # one waiting is dropped: nothing brings the folder back once it is removed.
        self.registry.remove(context.id)
        await self._writes.settle(context.id)
        await asyncio.to_thread(persist_chat.delete_chat_files, context.id)

    def reset(self, chat_id: str, viewer: str | None = None) -> Chat:
        """Clear history and log; keep the id, name and Agent 0's own profile (a handoff ends)."""
        old = self.get(chat_id, viewer)
        fresh = self.runtime.submit(self._reset(old)).result(30)
        self.save_now(fresh)
        return fresh

    async def _reset(self, old: Chat) -> Chat:
        await self._stop(old, closing="this chat is being reset: send the message again after it")
        first = chat_record.snapshot(old).agents[0]
        fresh = self.factory.restore(
            ChatFile(
                id=old.id,
                name=old.name,
                created_at=old.created_at,
                project=old.project, owner=old.owner,
                variables=dict(old.variables),  # kept, as the name is
                agents=[AgentRecord(number=0, profile=old.home_profile or first.profile,
                                    overrides=first.overrides)],
            )
        )  # fmt: skip
        # The old chat's writes waiting are superseded by the fresh chat's (same id, in order).
        self.registry.remove(old.id)
        self._attach(fresh)
        return fresh

    def hand_over(self, chat_id: str, owner: str | None, project: str | None) -> Chat:
        """Give the chat to `owner` (a deleted user's chats, store/handing_over.py), in
        `project` (its name in their space): stopped, then made again from its record as
        theirs, as after a restart, so that every agent's configuration (work folder,
        project, memory area) is the new owner's, not the old one's."""
        old = self.get(chat_id)
        fresh = self.runtime.submit(self._hand_over(old, owner, project)).result(30)
        self.save_now(fresh)
        return fresh

    async def _hand_over(self, old: Chat, owner: str | None, project: str | None) -> Chat:
        await self._stop(old, closing="this chat is being handed over to another user")
        record = chat_record.snapshot(old).model_copy(
            update={"owner": self.recorded(owner), "project": project}
        )
        fresh = self.factory.restore(record)
        # As a reset does: the old chat's writes waiting are superseded by the fresh one's.
        self.registry.remove(old.id)
        await self._writes.settle(old.id)
        # Gone from the old owner's list, then new in the new owner's (in this order: the
        # pages hear the last news of a chat id).
        self._tell("removed", old.id, self.owner_of(old))
        self._attach(fresh)
        return fresh

    async def _stop(self, context: Chat, closing: str) -> None:
        """Stop a chat that goes away and wait until its run has unwound (on the agents' loop).

        From now on it refuses messages with `closing`: one accepted now would be
        acknowledged, then lost with the chat. If it does not stop, it takes them again.
        """
        context.runner.close(closing)
        await context.events.emit(ChatClosed(context.id))  # work started for it stops
        task = context.task
        if task is not None and not task.done():
            context.stop()
            await asyncio.wait({task}, timeout=10)
            if not task.done():
                context.runner.reopen()
                raise RunError(f"chat {context.id} did not stop within 10 s")
        await context.end_sessions()

    @contextlib.contextmanager
    def replacing(self, closing: str) -> Iterator[None]:
        """Let go of every chat while their files are replaced (a restore), then list them
        again from disk. Refused (UserError) while a chat runs: its next save would undo the
        restore. No chat is read meanwhile, and nothing of the old ones is saved again."""
        with self._loading:
            self.runtime.submit(self._release_all(closing)).result(60)
            try:
                yield
            finally:
                gone, self._unloaded = list(self._unloaded.values()), {}
                self.damaged.clear()
                self.load_saved()
                for header in gone:
                    self._tell("removed", header.id, self.owner_of(header))
                for header in list(self._unloaded.values()):
                    self._tell("added", header.id, self.owner_of(header))

    async def _release_all(self, closing: str) -> None:
        busy = [c.name or c.id for c in self.registry.all() if c.task and not c.task.done()]
        if busy:
            raise UserError(f"chats are running ({', '.join(busy)}): stop them or wait")
        contexts = self.registry.all()
        for context in contexts:  # all at once: no run may start at an await below
            context.runner.close(closing)  # a message now is refused, not lost
        for context in contexts:
            await context.events.emit(ChatClosed(context.id))
            await self.save(context)  # as it stands: a restore that fails puts this back
            self.registry.remove(context.id)  # no save from now on (see save)
            await self._writes.settle(context.id)
            await context.end_sessions()
            self._tell("removed", context.id, self.owner_of(context))

    def close_sessions(self) -> None:
        """End every chat's code sessions (their processes with them), for shutdown."""

        def close() -> None:
            for context in self.registry.all():
                context.code_sessions.close_all()

        self.runtime.call(close, timeout=30)

    def branch(self, chat_id: str, at: int, viewer: str | None = None,
               message: str | None = None) -> Chat:  # fmt: skip
        """A new chat of `viewer`'s holding the chat as it stands at its log item `at`
        (store/chat_branches.py); a running chat is branched from its state now. With
        `message`, item `at` is a message of the user's: the branch is cut just before it
        and runs `message` in its place (with its attachments)."""
        parent = self.get(chat_id, viewer)
        record = self.runtime.call(chat_record.snapshot, parent)
        new_id = uuid.uuid4().hex[:16]
        made = chat_branches.branch_record(record, at, new_id, message is not None)
        chat_branches.copy_files(parent.id, made.id)
        try:
            context = self.factory.restore(made)
        except Exception as exc:  # noqa: BLE001 - whatever the content broke: say it
            persist_chat.delete_chat_files(made.id)
            raise UserError(f"the chat cannot be branched there: {exc}") from exc
        chat_branches.tell_mid_run(context)
        with self._loading:
            # Named with the list held: a branch of the same chat made meanwhile (another
            # tab, an API client) has its name taken by now, and this one is numbered on.
            context.name = chat_branches.branch_name(record.name, set(self._names(viewer)))
            self._attach(context)
            self.save_now(context)
        log.info("chat %s: branched at item %d as chat %s", parent.id, at, context.id)
        if message is not None:
            files = chat_branches.attachments_of(record, at, new_id)
            context.communicate(UserMessage(message, attachments=files))
        return context

    def _names(self, viewer: str | None) -> list[str]:
        """The names of `viewer`'s chats."""
        rows = self.summaries(lambda c: {"name": c.name, "last_message": c.last_message,
                                         "created_at": c.created_at}, viewer)  # fmt: skip
        return [row["name"] for row in rows]

    def export(self, chat_id: str, viewer: str | None = None) -> dict[str, Any]:
        context = self.get(chat_id, viewer)
        chat = self.runtime.call(chat_record.snapshot, context)
        return chat_export.export_chat(chat)

    def import_chat(self, document: Any, owner: str | None = None) -> Chat:
        """A chat from an export, under a new id and `owner`'s; UserError says why one is
        refused.

        The document is checked whole and restored in memory before anything
        is written, so a refused import leaves nothing behind.
        """
        chat, files = chat_export.read_export(document, uuid.uuid4().hex[:16])
        # Told apart from the chat it came from (often still in the list beside it).
        suffix = " (imported)"
        base = chat.name[: NAME_LIMIT - len(suffix)].rstrip()
        name = f"{base}{suffix}" if base else "Imported chat"
        # A branch's link names a chat of where it was exported from: not kept.
        chat = chat.model_copy(update={"name": name, "owner": self.recorded(owner), "parent": None})
        try:
            context = self.factory.restore(chat)
        except Exception as exc:  # noqa: BLE001 - whatever the content broke: refuse it
            raise UserError(f"the exported chat cannot be restored: {exc}") from exc
        chat_export.store_import(chat, files)
        return self._attach(context)
