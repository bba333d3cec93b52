"""Plugins: folders that bring tools, prompts, profiles, skills and run-event handlers.

A plugin is a folder in the shipped `plugins/` or the user's `usr/plugins/` (the admin's:
its code runs on the host) holding `plugin.yaml`:

    name: weather              # the folder's name (may be left out, as Agent Zero's do)
    title: Weather             # shown in the Plugins panel
    description: Tells the weather.
    version: "1.0"
    enabled: true              # its state until someone switches it (default true)
    requires: {python: ["requests>=2"]}   # installed only after a person confirms
    handlers: handlers.py      # optional; the default file name
    panel: webui/panel.js      # optional: a JS module the page loads in the Plugins panel
    log_renderer: webui/log.js # optional: a JS module that draws its tools' log items
    settings: [...]            # optional: a settings section (profiles/plugin_settings.py)
    mcp_servers: {...}         # optional: MCP server entries (profiles/plugin_mcp.py)

and any of the folders `tools/`, `prompts/`, `agents/` (profiles), `skills/`. A user
plugin of a shipped plugin's name replaces it. Fields Cadre does not know (an Agent Zero
plugin's) are kept in `unused` and shown, never an error.

The API the rest of Cadre (and Agent Zero's adapter) uses:

- `discover_plugins()`: every plugin by name, broken ones with `error` (plain words).
- `active_plugins(profile, project)`: the usable plugins switched on there
  (profiles/plugin_switches.py decides), in name order.
- `plugin_folders(kind, profile, project)`: each active plugin's `<kind>/` folder that
  exists (`tools`, `prompts`, `agents`, `skills`, or any folder an adapter reads, such as
  `extensions/python`), as (plugin name, path).
- `record_problem(name, where, error)` / `problems(name)`: what went wrong while a plugin
  ran (a handler that raised or overran its budget); the panel shows them.

Discovery is cheap on every step: an answer is reused while the folders and files it was
read from are unchanged (helpers/file_snapshot.py), so a plugin dropped in, removed or
switched is seen at the next step without a restart.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from helpers import file_snapshot
from helpers.file_snapshot import Answers, folder_names, is_folder, named_folders
from helpers.files import base_path, usr_path
from helpers.names import check_name
from profiles.bounded_load import DataRefused, load_yaml, read_limited
from profiles.projects import ProjectLike

log = logging.getLogger(__name__)

#: The manifest's file name.
PLUGIN_FILE = "plugin.yaml"
#: Where shipped plugins live (a module attribute so tests can point elsewhere).
SHIPPED_PLUGINS = base_path("plugins")
#: The parts a plugin may bring as folders (each one an extra source where Cadre finds it).
PART_FOLDERS = ("tools", "prompts", "agents", "skills")
#: Folders of an Agent Zero plugin that Cadre does not run (its API handlers, its web UI
#: extensions): listed as not supported, never silently dropped.
NOT_SUPPORTED = ("api", "extensions/webui")
#: The handlers' module when the manifest names none.
DEFAULT_HANDLERS = "handlers.py"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
#: Problems kept per plugin (the newest; older ones are in the log).
PROBLEMS_KEPT = 20


def user_plugins() -> Path:
    """The user's plugins folder, usr/plugins/ (where installs go)."""
    return usr_path("plugins")


class Requires(BaseModel):
    """What a plugin needs from Cadre's environment."""

    model_config = ConfigDict(extra="forbid")
    #: pip requirement strings ("requests>=2"), installed only after a person confirms.
    python: list[str] = Field(default_factory=list)

    @field_validator("python")
    @classmethod
    def _plain(cls, value: list[str]) -> list[str]:
        for item in value:
            # A requirement, never a pip option ("--index-url ..."): pip gets it after `--`.
            if not item.strip() or item.strip().startswith("-") or len(item) > 200:
                raise ValueError(f"{item!r} is not a package requirement")
        return [item.strip() for item in value]


class Manifest(BaseModel):
    """plugin.yaml, checked (see the module's docstring)."""

    model_config = ConfigDict(extra="allow")
    #: Its folder's name; empty in an Agent Zero plugin.yaml, whose folder names it.
    name: str = ""
    title: str = ""
    description: str = ""
    version: str = "0"
    enabled: bool = True
    requires: Requires = Field(default_factory=Requires)
    handlers: str = DEFAULT_HANDLERS
    panel: str = ""
    log_renderer: str = ""
    settings: list[dict[str, Any]] = Field(default_factory=list)
    mcp_servers: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int | float) else value  # `version: 1.0`

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if value and not _NAME.match(value):
            raise ValueError("use letters, digits, '-' and '_' (at most 64)")
        return value

    @field_validator("handlers", "panel", "log_renderer")
    @classmethod
    def _inside(cls, value: str) -> str:
        if value:
            check_relative(value)
        return value

    @field_validator("panel", "log_renderer")
    @classmethod
    def _page_part(cls, value: str) -> str:
        # The page is served the plugin's webui/ folder alone (server/routes/plugins.py): a
        # bare name is a file there, as it always was ("panel.js": webui/panel.js).
        if not value:
            return value
        if not value.endswith((".js", ".mjs")):
            raise ValueError(f"{value!r} must be a JavaScript file in the plugin's webui/ folder"
                             " (e.g. webui/log.js)")  # fmt: skip
        return value if value.startswith("webui/") else f"webui/{value}"


def check_relative(path: str) -> str:
    """A path inside a plugin's folder: relative, no '..', no backslash (ValueError)."""
    parts = path.split("/")
    if path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{path!r} must be a path inside the plugin's folder")
    return path


def manifest_error(exc: ValidationError) -> str:
    """A manifest's first problem in plain words: the field, and what is wrong."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "plugin.yaml"
    return f"{PLUGIN_FILE}: {where}: {first['msg']}"


def read_manifest(root: Path) -> Manifest:
    """The checked manifest of the plugin folder `root` (ValueError in plain words)."""
    path = root / PLUGIN_FILE
    if file_snapshot.regular_file(path) is None:
        raise ValueError(f"no {PLUGIN_FILE}: a plugin is a folder with a {PLUGIN_FILE}")
    try:
        data = load_yaml(read_limited(path), PLUGIN_FILE)
    except (DataRefused, OSError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(data, dict):
        raise ValueError(f"{PLUGIN_FILE} must be a mapping of fields (name, title, ...)")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise ValueError(manifest_error(exc)) from None


@dataclass(frozen=True)
class Plugin:
    """One discovered plugin; `error` says why it cannot be used."""

    name: str
    root: Path
    #: "shipped" or "user".
    source: str
    manifest: Manifest | None = None
    error: str = ""
    #: Which of PART_FOLDERS it has, and "handlers" when it has a handlers module.
    parts: tuple[str, ...] = ()
    #: Fields of its plugin.yaml Cadre does not use (an Agent Zero plugin's, say).
    unused: tuple[str, ...] = field(default=())
    #: Its folders Cadre does not run (NOT_SUPPORTED that it has).
    not_supported: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        return self.manifest is not None and not self.error

    @property
    def title(self) -> str:
        return (self.manifest.title if self.manifest else "") or self.name

    @property
    def handlers_file(self) -> Path | None:
        return self.root / self.manifest.handlers if "handlers" in self.parts else None


def _load(name: str, root: Path, source: str) -> Plugin:
    try:
        manifest = read_manifest(root)
        if not manifest.name:  # Agent Zero's plugin.yaml: the folder names the plugin
            manifest = manifest.model_copy(update={"name": name})
        if manifest.name != name:
            raise ValueError(
                f"{PLUGIN_FILE} names it {manifest.name!r} but its folder is {name!r}:"
                " rename one so they match"
            )
    except ValueError as exc:
        _report_once(root, str(exc))
        return Plugin(name=name, root=root, source=source, error=str(exc))
    parts = [kind for kind in PART_FOLDERS if is_folder(root / kind)]
    if file_snapshot.regular_file(root / manifest.handlers) is not None:
        parts.append("handlers")
    unused = tuple(sorted(set(manifest.model_extra or ())))
    skipped = tuple(kind for kind in NOT_SUPPORTED if is_folder(root / kind))
    return Plugin(name, root, source, manifest, parts=tuple(parts), unused=unused,
                  not_supported=skipped)  # fmt: skip


_reported: set[tuple[Path, str]] = set()


def _report_once(root: Path, why: str) -> None:
    if (root, why) not in _reported:
        _reported.add((root, why))
        log.error("plugin at %s cannot be used: %s", root, why)


_discovered: Answers[dict[str, Plugin]] = Answers(4)


def discover_plugins() -> dict[str, Plugin]:
    """Every plugin by name, broken ones included (a user plugin replaces a shipped one)."""
    key = (SHIPPED_PLUGINS, user_plugins())
    return dict(_discovered.get(key, _discover))


def _discover() -> dict[str, Plugin]:
    found: dict[str, Plugin] = {}
    for source, folder in (("shipped", SHIPPED_PLUGINS), ("user", user_plugins())):
        for name, root in named_folders(folder, lambda n: check_name(n, "plugin"), "plugin"):
            found[name] = _load(name, root, source)
    return found


#: The last answer of `active_plugins` for each profile and project, with the discovered
#: plugins and the switches it was worked out from (both the same objects while unchanged).
_active: dict[tuple[str, Any], tuple[object, object, list[Plugin]]] = {}


def active_plugins(profile: str = "", project: ProjectLike | None = None) -> list[Plugin]:
    """The usable plugins switched on for `profile` in `project`, by name (do not change
    the list: it is shared)."""
    from profiles.plugin_switches import is_on, load  # they read the discovered plugins

    found = _discovered.get((SHIPPED_PLUGINS, user_plugins()), _discover)
    switches = load()
    key = (profile, project)
    known = _active.get(key)
    if known is not None and known[0] is found and known[1] is switches:
        return known[2]  # asked a dozen times a step: worked out again only after a change
    active = [found[n] for n in sorted(found) if found[n].usable and is_on(found[n], profile,
                                                                            project)]  # fmt: skip
    if len(_active) >= 256:  # projects and profiles come and go: keep it bounded
        _active.clear()
    _active[key] = (found, switches, active)
    return active


def plugin_of(path: Path) -> str:
    """The plugin whose folder holds `path` (a tool's file), by its folder's name; "" when
    it is in no plugin's folder."""
    for folder in (SHIPPED_PLUGINS, user_plugins()):
        try:
            inside = path.relative_to(folder)
        except ValueError:
            continue
        return inside.parts[0] if len(inside.parts) > 1 else ""
    return ""


def plugin_folders(
    kind: str, profile: str = "", project: ProjectLike | None = None
) -> list[tuple[str, Path]]:
    """(plugin name, its `kind` folder) of each active plugin that has one, by name."""
    found = []
    for plugin in active_plugins(profile, project):
        folder = plugin.root / kind
        if kind in plugin.parts or (kind not in PART_FOLDERS and folder_names(folder)):
            found.append((plugin.name, folder))
    return found


# -- problems met while plugins ran (shown in the panel; each also a log line) ------------

_problems: dict[str, deque[dict[str, Any]]] = {}
_problems_lock = threading.Lock()


def record_problem(name: str, where: str, error: str) -> None:
    """Keep what went wrong in plugin `name` (`where`: "handler on_run_ended", "load")."""
    log.warning("plugin %s: %s failed: %s", name, where, error)
    with _problems_lock:
        kept = _problems.setdefault(name, deque(maxlen=PROBLEMS_KEPT))
        kept.append({"where": where, "error": error, "at": time.time()})


def problems(name: str) -> list[dict[str, Any]]:
    """What went wrong in plugin `name` since the server started, oldest first."""
    with _problems_lock:
        return list(_problems.get(name, ()))


def clear_problems(name: str) -> None:
    with _problems_lock:
        _problems.pop(name, None)
