"""Variables of the handoff tool's prompt: the way back, while another profile talks."""

from __future__ import annotations

from typing import Any


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    # `context` is the agent the prompt is for; `home_profile` is set during a handoff.
    chat = getattr(context, "context", None)
    return {"home": getattr(chat, "home_profile", None) or ""}
