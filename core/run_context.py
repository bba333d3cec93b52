"""What a tool, memory, code execution or a run-event handler is given of a working agent.

The `Agent` and its loop are core's own business. Everything else that acts during a
run gets a `RunContext`: what it may read (who works, in which chat and project,
its settings and models, budgets, the chat's log and sessions) and what it may do
(add a result or a warning to history, report usage, call the utility model, mask
a value, render a prompt file, keep data between calls). It is a live view: a
handoff or a settings change between runs shows through it at once.

The chat's owner (`owner`: the user whose chat it is, accounts/users.py) reaches every
tool the same way, so that each person's memory, projects, work folder and sandbox are
their own; the node that runs it (`node`) is a field for cluster mode, None today.

`agent_of` hands the agent behind a context back to core (delegation makes and
runs subordinates, the built-in run features recall and compress, `Tool.agent`
serves tools written against the whole agent); nothing outside core calls it
(tests/unit/test_layering.py holds that).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from browsing.session import ChatBrowser
    from core.agent import Agent
    from core.approvals import Approvals
    from core.budget import Scope
    from core.log import Log, LogItem, LogKind
    from core.prompt.history import History
    from execution.code_sessions import CodeSessions
    from helpers.runtime import AgentRuntime
    from helpers.settings import Settings
    from helpers.text_files import FileReads
    from models.llm import ModelConfig, Usage
    from models.model import Model
    from profiles.projects import ProjectRef


class RunContext:
    """One agent at work, as the code it calls sees it (see the module's docstring)."""

    __slots__ = ("_agent",)

    #: The node that runs the chat (cluster mode: a later change); None: this process.
    node: str | None = None

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    # -- who works, where -------------------------------------------------------

    @property
    def number(self) -> int:
        """The agent's number: 0 talks to the user, a subordinate is its superior's + 1."""
        return self._agent.number

    @property
    def name(self) -> str:
        """The agent's name in the log and the tree: "A1", or "A1.2" for a sibling."""
        return self._agent.agent_name

    @property
    def chat_id(self) -> str:
        return self._agent.chat.id

    @property
    def project(self) -> str | None:
        return self._agent.chat.project

    @property
    def owner(self) -> str | None:
        """The user whose chat this is; None in the one-person desktop mode (and for a chat
        from before accounts, which is the first admin's)."""
        return self._agent.chat.owner

    @property
    def space(self) -> Path:
        """The owner's folder (accounts/spaces.py): their work folder, memory, knowledge and
        projects are inside; usr/ in the desktop mode and for the first admin."""
        return self._agent.chat.space

    @property
    def project_ref(self) -> ProjectRef | None:
        """Where the chat's project, profiles and skills are found (profiles/projects.py):
        its project in the owner's space; outside one, the owner's space alone (false: no
        project) when it is a person's own; None for usr/'s chats outside a project."""
        return self._agent.chat.project_ref

    @property
    def profile(self) -> str:
        return self._agent.config.profile

    @property
    def settings(self) -> Settings:
        """The settings the agent works with (the chat's and its project's overrides in)."""
        return self._agent.config.settings

    @property
    def chat_model(self) -> ModelConfig:
        return self._agent.config.chat_model

    @property
    def util_model(self) -> ModelConfig:
        return self._agent.config.util_model

    @property
    def embed_model(self) -> ModelConfig:
        return self._agent.config.embed_model

    def model_for(self, config: ModelConfig) -> Model:
        """The client of a model role, as the settings pick it (models/model.py)."""
        return self._agent.config.model_for(config)

    @property
    def budgets(self) -> list[Scope]:
        """Every budget the agent works under: the chat's, then its delegations'."""
        return self._agent.budget_scopes()

    # -- what the chat holds ------------------------------------------------------

    @property
    def log(self) -> Log:
        """The chat's log: what the page shows."""
        return self._agent.chat.log

    def log_row(
        self, kind: LogKind, heading: str, content: str = "", kvps: dict[str, Any] | None = None,
        plugin: str = "",
    ) -> LogItem:  # fmt: skip
        """A row of the chat's log for this agent, headed with its name ("A1: heading");
        `plugin`: the plugin whose tool it is (its page part may draw it)."""
        return self._agent.chat.log.log(
            kind, f"{self.name}: {heading}", content, kvps=kvps, agentno=self.number,
            plugin=plugin,
        )  # fmt: skip

    @property
    def history(self) -> History:
        """The agent's history (read it; add to it with `add_tool_result`/`add_warning`)."""
        return self._agent.history

    @property
    def last_prompt(self) -> list[dict[str, Any]]:
        """The exact messages of the agent's last model call (the page's Context view)."""
        return self._agent.last_prompt

    @property
    def runtime(self) -> AgentRuntime | None:
        return self._agent.chat.runtime

    @property
    def code_sessions(self) -> CodeSessions:
        return self._agent.chat.code_sessions

    @property
    def browser(self) -> ChatBrowser:
        return self._agent.chat.browser

    @property
    def approvals(self) -> Approvals:
        return self._agent.chat.approvals

    @property
    def variables(self) -> dict[str, str]:
        """The chat's context variables (core/prompt/chat_variables.py)."""
        return self._agent.chat.variables

    @property
    def data(self) -> dict[str, Any]:
        """What tools keep on this agent between calls: JSON data, masked and saved."""
        return self._agent.data

    def get_data(self, key: str) -> Any:
        return self._agent.data.get(key)

    def set_data(self, key: str, value: Any) -> None:
        self._agent.data[key] = value

    @property
    def file_reads(self) -> FileReads:
        """What this agent last saw of each file, so a stale patch is refused."""
        return self._agent.file_reads

    @property
    def wake(self) -> asyncio.Event:
        """Set when the user steps in: a tool that waits wakes up for it."""
        return self._agent.wake

    def available_tools(self) -> list[str]:
        return self._agent.available_tools()

    # -- what it may do -----------------------------------------------------------

    def mask(self, value: Any) -> Any:
        """`value` without secret values: the chat's one masking rule."""
        return self._agent.mask(value)

    def read_prompt(self, file: str, /, **variables: Any) -> str:
        """A prompt file of the agent's profile, rendered with `variables`."""
        return self._agent.read_prompt(file, **variables)

    def prompt_exists(self, file: str) -> bool:
        return self._agent.prompts.exists(file)

    def add_tool_result(
        self,
        tool_name: str,
        result: str,
        hint: str = "",
        images: list[Any] | None = None,
        source: str | None = None,
    ) -> None:
        """A tool's result into history (a long one saved for `§§include`; one with a
        `source` marked as data from outside: core/prompt/untrusted.py)."""
        self._agent.add_tool_result(tool_name, result, hint, images, source)

    def add_warning(self, message: str) -> None:
        self._agent.add_warning(message)

    def record_usage(self, usage: Usage) -> None:
        """Count a model call's usage for the agent, its chat and its budgets."""
        self._agent.record_usage(usage)

    async def call_utility_model(
        self, system: str, message: str, heading: str = "", max_tokens: int | None = None
    ) -> str:
        """One utility-model call, logged, masked both ways (Agent.call_utility_model)."""
        if max_tokens is None:
            return await self._agent.call_utility_model(system, message, heading)
        return await self._agent.call_utility_model(system, message, heading, max_tokens)

    async def progressed(self) -> None:
        """A long step changed the chat: save it (at a pace the caller keeps)."""
        await self._agent.progressed()


def agent_of(ctx: RunContext) -> Agent:
    """The agent behind `ctx`: for core's own use only (delegation, tool manuals)."""
    return ctx._agent
