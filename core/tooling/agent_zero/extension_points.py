"""Running Agent Zero extensions at the points of Cadre's run (points.py says where).

The loop calls the few functions here at its seams (core/agent.py, core/tool.py,
core/utility_call.py); the points that match a run event follow it (`subscribe`). Each
call takes the point's files for the agent's profile and project (extension_files.py),
makes each class with the agent and awaits its `execute(**kwargs)`, in file-name order.
Which files the points of a step have is looked up once, when its prompt is made, not at
each of the step's dozen seams (`STEP_POINTS`): a file added or removed meanwhile takes
part from the next step. The other points (a monologue's start and end, a utility call
between runs, the run's end) look theirs up when they come. With no files that is all
it costs.

An extension that fails to load or raises is shown in the chat's log as a warning in
plain words, logged with its traceback, and the run goes on without it (as a run event's
failing subscriber costs nothing). Only an intervention and a stop pass through.

Agent Zero hands extensions one `LoopData` per monologue; `AgentZeroLoopData` is that
object, kept per agent while its monologue runs, and what extensions leave in its
`system` and `extras_*` is put into Cadre's prompt before the model call.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import weakref
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.events import IterationEnded, MonologueStarted, RunEnded
from core.run_context import agent_of
from core.tooling.agent_zero import points
from core.tooling.agent_zero.extension_files import (
    cached_extension_class,
    extension_map,
    load_extension_class,
    points_with_files,
)
from helpers.errors import InterventionException, UserError

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import LoopData
    from core.chat import Chat
    from core.tool import Response

log = logging.getLogger(__name__)


@dataclass
class AgentZeroLoopData:
    """Agent Zero's `LoopData`, as its extensions read and change it."""

    iteration: int = -1
    #: The system prompt's parts (from system_prompt on; joined with blank lines).
    system: list[str] = field(default_factory=list)
    user_message: str | None = None
    history_output: list[Any] = field(default_factory=list)
    extras_temporary: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    extras_persistent: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    last_response: str = ""
    params_temporary: dict[str, Any] = field(default_factory=dict)
    params_persistent: dict[str, Any] = field(default_factory=dict)
    current_tool: Any = None


#: Each working agent's loop data, for its monologue (gone with the agent).
_loop_data: weakref.WeakKeyDictionary[Agent, AgentZeroLoopData] = weakref.WeakKeyDictionary()
#: Agents whose `agent_init` ran.
_initialised: weakref.WeakSet[Agent] = weakref.WeakSet()
#: Each agent's extension files by point, as looked up at the start of its step.
_step_files: weakref.WeakKeyDictionary[Agent, dict[str, tuple[Path, ...]]] = (
    weakref.WeakKeyDictionary()
)
#: Files at points Cadre does not run, already reported (path, modification time).
_reported: set[tuple[Path, int]] = set()


def loop_data_of(agent: Agent) -> AgentZeroLoopData:
    found = _loop_data.get(agent)
    if found is None:
        found = _loop_data[agent] = AgentZeroLoopData()
    return found


#: The points of one step: their files are those looked up when its prompt was made.
STEP_POINTS = frozenset({
    "message_loop_start", "message_loop_prompts_before", "system_prompt",
    "message_loop_prompts_after", "before_main_llm_call", "tool_execute_before",
    "tool_execute_after", "hist_add_tool_result", "message_loop_end",
})  # fmt: skip


def _new_step(agent: Agent) -> dict[str, tuple[Path, ...]]:
    """Look up `agent`'s extension files for the step that starts."""
    found = _step_files[agent] = extension_map(agent.config.profile, agent.chat.project_ref)
    return found


def _files(agent: Agent, point: str) -> tuple[Path, ...]:
    found = _step_files.get(agent) if point in STEP_POINTS else None
    if found is None:  # not a step's point (or a step resumed without its prompt made)
        found = extension_map(agent.config.profile, agent.chat.project_ref)
    return found.get(point, ())


async def run_point(agent: Agent, point: str, **kwargs: Any) -> None:
    """Run `point`'s extensions for `agent` with `kwargs`, in file-name order."""
    for path in _files(agent, point):
        try:
            cls = cached_extension_class(path) or await asyncio.to_thread(
                load_extension_class, path
            )
            result = cls(agent=agent).execute(**kwargs)
            if inspect.isawaitable(result):
                await result
        except InterventionException:
            raise
        except Exception as exc:  # the extension's bug must not cost the run
            _shown(agent, point, path, exc)


def run_point_sync(agent: Agent, point: str, **kwargs: Any) -> None:
    """Run a point Agent Zero calls without awaiting (a coroutine returned is refused)."""
    for path in _files(agent, point):
        try:
            result = load_extension_class(path)(agent=agent).execute(**kwargs)
            if inspect.iscoroutine(result):
                result.close()
                raise TypeError(f"{point} runs without awaiting: execute() must not be async")
        except Exception as exc:
            _shown(agent, point, path, exc)


def _shown(agent: Agent, point: str, path: Path, exc: BaseException) -> None:
    what = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
    log.warning("Agent Zero extension %s at %s failed: %s", path, point, what, exc_info=exc)
    agent.chat.log.log(
        "warning",
        f"{agent.agent_name}: An Agent Zero extension failed",
        f"The extension {path.name} ({point}) did not work: {what}. The run goes on "
        f"without it; fix or remove {path}.",
        agentno=agent.number,
    )


# -- the loop's seams ------------------------------------------------------------------


async def monologue_start(agent: Agent) -> None:
    """An agent starts its loop: agent_init the first time, then monologue_start."""
    _report_not_run(agent, extension_map(agent.config.profile, agent.chat.project_ref))
    if agent not in _initialised:
        _initialised.add(agent)
        await run_point(agent, "agent_init")
    view = _loop_data[agent] = AgentZeroLoopData()
    await run_point(agent, "monologue_start", loop_data=view)


async def until_end(agent: Agent, loop: Awaitable[str]) -> str:
    """The agent's `loop`, then monologue_end (after an answer or an error, not a stop:
    nothing runs post mortem, as in Agent Zero)."""
    try:
        answer = await loop
    except asyncio.CancelledError:
        raise
    except Exception:
        await run_point(agent, "monologue_end", loop_data=loop_data_of(agent))
        raise
    await run_point(agent, "monologue_end", loop_data=loop_data_of(agent))
    return answer


async def prompt_ready(agent: Agent, loop_data: LoopData) -> None:
    """An iteration's prompt has its parts: message_loop_start and the points of the prompt
    run, and what they left is put into Cadre's `loop_data` before its messages are made."""
    _new_step(agent)
    view = loop_data_of(agent)
    view.iteration += 1
    view.params_temporary = {}
    await run_point(agent, "message_loop_start", loop_data=view)
    await run_point(agent, "message_loop_prompts_before", loop_data=view)
    view.system = [loop_data.system]
    view.history_output = list(agent.history.output())
    await run_point(agent, "system_prompt", system_prompt=view.system, loop_data=view)
    await run_point(agent, "message_loop_prompts_after", loop_data=view)
    await run_point(agent, "before_main_llm_call", loop_data=view)
    loop_data.system = "\n\n".join(str(part) for part in view.system if part)
    for key, value in {**view.extras_persistent, **view.extras_temporary}.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        loop_data.extras[f"agent_zero:{key}"] = text
    view.extras_temporary.clear()  # as Agent Zero: temporary extras serve one call


async def tool_execute_before(agent: Agent, tool_name: str, tool_args: dict[str, Any]) -> None:
    await run_point(agent, "tool_execute_before", tool_args=tool_args, tool_name=tool_name)


async def tool_execute_after(agent: Agent, tool_name: str, response: Response) -> None:
    loop_data_of(agent).last_response = agent.last_reply
    await run_point(agent, "tool_execute_after", response=response, tool_name=tool_name)
    if not isinstance(response.message, str):  # Agent Zero accepts any value: text here
        response.message = str(response.message)


def tool_result_added(agent: Agent, tool_name: str, result: str) -> str:
    """hist_add_tool_result: the result as its extensions leave it."""
    data: dict[str, Any] = {"tool_name": tool_name, "tool_result": result}
    run_point_sync(agent, "hist_add_tool_result", data=data)
    return str(data.get("tool_result", result))


def subscribe(chat: Chat) -> None:
    """The points that follow `chat`'s run events: monologue_start (and agent_init) on
    MonologueStarted, message_loop_end on IterationEnded, process_chain_end on RunEnded."""

    def started(event: MonologueStarted) -> Awaitable[None]:
        return monologue_start(agent_of(event.ctx))

    def iteration_ended(event: IterationEnded) -> Awaitable[None] | None:
        if event.outcome == "stopped":
            return None  # nothing runs post mortem
        agent = agent_of(event.ctx)
        return run_point(agent, "message_loop_end", loop_data=loop_data_of(agent))

    def run_ended(event: RunEnded) -> Awaitable[None] | None:
        if event.answer is None and event.error is None:
            return None  # stopped
        return run_point(chat.agent0, "process_chain_end", data={})

    chat.events.subscribe(MonologueStarted, started)
    chat.events.subscribe(IterationEnded, iteration_ended)
    chat.events.subscribe(RunEnded, run_ended)


# -- what is not run -------------------------------------------------------------------


def extension_status(profile: str, project: Any = None) -> list[dict[str, str]]:
    """Every extension file an agent of `profile` would meet: point, file, state (runs,
    or not run and why: its point, or the file itself when it cannot be loaded, which this
    finds out by loading it as a run would). For a page to show."""
    return [
        {"point": point, "file": str(path), "state": _state(point, path)}
        for point, paths in points_with_files(profile, project).items()
        for path in paths
    ]


def _state(point: str, path: Path) -> str:
    state = points.point_state(point)
    if not state.startswith("runs"):
        return state
    try:
        load_extension_class(path)
    except UserError as exc:
        return f"not run: {exc}"
    return state


def _report_not_run(agent: Agent, found: dict[str, tuple[Path, ...]]) -> None:
    """A log line, once per file version, for each extension at a point Cadre does not run."""
    for point, paths in found.items():
        if point in points.POINTS:
            continue
        for path in paths:
            try:
                key = (path, path.stat().st_mtime_ns)
            except OSError:
                continue
            if key not in _reported:
                _reported.add(key)
                log.warning(
                    "Agent Zero extension %s is not run: %s", path, points.point_state(point)
                )
