"""The programs the host runs because a setting names them: never one an agent could write.

The settings: `code_exec_bwrap` (the sandbox's program), `browser_executable`
(Chromium), `local_model_path` (a GGUF file llama.cpp parses inside Cadre's own
process) and every MCP server started as a command (`mcp_servers`: its
command, each argument that names an existing file, its `cwd`, and its
loader variables: PATH, PYTHONPATH, NODE_OPTIONS, LD_PRELOAD...).

The rule: nothing on the way to the program may lie where an agent can
write: `usr/` (it holds every default work folder, everyone's, and the sandbox's
scratch space), the work folder of the settings in force (and of the chat), and
every project's named work folder, in anyone's space. "On the way" is every step
of resolving the path after the PATH lookup: each folder, each link where it lies
and where it leads, and the file, so that a link an agent could swap later is
refused as well as a file it could rewrite. A program that is not found is no refusal
(whoever starts it says it is missing); a PATH folder where an agent could put
it first is.

Checked when saved (server/routes/settings.py, server/routes/setup.py, the MCP check of
server/routes/mcp_servers.py) and again where the program starts
(execution/sandbox_choice.py, browsing/host.py, mcp_client/connection.py,
models/local_model.py): settings.json may come from a restore or a hand, a
setting from the environment, and a file may be swapped after saving. A
refusal is a UserError that says what and what to do, and a line in the log.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePath

from helpers.errors import UserError
from helpers.files import usr_dir
from helpers.mcp_config import StdioServer, parse_mcp_servers
from helpers.settings import Settings, load_settings, overridden_fields

log = logging.getLogger(__name__)

#: The settings that name a program (or a file native code reads) the host starts.
PROGRAM_SETTINGS = ("code_exec_bwrap", "browser_executable", "local_model_path", "mcp_servers")
#: Settings a page may change only with the account's password when a login is set: the
#: programs, and the sandbox (`none` has the host run every command an agent writes).
GUARDED_SETTINGS = (*PROGRAM_SETTINGS, "code_exec_sandbox")
#: Variables that make a program load code from where they say (the MCP servers' `env`).
LOADERS = frozenset({
    "PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "NODE_PATH",
    "NODE_OPTIONS", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PERL5LIB", "PERL5OPT",
    "RUBYLIB", "RUBYOPT", "GEM_HOME", "GEM_PATH", "BASH_ENV", "ENV", "NPM_CONFIG_PREFIX",
})  # fmt: skip
#: Links followed on one path at most (the kernel's own limit).
MAX_LINKS = 40
#: Largest project settings.json read, as profiles/bounded_load.py reads it: a larger one is
#: damaged, and its project works in its own folder (in usr/).
PROJECT_SETTINGS_BYTES = 256 * 1024
#: What every refusal asks for instead.
INSTEAD = "name one installed outside usr/ and every work folder (e.g. in /usr/bin)"


class ProgramRefused(UserError):
    """A setting names a program an agent could have written: the host does not run it."""

    def __init__(self, text: str, setting: str) -> None:
        super().__init__(text)
        #: The setting at fault (a form shows the error by it).
        self.setting = setting

    def for_form(self) -> str:
        """The text beginning with the setting's name, as the settings form reads it."""
        text = str(self)
        return text if text.startswith(f"{self.setting}:") else f"{self.setting}: {text}"


def places(settings: Settings | None = None) -> list[tuple[Path, str]]:
    """Where agents can write, real paths with words for a message: usr/, the work folder
    of the settings in force and of `settings`, and each project's named work folder."""
    found = [(usr_dir().resolve(), "usr/")]
    named = {load_settings().work_dir, settings.work_dir if settings else ""}
    found += [(_real(folder), f"the work folder {folder}") for folder in sorted(named) if folder]
    found += [(_real(folder), f"project {name}'s work folder") for name, folder in _projects()]
    return found


#: Where projects' settings lie in usr/: the first admin's (and the desktop mode's), and
#: those of everyone else's space (accounts/spaces.py: usr/users/<name>/).
PROJECT_SETTINGS = ("projects/*/settings.json", "users/*/projects/*/settings.json")


def _projects() -> Iterator[tuple[str, str]]:
    """(project, named work folder) read straight from every space's
    projects/*/settings.json (no check of the rest: a folder named in any of them counts)."""
    root = usr_dir()
    found = [path for pattern in PROJECT_SETTINGS for path in sorted(root.glob(pattern))]
    for settings in found:
        try:
            with open(settings, "rb") as file:
                text = file.read(PROJECT_SETTINGS_BYTES + 1)
            if len(text) > PROJECT_SETTINGS_BYTES:
                continue
            folder = json.loads(text).get("work_dir")
        # RecursionError: nested deeper than Python's parser follows (100k `[`).
        except (OSError, ValueError, AttributeError, RecursionError):
            continue  # damaged: its project uses its own folder (profiles/projects.py)
        if isinstance(folder, str) and folder.strip():
            yield settings.parent.name, folder.strip()


def _real(folder: str) -> Path:
    try:
        return Path(folder).expanduser().resolve()
    except (OSError, ValueError, RuntimeError):  # RuntimeError: `~name` of no user
        return Path(folder)


def _steps(path: Path) -> list[Path]:
    """Every entry resolving `path` (absolute) passes, each where it really lies: the
    folders, each link (then what it leads to), the last one. OSError on a link loop."""
    steps: list[Path] = []
    pending = list(path.parts[1:])
    at, links = Path("/"), 0
    while pending:
        part = pending.pop(0)
        if part == "..":
            at = at.parent
            continue
        entry = at / part
        steps.append(entry)
        if entry.is_symlink():
            links += 1
            if links > MAX_LINKS:
                raise OSError(f"more than {MAX_LINKS} links on the way to {path}")
            target = PurePath(os.readlink(entry))
            at = Path("/") if target.is_absolute() else at
            pending = [*target.parts[1 if target.is_absolute() else 0 :], *pending]
            continue
        at = entry
    return steps


def _where(path: Path, writable: list[tuple[Path, str]]) -> str:
    """Which place an agent can write `path` (or a step on the way to it) lies in; ""."""
    try:
        steps = _steps(path)
    except (OSError, ValueError) as exc:
        return f"cannot be followed ({exc})"
    for place, words in writable:
        if steps and steps[-1].is_relative_to(place):
            return f"lies in {words}"
    for step in steps:  # a link (or a folder) on the way that an agent could swap
        for place, words in writable:
            if step.is_relative_to(place):
                return f"is reached through {step}, in {words}"
    return ""


def _absolute(name: str, cwd: Path) -> Path:
    try:
        path = Path(name).expanduser()
    except RuntimeError:  # "~someone" with no such user: taken as written
        path = Path(name)
    return path if path.is_absolute() else cwd / path


def _found(program: str, search: str, cwd: Path) -> tuple[Path | None, list[Path]]:
    """Where `program` is (None: not found) and the PATH folders looked in for it."""
    if "/" in program:
        return _absolute(program, cwd), []
    tried = []
    for entry in search.split(os.pathsep):
        folder = _absolute(entry or ".", cwd)
        tried.append(folder)
        candidate = folder / program
        if _is_file(candidate) and os.access(candidate, os.X_OK):
            return candidate, tried
    return None, tried


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def program_problem(
    program: str, writable: list[tuple[Path, str]], search: str | None = None,
    cwd: str | None = None,
) -> str:  # fmt: skip
    """Why the host must not run `program` (a path, or a name looked up in `search`, the
    PATH: Cadre's own by default) started in `cwd`; "" when it may."""
    if not program:
        return ""
    folder = _absolute(cwd, Path.cwd()) if cwd else Path.cwd()
    path = os.environ.get("PATH", os.defpath) if search is None else search
    found, tried = _found(program, path, folder)
    for entry in tried:
        where = _where(entry, writable)
        if where:
            return f"the folder {entry} of PATH, where {program!r} is looked for, {where}"
    where = _where(found, writable) if found is not None else ""
    if not where:
        return ""
    real = os.path.realpath(found)
    return f"{found} {where}" if real == str(found) else f"{found} (leading to {real}) {where}"


def mcp_problem(config: StdioServer, writable: list[tuple[Path, str]]) -> str:
    """Why the host must not start the MCP server `config` (its command, its folder, an
    argument naming a file, a loader variable), "" when it may."""
    env = {**os.environ, **config.env}  # what the SDK gives the server (and PATH with it)
    problem = program_problem(config.command, writable, env.get("PATH", os.defpath), config.cwd)
    if problem:
        return problem
    cwd = _absolute(config.cwd, Path.cwd()) if config.cwd else Path.cwd()
    if config.cwd and (where := _where(cwd, writable)):
        return f"its folder (cwd) {cwd} {where}"
    for arg in config.args:
        for part in {arg, arg.split("=", 1)[-1]} - {""}:
            path = _absolute(part, cwd)
            if _is_file(path) and (where := _where(path, writable)):
                return f"its argument {path} {where}"
    for name in sorted((LOADERS & config.env.keys()) | {"PATH"}):
        for part in re.split(r"[\s:;=,]+", env.get(name, "")):
            if part.startswith(("/", "~")) and (where := _where(_absolute(part, cwd), writable)):
                return f"{part} in its {name} {where}"
    return ""


def _refused(what: str, problem: str, setting: str) -> ProgramRefused:
    variable = overridden_fields().get(setting)
    origin = f" (set by {variable}: change it there)" if variable else ""
    text = (f"{what}: {problem}, a place where an agent could have written it, so the host"
            f" never runs it; {INSTEAD}{origin}")  # fmt: skip
    log.warning("refused to run a program: %s", text)
    return ProgramRefused(text, setting)


def _model_file(path: str) -> str:
    return str(_absolute(path, Path.cwd())) if path else ""


def check_program(program: str, setting: str, settings: Settings | None = None) -> None:
    """ProgramRefused when the host must not run `program`, the value of `setting`."""
    problem = program_problem(program, places(settings))
    if problem:
        raise _refused(setting, problem, setting)


def refusal(settings: Settings, setting: str) -> str:
    """Why the host must not run the program `settings` name in `setting` (logged), ""
    when it may: for a caller that shows the reason rather than raising it."""
    try:
        check_program(getattr(settings, setting), setting, settings)
    except ProgramRefused as exc:
        return str(exc)
    return ""


def check_model_file(path: str, settings: Settings | None = None) -> None:
    """ProgramRefused when `local_model_path` names a file an agent could have written:
    llama.cpp parses it inside Cadre's own process."""
    problem = program_problem(_model_file(path), places(settings))
    if problem:
        raise _refused("local_model_path", problem, "local_model_path")


def check_mcp_server(name: str, config: StdioServer, settings: Settings | None = None) -> None:
    """ProgramRefused when the host must not start the local MCP server `name`."""
    problem = mcp_problem(config, places(settings))
    if problem:
        raise _refused(f"the MCP server {name!r}", problem, "mcp_servers")


def check_settings(settings: Settings, before: Settings | None = None) -> None:
    """Every program `settings` name, as they are saved (ProgramRefused for the first that
    cannot be run). The work folder of the settings `before` counts too: agents wrote
    there until now."""
    writable = places(settings) + (places(before) if before else [])
    named = [("code_exec_bwrap", settings.code_exec_bwrap),
             ("browser_executable", settings.browser_executable),
             ("local_model_path", _model_file(settings.local_model_path))]  # fmt: skip
    for setting, program in named:
        problem = program_problem(program, writable)
        if problem:
            raise _refused(setting, problem, setting)
    for name, config in _local_servers(settings.mcp_servers).items():
        problem = mcp_problem(config, writable)
        if problem:
            raise _refused(f"the MCP server {name!r}", problem,
                           "mcp_servers")  # fmt: skip


def _local_servers(text: str) -> dict[str, StdioServer]:
    """The MCP servers of the setting that Cadre starts as a command (not disabled)."""
    return {name: config for name, config in parse_mcp_servers(text).items()
            if isinstance(config, StdioServer) and not config.disabled}  # fmt: skip


def guarded_changes(before: Settings, after: Settings) -> list[str]:
    """The guarded settings (GUARDED_SETTINGS) `after` changes: a program, the sandbox,
    or an MCP server started as a command that is new or changed (one taken out or
    disabled starts nothing)."""
    simple = [name for name in GUARDED_SETTINGS if name != "mcp_servers"]
    changed = [name for name in simple if getattr(before, name) != getattr(after, name)]
    old = _local_servers(before.mcp_servers)
    if any(old.get(name) != config for name, config in _local_servers(after.mcp_servers).items()):
        changed.append("mcp_servers")
    return changed
