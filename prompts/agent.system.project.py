"""The project of the agent's chat, if any: its name, description, work folder and the
instructions the user gave for every agent in it (profiles/projects.py).

What this says is an input of the system prompt built from it: an edit of the
project's instructions is in the prompt from the next step on.
"""

from __future__ import annotations

from typing import Any

from profiles.projects import load_project_settings, project_exists


def get_variables(context: Any, **variables: Any) -> dict[str, Any]:
    # `context` is the agent the prompt is for.
    project = getattr(getattr(context, "context", None), "project", None) or ""
    if project and not project_exists(project):
        project = ""  # deleted under a loaded chat: nothing to follow any more
    found = load_project_settings(project or None)
    settings = getattr(getattr(context, "config", None), "settings", None)
    return {
        "project": project,
        "description": found.description.strip(),
        "instructions": found.instructions.strip(),
        "work_folder": getattr(settings, "work_dir", "") or "",
    }
