"""HTTP routes of the settings: read them (secrets masked), change them, the API key.

A change is validated whole before it is saved; a field an environment
variable sets cannot be changed here (409: it would never apply). The work
folder is checked and kept by its real path (helpers/exposure.py); a program
the host would run is refused where an agent could have written it
(helpers/programs.py), and with a login set, a change of one (or of the
sandbox, the login, or who single sign-on lets in) needs the account's password in the
same request (server/security/reauth.py). Saved settings are put to work at once: in every chat, the
local model they name and the MCP servers.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Any

from flask import Blueprint, Response, jsonify, request
from pydantic import TypeAdapter, ValidationError

from execution import sandbox_choice
from helpers import model_presets, programs
from helpers.a2a_agents import unmask_agents
from helpers.errors import UserError
from helpers.exposure import saved_work_folder
from helpers.fallback_entries import FALLBACK_FIELDS, unmask_fallbacks
from helpers.mcp_config import unmask_mcp_servers
from helpers.settings import (
    ENV_PREFIX,
    Settings,
    load_settings,
    overridden_fields,
    save_settings,
    settings_path,
)
from helpers.settings_form import form_description
from initialize import preload_local_models
from mcp_client.personal import PersonalServers
from mcp_client.supervisor import McpSupervisor
from profiles.plugin_mcp import with_plugin_servers
from server.apis.telegram.bridge import TelegramBridge
from server.routes import views
from server.routes.routing import chats, error
from server.security import audit, auth, guard, identity, reauth

settings_pages = Blueprint("settings", __name__)

#: Who may log in, and as whom: the login, and single sign-on's provider, its claims and the
#: proxies whose header names the user. A session taken over must not make itself a way
#: back in (a provider of its own, a proxy address) without the password.
SIGN_IN_SETTINGS = (
    "auth_login", "auth_password", "oidc_issuer", "oidc_client_id", "oidc_client_secret",
    "oidc_user_claim", "oidc_admin_claim", "oidc_admin_value", "sso_create_users",
    "sso_header_login", "sso_user_header", "sso_email_header", "trusted_proxies",
)  # fmt: skip


@settings_pages.get("/api/settings")
def get_settings() -> Response:
    """The settings (secrets masked); with `?form=1`, also how the form shows each field."""
    settings = load_settings()
    values = views.masked_settings(settings)
    if request.args.get("form"):
        # How commands run now, shown by the work folder field.
        sandbox = sandbox_choice.status(settings)
        return jsonify({"values": values, **form_description(), "sandbox": sandbox})
    return jsonify(values)


def _env_conflict(changes: dict[str, Any]) -> str:
    """Take out of `changes` the fields an environment variable sets, when they hold the
    value it sets (the page sends them back as shown: they must not reach the file);
    the error when one would change (saved, it would never apply)."""
    applied = load_settings()
    for name, variable in overridden_fields().items():
        if name not in changes:
            continue
        value = changes.pop(name)
        if name in views.SECRET_FIELDS:
            if value == views.MASK:
                continue
            # Never compared: accepting a matching value would let a guess be tested.
            return f"{name} is set by {variable}; change it there"
        if name == "secrets" and isinstance(value, dict):
            value = {k: applied.secrets.get(k) if v == views.MASK else v for k, v in value.items()}
        kind = TypeAdapter(Settings.model_fields[name].annotation)
        try:
            same = kind.validate_python(value) == getattr(applied, name)
        except ValidationError:
            same = False
        if not same:
            return f"{name} is set by {variable}; change it there"
    return ""


@settings_pages.post("/api/settings")
def post_settings() -> Response | tuple[Response, int]:
    changes = request.get_json(silent=True)
    if not isinstance(changes, dict):
        return error("send the settings to change as a JSON object")
    unknown = sorted(set(changes) - set(Settings.model_fields))
    if unknown:
        return error(f"unknown setting(s): {', '.join(unknown)}")
    current = load_settings()  # read once: what masked values sent back stand for
    if isinstance(changes.get("mcp_servers"), str):
        # The page shows the servers' env and headers masked: put the values back.
        changes["mcp_servers"] = unmask_mcp_servers(
            changes["mcp_servers"], current.mcp_servers, views.MASK
        )
    for name in changes.keys() & set(FALLBACK_FIELDS):  # their keys shown masked: put them back
        changes[name] = unmask_fallbacks(changes[name], getattr(current, name), views.MASK)
    if isinstance(changes.get("model_presets"), list):  # their keys shown "***" too
        shown = [p.model_dump(mode="json") for p in current.model_presets]
        changes["model_presets"] = model_presets.unmasked(changes["model_presets"], shown)
    if isinstance(changes.get("a2a_agents"), list):  # the remote agents' keys shown "***"
        changes["a2a_agents"] = unmask_agents(changes["a2a_agents"], current.a2a_agents,
                                              views.MASK)  # fmt: skip
    conflict = _env_conflict(changes)
    if conflict:
        return error(conflict, 409)
    stored = stored_settings()
    for name in views.SECRET_FIELDS & changes.keys():
        if changes[name] == views.MASK:  # the page shows "***": keep what is stored
            changes[name] = stored.get(name, "")
    if isinstance(changes.get("secrets"), dict):
        kept = stored.get("secrets") or {}
        changes["secrets"] = {
            name: kept.get(name, "") if value == views.MASK else value
            for name, value in changes["secrets"].items()
        }
    if changes.get("auth_password") and not auth.is_hashed(changes["auth_password"]):
        changes["auth_password"] = auth.hash_password(changes["auth_password"])
    if isinstance(changes.get("work_dir"), str):
        try:  # its real path is kept, and checked again at every use (helpers/folders.py)
            changes["work_dir"] = saved_work_folder(changes["work_dir"], must_exist=False)
        except UserError as exc:
            return error(f"work_dir: {exc}")
    try:
        updated = Settings.model_validate({**stored, **changes})
    except ValidationError as exc:
        first = exc.errors()[0]
        return error(f"{first['loc'][0]}: {first['msg']}")
    try:
        current = Settings.model_validate(stored)
    except ValidationError:  # what this change repairs: compared with the defaults
        current = Settings()
    refused = _guard_programs(current, updated)
    if refused is not None:
        return refused
    first = identity.accounts().users.first_admin()
    before = (first.name, guard.credentials(first)) if first else (None, "")
    applied = store_settings(updated)
    audit.record_request("settings_changed", applied, fields=sorted(changes))
    first = identity.accounts(fresh=True).users.first_admin()  # the login's changes in step
    if (guard.credentials(first) if first else "") != before[1]:
        guard.renew_session(before[0])  # their other sessions end; this one goes on
    return jsonify(views.masked_settings(applied))


def _guard_programs(before: Settings, after: Settings) -> tuple[Response, int] | None:
    """The answer refusing the change from `before` to `after`, None when it may be saved:
    a program an agent could have written is refused (helpers/programs.py); a changed
    program, sandbox or login needs the account's password (server/security/reauth.py)."""
    try:
        programs.check_settings(after, before)
    except programs.ProgramRefused as exc:
        return error(exc.for_form())
    # The sign-in too: a session that set a password of its own could confirm with it.
    login = [name for name in SIGN_IN_SETTINGS
             if getattr(before, name) != getattr(after, name)]  # fmt: skip
    return reauth.password_refusal(programs.guarded_changes(before, after) + login)


@settings_pages.post("/api/settings/api_key/reveal")
def reveal_api_key() -> Response:
    """The external API key in clear, for the user to copy (a POST: it needs the CSRF token)."""
    return jsonify({"api_key": load_settings().api_key})


@settings_pages.post("/api/settings/api_key/regenerate")
def regenerate_api_key() -> Response | tuple[Response, int]:
    """Replace the external API key; the old one stops working at once."""
    if os.environ.get(ENV_PREFIX + "API_KEY") is not None:
        return error(f"the API key is set by {ENV_PREFIX}API_KEY; change it there", 409)
    key = auth.new_api_key()
    saved = Settings.model_validate({**stored_settings(), "api_key": key})
    save_settings(saved)
    audit.record_request("api_key_changed", saved)
    return jsonify({"api_key": key})


def store_settings(updated: Settings) -> Settings:
    """Save settings and put them to work: in every chat, and the local model they name.
    Returns them as they now apply (the environment's overrides included)."""
    save_settings(updated)
    chats().apply_settings()
    applied = load_settings()
    preload_local_models(applied)
    supervisor = chats().runtime.service(McpSupervisor)
    if supervisor is not None:
        # Only the servers whose config changed restart; the plugins' are laid beside them.
        supervisor.apply(with_plugin_servers(applied.mcp_servers))
    own = chats().runtime.service(PersonalServers)
    if own is not None:
        own.refresh()  # a per-person server of the admin's, a secret shared with members
    telegram = chats().runtime.service(TelegramBridge)
    if telegram is not None:
        telegram.settings_changed()  # connects, reconnects or stops as the settings say
    return applied


def stored_settings() -> dict[str, Any]:
    """What settings.json holds (not the environment's overrides, which stay out of it)."""
    path = settings_path()
    if not path.exists():
        return Settings().model_dump()
    return {**Settings().model_dump(), **json.loads(path.read_text(encoding="utf-8"))}


@settings_pages.get("/api/audit")
def audit_log() -> Response:
    """The newest entries of the audit log (`?limit=`, 200 unless asked, 1,000 at most)."""
    limit = request.args.get("limit", "200")
    shown = audit.entries(int(limit) if limit.isdigit() else 200)
    return jsonify({"entries": [asdict(entry) for entry in shown]})
