"""The runner: a chat's runs from start to answer, and the user's controls over them.

It starts a run (a message, a retry, a resumed chain), hands each subordinate's
answer (or failure) up to its superior through one path (core/delegation/handover.py, live
and after a restore alike), and steers the run: interventions, pause, resume,
nudge, stop. It announces the run's events (core/events.py).

Web handlers call these from their own threads. Every decision ("is the chat
running?") and every change of agent state is made on the agents' event loop,
so a message can never fall between a run that is ending and the next one: a
message that arrives while a run ends is kept as an intervention, and if the
run ends without reading it, it starts the next run.

A chat runs at most one asyncio task. Callers outside the loop get a Future that
settles once that task has unwound: "not running" means "nothing still cleans up".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from core import failed_step, run_gate
from core.delegation import resume
from core.events import RunEnded, RunStarted, StateChanged
from helpers.errors import RunError, UserError

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import UserMessage
    from core.chat import Chat

log = logging.getLogger(__name__)

T = TypeVar("T")

#: What a caller gets for a run: a thread-safe future from outside the loop,
#: the task itself when the chat has no runtime thread (tests on one loop).
RunHandle = concurrent.futures.Future[str] | asyncio.Future[str]


class Runner:
    """The runs of one chat and the user's controls over them."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.task: asyncio.Task[str] | None = None
        self._handle: RunHandle | None = None
        #: The last run's end being announced (its final save among it), if any.
        self.ended: asyncio.Future[None] | None = None
        #: Message id → the run a message sent as the previous run ended started.
        self.followups: dict[str, RunHandle] = {}
        self._unpaused = asyncio.Event()
        self._unpaused.set()
        #: Why this chat takes no more messages (it is being deleted or replaced), if so.
        self.closed = ""

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def close(self, why: str) -> None:
        """Refuse every message and start from now on with `why` (call on the loop).

        The chat is going away: a message accepted now would be acknowledged,
        then lost with the chat, or start a run nobody can see.
        """
        self.closed = why

    def reopen(self) -> None:
        """Take messages again: the chat did not go away after all (its stop failed)."""
        self.closed = ""

    def _check_open(self, starting: bool = True) -> None:
        """The chat takes messages; a run `starting` is one its owner's limits allow."""
        if self.closed:
            raise UserError(self.closed)
        if starting:
            run_gate.check_start(self.chat)  # OverLimit (core/run_gate.py)

    # -- running ---------------------------------------------------------------

    def communicate(self, msg: UserMessage, broadcast_level: int = 1, to: str = "") -> RunHandle:
        """A new run, or an intervention in the current one (see module doc); `to` names
        the agent an intervention goes to (see `_intervene`)."""
        return self._on_loop_wait(self._communicate, msg, broadcast_level, to)

    def start_chain(self, agent: Agent) -> RunHandle:
        """Run `agent` on what its history holds (a restored working agent, a retried
        step) and hand its answer up the chain."""

        def start() -> RunHandle:
            self._check_open()
            if self.running:
                raise RunError("this chat is already running")
            return self._start(agent, None)

        return self._on_loop_wait(start)

    def answer_for(self, msg: UserMessage, handle: concurrent.futures.Future[str],
                   timeout: float) -> str:  # fmt: skip
        """Wait for the answer to `msg`: the run it joined, or the one it started when
        that run ended before reading it (thread-side; the API waits this way)."""
        answer = handle.result(timeout)
        follow = self.followups.pop(msg.id, None)
        if isinstance(follow, concurrent.futures.Future):
            answer = follow.result(timeout)
        return answer

    def rerun(self, prepare: Callable[[], UserMessage]) -> RunHandle:
        """Run Agent 0 on the message `prepare` returns, once it has cut the chat back
        (core/rerun.py: Edit and Resend of the last message).

        Refused while a run goes on: the user stops it first, so what is cut is
        what the user saw. `prepare` runs on the loop right before the run starts,
        so no message slips in between the cut and the new run.
        """

        def go() -> RunHandle:
            self._check_open()
            if self.running:
                raise RunError(
                    "this chat is still running: stop it first, then edit or resend your message"
                )
            msg = prepare()
            self.chat.last_message = time.time()
            self._log_user(msg, intervention=False)
            # The run saves the chat as it takes the message (Agent.monologue): from
            # then on a restart finds the cut chat, not the old turn.
            return self._start(self.chat.agent0, msg)

        return self._on_loop_wait(go)

    def continue_interrupted(self, failed_node: str = "", how: str = "failed") -> RunHandle:
        """Resume a chat whose run the process lost (see `Chat.interrupted`); `failed_node`:
        the cluster's node that ran it, and `how` it ended (the agents are told so)."""

        def go() -> RunHandle:
            self._check_open(starting=not self.running)
            if self.running:
                assert self._handle is not None
                return self._handle
            if not self.chat.interrupted:
                raise UserError("this chat was not interrupted: there is nothing to continue")
            went = f"Node {failed_node}, which ran this chat, {how}. " if failed_node else ""
            self.chat.log.log("info", "Continuing", f"{went}Resuming the interrupted work.")
            return self._start(resume.tell_resumed(self.chat, None, failed_node, how), None)

        return self._on_loop_wait(go)

    def _continue(self, msg: UserMessage | None) -> RunHandle:
        """Start again at the working agents (each sibling of a batch), answers up the chain."""
        return self._start(resume.tell_resumed(self.chat, msg), None)

    def _communicate(self, msg: UserMessage, broadcast_level: int, to: str = "") -> RunHandle:
        # A run that was told to stop but is still unwinding (a tool cleaning up) reads no
        # more messages: this one starts the next run, once that one has ended.
        stopping = self.task if self.running and self.task.cancelling() else None
        running = self.running and stopping is None
        self._check_open(starting=not running)  # an intervention is never refused a limit
        self.chat.last_message = time.time()
        targets = self._targets(broadcast_level, to) if running else []
        if stopping is None:  # else logged when its run starts, after the old one's "Stopped"
            self._log_user(msg, running, targets)
        if running:
            self._intervene(msg, broadcast_level, targets)
            # On disk at once: the agent may read it only much later (paused, long tool).
            to = ",".join(t.agent_name for t in targets)
            self.chat.events.emit_soon(StateChanged("intervention", detail=to))
            assert self._handle is not None
            return self._handle
        if self.chat.interrupted:
            return self._continue(msg)
        return self._start(self.chat.agent0, msg, after=stopping)

    def _log_user(
        self, msg: UserMessage, intervention: bool, targets: list[Agent] | None = None
    ) -> None:
        # An intervention belongs to the agent that reads it (the working one), so the
        # log draws it in that agent's delegation block, where it went.
        to = (targets or [self.chat.working_agent or self.chat.agent0])[0]
        named = "." in to.agent_name  # its number does not tell it (core/log.py)
        kvps: dict[str, Any] = {"attachments": msg.attachments} if msg.attachments else {}
        if intervention and targets and (len(targets) > 1 or named):
            kvps["to"] = [t.agent_name for t in targets]
        self.chat.log.log(
            "user",
            "User intervention" if intervention else "User message",
            msg.message,
            kvps=kvps or None,
            agentno=to.number if intervention else 0,
            agent=to.agent_name if intervention and len(targets or []) == 1 and named else "",
        )

    def _start(
        self, agent: Agent, msg: UserMessage | None, after: asyncio.Task[str] | None = None
    ) -> RunHandle:
        task = asyncio.get_running_loop().create_task(self._run(agent, msg, after))
        self.task = task
        handle: RunHandle = task
        runtime = self.chat.runtime
        future: concurrent.futures.Future[str] | None = None
        if runtime is not None:
            future = concurrent.futures.Future()
            # A caller that cancels its future stops the run.
            future.add_done_callback(lambda f: f.cancelled() and runtime.call_soon(task.cancel))
            handle = future
        # A follow-up run is known before a caller wakes; a caller wakes once the end is saved.
        task.add_done_callback(lambda done: self._after_run(done, future))
        self._handle = handle
        self.chat.events.emit_soon(RunStarted(agent.ctx))
        return handle

    async def _run(
        self, agent: Agent, msg: UserMessage | None, after: asyncio.Task[str] | None
    ) -> str:
        """The run's task: `agent` on `msg`, then up the chain; failures said in the log."""
        context = self.chat
        if after is not None:
            await asyncio.wait({after})  # the stopped run ends first
            if msg is not None:  # a user's message, logged only now (see _communicate)
                self._log_user(msg, intervention=False)
        context.start_budget()
        try:
            if msg is not None:
                agent.add_user_message(msg)
            return await self._up_the_chain(agent)
        except (RunError, UserError) as exc:  # on the page, and in the server's log
            log.warning("chat %s: the run failed: %s", context.id, exc, exc_info=exc)
            failed_step.show_failure(context.log, exc, _agentno(context), retry=True)
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
            self._unpaused.set()

    async def _up_the_chain(self, agent: Agent) -> str:
        """Run `agent`, and each superior in turn on its subordinates' handovers: Agent 0's
        answer. (Live, a superior runs its subordinates itself; this carries a chain
        that was resumed at a subordinate, when no tool call waits for its answer.)"""
        owed = resume.owed_work(agent)
        self.chat.busy = []  # each loop notes itself again as it starts
        return await resume.finish(self.chat.agent0, owed)

    def _after_run(
        self, task: asyncio.Task[str], future: concurrent.futures.Future[str] | None
    ) -> None:
        """On the loop, once the run has unwound: a message it never read starts the next;
        the caller's `future` is settled once the run's end is saved."""
        self.chat.working_agent = None
        self.chat.busy = []
        pending = self._take_pending()
        if pending is not None and not self.running and not self.closed:
            self.followups[pending.id] = self._start(self.chat.agent0, pending)
        # Saved again now that the run is over (the last save still said "running").
        settle = (lambda: _settle(task, future)) if future is not None else None
        self.ended = self.chat.events.emit_soon(_ended(task), recorded=settle)

    # -- interventions ---------------------------------------------------------

    def _targets(self, broadcast_level: int, to: str) -> list[Agent]:
        """Who an intervention goes to: the agent named `to` while it works, else every
        working agent (one in a chain, each working sibling); -1: every busy agent."""
        context = self.chat
        if broadcast_level < 0:
            return [a for a in context.agents() if any(a is b for b in context.busy)] or [
                context.working_agent or context.agent0
            ]
        named = context.find_agent(to) if to else None
        if named is not None and any(named is b for b in context.busy):
            return [named]
        return context.working_agents() or [context.working_agent or context.agent0]

    def _intervene(
        self, msg: UserMessage, broadcast_level: int, targets: list[Agent] | None = None
    ) -> None:
        """Give `msg` to each target (default: see `_targets`) and up its chain
        (`broadcast_level` agents; -1: all)."""
        for target in targets if targets is not None else self._targets(broadcast_level, ""):
            agent: Agent | None = target
            level = broadcast_level
            first = True
            while agent is not None and (level != 0 or first):
                agent.intervention = msg
                agent.wake.set()
                first = False
                level -= 1
                agent = agent.superior

    def _take_pending(self) -> UserMessage | None:
        """The intervention no agent has read yet (if any); all are cleared."""
        pending = None
        for agent in self.chat.agents():
            pending = pending or agent.intervention
            agent.intervention = None
            agent.nudged = False
            agent.wake.clear()
            agent.nudge_wake.clear()
        return pending

    # -- pause, nudge, stop ----------------------------------------------------

    @property
    def paused(self) -> bool:
        return not self._unpaused.is_set()

    async def wait_while_paused(self) -> None:
        if not self._unpaused.is_set():
            await self._unpaused.wait()

    def pause(self) -> None:
        def _pause() -> None:
            self._unpaused.clear()
            self.chat.events.emit_soon(StateChanged("paused"))

        self._on_loop(_pause)

    def resume(self) -> None:
        def _resume() -> None:
            self._unpaused.set()
            self.chat.events.emit_soon(StateChanged("resumed"))

        self._on_loop(_resume)

    def nudge(self) -> None:
        """Restart each working agent's iteration (model call or tool), telling it to go on."""

        def _nudge() -> None:
            if not self.running:
                return
            working = self.chat.working_agents() or [self.chat.working_agent]
            for agent in working:
                if agent is not None:
                    agent.nudged = True
                    agent.wake.set()
                    agent.nudge_wake.set()

        self._on_loop(_nudge)

    def stop(self) -> None:
        """Cancel the whole chain; messages not yet read are dropped with it."""

        def _stop() -> None:
            if self.running:
                self._take_pending()
                assert self.task is not None
                self.task.cancel()
            self._unpaused.set()

        self._on_loop(_stop)

    # -- the loop thread -------------------------------------------------------

    def _on_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        runtime = self.chat.runtime
        if runtime is None:
            fn(*args)
        else:
            runtime.call_soon(fn, *args)

    def _on_loop_wait(self, fn: Callable[..., T], *args: Any) -> T:
        runtime = self.chat.runtime
        return fn(*args) if runtime is None else runtime.call(fn, *args)


def _settle(task: asyncio.Task[str], future: concurrent.futures.Future[str]) -> None:
    """Copy a finished task's outcome to a thread-safe future."""
    if future.done():  # the caller cancelled it already
        if not task.cancelled():
            task.exception()  # mark it retrieved; the caller chose not to hear it
        return
    if task.cancelled():
        future.cancel()
    elif (error := task.exception()) is not None:
        future.set_exception(error)
    else:
        future.set_result(task.result())


def _ended(task: asyncio.Task[str]) -> RunEnded:
    if task.cancelled():
        return RunEnded()
    error = task.exception()
    return RunEnded(error=error) if error is not None else RunEnded(answer=task.result())


def _agentno(context: Chat) -> int:
    agent = context.working_agent
    return agent.number if agent is not None else 0
