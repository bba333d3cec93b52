"""The profiles a subordinate may use, with when to use each (for the call_subordinate prompts)."""

from __future__ import annotations

from typing import Any

from profiles.catalog import subordinate_profiles


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    project = getattr(getattr(context, "context", None), "project", None)
    lines = []
    for name, profile in sorted(subordinate_profiles(project).items()):
        when = f": {profile.context}" if profile.context else ""
        lines.append(f"- `{name}` ({profile.title}){when}")
    return {"agent_profiles": "\n".join(lines)}
