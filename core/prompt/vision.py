"""A chat's images as the model receives them: image parts for a model that sees, a note
for one that reads text only.

A message's images (`core.prompt.history.Message.images`) stay files in the chat's
folder; each prompt reads them again (helpers.images keeps the last few
encoded), so history and the saved chat hold paths, never bytes. A vision
model gets OpenAI's content parts (`text`, then a label and an `image_url`
with a `data:` URL per image), which litellm translates for every other
provider; a text-only model, the embedded local one among them, gets the
text and a note naming the images instead (`fw.image_not_seen.md`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.prompt.history import OutputMessage
from helpers.folders import chat_dir
from helpers.images import ImageRefused
from helpers.images import data_url as image_data_url
from models import model_facts
from models.llm import litellm_loaded
from models.local_model import is_local
from models.vision import sees_images

if TYPE_CHECKING:
    from core.agent import Agent

#: What the Context view shows in place of an image's bytes.
SHOWN_AS = "data:{mime};base64,… ({size} bytes)"
#: `Agent.data`'s key for the images the person was told this agent's model cannot see.
TOLD_UNSEEN = "images_not_seen_told"
#: Paths kept under that key (the newest): an image told of is not told of again.
TOLD_KEPT = 200
UNSEEN_HEADING = "Images not shown to the model"
UNSEEN_TEXT = (
    "The model reads text only: it is told that {names} {verb} attached, but cannot see "
    "{them}. Describe what matters in words, or choose a model that sees images (and check "
    'the setting "Images to the chat model" in Settings).'
)


async def facts_loaded(agent: Agent) -> None:
    """Before a prompt is built: litellm's model map, which `auto` asks, is read (without
    litellm: models/model_facts.py; litellm itself, still importing for seconds at start,
    only where the map cannot be read), in a thread."""
    if agent.config.settings.chat_vision == "auto" and not is_local(agent.config.chat_model.model):
        if not await model_facts.readable():
            await litellm_loaded()


def model_sees_images(agent: Agent) -> bool:
    """True when the agent's chat model is sent images (the `chat_vision` setting)."""
    return sees_images(agent.config.chat_model, agent.config.settings.chat_vision)


def tell_unseen(agent: Agent) -> None:
    """Tell the person, once for each image, when the model is not shown it: the model is
    told in its prompt (`fw.image_not_seen.md`), and the person saw nothing of it."""
    if model_sees_images(agent):
        return
    told = agent.get_data(TOLD_UNSEEN) or []
    new = [
        image
        for message in agent.history.current.messages
        for image in message.images
        if image.path not in told
    ]
    if not new:
        return
    names = ", ".join(image.name or image.path for image in new)
    several = len(new) > 1
    text = UNSEEN_TEXT.format(
        names=names, verb="are" if several else "is", them="them" if several else "it"
    )
    agent.chat.log.log("info", UNSEEN_HEADING, text, agentno=agent.number)
    agent.set_data(TOLD_UNSEEN, [*told, *(image.path for image in new)][-TOLD_KEPT:])


def model_content(agent: Agent, message: OutputMessage, sees: bool) -> str | list[dict[str, Any]]:
    """`message`'s content for the model: its text, with its images as parts or a note."""
    if not message.images:
        return message.content
    names = ", ".join(image.name or image.path for image in message.images)
    if not sees:
        return message.content + "\n\n" + agent.read_prompt("fw.image_not_seen.md", images=names)
    folder = chat_dir(agent.chat.id)
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    missing: list[str] = []
    for image in message.images:
        try:
            url = image_data_url(folder, image)
        except ImageRefused as exc:  # deleted or replaced since: say so, send the rest
            missing.append(str(exc))
            continue
        label = agent.read_prompt(
            "fw.image.md", name=image.name or image.path, width=image.width, height=image.height
        )
        parts += [{"type": "text", "text": label}, {"type": "image_url", "image_url": {"url": url}}]
    if missing:
        note = agent.read_prompt("fw.image_missing.md", problems="\n".join(missing))
        parts.append({"type": "text", "text": note})
    return parts


def add_text(content: str | list[dict[str, Any]], text: str) -> str | list[dict[str, Any]]:
    """`content` with `text` after it (a new text part when it has parts)."""
    if isinstance(content, str):
        return content + "\n\n" + text
    return [*content, {"type": "text", "text": text}]


def for_display(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with each image's bytes replaced by a short mark (the Context view)."""
    shown = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [_shown_part(part) for part in content]
        shown.append({**message, "content": content})
    return shown


def _shown_part(part: dict[str, Any]) -> dict[str, Any]:
    if part.get("type") != "image_url":
        return part
    url = str(part.get("image_url", {}).get("url", ""))
    mime = url[5 : url.find(";")] if url.startswith("data:") and ";" in url else "image"
    size = len(url.split(",", 1)[-1]) * 3 // 4
    return {"type": "image_url", "image_url": {"url": SHOWN_AS.format(mime=mime, size=size)}}
