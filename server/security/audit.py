"""The audit log: who logged in (or failed to), logged out, gave a wrong password for a risky
change, and changed settings or the API key, when and from where, in `usr/audit.log`.

One JSON object a line, only ever appended (owner-only, 0600): each line is written
whole with one `write` on a file opened for appending, under a lock, so lines from
many threads never interleave. What a line says is names, never values: the fields a
settings change touched, never a password (tried or true), a key or a secret. A line
that cannot be read (a crash mid-write, an edit by hand) is skipped when the log is
read, and the rest is shown.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flask import g, request, session

from helpers.files import usr_path
from helpers.settings import Settings
from server.security.forwarded import client_address

log = logging.getLogger(__name__)

FILE = "audit.log"
#: The most entries one read returns.
MAX_ENTRIES = 1_000
_writing = threading.Lock()


@dataclass(frozen=True)
class Entry:
    """One line of the audit log."""

    time: float
    #: What happened: login, login_failed, logout, password_failed (the password asked
    #: again before a risky change), settings_changed, api_key_changed.
    event: str
    #: Who did it (the login named, for a failed attempt).
    actor: str
    #: The client's address (server/security/forwarded.py: a trusted proxy's client).
    address: str
    details: dict[str, Any] = field(default_factory=dict)


def path() -> Path:
    return usr_path(FILE)


def record(event: str, actor: str, address: str, **details: Any) -> None:
    """Append one entry; a log that cannot be written is told to the server log, and the
    request that caused it goes on (an audit line is never worth a failed login)."""
    entry = Entry(time.time(), event, actor[:200], address[:100], details)
    line = json.dumps(asdict(entry), ensure_ascii=False, separators=(",", ":")) + "\n"
    target = path()
    try:
        with _writing:
            target.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(descriptor, line.encode("utf-8", "replace"))
            finally:
                os.close(descriptor)
    except OSError as exc:
        log.error("audit log %s: could not write %r: %s", target, event, exc)


def record_request(
    event: str, settings: Settings, actor: str | None = None, **details: Any
) -> None:
    """Record what the current web request did: its account (or `actor`) and address."""
    forwarded = request.headers.get("X-Forwarded-For")
    address = client_address(request.remote_addr or "?", forwarded, settings.trusted_proxies)
    if actor is None:  # the account the request acts as (a page's session, or an API key)
        actor = str(g.cadre_user.name if g.get("cadre_user") else session.get("user", ""))
    record(event, actor, address, **details)


def entries(limit: int = 200) -> list[Entry]:
    """The newest `limit` entries (at most MAX_ENTRIES), newest first."""
    limit = max(1, min(limit, MAX_ENTRIES))
    kept: deque[Entry] = deque(maxlen=limit)
    try:
        with path().open("rb") as file:
            for raw in file:
                entry = _parsed(raw)
                if entry is not None:
                    kept.append(entry)
    except FileNotFoundError:
        return []
    return list(reversed(kept))


def _parsed(raw: bytes) -> Entry | None:
    try:
        data = json.loads(raw.decode("utf-8"))
        return Entry(float(data["time"]), str(data["event"]), str(data["actor"]),
                     str(data["address"]), dict(data.get("details") or {}))  # fmt: skip
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("audit log: a line that cannot be read was skipped: %s", exc)
        return None
