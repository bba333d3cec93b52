"""Agent profiles: discovered from folders, merged by name, looked up per call.

A profile is a folder: `agent.yaml` (title, description, context, enabled),
optional `prompts/` and `tools/` (override single files of the shared
`prompts/` and `tools/` by name) and optional `settings.json` (setting
overrides for agents of that profile, e.g. a cheaper model).

Sources, later ones overriding earlier ones by name: shipped `agents/` →
`plugins/*/agents/` → `usr/agents/` → `usr/projects/<project>/agents/`. A
profile's `agent.yaml` comes from the last source that has the folder, while
its prompts and tools are layered over every source (most specific first),
so a user can override one prompt of a shipped profile and keep the rest.
Folders are read on every call (with a cache keyed by modification time): a
profile dropped into `usr/agents/` is there without a restart.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from helpers.errors import UserError
from helpers.files import base_path, usr_path
from helpers.projects import check_name, load_project_settings, project_dir
from helpers.settings import Settings

log = logging.getLogger(__name__)

#: The profile of a subordinate called without one.
DEFAULT_SUBORDINATE_PROFILE = "default"

#: Where shipped profiles and plugins live (module attributes so tests can point elsewhere).
SHIPPED_AGENTS = base_path("agents")
PLUGINS = base_path("plugins")


@dataclass(frozen=True)
class AgentProfile:
    """One discovered profile. `error` says why it cannot be used, if it cannot."""

    name: str
    title: str
    root: Path
    source: str
    description: str = ""
    context: str = ""
    enabled: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    @property
    def available(self) -> bool:
        return self.enabled and not self.error


def check_profile_name(name: str) -> str:
    """A profile name is a plain folder name; anything path-like is refused."""
    return check_name(name, "agent profile")


def profile_sources(project: str | None = None) -> list[tuple[str, Path]]:
    """(label, agents folder) of every source, lowest precedence first."""
    sources = [("shipped", SHIPPED_AGENTS)]
    if PLUGINS.is_dir():
        sources += [(f"plugin:{p.name}", p / "agents") for p in sorted(PLUGINS.iterdir())]
    sources.append(("user", usr_path("agents")))
    if project:
        sources.append((f"project:{project}", project_dir(project) / "agents"))
    return sources


_yaml_cache: dict[Path, tuple[int, dict[str, Any]]] = {}


def _read_yaml(path: Path) -> dict[str, Any]:
    stamp = path.stat().st_mtime_ns
    cached = _yaml_cache.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError("agent.yaml must be a mapping of title, description, context, enabled")
    _yaml_cache[path] = (stamp, data)
    return data


_reported: set[tuple[Path, str]] = set()


def _load_profile(name: str, root: Path, source: str) -> AgentProfile:
    def broken(reason: str) -> AgentProfile:
        # Discovery runs on every prompt build: report each problem once, not every step.
        if (root, reason) not in _reported:
            _reported.add((root, reason))
            log.error("agent profile %r at %s is unavailable: %s", name, root, reason)
        return AgentProfile(name=name, title=name, root=root, source=source, error=reason)

    meta_file = root / "agent.yaml"
    if not meta_file.is_file():
        return broken("no agent.yaml")
    try:
        meta = _read_yaml(meta_file)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        return broken(f"agent.yaml is not valid YAML{where}: {getattr(exc, 'problem', exc)}")
    except (OSError, ValueError) as exc:
        return broken(f"agent.yaml: {exc}")
    try:
        settings_file = root / "settings.json"
        settings = json.loads(settings_file.read_text()) if settings_file.is_file() else {}
        if not isinstance(settings, dict):
            raise ValueError("not a JSON object")
        unknown = sorted(set(settings) - set(Settings.model_fields))
        if unknown:
            raise ValueError(f"unknown setting(s) {', '.join(unknown)}")
    except (OSError, ValueError) as exc:
        return broken(f"settings.json: {exc}")
    return AgentProfile(
        name=name,
        title=str(meta.get("title") or name),
        root=root,
        source=source,
        description=str(meta.get("description") or ""),
        context=str(meta.get("context") or ""),
        enabled=bool(meta.get("enabled", True)),
        settings=settings,
    )


def discover_profiles(project: str | None = None) -> dict[str, AgentProfile]:
    """Every profile by name, including disabled and broken ones (for the UI's list)."""
    found: dict[str, AgentProfile] = {}
    for source, folder in profile_sources(project):
        if not folder.is_dir():
            continue
        for root in sorted(p for p in folder.iterdir() if p.is_dir()):
            if root.name.startswith((".", "_")):
                continue
            try:
                name = check_profile_name(root.name)
            except UserError:
                log.warning("ignoring profile folder with an unusable name: %s", root)
                continue
            found[name] = _load_profile(name, root, source)
    disabled = set(load_project_settings(project).disabled_agents)
    for name in disabled & found.keys():
        found[name] = replace(found[name], enabled=False)
    return found


def get_available_agents_dict(project_name: str | None = None) -> dict[str, AgentProfile]:
    """The profiles an agent may use now, by name."""
    return {n: p for n, p in discover_profiles(project_name).items() if p.available}


def profile_roots(profile: str, project: str | None = None) -> list[Path]:
    """Every folder of `profile` across the sources, most specific first."""
    if not profile:
        return []
    check_profile_name(profile)
    return [folder / profile for _, folder in reversed(profile_sources(project))]


def layered_folders(profile: str, kind: str, project: str | None = None) -> list[Path]:
    """`prompts` or `tools` folders for `profile`, first wins, ending with the shared one."""
    return [root / kind for root in profile_roots(profile, project)] + [base_path(kind)]


def profile_settings(profile: str, project: str | None = None) -> dict[str, Any]:
    """The setting overrides a profile's `settings.json` asks for ({} when none)."""
    found = discover_profiles(project).get(profile)
    return dict(found.settings) if found and found.available else {}
