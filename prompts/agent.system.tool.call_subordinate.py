"""The profiles a subordinate may use, with when to use each."""

from __future__ import annotations

from typing import Any

from helpers.subagents import get_available_agents_dict


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    project = getattr(getattr(context, "context", None), "project", None)
    lines = []
    for name, profile in sorted(get_available_agents_dict(project).items()):
        if name == "agent0":
            continue  # the user's own agent, not a subordinate
        when = f": {profile.context}" if profile.context else ""
        lines.append(f"- `{name}` ({profile.title}){when}")
    return {"agent_profiles": "\n".join(lines) or "- `default` (Default)"}
