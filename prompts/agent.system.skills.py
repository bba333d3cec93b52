"""The skills an agent has, one line each: name and description (their instructions are
loaded on demand with the `skills` tool, so the prompt stays short however many there are).

What this says is an input of the system prompt built from it (profiles/prompts.py): a
skill added, changed or removed makes the prompt be built again at the next step.
"""

from __future__ import annotations

from typing import Any

from profiles.skill_format import DESCRIPTION_MAX
from profiles.skills import usable_skills


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    # `context` is the agent the prompt is for.
    project = getattr(getattr(context, "context", None), "project_ref", None)  # the owner's
    profile = getattr(getattr(context, "config", None), "profile", "") or ""
    lines = [
        f"- `{skill.name}`: {' '.join(skill.description[:DESCRIPTION_MAX].split())}"
        for skill in usable_skills(profile, project)
    ]
    return {"skills": "\n".join(lines)}
