"""Agent profiles: discovered from folders, merged by name, looked up per call.

A profile is a folder: `agent.yaml` or `agent.json` (Agent Zero's settings UI
saves the latter; an older Agent Zero profile has only `_context.md`, its
context; the same fields either way: title, description, context, enabled,
`mcp_servers`: the MCP servers whose tools its agents get; absent: all;
`subordinates`: the profiles its agents may call; absent: all offered),
optional `prompts/` and `tools/` (override single files of the shared
`prompts/` and `tools/` by name) and optional `settings.json` (setting
overrides for agents of that profile, e.g. a cheaper model). `workflow`
declares a fixed workflow instead of free delegation (profiles/workflow.py).

Sources, later ones overriding earlier ones by name: shipped `agents/` → the active
plugins' `agents/` → `usr/agents/` (shared: the admin's) → `<space>/agents/` (the owner's
own: profiles/personal.py) → `<space>/projects/<project>/agents/` (its owner's). A
profile's `agent.yaml` comes from the last source that has the folder, while
its prompts and tools are layered over every source (most specific first),
so a user can override one prompt of a shipped profile and keep the rest.
Folders are checked on every call (an answer is reused while the folders and
files it came from are unchanged): a profile dropped into `usr/agents/` is
there without a restart. Its files are read within bounds (profiles/bounded_load.py);
one that cannot be read is listed with the reason and costs the others nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from helpers import file_snapshot
from helpers.file_snapshot import Answers, FileStamp, named_folders
from helpers.files import base_path, usr_path
from helpers.settings import Settings
from profiles.bounded_load import DataRefused, load_json, load_yaml, read_limited
from profiles.personal import check_own_settings
from profiles.plugins import plugin_folders
from profiles.projects import ProjectLike, check_name, load_project_settings, own_space, project_dir
from profiles.workflow import Workflow, parse_workflow, workflow_problem

log = logging.getLogger(__name__)

#: The profile of a subordinate called without one.
DEFAULT_SUBORDINATE_PROFILE = "default"
#: Agent 0's profile in Cadre and in Agent Zero: a folder of that name (a copy of Agent
#: Zero's, say) is not offered to subordinates unless its agent.yaml says `subordinate: true`.
AGENT0_PROFILE = "agent0"
#: The files that describe a profile, the first one found wins: Cadre's, Agent Zero's, and
#: the `_context.md` alone of Agent Zero's older profiles (what a superior reads of it).
META_FILES = ("agent.yaml", "agent.json", "_context.md")
#: The files of Agent Zero's formats: a settings.json beside them may name Agent Zero's
#: settings, which are ignored with a warning (in Cadre's own format a typo is refused).
AGENT_ZERO_META = ("agent.json", "_context.md")

#: Where shipped profiles live (a module attribute so tests can point elsewhere).
SHIPPED_AGENTS = base_path("agents")


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
    #: False for a profile only Agent 0 uses (it is not offered to delegating agents).
    subordinate: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    #: The MCP servers (by name) whose tools its agents are offered; None: every one.
    mcp_servers: tuple[str, ...] | None = None
    #: The profiles its agents may call (agent.yaml `subordinates`); None: every one offered.
    subordinates: tuple[str, ...] | None = None
    #: Settings its (Agent Zero) settings.json names that Cadre does not have: not used.
    ignored_settings: tuple[str, ...] = ()
    error: str = ""
    #: A fixed workflow its agents run instead of a model's loop (agent.yaml `workflow`).
    workflow: Workflow | None = None

    @property
    def available(self) -> bool:
        return self.enabled and not self.error


def check_profile_name(name: str) -> str:
    """A profile name is a plain folder name; anything path-like is refused."""
    return check_name(name, "agent profile")


def profile_sources(project: ProjectLike | None = None) -> list[tuple[str, Path]]:
    """(label, agents folder) of every source, lowest precedence first."""
    return list(_sources_now(project))


def _sources_now(project: ProjectLike | None) -> tuple[tuple[str, Path], ...]:
    return _sources(project, usr_path("agents"), tuple(plugin_folders("agents", "", project)))


# Asked for several times a step: the same inputs give the same folders (made once).
@lru_cache(maxsize=64)
def _sources(
    project: ProjectLike | None, user_agents: Path, plugins: tuple[tuple[str, Path], ...]
) -> tuple[tuple[str, Path], ...]:
    sources = [("shipped", SHIPPED_AGENTS), *((f"plugin:{n}", path) for n, path in plugins)]
    sources.append(("user", user_agents))
    sources += [("own", own / "agents")] if (own := own_space(project)) else []  # theirs alone
    if project:
        folder = project_dir(project)  # named after the project
        sources.append((f"project:{folder.name}", folder / "agents"))
    return tuple(sources)


class _ParsedFiles:
    """Parsed agent.yaml and settings.json files, reused until a file changes.

    Discovery runs for every system prompt an agent builds; parsing each
    profile's files every time would cost milliseconds per step.
    """

    def __init__(self) -> None:
        self._parsed: dict[Path, tuple[FileStamp, dict[str, Any]]] = {}
        self._reported: set[tuple[Path, int, str]] = set()

    def read(self, path: Path, parse: Callable[[str], Any]) -> dict[str, Any]:
        stamp = file_snapshot.regular_file(path)
        if stamp is None:
            raise ValueError(f"{path.name} is missing or not a file")
        cached = self._parsed.get(path)
        if cached and cached[0] == stamp:
            return cached[1]
        data = parse(read_limited(path))
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ValueError("must be a mapping of names to values")
        if file_snapshot.settled(stamp):  # a fresh file's stamp may not show its next edit
            self._parsed[path] = (stamp, data)
        return data

    def report_once(self, name: str, root: Path, reason: str) -> None:
        """Log a broken profile once per version of its files, not on every step."""
        try:
            stamp = max(p.stat().st_mtime_ns for p in (root, *root.glob("*.*")))
        except (OSError, ValueError):
            stamp = 0
        key = (root, stamp, reason)
        if key not in self._reported:
            self._reported.add(key)
            log.error("agent profile %r at %s is unavailable: %s", name, root, reason)


_files = _ParsedFiles()

_TEXT_FIELDS = ("title", "description", "context")
_FLAG_FIELDS = ("enabled", "subordinate")


def meta_file(root: Path) -> Path | None:
    """The profile's agent.yaml, else its agent.json; None when it has neither."""
    return next((root / n for n in META_FILES if file_snapshot.regular_file(root / n)), None)


def _read_meta(meta_file: Path) -> dict[str, Any]:
    """agent.yaml or agent.json, checked: text fields are text, flags are true or false.

    Fields Cadre does not use (Agent Zero's `model`, say) are ignored."""
    label = meta_file.name
    parse = {"agent.json": load_json, "_context.md": _context_only}.get(label, load_yaml)
    try:
        meta = _files.read(meta_file, lambda text: parse(text, label))
    except DataRefused as exc:  # it names the file and says what to change
        raise ValueError(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise ValueError(f"{label}: {exc}") from exc
    for key in _TEXT_FIELDS:
        if key in meta and not isinstance(meta[key], str | int | float):
            raise ValueError(f"{label}: {key} must be text")
    for key in _FLAG_FIELDS:
        if key in meta and not isinstance(meta[key], bool):
            raise ValueError(f"{label}: {key} must be true or false, not {meta[key]!r}")
    for key, what in (("mcp_servers", "MCP server names"), ("subordinates", "profile names")):
        names = meta.get(key)
        if names is not None and not (
            isinstance(names, list) and all(isinstance(name, str) for name in names)
        ):
            raise ValueError(f"{label}: {key} must be a list of {what}")
    return meta


def _context_only(text: str, _label: str = "") -> dict[str, Any]:
    """An older Agent Zero profile's `_context.md`: its context, the rest from defaults."""
    return {"context": text.strip()}


def _read_settings(root: Path, agent_zero: bool) -> tuple[dict[str, Any], tuple[str, ...]]:
    """settings.json, checked against the settings model (names and values), and the names
    it gives that Cadre does not have: refused, unless the profile is in an Agent Zero
    format (`agent_zero`), whose settings.json names Agent Zero's own settings."""
    settings_file = root / "settings.json"
    if file_snapshot.regular_file(settings_file) is None:
        return {}, ()
    try:
        settings = _files.read(settings_file, lambda text: load_json(text, "settings.json"))
    except DataRefused as exc:
        raise ValueError(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise ValueError(f"settings.json: {exc}") from exc
    unknown = tuple(sorted(set(settings) - set(Settings.model_fields)))
    if unknown and not agent_zero:
        raise ValueError(f"settings.json: unknown setting(s) {', '.join(unknown)}")
    settings = {k: v for k, v in settings.items() if k not in unknown}
    check_own_settings(root, settings)  # a person's own profile: fewer settings
    try:
        Settings.model_validate({**Settings().model_dump(), **settings})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"settings.json: {first['loc'][0]}: {first['msg']}") from exc
    return settings, unknown


def _load_profile(name: str, root: Path, meta_path: Path, source: str) -> AgentProfile:
    try:
        meta = _read_meta(meta_path)
        settings, ignored = _read_settings(root, meta_path.name in AGENT_ZERO_META)
        workflow = parse_workflow(meta.get("workflow"))
    except ValueError as exc:
        _files.report_once(name, root, str(exc))
        return AgentProfile(name=name, title=name, root=root, source=source, error=str(exc))
    except Exception:  # one profile's files must never cost the others (or a run) theirs
        log.exception("agent profile %r at %s could not be read", name, root)
        why = "its files could not be read (the server's log says why): fix or remove them"
        return AgentProfile(name=name, title=name, root=root, source=source, error=why)
    return AgentProfile(
        name=name,
        title=str(meta.get("title") or name),
        root=root,
        source=source,
        description=str(meta.get("description") or ""),
        context=str(meta.get("context") or ""),
        enabled=meta.get("enabled", True),
        subordinate=meta.get("subordinate", name != AGENT0_PROFILE),
        workflow=workflow,
        settings=settings,
        mcp_servers=None if meta.get("mcp_servers") is None else tuple(meta["mcp_servers"]),
        subordinates=_names(meta.get("subordinates")),
        ignored_settings=ignored,
    )


def _names(value: list[str] | None) -> tuple[str, ...] | None:
    """A checked list of names as a tuple (None stays None: no list given)."""
    return None if value is None else tuple(name.strip() for name in value)


#: Answers kept at most (a project's name comes from outside: the cache stays bounded).
DISCOVERED_KEPT = 32
#: discover_profiles' last answers per (project, folders), with what each was read from.
_discovered: Answers[dict[str, AgentProfile]] = Answers(DISCOVERED_KEPT)


def discover_profiles(project: ProjectLike | None = None) -> dict[str, AgentProfile]:
    """Every profile by name, including disabled and broken ones (for the UI's list).

    A folder without agent.yaml (or agent.json) overrides only files (prompts, tools) of the
    profile of that name from a lower source; with no such profile it is
    listed as broken. Every agent's prompt asks for this on every step, so the
    answer is reused while the folders and files it was read from are unchanged.
    """
    key = (project, usr_path("agents"), SHIPPED_AGENTS, _sources_now(project))
    return dict(_discovered.get(key, lambda: _discover(project)))


def _discover(project: ProjectLike | None) -> dict[str, AgentProfile]:
    found: dict[str, AgentProfile] = {}
    for source, folder in profile_sources(project):
        for name, root in named_folders(folder, check_profile_name, "profile"):
            meta_path = meta_file(root)
            if meta_path is None:
                if name not in found:
                    why = "no agent.yaml"  # nor agent.json
                    _files.report_once(name, root, why)
                    found[name] = AgentProfile(name=name, title=name, root=root, source=source,
                                               error=why)  # fmt: skip
                continue
            found[name] = _load_profile(name, root, meta_path, source)
    if project:
        file_snapshot.regular_file(project_dir(project) / "settings.json")  # an input too
    in_project = load_project_settings(project)
    for name in set(in_project.disabled_agents) & found.keys():
        found[name] = replace(found[name], enabled=False)
    _check_workflows(found, in_project.subordinates)
    return found


def _check_workflows(found: dict[str, AgentProfile], in_project: dict[str, list[str]]) -> None:
    """Make a profile whose workflow cannot run unusable, with the reason; again until
    none changes (a workflow may step through another one that just became unusable)."""
    while True:
        flows = {n: p.workflow for n, p in found.items() if p.workflow and p.available}
        usable = {n for n, p in found.items() if p.available and p.subordinate}
        broken = {
            n: workflow_problem(n, flows, usable, _narrowed(usable, found[n], in_project.get(n)))
            for n in flows
        }
        broken = {n: why for n, why in broken.items() if why}
        if not broken:
            return
        for name, why in broken.items():
            _files.report_once(name, found[name].root, why)
            found[name] = replace(found[name], error=why)


def get_available_agents_dict(project_name: ProjectLike | None = None) -> dict[str, AgentProfile]:
    """The profiles an agent may use now, by name."""
    return {n: p for n, p in discover_profiles(project_name).items() if p.available}


def subordinate_profiles(project: ProjectLike | None = None) -> dict[str, AgentProfile]:
    """The available profiles a subordinate may have (agent.yaml `subordinate: false` opts out,
    as Agent 0's own profile does)."""
    return {n: p for n, p in get_available_agents_dict(project).items() if p.subordinate}


def allowed_subordinates(profile: str, project: ProjectLike | None) -> list[str]:
    """The profiles an agent of `profile` may call, sorted: the one place the rule lives.

    Those offered to subordinates (`subordinate_profiles`), limited by the profile's
    agent.yaml `subordinates` list, then by the project's settings (`subordinates`:
    profile → the profiles it may call there). A list only ever narrows: a name it
    gives that is not offered (unknown, disabled) is not added.
    """
    own = discover_profiles(project).get(profile)
    in_project = load_project_settings(project).subordinates.get(profile)
    return sorted(_narrowed(set(subordinate_profiles(project)), own, in_project))


def _narrowed(
    offered: set[str], own: AgentProfile | None, in_project: list[str] | None
) -> set[str]:
    """`offered` narrowed by the profile's own `subordinates` list, then the project's."""
    allowed = set(offered)
    if own is not None and own.available and own.subordinates is not None:
        allowed &= set(own.subordinates)
    if in_project is not None:
        allowed &= set(in_project)
    return allowed


def profile_roots(profile: str, project: ProjectLike | None = None) -> list[Path]:
    """Every folder of `profile` across the sources, most specific first."""
    if not profile:
        return []
    check_profile_name(profile)
    return list(_roots(profile, _sources_now(project)))


def layered_folders(profile: str, kind: str, project: ProjectLike | None = None) -> list[Path]:
    """`prompts` or `tools` folders, first wins: `profile`'s, the active plugins', the shared."""
    plugins = [folder for _, folder in plugin_folders(kind, profile, project)]
    if not profile:
        return [*plugins, base_path(kind)]
    *layered, shared = _layered(check_profile_name(profile), kind, _sources_now(project))
    return [*layered, *plugins, shared]


# Asked for on every step: the same sources give the same folders (made once).
@lru_cache(maxsize=256)
def _roots(profile: str, sources: tuple[tuple[str, Path], ...]) -> tuple[Path, ...]:
    return tuple(folder / profile for _, folder in reversed(sources))


@lru_cache(maxsize=256)
def _layered(profile: str, kind: str, sources: tuple[tuple[str, Path], ...]) -> tuple[Path, ...]:
    return (*(root / kind for root in _roots(profile, sources)), base_path(kind))


def profile_mcp_servers(profile: str, project: ProjectLike | None = None) -> tuple[str, ...] | None:
    """The MCP servers a profile's agents may use (None: every one)."""
    found = discover_profiles(project).get(profile)
    return found.mcp_servers if found and found.available else None


def profile_workflow(profile: str, project: ProjectLike | None = None) -> Workflow | None:
    """The workflow a profile's agents run instead of a model's loop (None: none)."""
    found = discover_profiles(project).get(profile)
    return found.workflow if found and found.available else None


def profile_settings(profile: str, project: ProjectLike | None = None) -> dict[str, Any]:
    """The setting overrides a profile's `settings.json` asks for ({} when none)."""
    found = discover_profiles(project).get(profile)
    return dict(found.settings) if found and found.available else {}
