"""Which plugins are on: globally, per agent profile, per project; changed without a restart.

Kept in `usr/plugin_switches.json`, beside settings.json and the projects:

    {"version": 1,
     "global":   {"weather": false},
     "profiles": {"researcher": {"weather": true}},
     "projects": {"projects/alpha": {"weather": false}}}

A project is keyed by its folder under usr/ (`projects/alpha`, `users/bob/projects/alpha`),
so two people's projects of one name are two keys. A plugin is on when the most specific
switch that names it says so: the project's, else the profile's, else the global one, else
its manifest's `enabled` (true by default).

Readers are cheap (the file is read again only when its stamp changes: every step asks).
Writers change it as a read-modify-write under a lock: a threading lock for this process's
threads, and, when the server gives one (`use_locks`, cluster/node.py's node), a lock every
node honours; the file is replaced whole (helpers/files.py `write_text_atomic`), so a reader
never sees half of it.
"""

from __future__ import annotations

import json
import logging
import threading
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Literal

from helpers.file_snapshot import looked_up
from helpers.files import usr_dir, usr_path, write_text_atomic
from helpers.shared_files import SharedLocks, Stamp, stamp_at
from profiles.projects import ProjectLike, project_dir

log = logging.getLogger(__name__)

Scope = Literal["global", "profiles", "projects"]
SCOPES: tuple[Scope, ...] = ("global", "profiles", "projects")
_EMPTY: dict[str, Any] = {"version": 1, "global": {}, "profiles": {}, "projects": {}}

_lock = threading.Lock()
_locks: SharedLocks | None = None
_read: tuple[Path, Stamp | None, dict[str, Any]] | None = None


def use_locks(locks: SharedLocks | None) -> None:
    """The lock the processes sharing usr/ honour (the server's node; None: alone)."""
    global _locks
    _locks = locks


def switches_file() -> Path:
    return usr_path("plugin_switches.json")


def project_key(project: ProjectLike) -> str:
    """A project's key in the file: its folder under usr/."""
    folder = project_dir(project)
    try:
        return folder.relative_to(usr_dir()).as_posix()
    except ValueError:
        return folder.as_posix()


def load() -> dict[str, Any]:
    """The switches as they are on disk now (reread only when the file changed; looked at
    once a step: helpers/file_snapshot.py `one_look`)."""
    return looked_up("plugin_switches", _load_now)


def _load_now() -> dict[str, Any]:
    global _read
    path = switches_file()
    stamp = stamp_at(path)
    cached = _read
    if cached is not None and cached[0] == path and cached[1] == stamp:
        return cached[2]
    data = _parse(path) if stamp is not None else json.loads(json.dumps(_EMPTY))
    _read = (path, stamp, data)
    return data


def _parse(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a mapping")
    except (OSError, ValueError) as exc:
        # Not fatal: every plugin keeps its manifest's state until the file is fixed.
        log.error("%s cannot be read (%s): plugins keep their own default state", path, exc)
        data = {}
    for scope in SCOPES:
        if not isinstance(data.get(scope), dict):
            data[scope] = {}
    return data


def is_on(plugin: Any, profile: str = "", project: ProjectLike | None = None) -> bool:
    """Whether `plugin` (profiles/plugins.py's Plugin) is on for `profile` in `project`."""
    data = load()
    state = plugin.manifest.enabled if plugin.manifest is not None else False
    layers = [data["global"]]
    if profile:
        layers.append(data["profiles"].get(profile) or {})
    if project:
        layers.append(data["projects"].get(project_key(project)) or {})
    for layer in layers:
        said = layer.get(plugin.name) if isinstance(layer, dict) else None
        if isinstance(said, bool):
            state = said
    return state


def on_anywhere(plugin: Any) -> bool:
    """Whether `plugin` is on for everyone, or for some profile or project."""
    data = load()
    return is_on(plugin) or any(
        isinstance(layer, dict) and layer.get(plugin.name) is True
        for scope in ("profiles", "projects")
        for layer in data[scope].values()
    )


def switch(name: str, on: bool | None, scope: Scope = "global", key: str = "") -> dict[str, Any]:
    """Set plugin `name` on or off in `scope` (`key`: the profile's name or the project's
    key); None removes the switch (the wider one applies again). Returns the new switches."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    if scope != "global" and not key:
        raise ValueError(f"switching for {scope} needs which one")

    def change(data: dict[str, Any]) -> None:
        layer = data[scope] if scope == "global" else data[scope].setdefault(key, {})
        if on is None:
            layer.pop(name, None)
        else:
            layer[name] = on
        if scope != "global" and not layer:
            data[scope].pop(key, None)

    return _modify(change)


def forget(name: str) -> None:
    """Drop every switch of plugin `name` (it was removed)."""

    def change(data: dict[str, Any]) -> None:
        data["global"].pop(name, None)
        for scope in ("profiles", "projects"):
            for key in list(data[scope]):
                data[scope][key].pop(name, None)
                if not data[scope][key]:
                    del data[scope][key]

    _modify(change)


def _modify(change: Any) -> dict[str, Any]:
    shared: AbstractContextManager[None] = (
        _locks.shared_lock("plugin_switches") if _locks is not None else nullcontext()
    )
    with _lock, shared:
        path = switches_file()
        # Read afresh under the lock: another node may have written since we last looked.
        data = _parse(path) if path.exists() else json.loads(json.dumps(_EMPTY))
        change(data)
        data["version"] = 1
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True))
        log.info("plugin switches changed: %s", path)
    return _load_now()  # as written: not the step's earlier look (helpers/file_snapshot.py)
