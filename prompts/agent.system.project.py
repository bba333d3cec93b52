"""The project of the agent's chat, if any (its owner's): its name, description, work
folder and the instructions the user gave for every agent in it (profiles/projects.py).

What this says is an input of the system prompt built from it: an edit of the
project's instructions is in the prompt from the next step on.
"""

from __future__ import annotations

from typing import Any

from profiles.projects import load_project_settings, project_exists


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    # `context` is the agent the prompt is for; its chat's project is its owner's.
    place = getattr(getattr(context, "context", None), "project_ref", None)
    if not place or not project_exists(place):
        place = None  # none (a place without a name: the owner's space alone), or deleted
    found = load_project_settings(place)
    settings = getattr(getattr(context, "config", None), "settings", None)
    return {
        "project": place.name if place is not None else "",
        "description": found.description.strip(),
        "instructions": found.instructions.strip(),
        "work_folder": getattr(settings, "work_dir", "") or "",
    }
