"""Steering a running chat: start, intervene, pause, resume, nudge, stop.

Web handlers call these from their own threads; every change of agent state
is carried out on the agents' event loop (`AgentRuntime.call_soon`), so the
loop never sees a half-made change. A chat runs at most one task; a message
sent while it runs becomes an intervention instead of a second task.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from helpers.errors import RunError, UserError

if TYPE_CHECKING:
    from agent import Agent, AgentContext, UserMessage

log = logging.getLogger(__name__)


class ChainControl:
    """The run of one chat and the user's controls over it."""

    def __init__(self, context: AgentContext) -> None:
        self.context = context
        self._unpaused = asyncio.Event()
        self._unpaused.set()
        self._lock = threading.Lock()

    # -- running ---------------------------------------------------------------

    def communicate(self, msg: UserMessage, broadcast_level: int = 1) -> Any:
        with self._lock:
            running = self.context.running
            self.context.log.log(
                "user",
                "User intervention" if running else "User message",
                msg.message,
                kvps={"attachments": msg.attachments} if msg.attachments else None,
            )
            if running:
                self._on_loop(self._intervene, msg, broadcast_level)
                return self.context.task
            return self._start(self.context.agent0, msg)

    def start_chain(self, agent: Agent, msg: UserMessage | str | None, user: bool = True) -> Any:
        """Run `agent` (a restored working agent, say) and hand its answer up the chain."""
        with self._lock:
            if self.context.running:
                raise RunError("this chat is already running")
            return self._start(agent, msg, user)

    def _start(self, agent: Agent, msg: UserMessage | str | None, user: bool = True) -> Any:
        coro = self._run(agent, msg, user)
        runtime = self.context.runtime
        task: Any = runtime.submit(coro) if runtime else asyncio.ensure_future(coro)
        self.context.task = task
        return task

    async def _run(self, agent: Agent, msg: UserMessage | str | None, user: bool) -> str:
        context = self.context
        try:
            return await context._process_chain(agent, msg, user)
        except (RunError, UserError) as exc:
            context.log.log("error", "Error", str(exc), agentno=_agentno(context))
            raise
        except asyncio.CancelledError:
            context.log.log("info", "Stopped", "The run was stopped.", agentno=_agentno(context))
            raise
        except Exception as exc:
            # A bug of ours: the user sees a short message, the server log the traceback.
            log.exception("chat %s: unexpected error", context.id)
            context.log.log("error", "Unexpected error", f"{type(exc).__name__}: {exc}")
            raise RunError(f"unexpected error: {exc}") from exc
        finally:
            context.working_agent = None
            self._unpaused.set()
            self._clear_interventions()

    # -- interventions ---------------------------------------------------------

    def _intervene(self, msg: UserMessage, broadcast_level: int) -> None:
        """Give `msg` to the working agent and up the chain (-1: the whole chain)."""
        agent = self.context.working_agent or self.context.agent0
        level = broadcast_level
        first = True
        while agent is not None and (level != 0 or first):
            agent.intervention = msg
            agent.wake.set()
            first = False
            level -= 1
            agent = agent.get_data(type(agent).DATA_NAME_SUPERIOR)

    def _clear_interventions(self) -> None:
        for agent in self.context.agents():
            agent.intervention = None
            agent.nudged = False
            agent.wake.clear()

    # -- pause, nudge, stop ----------------------------------------------------

    @property
    def paused(self) -> bool:
        return not self._unpaused.is_set()

    async def wait_while_paused(self) -> None:
        if not self._unpaused.is_set():
            await self._unpaused.wait()

    def pause(self) -> None:
        self._on_loop(self._unpaused.clear)

    def resume(self) -> None:
        self._on_loop(self._unpaused.set)

    def nudge(self) -> None:
        """Restart the working agent's iteration, telling it to get going."""

        def _nudge() -> None:
            agent = self.context.working_agent
            if agent is not None:
                agent.nudged = True
                agent.wake.set()

        self._on_loop(_nudge)

    def stop(self) -> None:
        """Cancel the whole chain; what was written stays consistent."""
        task = self.context.task
        if task is not None and not task.done():
            task.cancel()
        self.resume()

    def _on_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        runtime = self.context.runtime
        if runtime is None:
            fn(*args)
        else:
            runtime.call_soon(fn, *args)


def _agentno(context: AgentContext) -> int:
    agent = context.working_agent
    return agent.number if agent is not None else 0
