"""A chat: its id and name, Agent 0, log, usage and budget, sessions, events and runner.

What a chat is, apart from its agents' loops (core/agent.py). The runner
(core/runner.py) runs it; the chat store (store/chats.py) saves it; its run
events (core/events.py) tell whoever listens. The methods here are the chat's
controls, as web handlers call them (any thread: the runner does the work on the
agents' loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from accounts.spaces import space_of
from browsing.session import ChatBrowser
from core import budget, plugin_handlers, run_features, runner, tracing
from core.agent import Agent
from core.approvals import Always, Answer, Approvals, Held
from core.budget import Scope
from core.events import RunEvents, StateChanged
from core.log import SPEAKER, Log
from core.prompt import chat_variables
from core.tooling.agent_zero import extension_points as agent_zero
from execution.code_sessions import CodeSessions
from helpers import folders
from helpers.errors import NotFound
from helpers.runtime import AgentRuntime
from helpers.secrets import chat_masker
from models.llm import Usage
from profiles.projects import ProjectRef, place_of

if TYPE_CHECKING:
    from core.agent_types import AgentConfig, UserMessage
    from core.replay.session import Replay
    from core.run_context import RunContext


AgentStatus = Literal["idle", "working", "waiting", "done"]


@dataclass(frozen=True)
class AgentEntry:
    """One agent of a chat, as the page's tree and the API show it (`Chat.tree`)."""

    number: int
    name: str
    #: The name of the agent it works (or worked) for; None for Agent 0.
    superior: str | None
    profile: str
    usage: Usage
    #: idle (no run), working, waiting (for its subordinates), done (in this run).
    status: AgentStatus
    #: Its tool call waiting for a person's answer (core/approvals.py), if any: its rule name.
    held: str | None = None


class Chat:
    """One chat: its agents (Agent 0 talks to the user), its log, its events, and the
    runner that runs it."""

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
        owner: str | None = None,
    ) -> None:
        self.id = id or uuid.uuid4().hex[:16]
        self.name = name
        self.created_at = created_at or time.time()
        #: When the user last sent a message (0: never).
        self.last_message = 0.0
        #: The process stopped while this chat ran; a message or `continue_interrupted` goes on.
        self.interrupted = False
        #: What happens in the chat's runs, for whoever acts on it (saving, the UI, memory).
        self.events = RunEvents()
        self.config = config
        self.runtime = runtime
        #: The project the chat belongs to (its profiles and settings apply).
        self.project = project
        #: The user whose chat this is (accounts/users.py); None: made before any account
        #: existed (the first admin's, then) or in the one-person desktop mode.
        self.owner = owner
        self.log = log or Log()
        self.log.masker = chat_masker(config.settings)
        self.usage = Usage()
        #: The chat's budget for the run going on (None between runs).
        self.budget: Scope | None = None
        #: Terminal, Python and Node.js sessions of this chat's agents.
        self.code_sessions = CodeSessions(folders.code_dir(self.id))
        #: The chat's web browser (tools/browser.py): its tabs survive between steps.
        self.browser = ChatBrowser(folders.chat_dir(self.id) / "browser")
        #: Actions waiting for the user's approval.
        self.approvals = Approvals()
        #: The agent whose loop runs now (the deepest one of the chain; with siblings
        #: working at once, the one that started last).
        self.working_agent: Agent | None = None
        #: Context variables (core/prompt/chat_variables.py): prompts read them as {{ctx.name}},
        #: tools as `self.ctx.variables`; every agent of the chat shares them.
        #: Swapped whole (`set_variables`), never changed in place.
        self.variables: dict[str, str] = {}
        #: Agent 0's own profile while it has handed the conversation to another one
        #: (core/delegation/handoff.py; who talks now is Agent 0's profile); None: no handoff.
        self.home_profile: str | None = None
        #: Every agent whose loop is on (a superior waiting for its subordinates too); for a
        #: chat the process lost mid-run, those owed a resume (saved, see core.chat_record).
        self.busy: list[Agent] = []
        #: The scheduled task whose run this chat runs now (scheduler/service.py): its own
        #: report tells how the run went, so the notification history adds no second one.
        self.task_run: str | None = None
        #: The chat this one replays (core/replay): `{"id", "tools", "on_difference"}`, saved;
        #: None for any other chat. `replay` is the replay under way in this process.
        self.replay_of: dict[str, str] | None = None
        self.replay: Replay | None = None
        #: The chat this one was branched from and the log item it was branched at
        #: (`{"id", "at"}`, core/chat_cut.py); None: not a branch.
        self.parent: dict[str, Any] | None = None
        #: Writes the chat to disk: set by the chat store that lists it (store/chats.py).
        #: What changes a saved field outside the run's own saves (a plugin naming the
        #: chat) calls `save`.
        self.saver: Callable[[], Awaitable[None]] | None = None
        self.runner = runner.Runner(self)
        run_features.subscribe(self)
        agent_zero.subscribe(self)  # process_chain_end of Agent Zero's extensions
        plugin_handlers.subscribe(self)  # the active plugins' handlers (core/plugin_handlers.py)
        tracing.subscribe(self)  # a run traced over OpenTelemetry when on (core/tracing/)
        #: The agent that talks to the user.
        self.agent0 = Agent(0, config, self)

    async def save(self) -> None:
        """Write the chat now (on the agents' loop), through the store that lists it; a chat
        no store lists (deleted, or made by a test alone) is not written."""
        if self.saver is not None:
            await self.saver()

    async def end_sessions(self) -> None:
        """End what the chat holds open outside Cadre: code sessions, the browser's tabs."""
        self.code_sessions.close_all()
        await self.browser.close()

    @property
    def running(self) -> bool:
        return self.runner.running

    @property
    def space(self) -> Path:
        """The owner's folder (accounts/spaces.py): their memory, knowledge, projects and
        work folder; usr/ in the desktop mode and for the first admin."""
        return space_of(self.owner)

    @property
    def project_ref(self) -> ProjectRef | None:
        """Where the chat's agents find their project, profiles and skills: its project in
        its owner's space; outside one, the owner's space alone (a ProjectRef without a
        name, false: no project) when it is not usr/, so that their own agents/ and
        skills/ are found; None for usr/'s chats outside a project (profiles/projects.py
        `place_of`). What profiles/ is given."""
        return place_of(self.project, self.space)

    @property
    def task(self) -> asyncio.Task[str] | None:
        """The run's task, on the agents' loop (at most one per chat)."""
        return self.runner.task

    @property
    def paused(self) -> bool:
        return self.runner.paused

    def agents(self) -> list[Agent]:
        """Agent 0 and its subordinates, in chain order."""
        chain: list[Agent] = []
        stack = [self.agent0]
        while stack:  # depth first: a superior before its subordinates
            agent = stack.pop()
            chain.append(agent)
            stack.extend(reversed(agent.subordinates))
        return chain

    def agents_on_record(self) -> list[tuple[Agent, Agent | None]]:
        """(agent, the agent it worked for) for Agent 0 and every subordinate it had,
        those a later delegation replaced (`Agent.retired`) before the current ones, in
        chain order: what the page's tree shows and the chat file keeps."""
        chain: list[tuple[Agent, Agent | None]] = []
        stack: list[tuple[Agent, Agent | None]] = [(self.agent0, None)]
        while stack:
            agent, holder = stack.pop()
            chain.append((agent, holder))
            below = [*agent.retired, *agent.subordinates]
            stack.extend((sub, agent) for sub in reversed(below))
        return chain

    def contexts(self) -> list[RunContext]:
        """Every agent on record as the code outside the loop sees it, in chain order."""
        return [agent.ctx for agent, _ in self.agents_on_record()]

    @property
    def working(self) -> RunContext | None:
        """The agent whose loop runs now (see `working_agent`), as a run context."""
        return self.working_agent.ctx if self.working_agent is not None else None

    def working_names(self) -> list[str]:
        """The names of every agent at work now (several when siblings work at once)."""
        return [agent.agent_name for agent in self.working_agents()]

    def reconfigure(self, config: AgentConfig) -> None:
        """Take new settings for the chat and its Agent 0 (between runs only)."""
        # The chat's model seam is its own (a program's, a replay's): settings keep it.
        config = dataclasses.replace(config, model_for=self.config.model_for)
        self.config = config
        self.agent0.reconfigure(config)
        # A key saved meanwhile is a secret of this chat too, from now on.
        self.log.masker = chat_masker(config.settings)

    @property
    def overrides(self) -> dict[str, Any]:
        """Agent 0's setting overrides, saved with the chat (its model preset among them:
        helpers/model_presets.py)."""
        return dict(self.agent0.config.overrides)

    def keep_overrides(self, overrides: dict[str, Any]) -> None:
        """New setting overrides for Agent 0, saved with the chat from now on (on the agents'
        loop). Its models change when its config is built again from them (`reconfigure`:
        the chat store does it at once between runs, else when the run ends)."""
        self.agent0.config = dataclasses.replace(self.agent0.config, overrides=dict(overrides))

    def tree(self) -> list[AgentEntry]:
        """Every agent on record as the page's tree and the API show it, in chain order."""
        busy = self.working_agents() if self.running else []
        held = {h.agent: h for h in self.approvals.held()}
        return [
            AgentEntry(
                number=agent.number,
                name=agent.agent_name,
                superior=boss.agent_name if (boss := agent.superior or holder) else None,
                profile=agent.config.profile,
                usage=agent.usage,
                status=self._status(agent, busy),
                held=held[agent.agent_name].shown if agent.agent_name in held else None,
            )
            for agent, holder in self.agents_on_record()
        ]

    def _status(self, agent: Agent, busy: list[Agent]) -> AgentStatus:
        if not self.running:
            return "idle"
        if any(agent is a for a in busy):
            return "working"
        return "waiting" if any(agent is a for a in self.busy) else "done"

    @contextlib.contextmanager
    def at_work(self, agent: Agent) -> Iterator[None]:
        """While `agent`'s loop runs: it is the working agent, busy, and the items its task
        logs name it (siblings share a number: core/log.py)."""
        self.working_agent = agent
        self.set_busy(agent, True)
        token = SPEAKER.set((agent.number, agent.agent_name))
        try:
            yield
        finally:
            SPEAKER.reset(token)
            self.set_busy(agent, False)

    def set_busy(self, agent: Agent, busy: bool) -> None:
        """Note that `agent`'s loop starts (True) or has ended (False)."""
        if busy and not any(a is agent for a in self.busy):
            self.busy.append(agent)
        elif not busy:
            self.busy = [a for a in self.busy if a is not agent]

    def working_agents(self) -> list[Agent]:
        """The agents doing the work now: busy ones with no busy subordinate (one in a
        chain, each working sibling in a batch), in chain order."""
        busy = {id(a) for a in self.busy}
        return [
            a for a in self.agents()
            if id(a) in busy and not any(id(s) in busy for s in a.subordinates)
        ]  # fmt: skip

    def find_agent(self, name: str) -> Agent | None:
        """The agent of this chat called `name` ("A1", "A1.2"), if any."""
        return next((a for a in self.agents() if a.agent_name == name), None)

    def communicate(
        self, msg: UserMessage, broadcast_level: int = 1, to: str = ""
    ) -> runner.RunHandle:
        """Send a user message: an intervention while running, else a new run.

        `to` names the agent an intervention goes to (one selected in the tree); by
        default it goes to every working agent. Returns the run's future (a
        `concurrent.futures.Future` when the chat has a runtime thread), which
        resolves to Agent 0's answer.
        """
        return self.runner.communicate(msg, broadcast_level, to)

    def continue_interrupted(self, failed_node: str = "", how: str = "failed") -> runner.RunHandle:
        """Go on with work the process lost when it stopped (a restored running chat);
        `failed_node`: the node of a cluster that ran it, and `how` that node ended."""
        return self.runner.continue_interrupted(failed_node, how)

    def pause(self) -> None:
        self.runner.pause()

    def resume(self) -> None:
        self.runner.resume()

    def nudge(self) -> None:
        self.runner.nudge()

    def stop(self) -> None:
        self.runner.stop()

    def start_budget(self) -> None:
        """A run begins: the chat's budget from Agent 0's settings, over the chat's usage."""
        self.budget = budget.chat_scope(self.agent0.config.settings, self.usage)

    def set_variables(self, change: chat_variables.Change, *, replace: bool = False) -> None:
        """Set (None: remove) the named variables, or all of them with `replace`; UserError
        for a bad name or value, and then nothing changes. Any thread: the dict is swapped."""
        self.variables = chat_variables.applied(self.variables, change, replace=replace)

    def approve(self, item_id: str, approved: bool, reason: str = "",
                always: Always = "") -> Held:  # fmt: skip
        """Answer the tool call held as the log item `item_id` (UserError: none waits); a
        call held when the chat was saved goes on with the run it belongs to."""
        answer = Answer(approved, reason.strip(), always if approved else "")

        def decide() -> Held | None:
            held = self.approvals.decide(item_id, answer)
            if held is not None:
                self.events.emit_soon(StateChanged("approval"))
            return held

        held = self.runtime.call(decide) if self.runtime is not None else decide()
        if held is None:
            raise NotFound(f"nothing in this chat waits for approval as item {item_id!r}")
        if held.future is None and self.interrupted:  # restored: nobody waits for it yet
            self.runner.continue_interrupted()
        return held
