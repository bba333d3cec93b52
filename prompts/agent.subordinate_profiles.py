"""The profiles this agent may call, with when to use each (for the call_subordinate prompts).

Only those `catalog.allowed_subordinates` allows for the agent's own profile and project.
"""

from __future__ import annotations

from typing import Any

from profiles.catalog import allowed_subordinates, subordinate_profiles


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    # `context` is the agent the prompt is for.
    project = getattr(getattr(context, "context", None), "project_ref", None)  # the owner's
    profile = getattr(getattr(context, "config", None), "profile", "") or ""
    offered = subordinate_profiles(project)
    lines = []
    for name in allowed_subordinates(profile, project):
        found = offered.get(name)
        if found is None:
            continue  # gone since the rule was read
        when = f": {found.context}" if found.context else ""
        lines.append(f"- `{name}` ({found.title}){when}")
    # An empty list because a `subordinates` rule allows none, not because none exist.
    restricted = not lines and bool(offered)
    return {"agent_profiles": "\n".join(lines), "restricted": restricted}
