"""The prompt of one model call: system prompt, history, extras.

The system prompt is the profile's main prompt plus one section per tool the
agent is offered (`agent.system.tool.<name>.md`), all from prompt files so a
profile can override any part by name; the tools of MCP servers follow, each
in a short section made from what its server says of it.

A small model (see `agent_types.is_small`) gets a short prompt: a reply format
shown with whole, real replies (a placeholder such as "A short title of this
step" is what a small model copies), and for each of its few tools the short
section `agent.small.tool.<name>.md`. The text is built once and reused while
nothing it depends on changes, so it stays byte-identical from call to call
and llama.cpp's prompt cache holds (a 1,600-token prompt took 11.7 s to read
without it, 0.16 s with it).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.agent_types import is_small
from core.prompt import tool_manuals, vision
from core.tooling import tool_offer, tool_status
from core.tooling.tool_loader import tool_files
from helpers import file_snapshot
from mcp_client.tools import (
    DESCRIPTION_LIMIT,
    argument_names,
    arguments_text,
    brief_text,
    short,
)

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import LoopData
    from core.run_context import RunContext
    from mcp_client.tools import McpToolInfo

log = logging.getLogger(__name__)

#: Built prompts kept for other agents to share (one per profile, project, model and tools).
SHARED_KEPT = 32
_shared: dict[tuple[object, ...], BuiltPrompt] = {}


# A tool section's JSON example; a small model's prompt leaves out the full sections' ones.
_EXAMPLE = re.compile(r"\n*~~~json\n.*?\n~~~\n?", re.DOTALL)
# Blank lines an empty section leaves (a profile without specifics, additions or tips).
_GAPS = re.compile(r"\n{3,}")


def is_compact(agent: Agent) -> bool:
    """Whether `agent` gets the small model's prompt."""
    return is_small(agent.config.chat_model)


def tool_sections(agent: Agent, tools: list[str]) -> list[str]:
    """The prompt's part for Cadre's own `tools` (one without a file is skipped, loudly;
    MCP tools have their own section, `mcp_section`).

    A model of a full window gets one line a tool, its manual when it needs it
    (core/prompt/tool_manuals.py). A small model gets a tool's short section where there is one,
    else the whole manual without its example (a placeholder there is what a small model
    copies): its few tools' lines would not say enough to it.
    """
    compact, known = is_compact(agent), []
    for name in tools:
        full, short = tool_manuals.file_of(name), f"agent.small.tool.{name}.md"
        if agent.prompts.exists(full) or (compact and agent.prompts.exists(short)):
            known.append(name)
        else:
            log.warning("tool %r has no prompt file %s; the model will not know of it",
                        name, full)  # fmt: skip
    if not compact:
        return tool_manuals.index(agent.ctx, known)
    sections = []
    for name in known:
        short = f"agent.small.tool.{name}.md"
        if agent.prompts.exists(short):
            sections.append(agent.read_prompt(short))
        else:
            text = tool_manuals.manual(agent.ctx, name)
            sections.append(_EXAMPLE.sub("\n", text).strip())
    return sections


def mcp_section(agent: Agent, tools: list[McpToolInfo]) -> str:
    """The MCP tools' section: each tool on one line (its name, arguments' names and first
    sentence) until the agent needs it, then a few lines made from its description and
    input schema, as Cadre's own tools (core/prompt/tool_manuals.py). Each tool costs every
    prompt its tokens: bench/mcp.py measures them."""
    if not tools:
        return ""
    lines, whole = [], []
    for tool in tools:
        if tool_manuals.has_read(agent.ctx, tool.full_name):
            whole.append(mcp_manual(agent.ctx, tool))
        else:
            about = brief_text(tool.description) or "(no description)"
            args = argument_names(tool.input_schema)
            lines.append(f"- `{tool.full_name}({args})`: {about}")
    parts = ["\n".join(lines), *whole] if lines else whole
    return agent.read_prompt("agent.system.mcp_tools.md", tools="\n\n".join(parts))


def mcp_manual(ctx: RunContext, tool: McpToolInfo) -> str:
    """An MCP tool's whole section: its description and every argument with its type."""
    return ctx.read_prompt(
        "agent.system.mcp_tool.md",
        name=tool.full_name,
        description=short(tool.description, DESCRIPTION_LIMIT) or "(no description)",
        arguments=arguments_text(tool.input_schema),
    )


@dataclass
class BuiltPrompt:
    """A system prompt, what it was built for, and the files it was built from."""

    key: tuple[object, ...]
    seen: file_snapshot.Seen
    text: str
    #: The tools it offers (Cadre's own, then MCP ones) and those it names as unusable:
    #: what the agent's reply to it may call (core/tooling/tool_offer.py).
    tools: tuple[str, ...] = ()
    unavailable: tuple[tuple[str, str], ...] = ()


async def build_system_prompt(agent: Agent) -> str:
    """The agent's system prompt, reused while its files and companions' answers are unchanged.

    Checking that costs a stat per folder and file and a call of each companion
    (the date, the list of profiles), a fraction of building it again; an
    edited or added prompt or tool file is used from the next step on. A prompt
    built for one agent serves every agent of the same profile, project, model
    and tools whose companions say the same (`A0` of each new chat): fifty chats
    started at once build it once, not fifty times (about 30 ms each).
    """
    # Tool files not imported yet are imported off the loop (each once per version): the
    # thread is needed only when one is new or changed, which a stat per file tells.
    files = tool_files(agent.config.profile, agent.chat.project_ref)
    if not tool_status.all_loaded(files):
        await asyncio.to_thread(tool_status.preload, files)
    tools, unavailable = tool_offer.offer(agent, files)
    mcp = tool_offer.mcp_tools(agent.ctx)
    # The MCP tools are part of the key: a server that comes up, goes or changes its
    # tools changes the prompt (their files do not: they come from the servers).
    # So are the manuals the agent has read: each is in its prompt from then on.
    key = (agent.config.profile, agent.chat.project_ref, agent.config.chat_model.model,
           is_compact(agent), tuple(tools), tuple(unavailable.items()), tuple(mcp),
           tool_manuals.read(agent.ctx))  # fmt: skip
    for built in (agent.built_prompt, _shared.get(key)):
        if built is not None and built.key == key and built.seen.unchanged(agent):
            agent.built_prompt = built
            return built.text
    with file_snapshot.snapshot() as seen:
        main = _GAPS.sub("\n\n", agent.read_prompt("agent.system.main.md", small=is_compact(agent)))
        mcp_names = {tool.full_name for tool in mcp}
        own = [name for name in tools if name not in mcp_names]
        parts = tool_sections(agent, own) + ([mcp_section(agent, mcp)] if mcp else [])
        tools_text = agent.read_prompt(
            "agent.system.tools.md", tools="\n\n".join(parts), lines=not is_compact(agent)
        )
        if unavailable:
            listed = "\n".join(f"- {name}: {why}" for name, why in unavailable.items())
            told = agent.read_prompt("agent.system.tools_unavailable.md", tools=listed)
            tools_text += f"\n\n{told}"
        # After the profile's main prompt, whatever that says: every agent of a project
        # follows its instructions, profiles that replace agent.system.main.md included.
        project = agent.read_prompt("agent.system.project.md").strip()
        # After it too, whatever the profile's main prompt says: text from outside is
        # information, never instructions (core/prompt/untrusted.py marks it).
        rule = agent.read_prompt("agent.system.untrusted.md").strip()
    text = "\n\n".join(part for part in (main, project, rule, tools_text) if part)
    agent.built_prompt = built = BuiltPrompt(
        key, seen, text, tuple(tools), tuple(unavailable.items())
    )
    _shared.pop(key, None)  # newest last: the oldest goes first when there are too many
    _shared[key] = built
    while len(_shared) > SHARED_KEPT:
        del _shared[next(iter(_shared))]
    return text


def build_messages(agent: Agent, loop_data: LoopData) -> list[dict[str, Any]]:
    """System prompt, then history (images as parts or notes: core/prompt/vision.py); extras join
    the last user message."""
    sees = vision.model_sees_images(agent)
    messages: list[dict[str, Any]] = [{"role": "system", "content": loop_data.system}]
    messages += [
        {"role": m.role, "content": vision.model_content(agent, m, sees)}
        for m in agent.history.output()
    ]
    extras = "\n\n".join(text for text in loop_data.extras.values() if text)
    if extras:
        if messages[-1]["role"] == "user":
            content = vision.add_text(messages[-1]["content"], extras)
            messages[-1] = {"role": "user", "content": content}
        else:
            messages.append({"role": "user", "content": extras})
    return messages
