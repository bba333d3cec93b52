"""The `mcp_servers` setting, read into typed server configs (and refused when wrong).

The text is the format desktop MCP clients use::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server-files"], "env": {}, "cwd": "..."},
        "search": {"url": "http://localhost:9000/mcp", "headers": {"X-Key": "..."}}}}

A server with a `command` is started as a local process (stdio); one with a
`url` is reached over streamable HTTP, with SSE as the fallback older servers
need (`"transport": "sse"` goes straight to SSE). `"disabled": true` keeps a
server in the list without starting it; `"per_user": true` starts it once per person,
with their own secrets in it (mcp_client/personal.py). Every error names the server and the
field, so the settings page can show it as it is.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

#: What a server's name may be: it becomes the first half of its tools' names.
NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")

Transport = Literal["stdio", "streamable-http", "sse"]
#: A secret named in a server's env or headers (helpers/secrets.py writes the same form).
SECRET_PLACEHOLDER = re.compile(r"§§secret\(\s*([A-Za-z0-9_.-]+)\s*\)")
#: An environment variable's name that says its value is a secret.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|SESSION", re.IGNORECASE)


class McpConfigError(ValueError):
    """The `mcp_servers` text cannot be used; the message says where and why."""


class _Server(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    disabled: bool = False
    #: Started once per person who uses it (mcp_client/personal.py), each with their own
    #: secrets: `§§secret(NAME)` in its `env` or `headers` is that person's NAME.
    per_user: bool = False


class StdioServer(_Server):
    """A local server Cadre starts as a process and talks to over its stdin and stdout."""

    command: Annotated[str, Field(min_length=1)]
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    #: Desktop clients write it sometimes; only "stdio" fits a command.
    type: Literal["stdio"] | None = None

    @property
    def transport(self) -> Transport:
        return "stdio"


class HttpServer(_Server):
    """A remote server reached at `url` (streamable HTTP; SSE as the fallback)."""

    url: Annotated[str, Field(min_length=1)]
    headers: dict[str, str] = Field(default_factory=dict)
    #: None: streamable HTTP, then SSE if the server does not speak it.
    transport_choice: Literal["streamable-http", "sse"] | None = Field(None, alias="transport")
    #: Some clients write `type` instead of `transport` ("http" meaning streamable HTTP).
    type: Literal["http", "streamable-http", "sse"] | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("url")
    @classmethod
    def _http_only(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return url

    @property
    def transport(self) -> Transport:
        chosen = self.transport_choice or self.type
        return "sse" if chosen == "sse" else "streamable-http"

    @property
    def sse_fallback(self) -> bool:
        """True when no transport was chosen: SSE is tried if streamable HTTP is refused."""
        return self.transport_choice is None and self.type is None


ServerConfig = StdioServer | HttpServer


def _json(text: str) -> Any:
    """`json.loads`, with a text nested too deeply for Python's parser (100k `[`) a
    ValueError like any other unreadable one, not a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to be read (lists or objects in lists...)") from None


def parse_mcp_servers(text: str) -> dict[str, ServerConfig]:
    """The servers `text` describes, in its order (empty text: none).

    Raises McpConfigError naming the server and field at fault.
    """
    if not text.strip():
        return {}
    try:
        data = _json(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column "
                             f"{exc.colno})") from None  # fmt: skip
    except ValueError as exc:
        raise McpConfigError(str(exc)) from None
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise McpConfigError('expected a JSON object {"mcpServers": {"<name>": {...}}}')
    extra = sorted(set(data) - {"mcpServers"})
    if extra:
        raise McpConfigError(f"unknown key(s) beside mcpServers: {', '.join(extra)}")
    return {name: _server(name, entry) for name, entry in data["mcpServers"].items()}


def _server(name: str, entry: Any) -> ServerConfig:
    if not NAME.fullmatch(name):
        raise McpConfigError(
            f"server name {name!r}: use 1 to 32 letters, digits, '_' or '-' "
            "(it starts the names of its tools)"
        )
    if not isinstance(entry, dict):
        raise McpConfigError(f"server {name!r}: expected an object with a command or a url")
    if ("command" in entry) == ("url" in entry):
        raise McpConfigError(f"server {name!r}: give either a command (local) or a url (remote)")
    kind: type[ServerConfig] = StdioServer if "command" in entry else HttpServer
    try:
        return kind.model_validate(entry)
    except ValidationError as exc:
        raise McpConfigError(f"server {name!r}: {first_problem(exc, 'unknown field')}") from None


def first_problem(exc: ValidationError, unknown: str, whole: str = "entry") -> str:
    """`field: what is wrong` of the first error in `exc`, in plain words (`unknown` for
    a field that is not one; `whole` names the field of an error of the whole)."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or whole
    message = first["msg"].removeprefix("Value error, ")  # a validator's own words
    return f"{field}: {unknown if first['type'] == 'extra_forbidden' else message}"


#: The fields of a server whose values are secrets (tokens in `env`, keys in `headers`).
SECRET_MAPS = ("env", "headers")


def _secret_maps(data: object) -> list[tuple[str, str, dict[str, Any]]]:
    """(server, field, mapping) for every `env` and `headers` object in parsed setting text."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return []
    return [(name, field, entry[field]) for name, entry in servers.items()
            if isinstance(entry, dict)
            for field in SECRET_MAPS if isinstance(entry.get(field), dict)]  # fmt: skip


def mask_mcp_servers(text: str, mask: str) -> str:
    """`text` with every non-empty `env` and `headers` value replaced by `mask` (the
    settings page shows it so: a token never leaves the server in clear). Text with
    nothing to mask, or not JSON, comes back as it is."""
    try:
        data = _json(text)
    except ValueError:
        return text
    found = False
    for _, _, mapping in _secret_maps(data):
        for key, value in mapping.items():
            if value:
                mapping[key], found = mask, True
    return json.dumps(data, indent=2, ensure_ascii=False) if found else text


def unmask_mcp_servers(text: str, stored: str, mask: str) -> str:
    """`text` as the page sends it back, each `mask` value replaced by the value `stored`
    holds for the same server and key (a masked value with none stays as it is)."""
    try:
        data, kept = _json(text), _json(stored or "{}")
    except ValueError:
        return text
    known = {(name, field): mapping for name, field, mapping in _secret_maps(kept)}
    found = False
    for name, field, mapping in _secret_maps(data):
        old = known.get((name, field), {})
        for key, value in mapping.items():
            if value == mask and isinstance(old.get(key), str):
                mapping[key], found = old[key], True
    return json.dumps(data, indent=2, ensure_ascii=False) if found else text


def mcp_secret_values(text: str) -> list[str]:
    """The secrets the setting holds: every `headers` value (with the token of an
    `Authorization: Bearer <token>`) and each `env` value whose name says it is one
    (`GITHUB_TOKEN`, `API_KEY`...); a plain `MODE: production` stays readable."""
    try:
        data = _json(text or "{}")
    except ValueError:
        return []
    values = [value for _, field, mapping in _secret_maps(data)
              for key, value in mapping.items()
              if isinstance(value, str)
              and (field == "headers" or _SECRET_NAME.search(key))]  # fmt: skip
    return values + [v.split(None, 1)[1] for v in values if len(v.split(None, 1)) == 2]


def per_user_entries(text: str) -> dict[str, dict[str, Any]]:
    """The servers of setting `text` marked `per_user`, as written ({} when it cannot be
    read: the shared servers' checks say why)."""
    try:
        data = _json(text or "{}")
    except ValueError:
        return {}
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return {}
    return {name: entry for name, entry in servers.items()
            if isinstance(entry, dict) and entry.get("per_user") is True}  # fmt: skip


def fill_secrets(text: str, secrets: dict[str, str], missing: list[str]) -> str:
    """`text` with each `§§secret(NAME)` replaced by NAME's value in `secrets`; the names
    it lacks are added to `missing` (and left as written)."""

    def one(found: re.Match[str]) -> str:
        name = found.group(1)
        if name in secrets:
            return secrets[name]
        missing.append(name)
        return found.group(0)

    return SECRET_PLACEHOLDER.sub(one, text) if "§§secret(" in text else text


def with_secrets(
    entry: dict[str, Any], secrets: dict[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """A server's `entry` with each `§§secret(NAME)` in its env or headers replaced by
    NAME's value in `secrets`, and the names it needs that `secrets` lacks."""
    missing: list[str] = []
    filled = dict(entry)
    for field in SECRET_MAPS:
        if isinstance(entry.get(field), dict):
            filled[field] = {key: fill_secrets(value, secrets, missing) if isinstance(value, str)
                             else value for key, value in entry[field].items()}  # fmt: skip
    return filled, sorted(set(missing))
