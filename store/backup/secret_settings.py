"""The settings file with or without its secrets: emptied for a backup, kept at a restore.

A backup made without secrets holds `settings.json` with every secret value
emptied (the MCP servers' `env` and `headers` values masked; the model presets' and
the fallback models' keys emptied). Restoring such settings keeps the secrets this
Cadre has now, so a restore never logs anyone out or loses a key by accident; a backup
made with secrets brings its own, and only when the person restoring asks for them.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from helpers import a2a_agents, fallback_entries, model_presets
from helpers.errors import UserError
from helpers.fallback_entries import FALLBACK_FIELDS
from helpers.mcp_config import mask_mcp_servers, unmask_mcp_servers
from helpers.settings import Settings
from store.backup.parts import MASK, secret_fields

#: Not secret, yet never apart from `auth_password` (server/security/auth.py: no name, no login).
WITH_THE_PASSWORD = ("auth_login",)


def _decode(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UserError(f"{what} is not JSON: {exc}") from None
    except RecursionError:  # valid JSON, yet deeper than Python's parser follows
        raise UserError(f"{what} cannot be read: its JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise UserError(f"{what} is not a JSON object")
    return data


def _encode(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _unknown_emptied(text: str) -> str:
    """The MCP servers' text with each value still masked (no secret here for it) emptied:
    a "***" left in place would be sent as a token, and look set in the settings form."""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return text
    found = False
    for entry in servers.values():
        for field in ("env", "headers"):
            mapping = entry.get(field) if isinstance(entry, dict) else None
            if not isinstance(mapping, dict):
                continue
            for key, value in mapping.items():
                if value == MASK:
                    mapping[key], found = "", True
    return json.dumps(data, indent=2, ensure_ascii=False) if found else text


def without_secrets(text: str) -> str:
    """`settings.json`'s text with its secrets emptied (the MCP servers' masked)."""
    data = _decode(text, "settings.json")
    for name in secret_fields():
        if name in data:
            data[name] = {} if isinstance(data[name], dict) else ""
    if isinstance(data.get("mcp_servers"), str):
        data["mcp_servers"] = mask_mcp_servers(data["mcp_servers"], MASK)
    if isinstance(data.get("model_presets"), list):  # their keys, as the settings' keys
        data["model_presets"] = model_presets.emptied(data["model_presets"])
    for name in FALLBACK_FIELDS:  # the fallback models' keys too
        if isinstance(data.get(name), list):
            data[name] = fallback_entries.emptied(data[name])
    if isinstance(data.get("a2a_agents"), list):  # the remote A2A agents' keys
        data["a2a_agents"] = a2a_agents.emptied(data["a2a_agents"])
    return _encode(data)


def restored(base: str, secrets_from: str | None, other_source: bool) -> str:
    """The settings a restore writes: `base` (the backup's or this Cadre's settings) with
    the secret values of `secrets_from` (the other, when `other_source`, or None: none).
    UserError when the result is not valid settings."""
    data = _decode(base, "the backup's settings.json")
    if other_source:
        source = _decode(secrets_from, "settings.json") if secrets_from else {}
        # The login name goes with the password it was set with: the backup's empty name
        # beside this Cadre's password turned the login off (an empty name: no login).
        for name in (*secret_fields(), *WITH_THE_PASSWORD):
            if name in source:
                data[name] = source[name]
            else:
                data.pop(name, None)
        if isinstance(data.get("mcp_servers"), str):
            masked = mask_mcp_servers(data["mcp_servers"], MASK)
            known = unmask_mcp_servers(masked, str(source.get("mcp_servers") or ""), MASK)
            data["mcp_servers"] = _unknown_emptied(known)
        if isinstance(data.get("model_presets"), list):  # each one's key by its name
            kept = source.get("model_presets")
            data["model_presets"] = model_presets.with_keys_from(
                data["model_presets"], kept if isinstance(kept, list) else []
            )
        for name in FALLBACK_FIELDS:  # each fallback's key by its model
            if isinstance(data.get(name), list):
                data[name] = fallback_entries.with_keys_from(data[name], source.get(name))
        if isinstance(data.get("a2a_agents"), list):  # each remote agent's key by its name
            data["a2a_agents"] = a2a_agents.with_keys_from(data["a2a_agents"],
                                                           source.get("a2a_agents"))  # fmt: skip
    try:
        Settings.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"the backup's settings.json is not valid: {exc}") from None
    return _encode(data) if other_source else base  # nothing merged: the file as it was
