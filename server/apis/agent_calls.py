"""Other programs' calls to Agent 0: start a message on a chat, wait for its answer.

The external API (server/apis/native.py), Agent Zero's (server/apis/agent_zero.py)
and the MCP server (server/apis/mcp_server/tools.py) all do this the same way: a message
to a new chat (optionally with Agent 0's profile) or to a given one (an
intervention when it runs, as in the UI), with files attached as the page attaches them
(A2A's file parts), then a wait for the answer the
message gets: blocking, on a web handler's thread (`wait_for_answer`), or
awaited on an event loop other than the agents' one (`await_answer`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from accounts.spaces import space_of
from core import run_gate
from core.agent_types import UserMessage
from helpers.errors import CadreError, UserError
from profiles.catalog import get_available_agents_dict
from profiles.projects import check_name, place_of, project_exists
from server.cluster.placement import place
from server.routes.attachments import attach
from store import model_choice

if TYPE_CHECKING:
    from core.chat import Chat
    from store.chats import ChatManager

#: Seconds another program's call waits for Agent 0's answer (the API's `"wait": true`,
#: the MCP server's `send_message`, the OpenAI-compatible endpoint); the chat goes on after.
WAIT_LIMIT = 900.0
#: How a wait for an answer ended.
Outcome = Literal["answered", "timeout", "stopped", "failed"]


@dataclass(frozen=True)
class Started:
    """A message on its way: the chat it went to and the run that answers it."""

    chat: Chat
    message: UserMessage
    run: concurrent.futures.Future[str]
    #: How many log items the chat had before the message: what follows is its run's.
    log_start: int


@dataclass(frozen=True)
class Answer:
    """What a wait found: Agent 0's `text` when `outcome` is "answered", else `error`."""

    outcome: Outcome
    text: str = ""
    error: str = ""


def start_message(
    chats: ChatManager,
    message: str,
    chat_id: str | None = None,
    profile: str | None = None,
    variables: Mapping[str, str | None] | None = None,
    project: str | None = None,
    to: str = "",
    viewer: str | None = None,
    preset: str | None = None,
    model: str | None = None,
    files: Sequence[tuple[str, bytes]] = (),
) -> Started:
    """Send `message` (with `files`, name and bytes, attached as the page attaches them) to
    the chat `chat_id`, or to a new chat with Agent 0's `profile`
    in `project`, first setting the chat's context `variables` (None removes one) and its
    model `preset` or configured `model` (both None: the chat's choice stays; "": the
    settings' models: store/model_choice.py `checked_choice`); while the
    chat works, to the agent named `to` (see `Runner.communicate`).

    UserError when a profile is given with a chat (it applies to new chats only)
    or names no available profile, or when a project is given with a chat that is
    not in it or names no project, or the preset or model is not one `viewer` may choose;
    NotFound when there is no such chat (or it is not `viewer`'s, who owns a new one).
    """
    if chat_id and profile:
        raise UserError("profile applies only when the call starts a new chat")
    if chat_id:
        context = chats.get(chat_id, viewer)
        if project and project != context.project:
            raise UserError(f"chat {chat_id} is not in project {project!r}")
        place(chats, context)  # in a cluster: the run may go to another node (Elsewhere)
        chosen = model_choice.checked_choice(preset, model, context.owner)
        if chosen is not None:
            chats.choose_model(context, *chosen)
    else:
        # Checked before a chat is made for nothing.
        chosen = model_choice.checked_choice(preset, model, viewer) or ("", "")
        place(chats, None)
        context = new_chat_to_run(chats, profile, project, viewer, *chosen)
    attached = attach(context.id, files)
    return send(chats, context, UserMessage(message, attachments=attached), variables, to)


def new_chat_to_run(chats: ChatManager, profile: str | None, project: str | None = None,
                    owner: str | None = None, preset: str = "",
                    model: str = "") -> Chat:  # fmt: skip
    """`new_chat` for a message that runs at once: OverLimit first, and no chat made, when
    the owner's limits refuse the run (core/run_gate.py)."""
    run_gate.check_new_run(chats.runtime, owner)
    return new_chat(chats, profile, project, owner, preset, model)


def new_chat(chats: ChatManager, profile: str | None, project: str | None = None,
             owner: str | None = None, preset: str = "", model: str = "") -> Chat:  # fmt: skip
    """A new chat of `owner`, Agent 0 with `profile` (the default one when None, or the
    project's), in `project` (the owner's own), on the model `preset` or else the
    configured `model` (checked already: store/model_choice.py; both "": the settings'
    models); UserError when the owner has no such
    project or the profile is not available (there)."""
    # Outside a project, the owner's space alone: their own profiles are theirs to ask for.
    place = place_of(check_name(project) if project else None, space_of(owner))
    if project and not project_exists(place):
        raise UserError(f"no project named {project!r}")
    overrides: dict[str, Any] = {}
    if profile:
        if profile not in get_available_agents_dict(place):
            raise UserError(f"no available agent profile {profile!r}")
        overrides["agent_profile"] = profile
    overrides.update(model_choice.with_choice({}, preset, model))
    return chats.new_chat(project, owner, **overrides)


def send(
    chats: ChatManager,
    context: Chat,
    msg: UserMessage,
    variables: Mapping[str, str | None] | None = None,
    to: str = "",
) -> Started:
    """Hand `msg` to the chat (after setting its context `variables`): a new run, or an
    intervention in the one going on (to the agent named `to`, if it works)."""
    if variables:  # before the message, so that its run reads them
        context.set_variables(variables)
        chats.save_now(context)
    with context.log.lock:
        log_start = len(context.log.items)
    run = context.communicate(msg, to=to)
    # A chat made by the manager runs on the agents' thread: its handle is thread-side.
    assert isinstance(run, concurrent.futures.Future)
    return Started(context, msg, run, log_start)


def wait_for_answer(started: Started, timeout: float) -> Answer:
    """Block (off the agents' loop) until the message's answer, at most `timeout` seconds:
    the run it joined, or the one it started when that run ended before reading it."""
    try:
        text = started.chat.runner.answer_for(started.message, started.run, timeout)
    except (TimeoutError, concurrent.futures.CancelledError, CadreError) as exc:
        return _no_answer(exc, timeout)
    return Answer("answered", text=text)


async def await_answer(started: Started, timeout: float) -> Answer:
    """`wait_for_answer` for a caller on an event loop of its own (not the agents' one).

    Cancelling the caller stops only its wait: the run goes on, as it does for
    an API caller that hangs up.
    """
    runner = started.chat.runner
    try:
        async with asyncio.timeout(timeout):
            text = await _outlive(started.run)
            follow = runner.followups.pop(started.message.id, None)
            if isinstance(follow, concurrent.futures.Future):
                text = await _outlive(follow)
    except (TimeoutError, concurrent.futures.CancelledError, CadreError) as exc:
        return _no_answer(exc, timeout)
    return Answer("answered", text=text)


async def _outlive(run: concurrent.futures.Future[str]) -> str:
    # Shielded: a cancelled wait must not cancel the run's future, which other callers
    # (the page, an intervention's sender) share.
    try:
        return await asyncio.shield(asyncio.wrap_future(run))
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if run.cancelled() and not (task is not None and task.cancelling()):
            raise concurrent.futures.CancelledError from None  # the run was stopped
        raise


def _no_answer(exc: BaseException, timeout: float) -> Answer:
    if isinstance(exc, TimeoutError):  # concurrent.futures' too (the same class)
        return Answer("timeout", error=f"no answer within {timeout:g} s; the chat goes on")
    if isinstance(exc, concurrent.futures.CancelledError):
        return Answer("stopped", error="the run was stopped")
    return Answer("failed", error=str(exc))
