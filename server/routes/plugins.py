"""The Plugins panel's routes: list and show plugins, switch them, install, update, remove,
and serve a plugin's page parts.

`/api/plugins...` is an admin's alone (server/security/guard.py ADMIN_PATHS): a plugin's
code runs on the host. A plugin's page parts (its `webui/` folder: a panel or a log-item
renderer, JavaScript and CSS only) are served to any signed-in page at
`/plugins/<name>/webui/<path>`, only for a usable plugin, only from that folder
(helpers/confine.py checks the path; links are not followed out). `GET /api/log-renderers`
tells any signed-in page which plugins draw their tools' log items.

Switching: `POST /api/plugins/<name>/switch` `{"on": true|false|null, "scope": "global" |
"project" | "profile", "project"?: name, "profile"?: name}`; null removes the switch, so
the wider one applies. Listing with `?project=&profile=` says whether each plugin is on
there, and lists the Agent Zero extensions an agent of that profile meets there, each with
its point and whether Cadre runs it (`extensions`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from flask import Blueprint, Response, jsonify, request, send_file
from pydantic import BaseModel

from core.tooling.agent_zero.extension_points import extension_status
from core.tooling.tool_loader import load_problem
from helpers.confine import PathRefused, check_name
from helpers.errors import NotFound, UserError
from helpers.files import BASE_DIR, usr_dir
from helpers.settings import load_settings
from mcp_client.supervisor import McpSupervisor
from profiles import plugin_install, plugin_settings, plugin_switches
from profiles.plugin_install import NeedsConfirmation, PluginTaken
from profiles.plugin_mcp import with_plugin_servers
from profiles.plugin_settings import settings_section
from profiles.plugins import Plugin, discover_plugins, problems
from profiles.skill_import import Entry, ImportRefused
from server.routes.projects import asked_project, own_project
from server.routes.routing import body, chats, error

log = logging.getLogger(__name__)

plugin_pages = Blueprint("plugins", __name__)

#: What a plugin's page parts may be.
_WEB_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css"}


class SwitchBody(BaseModel):
    on: bool | None
    scope: Literal["global", "project", "profile"] = "global"
    project: str = ""
    profile: str = ""


class SourceBody(BaseModel):
    #: A git repository's address, or a folder on the server.
    source: str
    replace: bool = False


class ConfirmBody(BaseModel):
    confirm: bool = False


def _summary(plugin: Plugin, profile: str, project: Any) -> dict[str, Any]:
    data = plugin_switches.load()
    manifest = plugin.manifest
    return {
        "name": plugin.name,
        "title": plugin.title,
        "description": manifest.description if manifest else "",
        "version": manifest.version if manifest else "",
        "source": plugin.source,
        "usable": plugin.usable,
        "error": plugin.error,
        "parts": list(plugin.parts),
        "unused": list(plugin.unused),
        "not_supported": list(plugin.not_supported),
        "on": plugin.usable and plugin_switches.is_on(plugin),
        "on_here": plugin.usable and plugin_switches.is_on(plugin, profile, project),
        "switches": {
            "global": data["global"].get(plugin.name),
            "profile": (data["profiles"].get(profile) or {}).get(plugin.name) if profile else None,
            "project": (data["projects"].get(plugin_switches.project_key(project)) or {}).get(
                plugin.name
            )
            if project
            else None,
        },  # fmt: skip
        "problems": [*_tool_problems(plugin), *problems(plugin.name)],
        "removable": plugin.source == "user",
        "origin": plugin_install.origin_of(plugin.root).get("kind", ""),
        "panel": _web_url(plugin, manifest.panel) if manifest and manifest.panel else "",
        "log_renderer": bool(manifest and manifest.log_renderer),
        "mcp_servers": sorted(manifest.mcp_servers) if manifest else [],
        "dependencies": plugin_install.dependencies(plugin),
        "settings": settings_section(plugin),
    }


def _tool_problems(plugin: Plugin) -> list[dict[str, Any]]:
    """Its tool files that cannot be used (one that fails to import), with why."""
    if "tools" not in plugin.parts:
        return []
    found = []
    for path in sorted((plugin.root / "tools").glob("*.py")):
        why = load_problem(path)
        if why:
            found.append({"where": f"tools/{path.name}", "error": why, "at": None})
    return found


def _web_url(plugin: Plugin, path: str) -> str:
    """Where the page loads a page part of the plugin (`webui/...`, the manifest checked);
    `?v=` changes with the file, so a page asks for an updated module anew (the browser
    keeps a module it imported under its address)."""
    try:
        version = f"?v={(plugin.root / path).stat().st_mtime_ns}"
    except OSError:
        version = ""
    return f"/plugins/{plugin.name}/{path}{version}"


def _apply_mcp() -> None:
    """Put the MCP servers of the plugins now on to work (only changed ones restart)."""
    supervisor = chats().runtime.service(McpSupervisor)
    if supervisor is not None:
        supervisor.apply(with_plugin_servers(load_settings().mcp_servers))


def _where() -> tuple[str, Any]:
    return request.args.get("profile", ""), asked_project(request.args.get("project"))


def _plugin(name: str) -> Plugin:
    plugin = discover_plugins().get(name)
    if plugin is None:
        raise NotFound(f"no plugin {name!r}")
    return plugin


@plugin_pages.get("/api/plugins")
def listing() -> Response:
    found = discover_plugins()
    profile, project = _where()
    return jsonify({
        "plugins": [_summary(found[n], profile, project) for n in sorted(found)],
        "extensions": _extensions(profile, project),
    })  # fmt: skip


def _extensions(profile: str, project: Any) -> list[dict[str, str]]:
    """The Agent Zero extensions an agent of `profile` in `project` meets (the profile's,
    the plugins' switched on there, usr/extensions'), each with whether it runs: the
    file's path as the admin knows it (inside usr/ or Cadre's folder), its point, why not."""
    try:
        found = extension_status(profile, project)
    except UserError as exc:  # a profile's name no folder may have: the plugins still list
        log.warning("Agent Zero extensions not listed for profile %r: %s", profile, exc)
        return []
    shown = []
    for entry in found:
        path = Path(entry["file"])
        for root in (usr_dir(), BASE_DIR):
            if path.is_relative_to(root):
                path = path.relative_to(root)
                break
        runs, _, words = entry["state"].partition(": ")
        shown.append({"point": entry["point"], "file": path.as_posix(),
                      "runs": runs == "runs", "words": words})  # fmt: skip
    return shown


@plugin_pages.get("/api/plugins/<name>")
def show(name: str) -> Response:
    return jsonify(_summary(_plugin(name), *_where()))


@plugin_pages.post("/api/plugins/<name>/switch")
def switch(name: str) -> Response:
    plugin = _plugin(name)
    asked = body(SwitchBody)
    key = ""
    if asked.scope == "project":
        if not asked.project:
            raise UserError("project: name the project to switch the plugin for")
        key = plugin_switches.project_key(own_project(asked.project))
    elif asked.scope == "profile":
        if not asked.profile:
            raise UserError("profile: name the agent profile to switch the plugin for")
        key = asked.profile
    scope = {"global": "global", "project": "projects", "profile": "profiles"}[asked.scope]
    plugin_switches.switch(name, asked.on, scope, key)  # type: ignore[arg-type]
    if scope == "global":
        _apply_mcp()
    log.info("plugin %s switched %s (%s %s)", name, asked.on, asked.scope, key)
    return jsonify(_summary(plugin, asked.profile, own_project(asked.project) if asked.project
                            else None))  # fmt: skip


@plugin_pages.post("/api/plugins/install")
def install() -> Response | tuple[Response, int]:
    """A zip in the multipart field `archive`, a folder's files in `files`, or JSON
    `{"source": <git address or server folder>}`; `replace` replaces one of the same name
    (without it, a name installed already is a 409: the page asks, then sends again)."""
    try:
        done = _install()
    except PluginTaken as exc:
        return error(str(exc), 409)
    except ImportRefused as exc:
        log.warning("plugin install refused: %s", exc)
        raise
    _apply_mcp()
    return jsonify({"installed": done.name, "replaced": done.replaced,
                    "plugin": _summary(_plugin(done.name), "", None)})  # fmt: skip


def _install() -> plugin_install.Installed:
    if request.is_json:
        asked = body(SourceBody)
        source = asked.source.strip()
        if Path(source).is_dir() and not (Path(source) / ".git").exists():
            return plugin_install.install_folder(Path(source), replace=asked.replace)
        return plugin_install.install_git(source, replace=asked.replace)
    replace = request.form.get("replace", "") in ("1", "true", "yes")
    archive = request.files.get("archive")
    if archive is not None and archive.filename:
        fallback = Path(archive.filename.replace("\\", "/")).stem
        return plugin_install.install_zip(archive.stream, replace=replace, fallback=fallback)
    uploads = [u for u in request.files.getlist("files") if u.filename]
    if not uploads:
        raise UserError("send a zip as 'archive', a folder's files as 'files', or a 'source'")
    entries = [Entry(u.filename or "", lambda u=u: u.stream) for u in uploads]
    return plugin_install.install_entries(entries, {"kind": "upload"}, replace=replace)


@plugin_pages.post("/api/plugins/<name>/update")
def update(name: str) -> Response:
    done = plugin_install.update(name)
    _apply_mcp()
    return jsonify({"updated": done.name, "plugin": _summary(_plugin(done.name), "", None)})


@plugin_pages.post("/api/plugins/<name>/delete")
def delete(name: str) -> Response:
    plugin_install.remove(name)
    _apply_mcp()
    return jsonify({"deleted": name})


@plugin_pages.post("/api/plugins/<name>/dependencies")
def dependencies(name: str) -> Response | tuple[Response, int]:
    """Without `confirm`, a 409 listing what pip would install; with it, pip runs."""
    try:
        installed = plugin_install.install_dependencies(name, confirmed=body(ConfirmBody).confirm)
    except NeedsConfirmation as exc:
        return jsonify({"error": str(exc), "packages": exc.packages}), 409
    return jsonify({"installed": installed})


@plugin_pages.get("/api/log-renderers")
def log_renderers() -> Response:
    """The log-item renderers of the plugins switched on anywhere: `{"renderers":
    [{"plugin", "url"}]}` (webui/js/plugin-renderers.js loads them; a tool's log item
    names its plugin)."""
    found = [
        {"plugin": plugin.name, "url": _web_url(plugin, plugin.manifest.log_renderer)}
        for plugin in discover_plugins().values()
        if plugin.manifest and plugin.manifest.log_renderer and plugin.usable
        and plugin_switches.on_anywhere(plugin)
    ]  # fmt: skip
    return jsonify({"renderers": sorted(found, key=lambda r: r["plugin"])})


@plugin_pages.get("/plugins/<name>/webui/<path:path>")
def web_part(name: str, path: str) -> Response | tuple[Response, int]:
    plugin = discover_plugins().get(name)
    if plugin is None or not plugin.usable:
        return error(f"no usable plugin {name!r}", 404)
    try:
        relative = check_name(path)
    except PathRefused as exc:
        return error(str(exc), 400)
    folder = (plugin.root / "webui").resolve()
    target = (folder / str(relative)).resolve()
    kind = _WEB_TYPES.get(target.suffix)
    if kind is None or not target.is_relative_to(folder) or not target.is_file():
        return error(f"no page part {path!r} in plugin {name!r}", 404)
    return send_file(target, mimetype=kind, max_age=0)


@plugin_pages.post("/api/plugins/<name>/settings")
def save_settings(name: str) -> Response:
    """`{"values": {field: value}}`, checked against the plugin's declared fields."""
    given = request.get_json(silent=True) or {}
    if not isinstance(given.get("values"), dict):
        raise UserError("values: send the plugin's settings as {field: value}")
    saved = plugin_settings.save(name, given["values"])
    return jsonify({"values": saved, "plugin": _summary(_plugin(name), "", None)})
