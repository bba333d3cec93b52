"""What a tool is: typed arguments in, a `Response` out, logged on the way.

A tool is a `Tool` subclass in a file named after it (`tools/response.py`
holds the `response` tool). It declares its arguments as a pydantic model
(`Args`); the runner validates the model's `tool_args` against it, and a
failure becomes a `RepairableException` that names the field and the reason,
so the model can fix its call.

Secrets (see helpers/secrets.py): a tool receives the value of a
`§§secret(NAME)` only in the arguments its `Args` marks with
`EXPANDS_SECRETS`, where the value itself is needed (a command line, keyboard
input, a file's content). Every other argument reaches it as the model wrote
it, the placeholder kept and any secret value masked, so nothing a tool
stores or passes on (agent data, memory, a utility model's prompt) holds one.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from core.prompt import long_results, tool_manuals, untrusted
from core.run_context import RunContext, agent_of
from core.tooling import approval_gate, untrusted_check
from core.tooling.agent_zero import extension_points as agent_zero
from helpers import tool_rules
from helpers.errors import RepairableException, RepairableTold
from helpers.paced_save import PacedSave
from helpers.secrets import expand_secrets
from helpers.valid_text import valid_value

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import LoopData
    from core.log import LogItem

#: Seconds a tool runs before its call is saved (one that ends sooner is saved with its step).
SAVE_AFTER = 1.0


@dataclass
class Response:
    """A tool's result. `break_loop=True` ends the agent's monologue with `message`.

    `source`: where the text came from when that is outside Cadre and the chat (a page's
    URL, a document, an MCP server, a file no agent of the chat wrote); history marks such
    a result as data from there, never instructions (core/prompt/untrusted.py)."""

    message: str
    break_loop: bool = False
    additional: dict[str, Any] | None = None
    source: str | None = None


class _ExpandsSecrets:
    """The type of `EXPANDS_SECRETS`."""

    def __repr__(self) -> str:
        return "EXPANDS_SECRETS"


#: Marks an argument that receives secret values: `code: Annotated[str, EXPANDS_SECRETS]`.
#: Mark only what must carry the value itself (a command line, keyboard input, a file's
#: content, an HTTP header), never text the tool stores or passes on.
EXPANDS_SECRETS = _ExpandsSecrets()


@functools.cache
def secret_arguments(args_model: type[BaseModel]) -> frozenset[str]:
    """The names (and aliases) of the arguments `args_model` marks with EXPANDS_SECRETS."""
    names: set[str] = set()
    for name, info in args_model.model_fields.items():
        if any(item is EXPANDS_SECRETS for item in info.metadata):
            names |= {name, *_aliases(info)}
    return frozenset(names)


def _aliases(info: FieldInfo) -> list[str]:
    found = [info.alias] if isinstance(info.alias, str) else []
    alias = info.validation_alias
    if isinstance(alias, str):
        found.append(alias)
    elif isinstance(alias, AliasChoices):
        found += [choice for choice in alias.choices if isinstance(choice, str)]
    return found


def expand_arguments(
    ctx: RunContext, args: dict[str, Any], marked: frozenset[str] | None
) -> dict[str, Any]:
    """`args` with each `§§secret(NAME)` replaced by its value in the `marked` arguments
    (None: in all of them), the others masked; an unknown name is a repairable error."""
    secrets = ctx.settings.secrets
    unknown: list[str] = []
    arguments = {
        key: expand_secrets(value, secrets, unknown) if marked is None or key in marked
        else ctx.mask(value)
        for key, value in args.items()
    }  # fmt: skip
    if unknown:
        raise RepairableException(
            ctx.read_prompt(
                "fw.secret_unknown.md",
                names=", ".join(sorted(set(unknown))),
                available=", ".join(sorted(secrets)) or "none",
            )
        )
    return arguments


class ToolArgs(BaseModel):
    """Base of tool argument models. Unknown extra arguments are ignored, not fatal."""

    model_config = ConfigDict(extra="ignore")


class Tool:
    """Base class of every tool."""

    #: The tool's arguments. Subclasses replace it with their own model.
    Args: ClassVar[type[ToolArgs]] = ToolArgs
    #: Methods the tool must be called with (`text_editor:read`); empty: none.
    methods: ClassVar[tuple[str, ...]] = ()
    #: When the same call again still is progress, for the loop guard (core/reply/loop_guard.py):
    #: "never" (the default), "new_result" (a command's output may have changed), "always"
    #: (waiting: time passes).
    repeat_progress: ClassVar[Literal["never", "new_result", "always"]] = "never"
    #: Whether the result is shown on the call's log row too (False: it is for the model
    #: only, as a handoff's text is, which the tool tells the user in its own words).
    result_in_log: ClassVar[bool] = True
    #: The plugin whose `tools/` folder the tool's file is in ("": none); set by the tool
    #: loader (core/tooling/tool_loader.py), read by the page's plugin log renderers.
    plugin: ClassVar[str] = ""

    def __init__(
        self,
        ctx: RunContext,
        name: str,
        method: str | None,
        args: dict[str, Any],
        message: str,
        loop_data: LoopData | None,
    ) -> None:
        #: What the tool may read and do of the agent that calls it (core/run_context.py).
        self.ctx = ctx
        self.name = name
        self.method = method
        self.args = args
        self.message = message
        self.loop_data = loop_data
        self.log: LogItem | None = None

    @property
    def agent(self) -> Agent:
        """The whole agent, for tools written before the run context and for Agent Zero's
        (`self.agent.read_prompt`, `self.agent.context.variables`): they keep working.
        Cadre's own tools use `self.ctx` only (tests/unit/test_layering.py holds them)."""
        return agent_of(self.ctx)

    @agent.setter
    def agent(self, agent: Agent | RunContext) -> None:
        # A tool that sets `self.agent` itself (Agent Zero's base class does) keeps working.
        self.ctx = agent if isinstance(agent, RunContext) else agent.ctx

    async def execute(self, args: Any) -> Response:
        """Do the work. `args` is an instance of this tool's `Args`."""
        raise NotImplementedError(f"tool {self.name!r} does not implement execute()")

    async def call_execute(self, args: ToolArgs) -> Response:
        """How `run` calls `execute` (an Agent Zero tool takes keywords instead:
        core/tooling/agent_zero)."""
        return await self.execute(args)

    def tool_arguments(self) -> dict[str, Any]:
        """The arguments as the tool receives them (before validation).

        Arguments marked with EXPANDS_SECRETS get each `§§secret(NAME)` replaced
        by its value (an unknown name is a repairable error); the others keep
        the placeholder as written and have any secret value masked. `self.args`
        (what is logged and stored) keeps the placeholders.
        """
        return expand_arguments(self.ctx, self.args, secret_arguments(self.Args))

    def validate_args(self, raw: dict[str, Any] | None = None) -> ToolArgs:
        try:
            return self.Args.model_validate(self.args if raw is None else raw)
        except ValidationError as exc:
            problems = validation_problems(exc)
            said = self.ctx.read_prompt(
                "fw.tool_args_invalid.md", tool_name=self.name, problems=problems
            )
            # With the tool's whole manual, the first time (core/prompt/tool_manuals.py).
            said = tool_manuals.with_manual(self.ctx, self.name, said)
            raise RepairableException(said) from exc

    def check_method(self) -> None:
        """A tool with `methods` called without one of them is told which to use (so
        `execute` sees only a valid method)."""
        if not self.methods or self.method in self.methods:
            return
        names = [f"{self.name}:{method}" for method in self.methods]
        raise RepairableException(
            self.ctx.read_prompt(
                "fw.tool_needs_method.md",
                tool_name=self.name,
                others=", ".join(names[:-1]),
                last=names[-1],
                called=repr(self.full_name),
            )
        )

    def get_log_object(self) -> LogItem:
        return self.ctx.log_row("tool", f"Using tool '{self.full_name}'", kvps=self.args,
                                plugin=self.plugin)  # fmt: skip

    def rule_names(self) -> list[str]:
        """The names the tool policy knows this call by, most specific first
        (helpers/tool_rules.py): `text_editor:write`, `text_editor`, `*`."""
        return tool_rules.call_names(self.name, self.method)

    def asks_approval(self, args: Any) -> bool:
        """Whether the tool policy's rule applies to this call (core/tooling/approval_gate.py);
        a tool whose calls are not all actions says which are not (reading a command's
        output is no new command)."""
        return True

    @property
    def full_name(self) -> str:
        return f"{self.name}:{self.method}" if self.method else self.name

    async def before_execution(self) -> None:
        if self.log is None:  # a held call made again after a restart has its item already
            self.log = self.get_log_object()

    async def after_execution(self, response: Response) -> None:
        # `additional` may hold keys of a tool's own (Agent Zero's do): history takes two.
        extra = response.additional or {}
        hint, images = str(extra.get("hint", "")), extra.get("images")
        self.ctx.add_tool_result(self.name, response.message, hint, images, response.source)
        if self.log is not None and self.result_in_log:
            self.log.update(content=response.message)
        if response.source is not None:  # from outside: checked, when the settings say so
            await untrusted_check.check(self.ctx, self.name, response.source, response.message)

    async def run(self) -> Response:
        """Expand includes, validate, log, execute, record: the whole life of one call."""
        await self.expand_includes()
        self.args = valid_value(self.args)  # the model's text may hold lone surrogates
        # Agent Zero's tool_execute_before extensions may change the arguments.
        await agent_zero.tool_execute_before(self.agent, self.name, self.args)
        args = self.validate_args(self.tool_arguments())
        await self.before_execution()
        replay = self.agent.chat.replay  # a replay may give the recorded result (core/replay)
        recorded = replay.recorded_result(self.agent, self) if replay is not None else None
        if recorded is not None:
            return recorded
        # A call still running after a moment is saved, so a process killed mid-step keeps
        # it; a quick one is saved with its iteration as before (no second write per step).
        saving = PacedSave(self.ctx.progressed, SAVE_AFTER)
        saving.changed()
        try:
            self.check_method()
            # The tool policy (allow, ask, deny) before the tool acts: a refused or denied
            # call's result is what the model reads instead.
            refused = await approval_gate.check(self, args)
            response = refused or await self.call_execute(args)
        except asyncio.CancelledError:
            # Stopped or nudged: history must not end on a call without a result.
            self.ctx.add_tool_result(self.name, self.ctx.read_prompt("fw.tool_stopped.md"))
            if self.log is not None:
                self.log.update(content="Stopped.", kvps={"status": "stopped"})
            raise
        except RepairableException as exc:
            # The model hears of it as a warning; the tool's own item says it too. One told
            # below the loop (helpers/told.py) is rendered here, with the agent's prompts.
            said = exc
            if isinstance(exc, RepairableTold):
                said = RepairableException(exc.told.render(self.ctx.read_prompt))
            if self.log is not None:  # an MCP server's error, marked for the model: not here
                self.log.update(content=untrusted.unmarked(str(said)), kvps={"status": "error"})
            if said is exc:
                raise
            raise said from exc
        finally:
            await saving.close()
        if refused is None:
            # Agent Zero's tool_execute_after extensions may change the result first.
            await agent_zero.tool_execute_after(self.agent, self.name, response)
            await self.after_execution(response)
        else:  # the tool's own follow-up is for a call that ran
            await Tool.after_execution(self, response)
        tool_manuals.after_first_call(self.ctx, self.name)  # its manual, for the next calls
        return response

    async def expand_includes(self) -> None:
        """Replace `§§include(path)` in the arguments by the files (only permitted ones)."""
        if not long_results.has_includes(self.args):
            return
        refused: list[tuple[str, str]] = []
        roots = long_results.include_roots(
            self.ctx.chat_id, self.ctx.settings.work_dir, self.ctx.space
        )
        self.args = await asyncio.to_thread(
            long_results.expand_includes, self.args, roots, lambda p, r: refused.append((p, r))
        )
        for path, reason in refused:
            self.ctx.log.log(
                "warning",
                f"{self.ctx.name}: Include refused",
                f"§§include({path}) was left as written: {reason}.",
                agentno=self.ctx.number,
            )


def validation_problems(exc: ValidationError) -> str:
    """'text: Field required; times: Input should be a valid integer' - short and actionable."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "tool_args"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)
