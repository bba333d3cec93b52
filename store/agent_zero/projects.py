"""Agent Zero 1.x's projects (`usr/projects/<name>/`), made Cadre projects of the same name.

A 1.x project is a folder (the agents' work files) with its settings in
`.a0proj/`: `project.json` (title, description, instructions, color, git URL),
more instructions as text files in `instructions/`, knowledge files in
`knowledge/`, its secrets in `secrets.env`, its memory in `memory/` (a FAISS
area), and its own plugin settings. In Cadre the title and description become
the project's description, every instruction its instructions, the secrets its
secrets; its knowledge files go to the project's knowledge folder, its work files
to the project's own work folder, its memories to the project's memory area
(store/agent_zero/memories.py). What has no counterpart is reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.errors import UserError
from helpers.folders import knowledge_dir
from profiles.project_store import create_project, update_project
from profiles.projects import (
    WORK,
    ProjectSettings,
    check_name,
    load_project_secrets,
    load_project_settings,
    project_dir,
)
from store.agent_zero import memories
from store.agent_zero.common import KEEP, Report, copy_folder, entries, readable
from store.agent_zero.settings import parse_env

META = ".a0proj"
HEADER = "project.json"
#: Largest header or instruction file read.
LIMIT = 1024 * 1024
#: What a 1.x project keeps that Cadre's projects do not, with why.
NOT_BROUGHT = {
    "variables.env": "Cadre's projects have no variables: put them in the instructions",
    "agents.json": "which subordinates the project switched off: set disabled_agents again",
    "plugins": "the project's own plugin settings (its models among them): Cadre's projects "
    "use the settings' models",
    "agents": "the project's own settings per profile",
}
HANDLED = {HEADER, "instructions", "knowledge", "secrets.env", "memory"}


def import_projects(folder: Path, overwrite: bool, report: Report) -> None:
    for entry in entries(folder, "project", report):
        meta = entry / META
        if not entry.is_dir() or meta.is_symlink() or not (meta / HEADER).is_file():
            report.left(f"project {entry.name}", f"no {META}/{HEADER} in it")
            continue
        try:
            name = check_name(entry.name)
            settings, secrets = _read(meta)
            _make(name, settings, secrets, overwrite, report)
        except (OSError, ValueError, UserError) as exc:
            report.left(f"project {entry.name}", f"damaged: {exc}; left out, the rest imported")
            continue
        knowledge = meta / "knowledge"
        if readable(knowledge, report) and knowledge.is_dir():
            copy_folder(knowledge, knowledge_dir(name), f"project {name} knowledge", overwrite,
                        report)  # fmt: skip
        copy_folder(entry, project_dir(name) / WORK, f"project {name} work files", overwrite,
                    report, skip=frozenset({META, ".git"}))  # fmt: skip
        memory = meta / "memory"
        if readable(memory, report) and memory.is_dir():
            area = load_project_settings(name).memory_area or name
            memories.import_area(memory, area, f"project {name} memory", report)
        for part in sorted(meta.iterdir()):
            if part.name in NOT_BROUGHT:
                report.left(f"project {name}: {META}/{part.name}", NOT_BROUGHT[part.name])
            elif part.name not in HANDLED:
                report.left(f"project {name}: {META}/{part.name}", "not known to Cadre")


def _text(path: Path) -> str:
    if path.is_symlink() or path.stat().st_size > LIMIT:
        raise ValueError(f"{path.name} is a link or over {LIMIT // 1024} KB")
    return path.read_text(encoding="utf-8")


def _read(meta: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """Cadre's project settings and secrets from a 1.x project's `.a0proj/`."""
    try:
        header = json.loads(_text(meta / HEADER))
    except ValueError as exc:
        raise ValueError(f"{HEADER} is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{HEADER} is not a JSON object")
    title, about = str(header.get("title") or ""), str(header.get("description") or "")
    description = f"{title}: {about}" if title and about else title or about
    parts = [str(header.get("instructions") or "").strip()]
    extra = meta / "instructions"
    if extra.is_dir() and not extra.is_symlink():
        for file in sorted(p for p in extra.iterdir() if p.is_file()):
            parts.append(f"## {file.stem}\n\n{_text(file).strip()}")
    instructions = "\n\n".join(p for p in parts if p)
    limits = ProjectSettings.model_fields
    for field, value in (("description", description), ("instructions", instructions)):
        most = next(m.max_length for m in limits[field].metadata if hasattr(m, "max_length"))
        if len(value) > most:
            raise ValueError(f"its {field} is longer than Cadre's {most} characters")
    secrets: dict[str, str] = {}
    if (meta / "secrets.env").is_file():
        secrets, _ = parse_env(_text(meta / "secrets.env"))
    return {"description": description, "instructions": instructions}, secrets


def _make(
    name: str, data: dict[str, Any], secrets: dict[str, str], overwrite: bool, report: Report
) -> None:
    if not project_dir(name).is_dir():
        create_project(name, data, dict(secrets))
        report.did(f"project {name}" + (f" with {len(secrets)} secret(s)" if secrets else ""))
        return
    current = load_project_settings(name)
    same = all(getattr(current, k) == v for k, v in data.items())
    if same and secrets.items() <= load_project_secrets(name).items():
        report.already(f"project {name}")
    elif overwrite:
        update_project(name, data, dict(secrets))
        report.did(f"project {name} (its description, instructions and secrets replaced)")
    else:
        report.left(f"project {name}: description, instructions, secrets", KEEP)
