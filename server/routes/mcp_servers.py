"""HTTP routes of the MCP client: each server's status, a restart, a check of the setting.

Behind the page's login and CSRF guard like the settings routes. Shapes:

- `GET /api/mcp/servers` → `{"servers": [{"name", "transport", "state", "error",
  "stderr_tail", "restarts", "tools": [{"name": "<server>.<tool>", "description"}]}]}`,
  in the setting's order;
- `POST /api/mcp/servers/<name>/restart` → `{"restarted": true}` (404: no such server);
- `POST /api/mcp/validate` with `{"text": "<json>"}` → `{"ok", "error", "servers"}`, the
  check the setting gets when saved (a server's program an agent could have written
  included: helpers/programs.py);
- `GET /api/chats/<chat id>/files/mcp/<name>`: an image or resource an MCP tool returned
  (the addresses in an `mcp_tool` log item's `images` and `files`). The bytes and their
  type come from a server Cadre does not control: only a raster image is shown inline;
  anything else (HTML, SVG, scripts) is a download, sandboxed, never a page of Cadre's
  origin.
"""

from __future__ import annotations

import mimetypes
from typing import Any

from flask import Blueprint, Response, jsonify, send_from_directory
from pydantic import BaseModel

from helpers import programs
from helpers.errors import NotFound
from helpers.folders import mcp_dir
from helpers.mcp_config import McpConfigError, StdioServer, parse_mcp_servers
from helpers.secrets import SecretMasker, chat_masker
from helpers.settings import load_settings
from mcp_client.status import ServerStatus
from mcp_client.supervisor import McpSupervisor
from server.routes.routing import body, chat, chats

mcp_pages = Blueprint("mcp", __name__)

#: Longest tool description sent to the page.
DESCRIPTION_SHOWN = 1000
#: Types a saved file is shown inline as: images that cannot carry a script.
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"})
#: A saved file's own policy: nothing in it runs, even when opened on its own.
SANDBOX = "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"


class ValidateBody(BaseModel):
    text: str


def _supervisor() -> McpSupervisor | None:
    return chats().runtime.service(McpSupervisor)


def status_view(status: ServerStatus, masker: SecretMasker) -> dict[str, Any]:
    """One server's status; a key or secret it printed is masked like everywhere else."""
    return {
        "name": status.name,
        "transport": status.transport,
        "state": status.state,
        "error": None if status.error is None else masker.mask(status.error),
        "stderr_tail": masker.mask(status.stderr_tail),
        "restarts": status.restarts,
        "tools": [{"name": t.full_name, "description": _cut(t.description)} for t in status.tools],
    }


def _cut(text: str) -> str:
    """A tool's description as the page shows it (a server may send megabytes of it,
    and the page asks every few seconds)."""
    return text if len(text) <= DESCRIPTION_SHOWN else text[: DESCRIPTION_SHOWN - 1] + "…"


def _not_running() -> list[dict[str, Any]]:
    """The servers of the setting when no MCP client runs (a server built without one)."""
    servers = parse_mcp_servers(load_settings().mcp_servers)
    return [{"name": name, "transport": config.transport,
             "state": "disabled" if config.disabled else "stopped", "error": None,
             "stderr_tail": "", "restarts": 0, "tools": []}
            for name, config in servers.items()]  # fmt: skip


@mcp_pages.get("/api/mcp/servers")
def servers() -> Response:
    supervisor = _supervisor()
    if supervisor is None:
        return jsonify({"servers": _not_running()})
    settings = load_settings()
    # A server's own tokens too: a failing server may print them to stderr.
    masker = chat_masker(settings)
    return jsonify({"servers": [status_view(s, masker) for s in supervisor.statuses()]})


@mcp_pages.post("/api/mcp/servers/<name>/restart")
def restart(name: str) -> Response:
    supervisor = _supervisor()
    if supervisor is None or not supervisor.restart(name):
        raise NotFound(f"there is no MCP server named {name!r}")
    return jsonify({"restarted": True})


@mcp_pages.post("/api/mcp/validate")
def validate() -> Response:
    text = body(ValidateBody).text
    try:
        found = parse_mcp_servers(text)
        for name, config in found.items():
            if isinstance(config, StdioServer) and not config.disabled:
                programs.check_mcp_server(name, config)  # as a save would
    except (McpConfigError, programs.ProgramRefused) as exc:
        return jsonify({"ok": False, "error": str(exc), "servers": []})
    return jsonify({"ok": True, "error": None, "servers": list(found)})


@mcp_pages.get("/api/chats/<chat_id>/files/mcp/<name>")
def saved_file(chat_id: str, name: str) -> Response:
    chat(chat_id)  # a 404 for a chat that does not exist
    inline = mimetypes.guess_type(name)[0] in INLINE_TYPES
    # send_from_directory refuses names leaving the folder.
    response = send_from_directory(mcp_dir(chat_id), name, as_attachment=not inline)
    response.headers["Content-Security-Policy"] = SANDBOX
    return response
