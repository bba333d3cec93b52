"""What goes into an agent's history: messages rendered from its prompt files, masked.

The user's messages (and interventions), the model's replies, tool results and
framework warnings each have their prompt file (`fw.*.md`); everything is
masked (no secret value reaches the model), and a long tool result is saved
as a file the agent can cite with `§§include` and shown cut in the middle.
A result that came from outside (its `source` given) is marked as data from
that source (core/prompt/untrusted.py), in history and in its saved file alike.
`Agent.add_*` call these; each entry is told as `HistoryAdded` while someone listens.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from core.agent_types import is_small
from core.events import HistoryAdded
from core.prompt import long_results, untrusted
from helpers import folders
from helpers.images import IMAGE_FOLDERS, ImageRef, ImageRefused, has_image_magic, ref_in_chat

if TYPE_CHECKING:
    from core.agent import Agent
    from core.agent_types import UserMessage

log = logging.getLogger(__name__)


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
    images = attached_images(agent, msg.attachments)
    added = agent.history.add_message(ai=False, content=agent.mask(text), pinned=True,
                                      images=images, at=_log_position(agent))  # fmt: skip
    _told(agent, "user", added)
    agent.last_reply = ""


def attached_images(agent: Agent, attachments: list[str]) -> list[ImageRef]:
    """The attachments that are images a model can be shown (the others stay file paths,
    as the message's text names them; so does an image too large to send, with a log line)."""
    folder = folders.chat_dir(agent.chat.id)
    found = []
    for raw in attachments:
        path = Path(raw)
        try:
            relative = path.relative_to(folder.resolve()).as_posix()
        except ValueError:
            continue  # not a file of this chat (a superior's message names no attachments)
        if path.parent.name not in IMAGE_FOLDERS or not _looks_like_image(path):
            continue
        try:
            found.append(ref_in_chat(folder, relative, path.name))
        except ImageRefused as exc:
            log.info("chat %s: attachment %s is not shown as an image: %s", agent.chat.id,
                     path.name, exc)  # fmt: skip
    return found


def _looks_like_image(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return has_image_magic(handle.read(16))
    except OSError:
        return False


def add_ai_response(agent: Agent, text: str) -> None:
    # An empty assistant message is rejected by some providers (Anthropic)
    # on every later call; the warning that follows says what happened.
    if text.strip():
        added = agent.history.add_message(ai=True, content=agent.mask(text),
                                          at=_log_position(agent))  # fmt: skip
        _told(agent, "ai", added)


def add_tool_result(
    agent: Agent,
    tool_name: str,
    result: str,
    hint: str = "",
    images: list[ImageRef] | None = None,
    source: str | None = None,
) -> None:
    """A tool's result, with `hint` (framework advice) and the `images` it shows the model
    (vision_load); a long one is also saved for `§§include`. `source` (a URL, an MCP
    server, a file): the result came from outside and is marked as data from there."""
    result = agent.mask(result)  # a tool may print a secret it was given
    long = len(result) >= long_results.LEN_MIN
    if source is not None:
        # Marked before it is saved: a `§§include` of the file carries the marking along.
        result = untrusted.mark(result, tool_name, agent.mask(source))
    file = ""
    if long:
        file = long_results.save_long_result(agent.chat.id, result)
        saved = folders.chat_dir(agent.chat.id) / file
        result = long_results.cut_middle(
            result, lambda cut: agent.read_prompt("fw.result_cut.md", cut=cut, path=saved)
        )
    if not hint and is_small(agent.config.chat_model):
        # A small model went on calling tools after the result it needed was back.
        hint = agent.read_prompt("fw.hint.small_answer.md")
    text = agent.read_prompt(
        "fw.tool_result.md", tool_name=tool_name, result=result, hint=hint, file=file
    )
    added = agent.history.add_message(ai=False, content=text, file=file or None, images=images,
                                      at=_log_position(agent))  # fmt: skip
    _told(agent, "tool", added)


def add_warning(agent: Agent, message: str) -> None:
    # A tool's error may quote an argument it had with a secret expanded.
    text = agent.read_prompt("fw.warning.md", message=message)
    added = agent.history.add_message(ai=False, content=agent.mask(text), at=_log_position(agent))
    _told(agent, "warning", added)


def _told(agent: Agent, kind: str, message: object) -> None:
    """`HistoryAdded` to whoever listens (a plugin's handler); nobody listening, no event."""
    events = agent.chat.events
    if events.wants(HistoryAdded):
        events.emit_soon(HistoryAdded(agent.ctx, kind, message))


def _log_position(agent: Agent) -> int:
    """How many items the chat's log has now: where a message enters history, in the log's
    terms (a branch at an item keeps the messages added before the next one: core/chat_cut.py)."""
    return len(agent.chat.log.items)
