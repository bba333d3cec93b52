"""What goes into an agent's history: messages rendered from its prompt files, masked.

The user's messages (and interventions), the model's replies, tool results and
framework warnings each have their prompt file (`fw.*.md`); everything is
masked (no secret value reaches the model), and a long tool result is saved
as a file the agent can cite with `§§include` and shown cut in the middle.
`Agent.hist_add_*` call these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import long_results, tool_offer
from helpers import folders

if TYPE_CHECKING:
    from agent import Agent
    from core.agent_types import UserMessage


def add_user_message(agent: Agent, msg: UserMessage, intervention: bool) -> None:
    """A user message; a new one (not an intervention) starts a new topic."""
    if not intervention:
        agent.history.new_topic()
    template = "fw.intervention.md" if intervention else "fw.user_message.md"
    text = agent.read_prompt(
        template,
        message=msg.message,
        attachments="\n".join(msg.attachments),
        system_message="\n\n".join(msg.system_message),
    )
    agent.history.add_message(ai=False, content=agent.mask(text), pinned=True)
    agent.last_reply = ""


def add_ai_response(agent: Agent, text: str) -> None:
    # An empty assistant message is rejected by some providers (Anthropic)
    # on every later call; the warning that follows says what happened.
    if text.strip():
        agent.history.add_message(ai=True, content=agent.mask(text))


def add_tool_result(agent: Agent, tool_name: str, result: str, hint: str = "") -> None:
    """A tool's result, with `hint` (framework advice); a long one is also saved for
    `§§include`."""
    result = agent.mask(result)  # a tool may print a secret it was given
    file = ""
    if len(result) >= long_results.LEN_MIN:
        file = long_results.save_long_result(agent.context.id, result)
        saved = folders.chat_dir(agent.context.id) / file
        result = long_results.cut_middle(
            result, lambda cut: agent.read_prompt("fw.result_cut.md", cut=cut, path=saved)
        )
    if not hint and tool_offer.is_small(agent.config.chat_model):
        # A small model went on calling tools after the result it needed was back.
        hint = agent.read_prompt("fw.hint.small_answer.md")
    text = agent.read_prompt(
        "fw.tool_result.md", tool_name=tool_name, result=result, hint=hint, file=file
    )
    agent.history.add_message(ai=False, content=text, file=file or None)


def add_warning(agent: Agent, message: str) -> None:
    # A tool's error may quote an argument it had with a secret expanded.
    text = agent.read_prompt("fw.warning.md", message=message)
    agent.history.add_message(ai=False, content=agent.mask(text))
