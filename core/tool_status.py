"""Which of a profile's tools cannot be used, and why: shown to the model and in the UI.

A tool is unusable when its file fails to import (a syntax error, a module
Cadre does not have: an Agent Zero tool needing one of Agent Zero's helpers)
or when it has no prompt file (`agent.system.tool.<name>.md`): the model would
not know how to call it. Such a tool is not offered; the system prompt names
it with the reason, a call of it is a repairable error saying the same, and
the profile's status in the settings page lists it. Nothing of that ends a run.
"""

from __future__ import annotations

from core.tool_loader import find_tool_file, load_problem, tool_names
from profiles.prompts import PromptLoader


def prompt_problem(name: str, prompts: PromptLoader) -> str | None:
    """Why the model could not be told of tool `name` (None: its prompt file is there)."""
    full, short = f"agent.system.tool.{name}.md", f"agent.small.tool.{name}.md"
    if prompts.exists(full) or prompts.exists(short):
        return None
    return f"it has no prompt file {full}, so the model cannot be told how to call it"


def tool_problems(
    profile: str, project: str | None, prompts: PromptLoader, names: list[str] | None = None
) -> dict[str, str]:
    """The tools of `names` (default: all of the profile's) that cannot be used, with why.

    Imports every tool file not loaded yet: call it off the event loop the first time.
    """
    problems = {}
    for name in tool_names(profile, project) if names is None else names:
        path = find_tool_file(profile, name, project)
        if path is None:
            continue
        problem = load_problem(path) or prompt_problem(name, prompts)
        if problem:
            problems[name] = problem
    return problems


def preload(profile: str, project: str | None) -> None:
    """Import the profile's tool files not loaded yet (or note why they fail): run it
    in a thread before the loop asks which tools there are, so no import blocks it."""
    for name in tool_names(profile, project):
        path = find_tool_file(profile, name, project)
        if path is not None:
            load_problem(path)
