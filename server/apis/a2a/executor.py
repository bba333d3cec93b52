"""A2A tasks run as Cadre chats: the SDK's `AgentExecutor` over server/apis/agent_calls.py.

A task's message goes to Agent 0 as the API's and the MCP server's do: its text parts as
the message, its files as attachments (within the upload limit an admin set on the key's
owner), its data parts as JSON (server/apis/a2a/parts.py). Its context is a Cadre chat:
the first task of a context starts a chat (with the profile the message's metadata names,
else the default one), and a later task of the same context continues that chat. Which
chat a context is stays known across restarts (server/apis/a2a/contexts.py); a chat's own
id sent as the contextId continues that chat at any time (the task's status message
names it).

While Agent 0 works, each finished step of the run (server/apis/mcp_server/progress.py)
is a `working` status update. The answer ends the task `completed`, as its status message
and as an artifact named "answer"; the files of the work folder written during the run
come before it as artifacts of their own (their bytes, up to FILE_LIMIT each; told by
their times, so a file another chat of the same work folder wrote meanwhile comes too). A run
stopped in Cadre (or cancelled over A2A) ends the task `canceled`; a failed one `failed`,
with what went wrong in words; a message Cadre refuses (an unknown profile, a person's
limits) `rejected`.

Cadre has no state in which an agent waits for the user's reply: an agent that needs
something asks it in its answer, which completes the task, and the client's reply (a
new message in the same context) continues the chat. So no task is left
`input-required`.

Runs on the A2A endpoint's own event loop (server/apis/a2a/endpoint.py), never the
agents' one: whatever blocks goes to a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import mimetypes
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, Task, TaskState
from google.protobuf.json_format import MessageToDict

from accounts.limits import upload_refusal
from core.run_gate import RunGate
from helpers.confine import PathRefused, read_inside
from helpers.errors import CadreError, NotFound, UserError
from helpers.folders import work_dir
from server.apis import agent_calls
from server.apis.a2a.card import PROFILE_KEY
from server.apis.a2a.contexts import ContextMap
from server.apis.a2a.parts import Inbound, read_parts
from server.apis.mcp_server.progress import answer_with_steps
from server.run_limits import AccountLimits

if TYPE_CHECKING:
    from a2a.server.events import EventQueue

    from core.chat import Chat
    from store.chats import ChatManager

log = logging.getLogger(__name__)

#: Seconds a task that ended here still counts as running (its last events being saved).
ENDED_GRACE = 30.0
#: Largest file sent back as an artifact (a bigger one is named, without its bytes).
FILE_LIMIT = 1024 * 1024
#: Most files of one run sent back.
FILES_LIMIT = 20
#: Files of the work folder looked at, at most (a huge folder is not walked whole).
SCAN_LIMIT = 5000
#: Seconds a file's time may be before the run's start and still count as the run's:
#: the file system's clock is coarser than time.time().
CLOCK_SLACK = 1.0


@dataclass(frozen=True)
class Produced:
    """A file the run wrote: its path in the work folder, and its bytes (None: too big)."""

    name: str
    data: bytes | None


def owner_of(call: ServerCallContext) -> str | None:
    """The user the request's key acts as (None: the desktop mode's one person)."""
    name = call.state.get("cadre_user")
    if not isinstance(name, str):  # the endpoint always sets it: never anybody's by default
        raise UserError("Cadre could not tell whose key this request carries: send it again")
    return name or None


class CadreExecutor(AgentExecutor):
    """Runs each A2A task as a message to Agent 0 of the context's chat."""

    def __init__(self, chats: ChatManager, contexts: ContextMap | None = None) -> None:
        self.chats = chats
        #: contextId → chat id, per owner (a context is its owner's alone), kept on disk.
        self.contexts = contexts or ContextMap()
        #: The tasks this process runs now, and when those that ended here ended.
        self._running: set[str] = set()
        self._ended: dict[str, float] = {}

    def running(self, grace: float = ENDED_GRACE) -> set[str]:
        """The tasks this process runs, or ended within `grace` seconds (the SDK saves a
        run's last events after it returns): the task store asks (tasks.py)."""
        now = time.monotonic()
        for task_id in [t for t, at in self._ended.items() if now - at > grace]:
            del self._ended[task_id]
        return self._running | set(self._ended)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id
        self._running.add(context.task_id)
        try:
            await self._execute(context, event_queue)
        finally:
            self._running.discard(context.task_id)
            self._ended[context.task_id] = time.monotonic()

    def cancelled_elsewhere(self, task: Task, owner: str) -> None:
        """Another node cancelled `task` (its `tasks/cancel` reached a node not running
        it) while this process runs it: its chat stops here, as a cancel here stops it (on
        a worker thread). A late event of a task cancelled here stops nothing."""
        if task.id not in self._running:
            return
        chat_id = self._chat_id(owner or None, task.context_id)
        if chat_id:
            log.info("A2A task %s was cancelled on another node: its chat %s stops",
                     task.id[:64], chat_id)  # fmt: skip
            self._stop(chat_id, owner or None)

    async def _execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None and context.task_id and context.context_id
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:  # the task first: a stream's events follow it
            await event_queue.enqueue_event(new_task_from_user_message(message))
        try:
            inbound = read_parts(message)
        except UserError as exc:
            log.info("A2A task %s refused: %s", context.task_id, exc)
            await updater.reject(_said(updater, str(exc)))
            return
        owner = owner_of(context.call_context)
        profile = _profile(MessageToDict(message.metadata)) or _profile(context.metadata)
        since = time.time() - CLOCK_SLACK
        try:
            started = await asyncio.to_thread(self._start, owner, context.context_id, inbound,
                                              profile)  # fmt: skip
        except (UserError, CadreError) as exc:
            log.info("A2A task %s refused: %s", context.task_id, exc)
            await updater.reject(_said(updater, str(exc)))
            return
        chat = started.chat
        await updater.start_work(_said(updater, f"Cadre chat {chat.id} is working on it"))
        answer = await _answer_with_updates(started, updater)
        if answer.outcome == "answered":
            for produced in await asyncio.to_thread(_produced, chat, since):
                await updater.add_artifact([_file_part(produced)], name=produced.name)
            await updater.add_artifact([Part(text=answer.text)], name="answer")
            await updater.complete(_said(updater, answer.text))
        elif answer.outcome == "stopped":
            await updater.cancel(_said(updater, f"chat {chat.id}: the run was stopped"))
        else:
            log.warning("A2A task %s: chat %s: %s", context.task_id, chat.id, answer.error)
            await updater.failed(_said(updater, f"chat {chat.id}: {answer.error}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the context's chat (what was done so far stays in it)."""
        owner = owner_of(context.call_context)
        chat_id = self._chat_id(owner, context.context_id or "")
        if chat_id:
            await asyncio.to_thread(self._stop, chat_id, owner)
        if context.task_id and context.context_id:
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            await updater.cancel(_said(updater, "stopped at the caller's request"))

    # -- the context's chat -------------------------------------------------------

    def _stop(self, chat_id: str, owner: str | None) -> None:
        try:
            self.chats.get(chat_id, owner).stop()
        except NotFound:  # deleted meanwhile: nothing runs there any more
            log.info("A2A cancel: chat %s is gone", chat_id)

    def _upload_refusal(self, owner: str | None, size: int) -> str:
        """Why `owner` may not attach `size` bytes ("": they may): their upload limit."""
        gate = self.chats.runtime.service(RunGate)
        if not isinstance(gate, AccountLimits):  # no accounts' limits: nothing to keep to
            return ""
        return upload_refusal(gate.limits_of(owner), size)

    def _chat_id(self, owner: str | None, context_id: str) -> str | None:
        return self.contexts.chat_of(owner, context_id)

    def _start(self, owner: str | None, context_id: str, inbound: Inbound,
               profile: str | None) -> agent_calls.Started:  # fmt: skip
        """The message on its way to the context's chat, or to a new one (on a thread)."""
        size = sum(len(data) for _, data in inbound.files)
        if size and (why := self._upload_refusal(owner, size)):
            raise UserError(why)
        chat_id = self._chat_id(owner, context_id) or context_id
        try:
            chat = self.chats.get(chat_id, owner)
        except NotFound:
            chat = None
        # A chat that goes on keeps its profile; a new one takes the one asked for.
        started = agent_calls.start_message(
            self.chats, inbound.text, chat.id if chat else None, None if chat else profile,
            viewer=owner, files=inbound.files,
        )  # fmt: skip
        self.contexts.remember(owner, context_id, started.chat.id)
        return started


def _profile(metadata: object) -> str | None:
    value = metadata.get(PROFILE_KEY) if isinstance(metadata, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _said(updater: TaskUpdater, text: str) -> Message:
    return updater.new_agent_message([Part(text=text)])


async def _answer_with_updates(started: agent_calls.Started,
                               updater: TaskUpdater) -> agent_calls.Answer:  # fmt: skip
    """Wait for the answer; meanwhile a `working` update per finished step of the run."""

    async def tell(line: str) -> None:
        await updater.update_status(TaskState.TASK_STATE_WORKING, _said(updater, line))

    return await answer_with_steps(started, tell)


def _produced(chat: Chat, since: float) -> list[Produced]:
    """The files of the chat's work folder changed since `since`, oldest first."""
    try:
        folder = work_dir(chat.config.settings.work_dir, chat.space)
    except UserError as exc:  # the folder became unusable: the answer still goes back
        log.warning("A2A: chat %s: work folder not read: %s", chat.id, exc)
        return []
    found: list[tuple[float, Path]] = []
    for seen, path in enumerate(folder.rglob("*")):
        if seen >= SCAN_LIMIT:
            break
        try:
            if path.is_symlink() or not path.is_file():
                continue
            changed = path.stat().st_mtime
        except OSError:
            continue
        if changed >= since and not any(p.startswith(".") for p in path.relative_to(folder).parts):
            found.append((changed, path))
    found.sort()
    produced = []
    for _, path in found[:FILES_LIMIT]:
        try:
            # As every reader of a work folder's files: inside it, no links out, no hard
            # link to a file elsewhere, none of Cadre's secret files (helpers/confine.py).
            data = read_inside(path, [folder], FILE_LIMIT)
        except (PathRefused, OSError) as exc:
            log.warning("A2A: chat %s: %s is not sent back: %s", chat.id, path.name, exc)
            continue
        kept = data if len(data) <= FILE_LIMIT else None  # too big: named, not sent
        produced.append(Produced(path.relative_to(folder).as_posix(), kept))
    return produced


def _file_part(produced: Produced) -> Part:
    kind = mimetypes.guess_type(produced.name)[0] or "application/octet-stream"
    if produced.data is None:
        note = f"{produced.name}: over {FILE_LIMIT // 1024} KB, left in Cadre's work folder"
        return Part(text=note, filename=produced.name)
    return Part(raw=produced.data, filename=produced.name, media_type=kind)
