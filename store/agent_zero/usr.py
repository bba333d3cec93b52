"""`python3 cadre.py import-agent-zero <usr> [--overwrite]`: an Agent Zero user moves in.

From an Agent Zero `usr/` folder it brings over the chats (`chats/<id>/chat.json`,
converted: store/agent_zero/chat.py), the profiles (`agents/<name>/`, copied
to Cadre's `usr/agents/` as they are), the skills (`skills/<name>/`, the same
SKILL.md format, copied to `usr/skills/`), the knowledge files Cadre reads
(`knowledge/**`), the secrets (`secrets.env`) and the model settings
(`settings.json` and the keys in `.env`: store/agent_zero/settings.py), and
says what it did and what it left, with why. From an Agent Zero 1.x folder also
the models of its `_model_config` plugin (model_config.py), its plugins
(plugins.py), its projects (projects.py) and, from either layout, the memory
texts (memories.py); the scheduled tasks come from the layer above
(scheduler/agent_zero.py, the command cadre.py runs). The shared parts (the
report, safe reading of the source) are common.py.

Cadre's own files win: a chat, profile, skill, plugin, project or knowledge file that exists, a
secret of the same name with another value, a setting already changed from
its default, all stay unless `--overwrite` is given. The source is trusted
no more than a download: a link, or a name that is not a plain file name, is
refused; a damaged file is left with the reason. Nothing in the source is
changed.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from helpers import folders
from helpers.files import base_path, usr_dir, usr_path
from helpers.settings import Settings, overridden_fields, save_settings, settings_path
from memory.knowledge import SUFFIXES
from profiles.projects import project_dir
from store import persist_chat
from store.agent_zero import extensions, memories, model_config, plugins, projects
from store.agent_zero.chat import convert, is_agent_zero_chat
from store.agent_zero.common import (
    KEEP,
    PLAIN,
    Report,
    copy_file,
    copy_folder,
    entries,
    files_under,
    readable,
)
from store.agent_zero.history import shipped_prompts
from store.agent_zero.settings import Change, Left, model_changes, parse_env

log = logging.getLogger(__name__)

#: Largest chat file read (Agent Zero keeps at most 1000 log items).
CHAT_LIMIT = 256 * 1024 * 1024
#: What Agent Zero keeps in usr/ that Cadre has no use for, with why.
NOT_BROUGHT = {
    "workdir": "the agents' work files: copy what you need into Cadre's work folder",
    "uploads": "files uploaded to Agent Zero's chats",
    "tools": "tools every Agent Zero agent had: Cadre takes tools from a profile; copy "
    "them to usr/agents/<profile>/tools/",
    "prompts": "prompts every Agent Zero agent had: Cadre takes prompts from a profile; "
    "copy them to usr/agents/<profile>/prompts/",
    "scheduler": "Agent Zero's scheduled tasks come over with `python3 cadre.py "
    "import-agent-zero` (this module alone does not reach the scheduler)",
}
#: The kinds of files Cadre's knowledge reads, as the report names them.
READ = ", ".join(sorted(SUFFIXES))
HANDLED = {"chats", "agents", "skills", "knowledge", "secrets.env", "settings.json", ".env",
           "plugins", "projects", "memory", "extensions"}  # fmt: skip
#: A part brought by a layer above this one (the scheduled tasks: scheduler/agent_zero.py),
#: given the source, `--overwrite` and the report.
Step = Callable[[Path, bool, Report], None]


def migrate(
    source: Path, overwrite: bool = False, steps: Mapping[str, Step] | None = None
) -> Report:
    """Bring `source` (an Agent Zero usr/ folder, of the older layout or 1.x) into Cadre's
    usr/; never raises for a damaged part of it (it is left with the reason). `steps`:
    the source's entries (by name) other layers bring."""
    report = Report()
    # Profiles and projects before the chats that name them.
    _folders(source / "agents", "agents", overwrite, report)
    _folders(source / "skills", "skills", overwrite, report)
    _knowledge(source / "knowledge", overwrite, report)
    _settings(source, overwrite, report)
    plugins.copy_plugins(source / "plugins", overwrite, report)
    extensions.copy_extensions(source / "extensions", overwrite, report)
    projects.import_projects(source / "projects", overwrite, report)
    _chats(source / "chats", overwrite, report)
    memories.import_memories(source, overwrite, report)
    for step in (steps or {}).values():
        step(source, overwrite, report)
    for entry in sorted(source.iterdir()):
        if entry.name in HANDLED or entry.name in (steps or {}):
            continue
        if entry.name in NOT_BROUGHT:
            report.left(entry.name, NOT_BROUGHT[entry.name])
        else:
            report.left(entry.name, "not something Agent Zero keeps that Cadre knows")
    return report


# -- chats ---------------------------------------------------------------------


def _chats(folder: Path, overwrite: bool, report: Report) -> None:
    render = shipped_prompts()
    for entry in entries(folder, "chat", report):
        file = entry / folders.CHAT_FILE
        if not entry.is_dir() or not file.is_file() or file.is_symlink():
            report.left(f"chat {entry.name}", "no chat.json in it")
            continue
        if folders.chat_file(entry.name).exists() and not overwrite:
            report.left(f"chat {entry.name}", KEEP)
            continue
        try:
            if file.stat().st_size > CHAT_LIMIT:
                raise ValueError(f"over {CHAT_LIMIT // 2**20} MB")
            try:
                data = json.loads(file.read_bytes())
            except ValueError as exc:
                raise ValueError(f"not JSON ({exc})") from None
            if not is_agent_zero_chat(data):
                raise ValueError("not an Agent Zero chat file")
            chat = convert(data, entry.name, render)
        except (OSError, ValueError, RecursionError) as exc:
            report.left(f"chat {entry.name}", f"damaged: {exc}")
            continue
        where = _project_of(data)
        if where and project_dir(where).is_dir():
            chat.project = where
        persist_chat.write_chat(chat)
        inside = f" (in project {where})" if chat.project else ""
        report.did(f"chat {entry.name} {chat.name!r}{inside}")
        if where and not chat.project:
            report.left(f"chat {entry.name}: its project {where!r}",
                        "not in Cadre: the chat is outside any project")  # fmt: skip


def _project_of(data: dict[str, Any]) -> str:
    """The project a 1.x chat belongs to (its context data's `project`), a plain name, or ""."""
    kept = data.get("data")
    name = kept.get("project") if isinstance(kept, dict) else None
    return name if isinstance(name, str) and PLAIN.fullmatch(name) else ""


# -- profiles, skills and knowledge ------------------------------------------------------


def _folders(folder: Path, kind: str, overwrite: bool, report: Report) -> None:
    """Profiles (`kind` "agents") or skills ("skills"): each folder copied as it is, file by
    file, into Cadre's usr/<kind>/ (Cadre reads both in Agent Zero's formats)."""
    what = {"agents": "profile", "skills": "skill"}[kind]
    shipped = {p.name for p in base_path(kind).iterdir()}
    for entry in entries(folder, what, report):
        if entry.is_dir():
            over = f" (over Cadre's shipped {what}, file by file)" if entry.name in shipped else ""
            copy_folder(entry, usr_path(kind, entry.name), f"{what} {entry.name}", overwrite,
                        report, note=over)  # fmt: skip


def _knowledge(folder: Path, overwrite: bool, report: Report) -> None:
    if not readable(folder, report) or not folder.is_dir():
        return
    for relative in files_under(folder, "knowledge", report):
        name = relative.as_posix()
        if relative.suffix.lower() not in SUFFIXES:
            report.left(f"knowledge {name}", f"Cadre's knowledge reads {READ} files only")
        else:
            copied = copy_file(folder / relative, usr_path("knowledge", *relative.parts), overwrite)
            if copied:
                report.did(f"knowledge {name}")
            elif copied is None:
                report.already(f"knowledge {name}")
            else:
                report.left(f"knowledge {name}", KEEP)


# -- secrets and settings --------------------------------------------------------


def _read_env(path: Path, report: Report) -> dict[str, str]:
    if not readable(path, report) or not path.is_file():
        return {}
    try:
        pairs, bad = parse_env(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        report.left(path.name, f"cannot be read: {exc}")
        return {}
    for number in bad:
        report.left(f"{path.name} line {number}", "not NAME=value")
    return pairs


def _read_a0_settings(path: Path, report: Report) -> dict[str, Any]:
    if not readable(path, report) or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        report.left("settings.json", f"damaged: {exc}")
        return {}
    if not isinstance(data, dict):
        report.left("settings.json", "damaged: not a JSON object")
        return {}
    return data


def _settings(source: Path, overwrite: bool, report: Report) -> None:
    secrets = _read_env(source / "secrets.env", report)
    keys = _read_env(source / ".env", report)
    a0 = _read_a0_settings(source / "settings.json", report)
    # 1.x keeps its models in its `_model_config` plugin's configuration, not settings.json.
    a0.update(model_config.read_model_config(source, report))
    changes = model_changes(a0, keys)
    for item in changes:
        if isinstance(item, Left):
            report.left(item.what, item.why)
    wanted = [c for c in changes if isinstance(c, Change)]
    if not secrets and not wanted:
        return
    path = settings_path()
    try:
        stored = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        current = Settings.model_validate(stored)
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        report.left("settings", f"Cadre's {path} cannot be read ({exc}); nothing changed there")
        return
    updated = current.model_dump()
    for change in wanted:
        _apply(change, stored, updated, overwrite, report)
    _merge_secrets(secrets, updated, overwrite, report)
    if updated != current.model_dump():
        save_settings(Settings.model_validate(updated))


def _apply(
    change: Change, stored: dict[str, Any], updated: dict[str, Any], overwrite: bool, report: Report
) -> None:
    """Set one field unless Cadre's value is the user's own (set, not the default)."""
    name = change.field
    shown = _shown(change)
    have = updated[name]
    default = Settings.model_fields[name].get_default(call_default_factory=True)
    if have == change.value:
        report.already(f"setting {name} = {shown}")
        return
    if name in stored and have != default and not overwrite:
        report.left(f"setting {name}", f"set in Cadre already (--overwrite sets {shown})")
        return
    updated[name] = change.value
    env = overridden_fields().get(name)
    notes = [change.note, f"({env} in the environment still wins)" if env else ""]
    report.did(" ".join([f"setting {name} = {shown}", *filter(None, notes)]))


def _shown(change: Change) -> str:
    """A value as the report prints it: never a secret (parameters by their names only)."""
    if change.secret:
        return "(secret)"
    if isinstance(change.value, dict):
        return "{" + ", ".join(sorted(change.value)) + "}"
    return repr(change.value)


def _merge_secrets(
    secrets: dict[str, str], updated: dict[str, Any], overwrite: bool, report: Report
) -> None:
    held: dict[str, str] = dict(updated["secrets"])
    for name, value in secrets.items():
        if held.get(name) == value:
            report.already(f"secret {name}")
            continue
        if name in held and not overwrite:
            report.left(f"secret {name}", "Cadre has one of that name (--overwrite replaces it)")
            continue
        held[name] = value
        report.did(f"secret {name}")
    updated["secrets"] = held


# -- the command -------------------------------------------------------------------


def looks_like_agent_zero(source: Path) -> bool:
    return source.is_dir() and any((source / name).exists() for name in HANDLED - {".env"})


def layout(source: Path) -> str:
    """Which Agent Zero wrote `source`, as the report's first line says it: 1.x keeps its
    models in its `_model_config` plugin and its projects' settings in `.a0proj/`."""
    if (source / model_config.CONFIG).exists() or any(source.glob("projects/*/.a0proj")):
        return "Agent Zero 1.x"
    return "Agent Zero (before 1.0)"


def main(argv: list[str] | None = None, steps: Mapping[str, Step] | None = None) -> int:
    """The command; `steps`: what layers above bring too (scheduler/agent_zero.py `main`,
    which `python3 cadre.py import-agent-zero` runs, adds the scheduled tasks)."""
    parser = argparse.ArgumentParser(
        prog="python3 cadre.py import-agent-zero",
        description="Bring an Agent Zero usr/ folder (before 1.0 or 1.x) into Cadre: chats, "
        "profiles, skills, knowledge, secrets, model settings, plugins, projects, scheduled "
        "tasks and memories.",
    )
    parser.add_argument("source", type=Path, help="Agent Zero's usr/ folder")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace Cadre's own chats, files, secrets, settings, projects and tasks of the "
        "same name",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    source = args.source.expanduser().resolve()
    out = sys.stdout
    if not looks_like_agent_zero(source):
        out.write(f"{source} is not an Agent Zero usr/ folder: it has none of "
                  f"{', '.join(sorted(HANDLED - {'.env'}))}\n")  # fmt: skip
        return 2
    if source == usr_dir().resolve():
        out.write(f"{source} is Cadre's own usr/ folder\n")
        return 2
    out.write(f"Importing {layout(source)}'s {source} into Cadre's {usr_dir()}\n")
    report = migrate(source, args.overwrite, steps)
    out.write(report.text())
    if any(line.startswith("chat ") for line in report.done):
        out.write("A running Cadre lists the imported chats after its next start.\n")
    if any(line.startswith("plugin ") for line in report.done):
        out.write("Plugins are copied, not switched on: Cadre's Plugins panel shows them, "
                  "with what of each runs in Cadre.\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
