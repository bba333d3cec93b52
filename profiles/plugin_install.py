"""Installing plugins into usr/plugins/ from a zip, a folder or a git repository; updating
and removing them; their Python dependencies, installed only once a person confirms.

What comes in is untrusted and checked as skills' imports are (profiles/skill_import.py,
whose checks are reused): every path relative and inside, no links or special files, sizes
bounded as the bytes arrive, at most MAX_FILES files. The plugin's `plugin.yaml` must be
usable (profiles/plugins.py) and sit at the top of what comes in or in its one top folder.
Everything is staged in a hidden folder beside the destination and moved into place by one
rename; a name already installed is refused unless `replace` is asked (PluginTaken).

A git repository is cloned by `git clone` as a subprocess (a URL, or a local path, which
works the same), without following links (`core.symlinks=false`, and a link in the tree is
refused) and without the `ext::` transport. Its `.git` is kept so `update` can pull.

Where each plugin came from is kept in its folder (`ORIGIN_FILE`), for `update`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from helpers.errors import NotFound, UserError
from profiles import plugin_switches
from profiles.plugins import (
    PLUGIN_FILE,
    Plugin,
    clear_problems,
    discover_plugins,
    read_manifest,
    user_plugins,
)
from profiles.skill_import import (
    MAX_FILES,
    MAX_TOTAL_BYTES,
    Entry,
    ImportRefused,
    clean_path,
    copy_entry,
    zip_entries,
)

log = logging.getLogger(__name__)

#: Where a plugin came from, kept in its folder.
ORIGIN_FILE = ".cadre-origin.json"
#: The pip command a confirmed dependency install runs (tests point it at a recorder).
PIP: list[str] = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
#: Longest a clone, a pull or a pip install may take.
GIT_SECONDS = 120
PIP_SECONDS = 600
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_GIT_SAFE = ["-c", "protocol.ext.allow=never", "-c", "core.symlinks=false"]


class PluginTaken(ImportRefused):
    """A plugin of this name is installed already (install again with `replace`)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"a plugin named {name!r} is installed already: remove it first, or install"
            " again choosing to replace it"
        )
        self.name = name


class NeedsConfirmation(UserError):
    """Installing dependencies waits for a person's yes; `packages` are what pip would get."""

    def __init__(self, packages: list[str]) -> None:
        super().__init__(
            "these Python packages would be installed into Cadre's environment: "
            + ", ".join(packages)
            + ". Confirm to install them"
        )
        self.packages = packages


@dataclass(frozen=True)
class Installed:
    name: str
    replaced: bool


def install_zip(source: BinaryIO, *, replace: bool = False, fallback: str = "") -> Installed:
    """`fallback`: the name of a plugin whose plugin.yaml names none (the zip's own name)."""
    import zipfile

    try:
        with zipfile.ZipFile(source) as archive:
            entries = list(zip_entries(archive))
            return install_entries(entries, {"kind": "zip"}, replace=replace, fallback=fallback)
    except zipfile.BadZipFile as exc:
        raise ImportRefused(f"not a readable zip file ({exc})") from None


def folder_entries(folder: Path, skip: tuple[str, ...] = ()) -> list[Entry]:
    """The files under `folder`, links and special files refused (`skip`: top-level names
    left out, such as a clone's `.git`)."""
    entries: list[Entry] = []
    for top, dirs, files in os.walk(folder):
        here = Path(top)
        if here == folder:
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for name in [*dirs, *files]:
            path = here / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink():
                raise ImportRefused(f"{relative!r} is a symbolic link; links are not installed")
            if name in files and not path.is_file():
                raise ImportRefused(f"{relative!r} is not a regular file")
        for name in files:
            path = here / name
            opener = lambda path=path: open(path, "rb")  # noqa: E731, SIM115 - closed by its reader
            entries.append(Entry(path.relative_to(folder).as_posix(), opener, path.stat().st_size))
            if len(entries) > MAX_FILES:
                raise ImportRefused(f"more than {MAX_FILES} files; a plugin holds at most that")
    return entries


def install_folder(folder: Path, *, replace: bool = False) -> Installed:
    """Install the plugin in `folder` (a path on the server: the admin's)."""
    if not folder.is_dir():
        raise ImportRefused(f"{folder} is not a folder")
    origin = {"kind": "folder", "path": str(folder)}
    entries = folder_entries(folder, skip=(".git",))
    return install_entries(entries, origin, replace=replace, fallback=folder.name)


def install_entries(
    entries: list[Entry], origin: dict[str, Any], *, replace: bool = False,
    keep: Path | None = None, fallback: str = "",
) -> Installed:  # fmt: skip
    """Install the plugin made of `entries` (see the module's docstring); `keep`: a folder
    moved in under the plugin as `.git` (a clone's). Its name is its plugin.yaml's, else
    (Agent Zero's plugin.yaml names none) its top folder's, else `fallback`."""
    paths = [(clean_path(entry.path), entry) for entry in entries]
    if len(paths) > MAX_FILES:
        raise ImportRefused(f"{len(paths)} files; a plugin holds at most {MAX_FILES}")
    if len({path for path, _ in paths}) != len(paths):
        raise ImportRefused("the same file name comes twice; nothing was installed")
    root = _root([path for path, _ in paths])
    destination = user_plugins()
    destination.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=destination))
    try:
        budget = [MAX_TOTAL_BYTES]
        staged = staging / "plugin"
        staged.mkdir()
        for path, entry in paths:
            if path.is_relative_to(root) and path.name != ORIGIN_FILE:
                copy_entry(entry, staged / path.relative_to(root), budget)
        try:
            name = read_manifest(staged).name or _name_of(root.name or fallback)
        except ValueError as exc:
            raise ImportRefused(str(exc)) from None
        if keep is not None:
            os.replace(keep, staged / ".git")
        (staged / ORIGIN_FILE).write_text(json.dumps(origin), encoding="utf-8")
        replaced = _move_into_place(staged, destination / name, staging, replace)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    clear_problems(name)
    log.info("installed plugin %s from %s (replaced: %s)", name, origin.get("kind"), replaced)
    return Installed(name, replaced)


def _name_of(candidate: str) -> str:
    """A plugin's name from a folder's, a zip's or a repository's name."""
    name = candidate.removesuffix(".git").removesuffix(".zip")
    if not _PLAIN.match(name):
        raise ValueError(
            f"{PLUGIN_FILE} names no plugin and {candidate!r} cannot be its name: add"
            " `name:` to it (letters, digits, '-' and '_')"
        )
    return name


def _root(paths: list[PurePosixPath]) -> PurePosixPath:
    """Where plugin.yaml is: the top, or the one top folder (a zip of a folder)."""
    if PurePosixPath(PLUGIN_FILE) in paths:
        return PurePosixPath()
    tops = {path.parts[0] for path in paths}
    if len(tops) == 1:
        (top,) = tops
        if PurePosixPath(top, PLUGIN_FILE) in paths:
            return PurePosixPath(top)
    raise ImportRefused(
        f"no {PLUGIN_FILE} found at the top or in the one top folder: a plugin is a folder"
        f" with a {PLUGIN_FILE} naming it"
    )


def _move_into_place(staged: Path, target: Path, staging: Path, replace: bool) -> bool:
    exists = target.exists() or target.is_symlink()
    if exists and not replace:
        raise PluginTaken(target.name)
    if exists:
        os.replace(target, staging / "old")  # aside first: put back if the move fails
    try:
        os.replace(staged, target)
    except OSError:
        if exists:
            os.replace(staging / "old", target)
        raise
    return exists


# -- git -----------------------------------------------------------------------------------


def check_git_source(url: str) -> str:
    """A repository's address: https://, http://, ssh://, git@host:path, file:// or an
    existing local folder; never an option nor another transport."""
    url = url.strip()
    if not url or url.startswith("-") or any(ord(c) < 32 for c in url):
        raise ImportRefused("give a git repository's address or a folder's path")
    if url.startswith(("https://", "http://", "ssh://", "git@", "file://")):
        return url
    if Path(url).is_dir():
        return str(Path(url).resolve())
    raise ImportRefused(
        f"{url!r} is neither a repository's address (https://..., git@...) nor a folder here"
    )


def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        done = subprocess.run(["git", *_GIT_SAFE, *args], cwd=cwd, env=env, text=True,
                              capture_output=True, timeout=GIT_SECONDS, check=False)  # fmt: skip
    except FileNotFoundError:
        raise ImportRefused(
            "git is not installed on the server: install it, or use a zip"
        ) from None
    except subprocess.TimeoutExpired:
        raise ImportRefused(f"git took longer than {GIT_SECONDS} s and was stopped") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ImportRefused(f"git {args[0]} failed: {last}")
    return done.stdout


def _refuse_links(clone: Path) -> None:
    """A link in the repository is refused (it was checked out as a plain file)."""
    for line in _git("ls-files", "-s", "-z", cwd=clone).split("\0"):
        if line.startswith("120000 "):
            raise ImportRefused(f"{line.split(chr(9), 1)[-1]!r} is a symbolic link; links"
                                " are not installed")  # fmt: skip


def install_git(url: str, *, replace: bool = False) -> Installed:
    """Clone `url` and install the plugin at its top (see the module's docstring)."""
    url = check_git_source(url)
    destination = user_plugins()
    destination.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".clone-", dir=destination))
    try:
        clone = work / "repo"
        _git("clone", "--depth", "1", "--quiet", "--", url, str(clone))
        _refuse_links(clone)
        entries = folder_entries(clone, skip=(".git",))
        name = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return install_entries(entries, {"kind": "git", "url": url}, replace=replace,
                               keep=clone / ".git", fallback=name)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- update, remove -------------------------------------------------------------------------


def user_plugin(name: str) -> Plugin:
    """An installed (user) plugin by name; a shipped one is Cadre's, never changed here."""
    plugin = discover_plugins().get(name)
    if plugin is None:
        raise NotFound(f"no plugin {name!r}")
    if plugin.source != "user":
        raise UserError(f"{name!r} is shipped with Cadre: switch it off instead")
    return plugin


def origin_of(root: Path) -> dict[str, Any]:
    try:
        found = json.loads((root / ORIGIN_FILE).read_text(encoding="utf-8"))
        return found if isinstance(found, dict) else {}
    except (OSError, ValueError):
        return {}


def update(name: str) -> Installed:
    """Install plugin `name` again from where it came from (a zip: upload the new one)."""
    plugin = user_plugin(name)
    origin = origin_of(plugin.root)
    if origin.get("kind") == "git":
        return install_git(str(origin.get("url", "")), replace=True)
    if origin.get("kind") == "folder":
        return install_folder(Path(str(origin.get("path", ""))), replace=True)
    raise UserError(f"{name!r} was installed from a zip: install the new zip to update it")


def remove(name: str) -> None:
    """Remove user plugin `name`, its switches and its recorded problems."""
    plugin = user_plugin(name)
    aside = Path(tempfile.mkdtemp(prefix=".removing-", dir=plugin.root.parent))
    os.replace(plugin.root, aside / name)  # by one rename: nothing half-removed stays in use
    shutil.rmtree(aside, ignore_errors=True)
    plugin_switches.forget(name)
    clear_problems(name)
    log.info("removed plugin %s", name)


# -- Python dependencies --------------------------------------------------------------------


def dependencies(plugin: Plugin) -> list[dict[str, Any]]:
    """Each requirement of the manifest, with whether Cadre's environment has it."""
    found = []
    for requirement in plugin.manifest.requires.python if plugin.manifest else []:
        found.append({"requirement": requirement, "installed": _has(requirement)})
    return found


def _has(requirement: str) -> bool:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        wanted = Requirement(requirement)
        return wanted.specifier.contains(metadata.version(wanted.name), prereleases=True)
    except (InvalidRequirement, metadata.PackageNotFoundError):
        return False


def install_dependencies(name: str, *, confirmed: bool) -> list[str]:
    """pip-install what plugin `name` needs and Cadre lacks, only when `confirmed`
    (NeedsConfirmation lists them otherwise). Returns what was installed."""
    plugin = discover_plugins().get(name)
    if plugin is None or plugin.manifest is None:
        raise NotFound(f"no usable plugin {name!r}")
    missing = [d["requirement"] for d in dependencies(plugin) if not d["installed"]]
    if not missing:
        return []
    if not confirmed:
        raise NeedsConfirmation(missing)
    log.info("installing Python packages for plugin %s: %s", name, missing)
    try:
        done = subprocess.run([*PIP, "--", *missing], text=True, capture_output=True,
                              timeout=PIP_SECONDS, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise UserError(f"pip took longer than {PIP_SECONDS} s and was stopped") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        log.error("pip failed for plugin %s: %s", name, done.stderr[-2000:])
        raise UserError(f"pip could not install them: {last}")
    return missing
