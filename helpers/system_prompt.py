"""The prompt of one model call: system prompt, history, extras.

The system prompt is the profile's main prompt plus one section per tool the
agent can use (`agent.system.tool.<name>.md`), all from prompt files so a
profile can override any part by name.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent import Agent, LoopData

log = logging.getLogger(__name__)


def tool_sections(agent: Agent) -> list[str]:
    """The prompt section of every available tool (a tool without one is skipped, loudly)."""
    sections = []
    for name in agent.available_tools():
        file = f"agent.system.tool.{name}.md"
        if agent.prompts.exists(file):
            sections.append(agent.read_prompt(file))
        else:
            log.warning("tool %r has no prompt file %s; the model will not know of it", name, file)
    return sections


async def build_system_prompt(agent: Agent) -> str:
    main = agent.read_prompt("agent.system.main.md")
    tools = agent.read_prompt("agent.system.tools.md", tools="\n\n".join(tool_sections(agent)))
    return f"{main}\n\n{tools}"


def build_messages(agent: Agent, loop_data: LoopData) -> list[dict[str, str]]:
    """System prompt, then history; extras join the last user message."""
    messages = [{"role": "system", "content": loop_data.system}]
    messages += [{"role": m.role, "content": m.content} for m in agent.history.output()]
    extras = "\n\n".join(text for text in loop_data.extras.values() if text)
    if extras:
        if messages[-1]["role"] == "user":
            messages[-1] = {"role": "user", "content": messages[-1]["content"] + "\n\n" + extras}
        else:
            messages.append({"role": "user", "content": extras})
    return messages
