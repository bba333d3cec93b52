"""What is known of a model without importing litellm: its price, whether it sees images,
whether it takes a reply schema.

litellm holds these facts in a JSON file it ships (`model_prices_and_context_window_backup.json`,
3.5 MB, read here in about 45 ms), and imports itself in 6 to 9 seconds. A chat's first
model call asked litellm (to price the call, to know whether to send images or a
schema), so the first answer with a provider took as long as that import, though the lean
client (models/openai_model.py) never needed litellm to make the call. The file is read
here instead, once, off the agents' loop at start (`preload`); once litellm is imported,
its own answers are used, as they were before (the same file, read its way).

A name is looked for as given, then without its provider's prefix (`openai/gpt-4.1-mini`
is `gpt-4.1-mini` in the file); a model the file does not name is unpriced and assumed
to see no images and take no schema, as litellm answers for it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: litellm's own copy of its model map, in its package.
MAP_FILE = "model_prices_and_context_window_backup.json"

_lock = threading.Lock()
_facts: dict[str, dict[str, Any]] | None = None


def preload() -> None:
    """Read the file now (start-up's thread), so a first call does not."""
    _all()


def facts(model: str) -> dict[str, Any] | None:
    """What the map says of `model` (None: it does not name it)."""
    known = _all()
    for name in (model, model.split("/", 1)[1] if "/" in model else ""):
        found = known.get(name) if name else None
        if isinstance(found, dict):
            return found
    return None


def cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """US dollars of a call by the map's prices per token (None: no price for the model)."""
    found = facts(model)
    if found is None:
        return None
    try:
        per_in = float(found.get("input_cost_per_token") or 0.0)
        per_out = float(found.get("output_cost_per_token") or 0.0)
    except (TypeError, ValueError):
        return None
    if "input_cost_per_token" not in found and "output_cost_per_token" not in found:
        return None
    return prompt_tokens * per_in + completion_tokens * per_out


def supports(model: str, feature: str) -> bool:
    """Whether the map says the model has `feature` (`vision`, `response_schema`)."""
    found = facts(model)
    return bool(found and found.get(f"supports_{feature}"))


def _all() -> dict[str, dict[str, Any]]:
    global _facts
    with _lock:
        if _facts is None:
            _facts = _read()
        return _facts


def _read() -> dict[str, dict[str, Any]]:
    spec = importlib.util.find_spec("litellm")  # where it is, without importing it
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / MAP_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("litellm's model map %s could not be read: %s", path, exc)
            continue
        if isinstance(data, dict):
            return data
    log.warning("litellm's model map was not found: prices and model facts wait for litellm")
    return {}


def known() -> bool:
    """Whether the map could be read (else callers ask litellm, as before)."""
    return bool(_all())


async def readable() -> bool:
    """`known`, for code on the agents' loop: the first time read in a thread (45 ms), then
    answered at once. Every model call asks: a thread's round trip each time cost a step
    several milliseconds (more when the loop's threads were busy)."""
    return bool(_facts) if _facts is not None else await asyncio.to_thread(known)
