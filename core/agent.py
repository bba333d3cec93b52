"""The agent: the monologue loop and the superior/subordinate chain.

A `Chat` (core/chat.py) is one chat. Its Agent 0 talks to the user; any agent may
hand a subtask to a subordinate (Agent N+1) through `call_subordinate`, and
the two are linked both ways by typed fields (`Agent.superior`,
`Agent.subordinates`, `Agent.task`). `Agent.monologue()` is the loop: build
the prompt, stream the model, parse its reply, run the tool, until a tool
ends the loop, and announce each step as a run event (core/events.py).
Its steps live beside it: the chat (chat.py), the runner that starts runs and
hands answers up the chain (runner.py), check points (interventions.py), the
prompt (prompt/), the reply and its repairs (reply/), tool calls (tooling/),
delegation (delegation/). What the rest of Cadre is given of an agent is its
run context (run_context.py, `Agent.ctx`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from core import budget, interventions, run_gate, utility_call, watched_model
from core.agent_types import AgentConfig, LoopData, UserMessage
from core.approvals import Held
from core.budget import Scope
from core.delegation import links, workflow
from core.delegation.handover import Handover
from core.events import (
    IterationEnded,
    IterationOutcome,
    MonologueEnded,
    MonologueStarted,
    StepProgressed,
    ToolEnded,
)
from core.log import LogItem
from core.prompt import chat_variables, context_window, history_entries, system_prompt, vision
from core.prompt.history import History
from core.reply import repair, reply_schema, reply_stream
from core.reply.extract_tools import AgentReply, ReplyFormatError, parse_reply
from core.reply.loop_guard import LoopGuard
from core.run_context import RunContext
from core.tooling import held_call, tool_call, tool_offer
from core.tooling.agent_zero import extension_points as agent_zero
from helpers.errors import (
    InterventionException,
    PromptError,
    ProviderError,
    RepairableException,
    ReplyTooLong,
)
from helpers.file_snapshot import one_look
from helpers.text_files import FileReads
from models.llm import Usage

if TYPE_CHECKING:
    from core.chat import Chat

log = logging.getLogger(__name__)

#: Replies longer than this are parsed in a worker thread.
PARSE_INLINE_LIMIT = 16_000
#: Longest reply of a utility call (summaries, memories), in tokens, unless it asks for less.
UTIL_MAX_TOKENS = 1_024


class Agent:
    """One agent of a chat: its own history, links and loop.

    What an agent owns is saved on purpose, not by a naming rule: every
    attribute is either a field of `core.chat_record.AgentRecord` (written
    by its `snapshot`, read back by its `restore`) or named in its
    `AGENT_NOT_SAVED` with the reason it is not: a new attribute is decided
    on there. tests/integration/test_restore.py holds every attribute to one
    of the two and compares a restored chat with the saved one field by field.
    """

    def __init__(self, number: int, config: AgentConfig, chat: Chat,
                 name: str = "") -> None:  # fmt: skip
        self.number = number
        self.config = config
        self.chat = chat
        #: "A<number>", with the path of sibling places above it if any (see `sibling`).
        self.agent_name = name or f"A{number}"
        #: The agent that delegated to this one (None for Agent 0, and for one cut loose).
        self.superior: Agent | None = None
        #: The agents this one delegated to: one (`subordinate`; a reset replaces it), or
        #: the siblings of one `call_subordinates` call, which worked at the same time.
        self.subordinates: list[Agent] = []
        self.retired: list[
            Agent
        ] = []  # replaced subordinates, on record (core/delegation/links.py)
        #: The task the superior gave this agent (None for Agent 0).
        self.task: str | None = None
        #: A sibling's handover, kept until its superior has every sibling's
        #: (core/delegation/parallel.py).
        self.handed: Handover | None = None
        #: Its tool call held for an answer (core/tooling/approval_gate.py, held_call.py).
        self.held: Held | None = None
        self.history = History()
        #: What tools keep on their agent between calls (a plugin's tools too): JSON
        #: data, masked and saved with the agent. The links are fields, never here.
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
        self.last_prompt: list[dict[str, Any]] = []
        #: The last system prompt built, reused while its files and companions are unchanged.
        self.built_prompt: system_prompt.BuiltPrompt | None = None
        self.prompts = chat_variables.prompt_loader(self.config.profile, self.chat.project_ref)
        #: What tools, memory and run-event handlers are given of this agent.
        self.ctx = RunContext(self)

    def reconfigure(self, config: AgentConfig) -> None:
        """Take new settings (between runs only: a working agent keeps what it started with)."""
        self.config = config
        self.prompts = chat_variables.prompt_loader(self.config.profile, self.chat.project_ref)
        self.built_prompt = None

    @property
    def context(self) -> Chat:
        """The chat, by Agent Zero's name for it: prompt companions (`get_variables(agent)`)
        and Agent Zero's tools read `agent.context`, so a profile brought over keeps working."""
        return self.chat

    # -- data and links ------------------------------------------------------

    @property
    def sibling(self) -> bool:
        """One of several started at once: a ".<k>" more than its superior (new_subordinate)."""
        depth = self.superior.agent_name.count(".") if self.superior is not None else 0
        return self.agent_name.count(".") > depth

    @property
    def subordinate(self) -> Agent | None:
        """The current subordinate (the latest one), if any."""
        return self.subordinates[-1] if self.subordinates else None

    def make_subordinate(self, config: AgentConfig, name: str) -> Agent:
        """A new agent one below this one, in its chat (linked by core/delegation)."""
        return Agent(self.number + 1, config, self.chat, name)

    def link_subordinate(self, subordinate: Agent) -> None:
        """Make `subordinate` the current one; those it replaces are cut loose."""
        links.link_siblings(self, [subordinate])

    def link_siblings(self, siblings: list[Agent]) -> None:
        """Make `siblings` (core/delegation/call_many.py) the subordinates; the last is current."""
        links.link_siblings(self, siblings)

    def unlink_subordinates(self) -> None:
        """Cut every subordinate loose (a reset, or their work was dropped)."""
        links.unlink_subordinates(self)

    def get_data(self, key: str) -> Any:
        """What a tool kept under `key` (see `data`), or None."""
        return self.data.get(key)

    def set_data(self, key: str, value: Any) -> None:
        """Keep `value` for a tool's later calls; saved with the chat, so JSON data only."""
        self.data[key] = value

    async def progressed(self) -> None:
        """A long step changed the chat (a slow tool, streamed output): tell the subscribers
        (saving among them); the step calls this at a bounded pace (helpers/paced_save.py)."""
        await self.chat.events.emit(StepProgressed(self.ctx))

    def read_prompt(self, file: str, /, **variables: Any) -> str:
        """A prompt file for this agent's profile, rendered with `variables` (a missing one
        after the folders are taken anew: a plugin switched on since may bring it)."""
        try:
            return self.prompts.render(file, context=self, **variables)
        except PromptError:
            if not chat_variables.take_prompt_folders(self):
                raise
            return self.prompts.render(file, context=self, **variables)

    # -- the loop --------------------------------------------------------------

    async def monologue(self) -> str:
        """Think and act until a tool ends the loop (or run the profile's workflow)."""
        with self.chat.at_work(self):
            answer = await workflow.work(self, lambda: agent_zero.until_end(self, self._loop()))
        await self.chat.events.emit(MonologueEnded(self.ctx, answer))  # a subordinate's too
        return answer

    async def _loop(self) -> str:
        self.unusable_replies, self.repair_item, self.loop_guard = 0, None, LoopGuard()
        # Saved first (the message that starts this work is on disk), memories recalled.
        await self.chat.events.emit(MonologueStarted(self.ctx))
        iteration = 0
        while True:
            loop_data = LoopData()
            if self.recalled is not None and self.recalled[1]:
                loop_data.extras["memories"] = self.recalled[1]
            iteration += 1
            outcome: IterationOutcome = "failed"
            try:
                with one_look():  # plugins, profiles, tools: looked at once a step
                    await self.handle_intervention()
                    if self.held is not None:  # a call held when the chat was saved goes on
                        answer = await held_call.go_on(self, self.held, loop_data)
                    else:
                        await self.prepare_prompt(loop_data)
                        reply = await self.call_chat_model(loop_data)
                        answer = await self.process_reply(reply, loop_data)
                outcome = "tool" if answer is None else "answer"
                if answer is not None:
                    return answer
            except InterventionException:
                outcome = self.close_iteration(loop_data, "interrupted")
            except RepairableException as exc:
                outcome = self.close_iteration(loop_data, "rejected")
                repair.handle_repairable(self, exc, loop_data.stream)
            except asyncio.CancelledError:
                outcome = self.close_iteration(loop_data, "stopped")
                raise
            finally:
                await self.chat.events.emit(IterationEnded(self.ctx, iteration, outcome))

    async def prepare_prompt(self, loop_data: LoopData) -> None:
        run_gate.check_step(self.chat)  # the owner's daily limits (core/run_gate.py)
        chat_variables.take_prompt_folders(self)  # a plugin's, as its tools, at each step
        budget.check(self.budget_scopes(), self.read_prompt)
        await context_window.fit_history(self)
        loop_data.system = await system_prompt.build_system_prompt(self)
        left = budget.left(self.budget_scopes())
        if left:
            loop_data.extras["budget"] = self.read_prompt("agent.extras.budget.md", budgets=left)
        await vision.facts_loaded(self)  # does the model see images? (litellm's map)
        vision.tell_unseen(self)  # the person hears of the images the model is not shown
        await agent_zero.prompt_ready(self, loop_data)  # may add parts and extras
        loop_data.messages = system_prompt.build_messages(self, loop_data)
        if context_window.shrink_to_window(self, loop_data.messages):
            loop_data.messages = system_prompt.build_messages(self, loop_data)
        self.last_prompt = loop_data.messages

    def budget_scopes(self) -> list[Scope]:
        """Every budget this agent works under: the chat's, then its delegations'."""
        chat = self.chat.budget
        return ([chat] if chat is not None else []) + self.delegation_budgets

    async def call_chat_model(self, loop_data: LoopData) -> str:
        """Stream the model's reply into the log; restartable by an intervention."""
        stream = loop_data.stream = reply_stream.ReplyStream(self, loop_data)
        model = watched_model.watched(self, "chat", self.config.chat_model)
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
            reply = await interventions.interruptible(self, call, self.wake, lambda: stream.text)
        except ReplyTooLong as exc:
            # Nothing of it is kept: the model would only read the same flood again.
            stream.close("too long")
            limit = f"{exc.limit:,}"
            raise RepairableException(self.read_prompt("fw.msg_too_long.md", limit=limit)) from exc
        except ProviderError as exc:
            stream.fail(exc)  # no empty "Generating..." row stays behind
            raise
        finally:
            await stream.ended()  # however the call ended, it is no longer on its way
        await self.chat.runner.wait_while_paused()  # show nothing new while paused
        return stream.finish(reply.text, reply.reasoning)

    async def _reply_schema(self) -> dict[str, Any] | None:
        """The JSON schema the reply is held to, or None where the model takes none."""
        model_config = self.config.chat_model
        await reply_schema.facts_ready(model_config, self.config.settings)
        if not reply_schema.wanted(model_config, self.config.settings):
            return None
        precise = model_config.local is not None
        answer_only = precise and self.loop_guard.answer_now  # see core/reply/loop_guard.py
        return await asyncio.to_thread(reply_schema.for_agent, self, precise, answer_only)

    def close_iteration(self, loop_data: LoopData, why: IterationOutcome) -> IterationOutcome:
        """Mark what this iteration left in the log as `why` (interrupted, stopped, ...)."""
        if loop_data.stream is not None:
            loop_data.stream.close(why)
        return why

    async def process_reply(self, text: str, loop_data: LoopData) -> str | None:
        """Parse the reply and run its tool; the answer when the loop should end."""
        self.add_reply(text)
        if text.strip() and text.strip() == self.last_reply:
            self.loop_guard.answer_now = True
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
        return await self.make_call(reply, text, loop_data)

    async def make_call(self, reply: AgentReply, text: str, loop_data: LoopData,
                        item: LogItem | None = None) -> str | None:  # fmt: skip
        """Run the tool `reply` calls (on `item`: a held call's own); the loop's answer."""
        tool = await tool_call.find_tool(self, reply, text, loop_data)
        tool.log = item  # None but for a held call made again (before_execution makes it)
        await self.handle_intervention()
        response = await tool_call.run_tool(self, tool)
        await self.chat.events.emit(ToolEnded(self.ctx, tool.full_name, response))
        if response.break_loop:
            return self.mask(response.message)
        repair.check_progress(self, tool, response)
        return None

    def available_tools(self) -> list[str]:
        """The tools this agent is offered (those that can work here; fewer for a small model)."""
        return tool_offer.offered_tools(self)

    async def handle_intervention(self, partial_reply: str = "") -> None:
        """A check point: wait while paused; restart the iteration if the user stepped in."""
        await interventions.check_point(self, partial_reply)

    # -- history ---------------------------------------------------------------

    def mask(self, value: Any) -> Any:
        """`value` (text or nested data) without secret values: the chat's one masking rule.

        Everything that leaves a tool passes it: history, the log, agent data on
        disk, memory, utility-model prompts. The model reads placeholders, never secrets.
        """
        masker = self.chat.log.masker
        return masker.mask_value(value) if masker else value

    def add_user_message(self, msg: UserMessage, intervention: bool = False) -> None:
        """Add a user message; a new user message (not an intervention) starts a new topic."""
        history_entries.add_user_message(self, msg, intervention)

    def add_reply(self, text: str) -> None:
        history_entries.add_ai_response(self, text)

    def add_tool_result(self, tool_name: str, result: str, hint: str = "",
                        images: list[Any] | None = None,
                        source: str | None = None) -> None:  # fmt: skip
        """Add a tool's result (`hint`: advice shown with it); a long one is saved for
        `§§include`; one with a `source` came from outside and is marked as data."""
        result = agent_zero.tool_result_added(self, tool_name, result)  # hist_add_tool_result
        history_entries.add_tool_result(self, tool_name, result, hint, images, source)

    def add_warning(self, message: str) -> None:
        history_entries.add_warning(self, message)

    # Agent Zero's names for the four above (its tools, and older ones of Cadre's, call them).
    hist_add_user_message = add_user_message
    hist_add_ai_response = add_reply
    hist_add_warning = add_warning

    def hist_add_tool_result(self, tool_name: str, result: str, **additional: Any) -> None:
        self.add_tool_result(tool_name, result, str(additional.get("hint", "")),
                             additional.get("images"))  # fmt: skip

    async def call_utility_model(
        self, system: str, message: str, heading: str = "", max_tokens: int = UTIL_MAX_TOKENS
    ) -> str:
        """One utility-model call (summaries, names, ...), logged: core/utility_call.py."""
        return await utility_call.call(self, system, message, heading, max_tokens)

    def record_usage(self, usage: Usage) -> None:
        self.usage.add(usage)
        self.chat.usage.add(usage)
        run_gate.spent(self.chat, usage)  # the owner's day, for their limits and the admin
        for scope in self.delegation_budgets:
            scope.spent.add(usage)
