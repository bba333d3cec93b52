"""Which of a profile's tools cannot be used, and why: shown to the model and in the UI.

A tool is unusable when its file fails to import (a syntax error, a module
Cadre does not have: an Agent Zero tool needing one of Agent Zero's helpers)
or when it has no prompt file (`agent.system.tool.<name>.md`): the model would
not know how to call it. Such a tool is not offered; the system prompt names
it with the reason, a call of it is a repairable error saying the same, and
the profile's status in the settings page lists it. Nothing of that ends a run.
"""

from __future__ import annotations

from pathlib import Path

from core.tooling.tool_loader import load_problem, load_settled, tool_files
from helpers.file_snapshot import folder_names
from profiles.projects import ProjectLike
from profiles.prompts import PromptLoader


def prompt_problem(name: str, prompt_files: set[str]) -> str | None:
    """Why the model could not be told of tool `name` (None: its prompt file is there).

    `prompt_files`: the names in the agent's prompt folders."""
    full, short = f"agent.system.tool.{name}.md", f"agent.small.tool.{name}.md"
    if full in prompt_files or short in prompt_files:
        return None
    return f"it has no prompt file {full}, so the model cannot be told how to call it"


def tool_problems(
    profile: str,
    project: ProjectLike | None,
    prompts: PromptLoader,
    names: list[str] | None = None,
    files: dict[str, Path] | None = None,
) -> dict[str, str]:
    """The tools of `names` (default: all of the profile's) that cannot be used, with why;
    `files`: the profile's `tool_files`, if the caller has them already.

    Asked for on every step (which tools to offer), so each folder is listed once
    and each tool file stat'ed; a file not imported yet is imported here, so call
    it off the event loop the first time (`preload`).
    """
    files = tool_files(profile, project) if files is None else files
    prompt_files: set[str] = set().union(*(folder_names(f) for f in prompts.folders))
    problems = {}
    for name in files if names is None else names:
        path = files.get(name)
        if path is None:
            continue
        problem = load_problem(path) or prompt_problem(name, prompt_files)
        if problem:
            problems[name] = problem
    return problems


def preload(files: dict[str, Path]) -> None:
    """Import the tool files not loaded yet (or note why they fail): run it in a thread
    before the loop asks which tools there are, so no import blocks it."""
    for path in files.values():
        load_problem(path)


def all_loaded(files: dict[str, Path]) -> bool:
    """Whether every one of the tool `files` was imported (or failed) as it is now: a stat
    each, so the loop asks this before it sends `preload` to a thread."""
    return all(load_settled(path) for path in files.values())
