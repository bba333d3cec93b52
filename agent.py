"""Agents and chats: the monologue loop and the superior/subordinate chain.

An `AgentContext` is one chat. Its Agent 0 talks to the user; any agent may
hand a subtask to a subordinate (Agent N+1) through `call_subordinate`, and
the two are linked both ways through their data (`_superior`,
`_subordinate`). `Agent.monologue()` is the loop: build the prompt, stream
the model, parse its reply, run the tool, until a tool ends the loop.
Everything that is not the loop itself lives in `helpers/`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from core import (
    budget,
    context_window,
    failed_step,
    long_results,
    reply_schema,
    reply_stream,
    runner,
    system_prompt,
    tool_offer,
)
from core.approvals import Approvals
from core.budget import Scope
from core.extract_tools import AgentReply, ReplyFormatError, parse_reply
from core.history import History
from core.log import Log, LogItem
from core.loop_guard import LoopGuard
from core.tool import Response, Tool
from core.tool_loader import cached_tool_class, find_tool_file, load_tool_class
from execution.code_sessions import CodeSessions
from helpers import folders
from helpers.errors import (
    BudgetExhausted,
    CadreError,
    InterventionException,
    ProviderError,
    RepairableException,
    ReplyTooLong,
    RunError,
    UserError,
)
from helpers.runtime import AgentRuntime
from helpers.secrets import chat_masker
from helpers.settings import Settings
from helpers.text_files import FileReads
from helpers.valid_text import valid_text
from memory import memories
from models.llm import ModelConfig, Usage, litellm_loaded
from models.model import Model, for_config
from profiles.catalog import layered_folders
from profiles.prompts import PromptLoader

log = logging.getLogger(__name__)

#: Replies longer than this are parsed in a worker thread.
PARSE_INLINE_LIMIT = 16_000
#: Longest reply of a utility call (summaries, memories), in tokens, unless it asks for less.
UTIL_MAX_TOKENS = 1_024


@dataclass(frozen=True)
class AgentConfig:
    """What an agent is made of: its profile, its models, its limits."""

    profile: str
    chat_model: ModelConfig
    util_model: ModelConfig
    embed_model: ModelConfig
    settings: Settings
    #: The setting overrides this config was made with (stored with a saved chat).
    overrides: dict[str, Any] = field(default_factory=dict)
    #: How a model config becomes a `Model` (the model seam): the client the settings
    #: pick; a benchmark or an embedding application passes its own.
    model_for: Callable[[ModelConfig], Model] = for_config


@dataclass
class UserMessage:
    """A message from the user (or a superior) to an agent."""

    message: str
    attachments: list[str] = field(default_factory=list)
    #: Extra framework text shown to the model with the message.
    system_message: list[str] = field(default_factory=list)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


@dataclass
class LoopData:
    """State of one iteration of the monologue."""

    iteration: int = 0
    system: str = ""
    messages: list[dict[str, str]] = field(default_factory=list)
    #: Text added to the end of the prompt this iteration (budgets, recalled memories, ...).
    extras: dict[str, str] = field(default_factory=dict)
    reply: AgentReply | None = None
    #: The live `response` log item when the reply is a `response` tool call.
    response_log: LogItem | None = None
    #: The live view of this iteration's model call.
    stream: reply_stream.ReplyStream | None = None


class AgentContext:
    """One chat: its agents, its log, and the one task that runs it."""

    def __init__(
        self,
        config: AgentConfig,
        runtime: AgentRuntime | None = None,
        *,
        id: str | None = None,  # noqa: A002 - the chat's id
        name: str = "",
        created_at: float | None = None,
        log: Log | None = None,
        project: str | None = None,
    ) -> None:
        self.id = id or uuid.uuid4().hex[:16]
        self.name = name
        self.created_at = created_at or time.time()
        #: When the user last sent a message (0: never).
        self.last_message = 0.0
        #: The process stopped while this chat ran; a message or `continue_interrupted` goes on.
        self.interrupted = False
        #: Called after every loop iteration and run; the chat store saves the chat here.
        self.persist: Callable[[], Awaitable[None]] | None = None
        #: Told when the run state changes (started, ended, paused, resumed).
        self.state_listeners: list[Callable[[], None]] = []
        self.config = config
        self.runtime = runtime
        #: The project the chat belongs to (its profiles and settings apply).
        self.project = project
        self.log = log or Log()
        self.log.masker = chat_masker(config.settings)
        self.usage = Usage()
        #: The chat's budget for the run going on (None between runs).
        self.budget: Scope | None = None
        #: Terminal, Python and Node.js sessions of this chat's agents.
        self.code_sessions = CodeSessions(folders.code_dir(self.id))
        #: Actions waiting for the user's approval.
        self.approvals = Approvals()
        self.agent0 = Agent(0, config, self)
        #: The agent whose loop runs now (the deepest one of the chain).
        self.working_agent: Agent | None = None
        self.control = runner.ChainControl(self)

    @property
    def running(self) -> bool:
        return self.control.running

    @property
    def task(self) -> asyncio.Task[str] | None:
        """The run's task, on the agents' loop (at most one per chat)."""
        return self.control.task

    @property
    def paused(self) -> bool:
        return self.control.paused

    def agents(self) -> list[Agent]:
        """Agent 0 and its subordinates, in chain order."""
        chain, agent = [], self.agent0
        while agent is not None:
            chain.append(agent)
            agent = agent.get_data(Agent.DATA_NAME_SUBORDINATE)
        return chain

    def communicate(self, msg: UserMessage, broadcast_level: int = 1) -> runner.RunHandle:
        """Send a user message: an intervention while running, else a new run.

        Returns the run's future (a `concurrent.futures.Future` when the chat
        has a runtime thread), which resolves to Agent 0's answer.
        """
        return self.control.communicate(msg, broadcast_level)

    def continue_interrupted(self) -> runner.RunHandle:
        """Go on with work the process lost when it stopped (a restored running chat)."""
        return self.control.continue_interrupted()

    def pause(self) -> None:
        self.control.pause()

    def resume(self) -> None:
        self.control.resume()

    def nudge(self) -> None:
        self.control.nudge()

    def stop(self) -> None:
        self.control.stop()

    def start_budget(self) -> None:
        """A run begins: the chat's budget from Agent 0's settings, over the chat's usage."""
        self.budget = budget.chat_scope(self.agent0.config.settings, self.usage)

    def approve(self, item_id: str, approved: bool) -> None:
        """Answer the approval the log item `item_id` asks for (UserError: none waits)."""
        if not self.runtime.call(self.approvals.decide, item_id, approved):
            raise UserError(f"nothing in this chat waits for approval as item {item_id!r}")

    async def _process_chain(
        self, agent: Agent, msg: UserMessage | str | None, user: bool = True
    ) -> str:
        """Run `agent` on `msg`; hand its answer up the chain to Agent 0.

        `user=False` means `msg` is a subordinate's answer that reaches its
        superior as the `call_subordinate` result (after a restore from disk,
        when no tool call is waiting for it). `msg=None` continues an agent
        that already has its task in history.
        """
        if isinstance(msg, UserMessage):
            agent.hist_add_user_message(msg)
        elif msg is not None and not user:
            long = len(msg) >= long_results.LEN_MIN
            hint = agent.read_prompt("fw.hint.call_sub.md") if long else ""
            agent.hist_add_tool_result("call_subordinate", msg, hint=hint)
        superior: Agent | None = agent.get_data(Agent.DATA_NAME_SUPERIOR)
        try:
            answer = await agent.monologue()
        except (RunError, UserError) as exc:
            if superior is None:
                raise
            # As in a live call_subordinate: the superior hears of the failure and decides.
            failed_step.show_failure(self.log, exc, agent.number, f"{agent.agent_name}: Stopped")
            answer = superior.read_prompt(
                "fw.call_sub.failed.md", subordinate=agent.agent_name, error=str(exc)
            )
        if superior is not None:
            agent.history.new_topic()
            self.working_agent = superior
            return await self._process_chain(superior, answer, user=False)
        return answer

    def notify_state(self) -> None:
        for listener in list(self.state_listeners):
            listener()

    async def save(self) -> None:
        """Save the chat, when a store is attached (after every loop iteration and run)."""
        if self.persist is not None:
            await self.persist()


class Agent:
    """One agent of a chat: its own history, data and loop."""

    DATA_NAME_SUPERIOR = "_superior"
    DATA_NAME_SUBORDINATE = "_subordinate"

    def __init__(self, number: int, config: AgentConfig, context: AgentContext) -> None:
        self.number = number
        self.config = config
        self.context = context
        self.agent_name = f"A{number}"
        self.history = History()
        self.data: dict[str, Any] = {}
        self.usage = Usage()
        self.intervention: UserMessage | None = None
        self.nudged = False
        #: Set when the user steps in, to cut a model call short.
        self.wake = asyncio.Event()
        #: Set by a nudge, which also cuts a running tool short.
        self.nudge_wake = asyncio.Event()
        self.last_reply = ""
        #: What this agent last saw of each file, so a stale patch is refused.
        self.file_reads = FileReads()
        #: Budgets of the delegations above this agent (and of its own), outermost first.
        self.delegation_budgets: list[Scope] = []
        #: The task memories were last recalled for, and what came back (a superior
        #: resuming after its subordinate keeps its task: no second search).
        self.recalled: tuple[object, str] | None = None
        #: History compression running in the background, if any.
        self.compression: asyncio.Task[None] | None = None
        self.unusable_replies = 0
        #: The warning item of the current run of unusable replies (one row, updated).
        self.repair_item: LogItem | None = None
        #: The calls of the current monologue, to stop one that goes round in circles.
        self.loop_guard = LoopGuard()
        #: The exact messages of this agent's last model call (the UI's "Context" view).
        self.last_prompt: list[dict[str, str]] = []
        #: The last system prompt built, reused while its files and companions are unchanged.
        self.built_prompt: system_prompt.BuiltPrompt | None = None
        self.prompts = PromptLoader(layered_folders(config.profile, "prompts", context.project))

    def reconfigure(self, config: AgentConfig) -> None:
        """Take new settings (between runs only: a working agent keeps what it started with)."""
        self.config = config
        self.prompts = PromptLoader(
            layered_folders(config.profile, "prompts", self.context.project)
        )
        self.built_prompt = None

    # -- data and links ------------------------------------------------------

    def get_data(self, key: str) -> Any:
        return self.data.get(key)

    def set_data(self, key: str, value: Any) -> None:
        self.data[key] = value

    def read_prompt(self, file: str, /, **variables: Any) -> str:
        """A prompt file for this agent's profile, rendered with `variables`."""
        return self.prompts.render(file, context=self, **variables)

    # -- the loop --------------------------------------------------------------

    async def monologue(self) -> str:
        """Think and act until a tool ends the loop; returns the final answer."""
        self.context.working_agent = self
        self.unusable_replies, self.repair_item, self.loop_guard = 0, None, LoopGuard()
        await self.context.save()  # the message that starts this work is on disk first
        recalled = await memories.recall_for_prompt(self)
        iteration = 0
        while True:
            loop_data = LoopData(iteration=iteration)
            if recalled:
                loop_data.extras["memories"] = recalled
            iteration += 1
            try:
                await self.handle_intervention()
                await self.prepare_prompt(loop_data)
                reply = await self.call_chat_model(loop_data)
                answer = await self.process_reply(reply, loop_data)
                if answer is not None:
                    return answer
                context_window.compress_in_background(self)
            except InterventionException:
                self.close_iteration(loop_data, "interrupted")
            except RepairableException as exc:
                self.close_iteration(loop_data, "rejected")
                self.handle_repairable(exc)
            except asyncio.CancelledError:
                self.close_iteration(loop_data, "stopped")
                raise
            finally:
                await self.context.save()

    async def prepare_prompt(self, loop_data: LoopData) -> None:
        budget.check(self.budget_scopes(), self.read_prompt)
        await context_window.fit_history(self)
        loop_data.system = await system_prompt.build_system_prompt(self)
        left = budget.left(self.budget_scopes())
        if left:
            loop_data.extras["budget"] = self.read_prompt("agent.extras.budget.md", budgets=left)
        loop_data.messages = system_prompt.build_messages(self, loop_data)
        if context_window.shrink_to_window(self, loop_data.messages):
            loop_data.messages = system_prompt.build_messages(self, loop_data)
        self.last_prompt = loop_data.messages

    def budget_scopes(self) -> list[Scope]:
        """Every budget this agent works under: the chat's, then its delegations'."""
        chat = self.context.budget
        return ([chat] if chat is not None else []) + self.delegation_budgets

    async def call_chat_model(self, loop_data: LoopData) -> str:
        """Stream the model's reply into the log; restartable by an intervention."""
        stream = loop_data.stream = reply_stream.ReplyStream(self, loop_data)
        model = self.config.model_for(self.config.chat_model)
        try:
            schema = await self._reply_schema()
        except BaseException:
            stream.progress.done()  # its progress words must not outlive the call
            raise
        call = model.stream(
            loop_data.messages,
            stream.on_chunk,
            on_usage=self.record_usage,
            schema=schema,
            on_retry=stream.on_retry,
        )
        try:
            # What was streamed so far is kept when an intervention cuts the reply short.
            reply = await self.interruptible(call, self.wake, lambda: stream.text)
        except ReplyTooLong as exc:
            # Nothing of it is kept: the model would only read the same flood again.
            stream.close("too long")
            limit = f"{exc.limit:,}"
            raise RepairableException(self.read_prompt("fw.msg_too_long.md", limit=limit)) from exc
        except ProviderError as exc:
            stream.fail(exc)  # no empty "Generating..." row stays behind
            raise
        finally:
            stream.progress.done()  # however the call ended, it is no longer on its way
        await self.context.control.wait_while_paused()  # show nothing new while paused
        return stream.finish(reply.text, reply.reasoning)

    async def _reply_schema(self) -> dict[str, Any] | None:
        """The JSON schema the reply is held to, or None where the model takes none."""
        model_config = self.config.chat_model
        await litellm_loaded()  # `wanted` may ask litellm, which may still be importing
        if not reply_schema.wanted(model_config, self.config.settings):
            return None
        precise = model_config.local is not None
        return await asyncio.to_thread(reply_schema.for_agent, self, precise)

    def close_iteration(self, loop_data: LoopData, why: str) -> None:
        """Mark what this iteration left in the log as `why` (interrupted, stopped, ...)."""
        if loop_data.stream is not None:
            loop_data.stream.close(why)

    async def process_reply(self, text: str, loop_data: LoopData) -> str | None:
        """Parse the reply and run its tool; the answer when the loop should end."""
        self.hist_add_ai_response(text)
        if text.strip() and text.strip() == self.last_reply:
            raise RepairableException(self.read_prompt("fw.msg_repeat.md"))
        self.last_reply = text.strip()
        try:
            # Repairing a broken long reply is slow pure Python: off the loop.
            big = len(text) > PARSE_INLINE_LIMIT
            reply = await asyncio.to_thread(parse_reply, text) if big else parse_reply(text)
        except ReplyFormatError as exc:
            raise RepairableException(
                self.read_prompt("fw.msg_misformat.md", error=str(exc))
            ) from exc
        if reply is None:
            raise RepairableException(self.read_prompt("fw.msg_misformat.md", error=""))
        loop_data.reply = reply
        tool = await self.get_tool(reply, text, loop_data)
        await self.handle_intervention()
        response = await self.run_tool(tool, loop_data)
        if response.break_loop:
            return self.mask(response.message)
        self.check_progress(tool, response)
        return None

    def check_progress(self, tool: Tool, response: Response) -> None:
        """A call that repeats an earlier one is no progress: warn, and stop after a few."""
        if tool.repeat_progress == "always":
            self.unusable_replies, self.repair_item = 0, None
            return
        result = response.message if tool.repeat_progress == "new_result" else None
        if not self.loop_guard.record(tool.full_name, tool.args, result):
            self.unusable_replies, self.repair_item = 0, None  # a new step: progress
            return
        limit = self.config.settings.max_repeated_calls
        if self.loop_guard.repeats >= limit:
            tools = ", ".join(self.loop_guard.repeated_tools)
            raise RunError(
                f"{self.agent_name} stopped going round in circles: {limit} calls repeated "
                f"earlier ones with the same arguments ({tools}) without getting further. "
                + self.give_up_hint()
            )
        self.hist_add_warning(self.read_prompt("fw.msg_no_progress.md", tool_name=tool.full_name))

    def give_up_hint(self) -> str:
        """What the user can do when this agent's model could not do the task."""
        if tool_offer.is_small(self.config.chat_model):
            return (
                "The model may be too small for this task: ask again more simply, "
                "or choose a larger model in Settings."
            )
        return "Ask again in other words, or with more detail."

    async def run_tool(self, tool: Tool, loop_data: LoopData) -> Response:
        """Run a tool (a nudge cuts it short); a crash is reported to the model."""
        try:
            return await self.interruptible(tool.run(), self.nudge_wake)
        except (CadreError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("tool %s failed", tool.full_name)
            raise RepairableException(
                self.read_prompt(
                    "fw.tool_error.md",
                    tool_name=tool.full_name,
                    error=f"{type(exc).__name__}: {exc}",
                )
            ) from exc

    def handle_repairable(self, exc: RepairableException) -> None:
        """Tell the model what went wrong; stop a model that keeps failing.

        Problems in a row share one warning in the log, updated with each, so a
        model that fails shows one row that counts up, then one plain error.
        """
        if not isinstance(exc, BudgetExhausted):  # the model did nothing wrong there
            self.unusable_replies += 1
        self.hist_add_warning(str(exc))
        heading = "Unusable reply"
        if isinstance(exc, BudgetExhausted):
            heading = "Budget exhausted"
        elif isinstance(exc.__cause__, ReplyTooLong):
            heading = "Reply too long"
        limit = self.config.settings.max_unusable_replies
        if self.repair_item is not None and self.unusable_replies > 1:
            heading = f"{heading} ({self.unusable_replies} of {limit} in a row)"
            self.repair_item.update(heading=f"{self.agent_name}: {heading}", content=str(exc))
        else:
            self.repair_item = self.context.log.log(
                "warning", f"{self.agent_name}: {heading}", str(exc), agentno=self.number
            )
        if self.unusable_replies >= limit:
            raise RunError(
                f"{self.agent_name} could not do this: {limit} unusable replies in a row "
                f"(the last: {exc}). " + self.give_up_hint()
            )

    async def get_tool(self, reply: AgentReply, text: str, loop_data: LoopData) -> Tool:
        path = None
        if reply.tool_name in self.available_tools():  # a tool not offered is not called either
            path = find_tool_file(self.config.profile, reply.tool_name, self.context.project)
        if path is None:
            raise RepairableException(
                self.read_prompt(
                    "fw.tool_not_found.md",
                    tool_name=reply.tool_name,
                    tools=", ".join(self.available_tools()),
                )
            )
        # Importing a tool file is slow: off the loop, unless it is already loaded.
        tool_class = cached_tool_class(path) or await asyncio.to_thread(load_tool_class, path)
        return tool_class(
            self, reply.tool_name, reply.tool_method, reply.tool_args, text, loop_data
        )

    def available_tools(self) -> list[str]:
        """The tools this agent is offered (those that can work here; fewer for a small model)."""
        return tool_offer.offered_tools(self)

    # -- interventions ---------------------------------------------------------

    async def handle_intervention(self, partial_reply: str = "") -> None:
        """A check point: wait while paused; restart the iteration if the user stepped in."""
        await self.context.control.wait_while_paused()
        if self.intervention is None and not self.nudged:
            return
        self.wake.clear()
        self.nudge_wake.clear()
        if partial_reply:
            self.hist_add_ai_response(partial_reply)
        if self.intervention is not None:
            msg, self.intervention = self.intervention, None
            self.hist_add_user_message(msg, intervention=True)
        if self.nudged:
            self.nudged = False
            self.hist_add_warning(self.read_prompt("fw.msg_nudge.md"))
        raise InterventionException()

    async def interruptible(
        self, coro: Any, event: asyncio.Event, partial: Callable[[], str] = str
    ) -> Any:
        """Await `coro`, but abandon it when `event` is set (the user stepped in).

        `partial` tells what the model had written so far, which is kept in
        history so the model knows where it was interrupted.
        """
        task = asyncio.ensure_future(coro)
        waker = asyncio.ensure_future(event.wait())
        try:
            done, _ = await asyncio.wait({task, waker}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # Stopped: the call unwinds before the run counts as ended, so whoever waits
            # for the run (a delete, a reset) never acts while a tool is still cleaning up.
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            waker.cancel()
        if task in done:
            return task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await self.handle_intervention(partial())
        # Woken with nothing pending (the check point consumed it first): the
        # call was abandoned all the same, so the iteration starts over.
        raise InterventionException()

    # -- history ---------------------------------------------------------------

    def mask(self, value: Any) -> Any:
        """`value` (text or nested data) without secret values: the chat's one masking rule.

        Everything that leaves a tool passes it: history, the log, agent data on
        disk, memory, utility-model prompts. The model reads placeholders, never secrets.
        """
        masker = self.context.log.masker
        return masker.mask_value(value) if masker else value

    def hist_add_user_message(self, msg: UserMessage, intervention: bool = False) -> None:
        """Add a user message; a new user message (not an intervention) starts a new topic."""
        if not intervention:
            self.history.new_topic()
        template = "fw.intervention.md" if intervention else "fw.user_message.md"
        text = self.read_prompt(
            template,
            message=msg.message,
            attachments="\n".join(msg.attachments),
            system_message="\n\n".join(msg.system_message),
        )
        self.history.add_message(ai=False, content=self.mask(text), pinned=True)
        self.last_reply = ""

    def hist_add_ai_response(self, text: str) -> None:
        # An empty assistant message is rejected by some providers (Anthropic)
        # on every later call; the warning that follows says what happened.
        if text.strip():
            self.history.add_message(ai=True, content=self.mask(text))

    def hist_add_tool_result(self, tool_name: str, result: str, **additional: Any) -> None:
        """Add a tool's result; a long one is also saved for `§§include`."""
        result = self.mask(result)  # a tool may print a secret it was given
        file = ""
        if len(result) >= long_results.LEN_MIN:
            file = long_results.save_long_result(self.context.id, result)
            saved = folders.chat_dir(self.context.id) / file
            result = long_results.cut_middle(
                result, lambda cut: self.read_prompt("fw.result_cut.md", cut=cut, path=saved)
            )
        hint = str(additional.get("hint", ""))
        if not hint and tool_offer.is_small(self.config.chat_model):
            # A small model went on calling tools after the result it needed was back.
            hint = self.read_prompt("fw.hint.small_answer.md")
        text = self.read_prompt(
            "fw.tool_result.md", tool_name=tool_name, result=result, hint=hint, file=file
        )
        self.history.add_message(ai=False, content=text, file=file or None)

    def hist_add_warning(self, message: str) -> None:
        # A tool's error may quote an argument it had with a secret expanded.
        text = self.read_prompt("fw.warning.md", message=message)
        self.history.add_message(ai=False, content=self.mask(text))

    async def call_utility_model(
        self, system: str, message: str, heading: str = "", max_tokens: int = UTIL_MAX_TOKENS
    ) -> str:
        """One utility-model call (summaries, names, ...), logged as a `util` item.

        The prompt is masked (a document or a task may hold a secret value) and the
        reply made valid text, as it goes on into names, summaries and memory. The
        reply is capped at `max_tokens`: a utility call must never hold a model for long.
        """
        item = self.context.log.log(
            "util", heading or f"{self.agent_name}: Utility call", agentno=self.number
        )
        messages = [{"role": "system", "content": self.mask(system)},
                    {"role": "user", "content": self.mask(message)}]  # fmt: skip
        reply = await self.config.model_for(self.config.util_model).complete(
            messages, self.record_usage, max_tokens=max_tokens
        )
        text = self.mask(valid_text(reply.text))
        item.update(content=text)
        return text

    def record_usage(self, usage: Usage) -> None:
        self.usage.add(usage)
        self.context.usage.add(usage)
        for scope in self.delegation_budgets:
            scope.spent.add(usage)
