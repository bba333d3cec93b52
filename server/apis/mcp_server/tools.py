"""Cadre's agents as MCP tools: what an MCP client (a desktop app, an IDE) may call.

`send_message` runs Agent 0 on a message (a new chat, or a given one: an
intervention when it runs, as in the UI) and returns its answer with the
chat's id; a client that passes a progress token hears each step of the run
meanwhile. `list_chats`, `get_chat` and `stop_chat` look at and stop chats.
A problem (an unknown chat or profile, a failed or stopped run) comes back as
the tool's error, in words.

The tools run on the MCP server's own event loop (server/apis/mcp_server/endpoint.py),
never on the agents' one: whatever blocks (reading a chat from disk, a hop to
the agents' loop) goes to a worker thread.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from helpers.errors import UserError
from server.apis import agent_calls
from server.apis.mcp_server.endpoint import USER_KEY
from server.apis.mcp_server.progress import answer_with_steps
from server.routes import views
from server.routes.payloads import MESSAGE_LIMIT

if TYPE_CHECKING:
    from core.chat import Chat
    from store.chats import ChatManager

T = TypeVar("T")

INSTRUCTIONS = (
    "Cadre runs a team of AI agents. send_message gives Agent 0 a task and returns its "
    "answer with the chat's id; pass that chat_id to continue the same chat."
)

ChatId = Annotated[
    str,
    Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$",
          description="A chat's id, as send_message or list_chats gave it"),
]  # fmt: skip


class SentMessage(BaseModel):
    chat_id: str = Field(description="The chat's id: pass it to continue this chat")
    answer: str = Field(description="Agent 0's answer")


class ChatList(BaseModel):
    chats: list[dict[str, Any]] = Field(description="Every chat, newest first")


class ChatView(BaseModel):
    chat: dict[str, Any] = Field(description="The chat's id, name, times and run state")
    running: bool
    agents: list[dict[str, Any]] = Field(description="Agent 0 and its subordinates")
    last_answer: str | None = Field(description="Agent 0's last answer, if any")


class Stopped(BaseModel):
    stopped: bool


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    """Run blocking Cadre code on a worker thread; a UserError becomes the tool's error."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))
    except UserError as exc:
        raise ToolError(str(exc)) from None


def _last_answer(context: Chat) -> str | None:
    with context.log.lock:
        return next(
            (i.content for i in reversed(context.log.items)
             if i.type == "response" and i.agentno == 0),
            None,
        )  # fmt: skip


def build_mcp_server(chats: ChatManager) -> MCPServer:
    """The MCP server of `chats`, its tools registered (transport set up by the caller)."""
    server: MCPServer = MCPServer("cadre", instructions=INSTRUCTIONS)
    call = chats.runtime.call

    @server.tool()
    async def send_message(
        message: Annotated[str, Field(min_length=1, max_length=MESSAGE_LIMIT,
                                      description="The task or question for Agent 0")],
        ctx: Context,
        chat_id: ChatId | None = None,
        profile: Annotated[str | None, Field(max_length=64, description=(
            "Agent 0's profile for a new chat (e.g. researcher, developer); "
            "not with chat_id"))] = None,
    ) -> SentMessage:  # fmt: skip
        """Send a message to Cadre's Agent 0 and wait for its answer. Without chat_id a new
        chat starts; with it the chat goes on (a message to a chat that is running reaches
        the working agent as an intervention)."""
        started = await _off_loop(
            functools.partial(
                agent_calls.start_message, chats, message, chat_id, profile, viewer=_viewer(ctx)
            )
        )
        answer = await _answer_with_progress(started, ctx)
        if answer.outcome != "answered":
            raise ToolError(f"chat {started.chat.id}: {answer.error}")
        return SentMessage(chat_id=started.chat.id, answer=answer.text)

    @server.tool()
    async def list_chats(ctx: Context) -> ChatList:
        """List Cadre's chats, newest first: id, name, times and whether each is running."""
        found = await _off_loop(chats.summaries, lambda c: call(views.chat_summary, c),
                                _viewer(ctx))  # fmt: skip
        return ChatList(chats=found)

    @server.tool()
    async def get_chat(chat_id: ChatId, ctx: Context) -> ChatView:
        """One chat: its agents (profile, status, usage) and Agent 0's last answer."""
        viewer = _viewer(ctx)

        def view() -> ChatView:
            context = chats.get(chat_id, viewer)

            def read() -> ChatView:
                state = views.chat_state(context)
                return ChatView(
                    chat=views.chat_summary(context), running=context.running,
                    agents=state["agents"], last_answer=_last_answer(context),
                )  # fmt: skip

            return call(read)

        return await _off_loop(view)

    @server.tool()
    async def stop_chat(chat_id: ChatId, ctx: Context) -> Stopped:
        """Stop the chat's run (what was done so far stays in the chat)."""
        viewer = _viewer(ctx)
        await _off_loop(lambda: chats.get(chat_id, viewer).stop())
        return Stopped(stopped=True)

    return server


def _viewer(ctx: Context) -> str | None:
    """The user the request's key acts as (server/apis/mcp_server/endpoint.py put the name in
    the WSGI environ); None in the desktop mode. Never anybody's by default: a request
    whose user cannot be read is refused."""
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    name = scope.get("wsgi_environ", {}).get(USER_KEY)
    if not isinstance(name, str):
        raise ToolError("Cadre could not tell whose key this request carries: send it again")
    return name or None


async def _answer_with_progress(started: agent_calls.Started, ctx: Context) -> agent_calls.Answer:
    """Wait for the answer; meanwhile a progress notification per step (the SDK sends them
    only when the client passed a progress token), every step told before the answer."""
    told = itertools.count(1)

    async def tell(line: str) -> None:
        await ctx.report_progress(next(told), message=line)

    return await answer_with_steps(started, tell)
