"""A person's own settings: their secrets, their own models and provider keys (where the
admin allows it) and their own remote MCP servers, laid over the server's settings for
their chats' agents. An admin other than the first has one too (admins' agents get every
secret of the server's, and their own models whatever `member_models` says).

Kept in `<space>/my_settings.json` (owner-only: it holds keys), one file a person,
written whole under its lock (accounts/stored_file.py). The first admin has none: their
settings are the server's (usr/settings.json), as in the one-person install.

What a person may set is narrower than the server's settings on purpose: nothing here
runs a program on the host (an MCP server of a person's is remote, reached over HTTP,
never a command), and nothing widens what their agents reach (the work folder, the
sandbox, the tools members may use are the admin's). Their agents get, between the
server's settings and their chat's project (core/agent_config.py):
- the server's secrets the admin shares with members (`member_secrets`), then their own;
- their models and keys, field by field where they set one, if `member_models` is on;
- the server's MCP servers, and their own beside them (accounts never shadow a server's
  name: the page refuses such a name).
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from accounts.spaces import is_member, space_of
from accounts.stored_file import locked
from helpers.errors import UserError
from helpers.files import usr_dir, write_text_atomic
from helpers.mcp_config import (
    HttpServer,
    McpConfigError,
    StdioServer,
    first_problem,
    parse_mcp_servers,
    per_user_entries,
    with_secrets,
)
from helpers.settings import Settings, load_settings

log = logging.getLogger(__name__)

FILE = "my_settings.json"
#: The model fields a person may set when the admin allows it (empty: the server's).
MODEL_FIELDS = tuple(f"{kind}_{part}" for kind in ("chat", "util", "embed")
                     for part in ("model", "api_base", "api_key"))  # fmt: skip
#: Of those, the providers' addresses: held to the outbound policy when a member sets one.
BASE_FIELDS = ("chat_api_base", "util_api_base", "embed_api_base")
#: Of those, the ones that are keys: masked wherever they are shown.
KEY_FIELDS = ("chat_api_key", "util_api_key", "embed_api_key")
#: What `§§secret(NAME)` can name (helpers/secrets.py).
SECRET_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: A file larger than this is not a person's settings (it is refused, never read whole).
MAX_BYTES = 1_000_000


class PersonalSettings(BaseModel):
    """What one person set for themselves (every field optional: empty is the server's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    secrets: dict[str, str] = Field(default_factory=dict)
    chat_model: str = Field("", max_length=200)
    chat_api_base: str = Field("", max_length=2_000)
    chat_api_key: str = Field("", max_length=2_000)
    util_model: str = Field("", max_length=200)
    util_api_base: str = Field("", max_length=2_000)
    util_api_key: str = Field("", max_length=2_000)
    embed_model: str = Field("", max_length=200)
    embed_api_base: str = Field("", max_length=2_000)
    embed_api_key: str = Field("", max_length=2_000)
    #: Their own MCP servers, in the desktop clients' JSON; remote (url) servers only.
    mcp_servers: str = Field("", max_length=100_000)

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, secrets: dict[str, str]) -> dict[str, str]:
        wrong = [name for name in secrets if not SECRET_NAME.fullmatch(name)]
        if wrong:  # what §§secret(NAME) can name
            raise ValueError(
                f"{wrong[0]!r} is not a secret's name: use letters, digits, "
                "'_', '.' and '-' (64 at most)"
            )
        return secrets

    @field_validator("chat_api_base", "util_api_base", "embed_api_base")
    @classmethod
    def _web_address(cls, address: str) -> str:
        if address and not address.startswith(("http://", "https://")):
            raise ValueError("a provider's address starts with http:// or https://")
        return address

    @field_validator("mcp_servers")
    @classmethod
    def _remote_only(cls, text: str) -> str:
        remote_servers(text)
        return text

    def models(self) -> dict[str, str]:
        """The model fields they set (empty ones left out: those stay the server's)."""
        return {name: getattr(self, name) for name in MODEL_FIELDS if getattr(self, name)}


def remote_servers(text: str) -> dict[str, HttpServer]:
    """A person's MCP servers from `text`; a local one (a command) is refused: a program
    on the host is the admin's to start (McpConfigError, naming the server)."""
    found = parse_mcp_servers(text)
    for name, config in found.items():
        if isinstance(config, StdioServer):
            raise McpConfigError(
                f"server {name!r}: only the admin can add a server that runs a command on "
                "the host; yours are remote ones, with a url"
            )
    return {name: config for name, config in found.items() if isinstance(config, HttpServer)}


def settings_file(space: Path) -> Path:
    return space / FILE


def load(space: Path) -> PersonalSettings:
    """The settings the person of `space` set (none: all empty). A damaged file is
    reported in the log and ignored, so that their chats still run on the server's."""
    path = settings_file(space)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ValueError(f"larger than {MAX_BYTES:,} bytes")
        return PersonalSettings.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return PersonalSettings()
    except (OSError, ValueError, ValidationError) as exc:
        log.error("accounts: %s is damaged and ignored (the server's settings apply): %s",
                  path, exc)  # fmt: skip
        return PersonalSettings()


def save(space: Path, changes: dict[str, Any]) -> PersonalSettings:
    """Lay `changes` over what the person of `space` set, check the whole, and keep it.
    A field not named keeps its value; an unknown one or a wrong value is a UserError
    that says which and why."""
    path = settings_file(space)
    with locked(path):
        current = load(space).model_dump()
        try:
            updated = PersonalSettings.model_validate({**current, **changes})
        except ValidationError as exc:
            mine = "not a setting of yours (the admin sets it for the server)"
            raise UserError(first_problem(exc, mine, "settings")) from None
        text = json.dumps(updated.model_dump(), indent=2, sort_keys=True, ensure_ascii=False)
        space.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text + "\n", mode=0o600)
    return updated


def remove(space: Path) -> None:
    """Forget the person's own settings (their account is being deleted)."""
    try:
        os.unlink(settings_file(space))
    except FileNotFoundError:
        pass


def shared_secrets(server: Settings) -> dict[str, str]:
    """The server's secrets the admin lets members' agents use (`member_secrets`)."""
    return {name: server.secrets[name] for name in server.member_secrets
            if name in server.secrets}  # fmt: skip


def overrides(server: Settings, own: PersonalSettings, member: bool) -> dict[str, Any]:
    """The settings a person's agents get over the server's (see the module docstring);
    an admin's (not `member`) get every secret of the server's, and their own models."""
    shared = shared_secrets(server) if member else server.secrets
    laid: dict[str, Any] = {"secrets": {**shared, **own.secrets}}
    if server.member_models or not member:
        laid.update(own.models())
    mine = own.mcp_servers.strip() and _entries(own.mcp_servers)
    if mine:
        servers = _entries(server.mcp_servers) if server.mcp_servers.strip() else {}
        taken = sorted(set(mine) & set(servers))
        if taken:  # saved before the admin named a server so: the admin's stays
            log.warning("accounts: own MCP server(s) %s have a name of the server's: skipped",
                        ", ".join(taken))  # fmt: skip
        laid["mcp_servers"] = json.dumps(
            {"mcpServers": {**{k: v for k, v in mine.items() if k not in servers}, **servers}}
        )
    return laid


def _entries(text: str) -> dict[str, Any]:
    """The `mcpServers` object of a setting's text ({} when it cannot be read)."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return dict(servers) if isinstance(servers, dict) else {}


def own_servers(
    server: Settings, own: PersonalSettings, member: bool
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A person's own MCP servers, each with their secrets filled in where its env or
    headers name one (`§§secret(NAME)`): the server's marked `per_user`, then their own
    remote ones; and those left out, with the secrets they need that this person lacks."""
    secrets = {**(shared_secrets(server) if member else server.secrets), **own.secrets}
    mine = _entries(own.mcp_servers) if own.mcp_servers.strip() else {}
    taken = set(_entries(server.mcp_servers)) if server.mcp_servers.strip() else set()
    wanted = {**per_user_entries(server.mcp_servers),
              **{name: entry for name, entry in mine.items() if name not in taken}}  # fmt: skip
    servers: dict[str, Any] = {}
    lacking: dict[str, list[str]] = {}
    for name, entry in wanted.items():
        filled, missing = with_secrets(entry, secrets)
        if missing:
            lacking[name] = missing
        else:
            servers[name] = filled
    return servers, lacking


def mcp_text(server: Settings, own: PersonalSettings, member: bool) -> str:
    """The setting text of a person's own MCP servers (mcp_client/personal.py starts them;
    see `own_servers`). A server needing a secret they lack is left out, and the log says
    which ('' when there is none at all)."""
    servers, lacking = own_servers(server, own, member)
    for name, missing in lacking.items():
        log.warning("MCP: %s is not started for this person: it needs the secret(s) %s",
                    name, ", ".join(missing))  # fmt: skip
    return json.dumps({"mcpServers": servers}) if servers else ""


def mcp_servers_of(owner: str | None) -> tuple[str, Path]:
    """`owner`'s own MCP servers as they stand now, and their space: what the server gives
    mcp_client/personal.py to start them by."""
    space = space_of(owner)
    own = load(space) if space != usr_dir() else PersonalSettings()
    return mcp_text(load_settings(), own, is_member(owner)), space
