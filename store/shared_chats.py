"""The chat store's part in a cluster: other nodes share `usr/chats/`, and may make,
change, delete or take over the chats this node has read (store/chats.py, whose
`ChatManager` this is a part of; docs/scaling.md).

Each node keeps the stamp (size, modification time, inode) of every chat file it read or
wrote (`_seen`); a write replaces the file whole, so another node's write shows as a new
stamp. A chat that does not run here is read again before it is used when its stamp
changed (`_fresh`); the list takes in what other nodes made, changed or deleted
(`_catch_up`); and a chat whose lease another node took while it still ran here is let go
without being saved again (`let_go`). A process alone (no placement) does none of this.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from core.events import ChatClosed
from store import persist_chat

if TYPE_CHECKING:
    from core.chat import Chat
    from core.chat_record import ChatFile
    from helpers.runtime import AgentRuntime
    from store.chat_writes import ChatWrites
    from store.open_chats import OpenChats
    from store.persist_chat import ChatHeader
    from store.placement import Placement


class SharedFolder:
    """What `ChatManager` does because other nodes share its folder."""

    runtime: AgentRuntime
    registry: OpenChats
    placement: Placement | None
    _seen: dict[str, str]
    _unloaded: dict[str, ChatHeader]
    _loading: threading.RLock
    _writes: ChatWrites

    def _restore(self, chat: ChatFile) -> Chat:
        raise NotImplementedError

    def _catch_up(self) -> None:
        """In a cluster, the list as the shared folder has it now: chats other nodes made
        listed, those they deleted forgotten, those they changed listed anew from their
        summaries (read whole again when next opened). Chats running here stay as they are."""
        if self.placement is None:
            return
        on_disk = set(persist_chat.saved_chat_ids())
        with self._loading:
            for context in self.registry.all():
                if context.running or self.placement.holds(context.id):
                    continue  # this node's own: the folder's copy is what it wrote
                try:
                    changed = persist_chat.file_stamp(context.id) != self._seen.get(context.id)
                except OSError:
                    changed = True  # deleted elsewhere
                if changed:
                    self.registry.remove(context.id)
                    self._seen.pop(context.id, None)
            known = {c.id for c in self.registry.all()}
            for chat_id in list(self._unloaded):
                if chat_id not in on_disk:
                    del self._unloaded[chat_id]
            for chat_id in on_disk - known:
                header = self._unloaded.get(chat_id)
                try:
                    if header is not None and header.stamp == persist_chat.summary_stamp(chat_id):
                        continue
                except OSError:
                    continue  # a folder with no chat (yet): not listed
                self._list_again(chat_id, header)

    def _list_again(self, chat_id: str, header: ChatHeader | None) -> None:
        """List the chat from its summary; from the chat itself when the summary lags
        behind (another node is between its two writes); as it was when neither reads."""
        for read in (persist_chat.read_header, persist_chat.header_of):
            try:
                self._unloaded[chat_id] = read(chat_id)
                return
            except (OSError, ValueError):
                continue
        if header is not None:
            self._unloaded[chat_id] = header

    def read_again(self, chat_id: str) -> Chat:
        """The chat as the shared folder has it now (another node ran it, and this node
        takes it over): a copy this node kept is dropped unless it runs here."""
        context = self.registry.get(chat_id)
        if context is not None and context.running:
            return context
        self._seen.pop(chat_id, None)  # whatever this node read before is old
        fresh = self._fresh(chat_id, context)
        return fresh if fresh is not None else self.get(chat_id)

    def get(self, chat_id: str, viewer: str | None = None) -> Chat:
        raise NotImplementedError

    def _fresh(self, chat_id: str, context: Chat | None) -> Chat | None:
        """In a cluster, the chat as the shared folder has it now: read again when another
        node changed it since this one last read or wrote it, listed when another node made
        it, forgotten when another node deleted it (None then)."""
        if not persist_chat.is_saved(chat_id):
            if context is not None and not context.running:
                self.registry.remove(chat_id)  # deleted elsewhere: gone here too
            self._unloaded.pop(chat_id, None)
            return None
        stamp = persist_chat.file_stamp(chat_id)
        if context is None:
            with self._loading:
                if chat_id not in self._unloaded and self.registry.get(chat_id) is None:
                    try:  # made on another node: listed now, read below
                        self._unloaded[chat_id] = persist_chat.read_header(chat_id)
                    except ValueError:
                        try:
                            self._unloaded[chat_id] = persist_chat.header_of(chat_id)
                        except (OSError, ValueError):
                            return None  # being written, or damaged: not found (yet)
            return self.registry.get(chat_id)
        if stamp == self._seen.get(chat_id):
            return context
        chat = persist_chat.load_chat(chat_id)  # changed by another node: read again

        def swap() -> Chat:
            if context.running or self.registry.get(chat_id) is not context:
                return self.registry.get(chat_id) or context  # it moved on meanwhile
            self.registry.remove(chat_id)
            self._seen[chat_id] = stamp
            return self._restore(chat)

        return self.runtime.call(swap, timeout=30)

    def let_go(self, chat_id: str, why: str) -> None:
        """Stop this node's copy of a chat another node now runs (this node lost its lease:
        it was cut off from the cluster, or too slow to renew it), without saving it again:
        the file is the other node's now. The chat is read again when next asked for."""
        context = self.registry.get(chat_id)
        if context is not None:
            self.runtime.submit(self._let_go(context, why)).result(30)

    async def _let_go(self, context: Chat, why: str) -> None:
        context.runner.close(why)
        await context.events.emit(ChatClosed(context.id))  # its naming is the new node's
        self.registry.remove(context.id)  # no save from now on (see save)
        await self._writes.settle(context.id)
        self._seen.pop(context.id, None)
        if context.task is not None and not context.task.done():
            context.stop()
        await context.end_sessions()
