"""An Agent Zero agent's history, read as a Cadre history.

Agent Zero saves each agent's history as JSON text inside its chat file:
`bulks` (merged summaries), sealed `topics` and the `current` topic, each
message `{"ai": bool, "content": ..., "summary": ...}`. A message's content
carries Agent Zero's markers: a user message is `{"user_message": ...,
"attachments": [...], "system_message": [...]}`, an intervention
`{"user_intervention": ...}`, a framework warning `{"system_warning": ...}`, a
tool's result `{"tool_name": ..., "tool_result": ...}`, an image or other
non-text part `{"raw_content": ..., "preview": ...}`; the model's replies are
its raw text. Each marker becomes the text Cadre itself writes for that kind
of message (its own `fw.*.md` prompt files), so the model reads an imported
chat as it reads one of Cadre's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

from core.prompt.history import Bulk, History, Message, Topic
from helpers.files import base_path
from profiles.prompts import PromptLoader

log = logging.getLogger(__name__)

#: Renders one of Cadre's prompt files with its variables.
Render = Callable[..., str]


def shipped_prompts() -> Render:
    """Cadre's own prompt files (the ones every chat's messages are written with)."""
    return PromptLoader([base_path("prompts")]).render


def convert_history(raw: Any, render: Render) -> History:
    """A Cadre history from Agent Zero's saved history (its JSON text, or the parsed
    object); ValueError says what is wrong with it."""
    if raw in ("", None):
        return History()
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"its history is not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ValueError("its history is not a JSON object")
    bulks, earliest = [], []
    for bulk in _records(raw.get("bulks"), "bulks"):
        if _text(bulk.get("summary")):
            bulks.append(Bulk(summary=_text(bulk["summary"]), topics=_count_topics(bulk)))
        else:
            # Agent Zero summarises a bulk as it makes it; one without a summary is shown
            # by its records, so they stay (as the oldest topics).
            earliest += list(_bulk_topics(bulk, render))
    topics = [_topic(t, render) for t in _records(raw.get("topics"), "topics")]
    current = raw.get("current") or {}
    if not isinstance(current, dict):
        raise ValueError("its current topic is not a JSON object")
    return History(bulks=bulks, topics=earliest + topics, current=_topic(current, render))


def _records(value: Any, what: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise ValueError(f"its history's {what} are not a list of objects")
    return value


def _count_topics(bulk: dict[str, Any]) -> int:
    records = bulk.get("records") if isinstance(bulk.get("records"), list) else []
    nested = sum(_count_topics(r) for r in records if isinstance(r, dict) and "records" in r)
    return max(1, nested + sum(1 for r in records if isinstance(r, dict) and "records" not in r))


def _bulk_topics(bulk: dict[str, Any], render: Render) -> Iterator[Topic]:
    for record in _records(bulk.get("records"), "bulk records"):
        if "records" in record:
            yield from _bulk_topics(record, render)
        else:
            yield _topic(record, render)


def _topic(data: dict[str, Any], render: Render) -> Topic:
    found = (_message(raw, render) for raw in _records(data.get("messages"), "messages"))
    messages = [message for message in found if message is not None]
    return Topic(messages=messages, summary=_text(data.get("summary")))


def _message(data: dict[str, Any], render: Render) -> Message | None:
    """One message in Cadre's words; None for one with nothing a model can read."""
    ai = data.get("ai")
    if not isinstance(ai, bool):
        raise ValueError("a message of its history has no 'ai' flag")
    summary = _text(data.get("summary"))
    if summary:  # what Agent Zero showed the model instead of a message too long to keep
        return Message(ai=ai, content=summary)
    content = data.get("content", "")
    if ai:
        text = content if isinstance(content, str) else _json(content)
        return Message(ai=True, content=text) if text.strip() else None
    return _from_markers(content, render)


def _from_markers(content: Any, render: Render) -> Message | None:
    if isinstance(content, str):
        return Message(ai=False, content=content) if content.strip() else None
    if isinstance(content, list):
        text = "\n".join(_part_text(part) for part in content).strip()
        return Message(ai=False, content=text) if text else None
    if not isinstance(content, dict):
        return Message(ai=False, content=_json(content))
    if "user_message" in content or "user_intervention" in content:
        intervention = "user_intervention" in content
        text = render(
            "fw.intervention.md" if intervention else "fw.user_message.md",
            message=_text(content.get("user_intervention" if intervention else "user_message")),
            attachments="\n".join(_texts(content.get("attachments"))),
            system_message="\n\n".join(_texts(content.get("system_message"))),
        )
        return Message(ai=False, content=text, pinned=True)
    if "system_warning" in content:
        text = render("fw.warning.md", message=_text(content["system_warning"]))
        return Message(ai=False, content=text)
    if "tool_name" in content and "tool_result" in content:
        text = render("fw.tool_result.md", tool_name=_text(content["tool_name"]),
                      result=_text(content["tool_result"]), hint="", file="")  # fmt: skip
        return Message(ai=False, content=text)
    if "raw_content" in content:
        preview = _text(content.get("preview"))
        if not preview:
            log.warning("an Agent Zero message with no text (an image?) was left out")
            return None
        return Message(ai=False, content=preview)
    return Message(ai=False, content=_json(content))


def _part_text(part: Any) -> str:
    """The text of one part of a multi-part message (an image part has none)."""
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type") == "text":
        return _text(part.get("text"))
    return ""


def _texts(value: Any) -> list[str]:
    if value in (None, "", []):
        return []
    return [_text(v) for v in value] if isinstance(value, list) else [_text(value)]


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
