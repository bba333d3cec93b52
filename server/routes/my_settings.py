"""A person's own settings, as My account shows them and the external API gives them:

    GET   /api/my/settings, /api/v1/my/settings    what they set (secrets masked), and
                                                    what the server lets them set
    PATCH /api/my/settings, /api/v1/my/settings    change some of it

What a person may set, and how it reaches their agents, is accounts/personal.py's. A key
or a secret is never sent back in clear: it shows as `***`, and `***` sent back keeps
what is stored. The first admin (and the desktop mode's one person) has no settings of
their own: theirs are the server's, on the Settings page (409 says so). A saved change
reaches their agents from their next message on, and their own MCP servers start at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, jsonify, request

from accounts import personal
from accounts.spaces import is_member
from helpers.errors import Forbidden, UserError
from helpers.files import usr_dir
from helpers.mcp_config import mask_mcp_servers, parse_mcp_servers, unmask_mcp_servers
from helpers.outbound import OutboundRefused, policy, resolve
from helpers.settings import Settings, load_settings
from mcp_client.personal import PersonalServers
from server.routes.routing import chats, error
from server.routes.views import MASK
from server.security import audit, identity

#: The answer to the one whose settings are the server's.
SERVERS = "your settings are the server's: change them on the Settings page"


def _own_space() -> Path | None:
    """The asker's space; None for the one whose settings are the server's (the first
    admin's space is usr/ itself, as is the desktop mode's)."""
    space = identity.space()
    return None if identity.viewer() is None or space == usr_dir() else space


def _view(own: personal.PersonalSettings, server: Settings) -> dict[str, Any]:
    member = is_member(identity.viewer())
    values = own.model_dump()
    values["secrets"] = dict.fromkeys(own.secrets, MASK)
    for name in personal.KEY_FIELDS:
        values[name] = MASK if values[name] else ""
    values["mcp_servers"] = mask_mcp_servers(own.mcp_servers, MASK)
    return {
        "values": values,
        "models_allowed": server.member_models or not member,
        # What applies where they set nothing: the server's models and shared secrets.
        "server_models": {
            kind: getattr(server, f"{kind}_model") for kind in ("chat", "util", "embed")
        },  # fmt: skip
        "server_secrets": sorted(personal.shared_secrets(server) if member else server.secrets),
        "server_mcp_servers": sorted(_names(server.mcp_servers)),
        "mcp_status": _statuses() + _lacking(own, server, member),
    }


def _lacking(
    own: personal.PersonalSettings, server: Settings, member: bool
) -> list[dict[str, Any]]:
    """The servers not started for them for want of a secret, with the next step."""
    _, lacking = personal.own_servers(server, own, member)
    return [{"name": name, "state": "failed", "tools": 0,
             "error": f"needs your secret {', '.join(missing)}: add it under Secrets"}
            for name, missing in lacking.items()]  # fmt: skip


def _statuses() -> list[dict[str, Any]]:
    """How their own MCP servers (and the server's per-person ones) are doing now."""
    servers = chats().runtime.service(PersonalServers)
    supervisor = servers.supervisor(identity.viewer()) if servers is not None else None
    if supervisor is None:
        return []
    return [{"name": s.name, "state": s.state, "error": s.error, "tools": len(s.tools)}
            for s in supervisor.statuses()]  # fmt: skip


def _names(text: str) -> set[str]:
    try:
        return set(parse_mcp_servers(text))
    except ValueError:
        return set()


def show() -> Response | tuple[Response, int]:
    space = _own_space()
    if space is None:
        return error(SERVERS, 409)
    return jsonify(_view(personal.load(space), load_settings()))


def _check_addresses(changes: dict[str, Any], server: Settings, space: Path) -> None:
    """A member's providers' addresses, held to where their agents may reach (the outbound
    policy, as their MCP servers are): OutboundRefused, a 400 in words. A name that does
    not resolve here now passes: the model's call will say so."""
    where = policy(server, chats().runtime.loopback_only, space)
    for name in personal.BASE_FIELDS:
        address = changes.get(name)
        if not isinstance(address, str) or not address.startswith(("http://", "https://")):
            continue  # not a web address at all: the check of the values says so
        try:
            resolve(urlsplit(address).hostname or "")
        except OutboundRefused:
            continue
        where.check_url(address)


def change() -> Response | tuple[Response, int]:
    space = _own_space()
    if space is None:
        return error(SERVERS, 409)
    changes = request.get_json(silent=True)
    if not isinstance(changes, dict):
        return error("send the settings to change as a JSON object")
    server = load_settings()
    stored = personal.load(space)
    member = is_member(identity.viewer())
    models = sorted(set(changes) & set(personal.MODEL_FIELDS))
    if models and not (server.member_models or not member):
        raise Forbidden("your admin has not let members choose their own models "
                        f"({', '.join(models)}): ask them to turn on “Members choose their "
                        "models”")  # fmt: skip
    if member:
        _check_addresses(changes, server, space)
    for name in personal.KEY_FIELDS:
        if changes.get(name) == MASK:  # shown as "***": keep what is stored
            changes[name] = getattr(stored, name)
    if isinstance(changes.get("secrets"), dict):
        changes["secrets"] = {
            name: stored.secrets.get(name, "") if value == MASK else value
            for name, value in changes["secrets"].items()
        }
    if isinstance(changes.get("mcp_servers"), str):
        changes["mcp_servers"] = unmask_mcp_servers(changes["mcp_servers"],
                                                    stored.mcp_servers, MASK)  # fmt: skip
        taken = sorted(_names(changes["mcp_servers"]) & _names(server.mcp_servers))
        if taken:
            raise UserError(f"mcp_servers: the server has a server named {taken[0]!r} "
                            "already; give yours another name")  # fmt: skip
    updated = personal.save(space, changes)
    audit.record_request("own_settings_changed", server, fields=sorted(changes))
    servers = chats().runtime.service(PersonalServers)
    if servers is not None:
        servers.ensure(identity.viewer())  # their own MCP servers (re)start now
    return jsonify(_view(updated, server))


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    """The routes under `prefix` of `blueprint`: the page's and the API's."""
    blueprint.add_url_rule(f"{prefix}/my/settings", "my_settings", show, methods=["GET"])
    blueprint.add_url_rule(f"{prefix}/my/settings", "my_settings_change", change,
                           methods=["PATCH"])  # fmt: skip


my_settings_pages = Blueprint("my_settings", __name__)
add_routes(my_settings_pages, "/api")
