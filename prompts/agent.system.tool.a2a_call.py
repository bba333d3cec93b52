"""Variables of the a2a_call tool's prompt: the remote agents' names (the setting's)."""

from __future__ import annotations

from typing import Any


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    # `context` is the agent the prompt is for; its settings hold the remote agents.
    config = getattr(context, "config", None)
    agents = getattr(getattr(config, "settings", None), "a2a_agents", None) or []
    return {"agents": ", ".join(f"`{agent.name}`" for agent in agents) or "none"}
