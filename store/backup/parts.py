"""What a backup is made of: the parts of `usr/` a person chooses, and which bits are secrets.

Each part names the paths under `usr/` it owns (a folder whole, or one file).
A backup holds whole parts and a restore replaces whole parts: a part the
backup holds replaces what `usr/` has of it, a part it does not hold is
left alone.

Left out on purpose: `workdir/` (the agents' work folder: anything, often
big, and not Cadre's), `models/` (downloaded model files, fetched again when
needed), `sessions.json` (who is logged in now) and damaged settings set
aside (`settings.damaged-*.json`).

Secrets travel only when asked: the settings fields the form marks secret
(the model API keys, the external API key, the login password's hash), the
`secrets` setting's values, the values in the MCP servers' `env` and
`headers`, `usr/secret_key` (the key signing login cookies) and a
project's `secrets.json`. A backup with secrets holds the
settings too (where most of them live); a restore may take the secrets alone
into the settings it has. Without them a backup's settings have those values
emptied, and a restore keeps the ones this Cadre has.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from accounts import personal
from accounts.spaces import USERS_DIR
from helpers.errors import UserError
from helpers.settings import Settings
from profiles.projects import SECRETS_FILE


@dataclass(frozen=True)
class Part:
    """A part of `usr/` backed up and restored whole."""

    name: str
    label: str
    #: The paths under usr/ it owns, relative (a folder or a file).
    paths: tuple[str, ...]
    #: Chosen when nobody says otherwise (secrets are not).
    default: bool = True


PARTS: tuple[Part, ...] = (
    # With the chats, which chat each outside conversation is (the OpenAI-compatible
    # endpoint's, A2A's contexts and tasks, the Telegram bot's chats).
    Part("chats", "Chats", ("chats", "openai_conversations.json", "a2a", "telegram")),
    Part("settings", "Settings", ("settings.json",)),
    Part("profiles", "Agent profiles", ("agents",)),
    Part("skills", "Skills", ("skills",)),
    Part("projects", "Projects", ("projects",)),
    Part("memory", "Memory", ("memory",)),
    Part("knowledge", "Knowledge", ("knowledge",)),
    Part("scheduler", "Scheduler", ("scheduler",)),
    # The people (password hashes, digests of keys: one-way, like the login's hash in the
    # settings), what each spent on models (accounts/usage.py: their limits count it) and
    # every member's own folder (usr/users/<name>/: their work folders too).
    Part(
        "accounts",
        "Accounts and their folders",
        ("users", "users.json", "api_keys.json", "invites.json", "usage.json"),
    ),
    Part("secrets", "Secrets (API keys, password, secrets)", ("secret_key",), default=False),
)
BY_NAME = {part.name: part for part in PARTS}
SECRETS = "secrets"
#: A project's files holding secrets (kept out of a backup without secrets).
PROJECT_SECRET_FILES = frozenset({SECRETS_FILE})
#: The paths parts own that are one file (every other path a part owns is a folder).
FILE_PATHS = frozenset(
    {
        "openai_conversations.json",
        "settings.json",
        "secret_key",
        "users.json",
        "api_keys.json",
        "invites.json",
        "usage.json",
    }
)
#: The mask the MCP servers' secret values get in a backup without secrets.
MASK = "***"


def secret_fields() -> tuple[str, ...]:
    """The settings whose values are secrets: the ones the form marks so (keys, the
    password) and the `secrets` setting, read from the schema so a new one is covered."""
    found = []
    for name, field in Settings.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if extra.get("secret") or extra.get("kind") == "secrets":
            found.append(name)
    return tuple(found)


def check_parts(names: list[str] | tuple[str, ...]) -> list[str]:
    """`names` as known part names, in the usual order; UserError names any other."""
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        known = ", ".join(BY_NAME)
        raise UserError(f"unknown part(s) {', '.join(unknown)}: choose from {known}")
    return [part.name for part in PARTS if part.name in names]


def default_parts() -> list[str]:
    return [part.name for part in PARTS if part.default]


def part_of(relative: PurePosixPath) -> str | None:
    """The part owning `relative` (a path under usr/), or None when no part does."""
    if not relative.parts:
        return None
    head = relative.parts[0]
    for part in PARTS:
        if head in part.paths:
            return part.name
    return None


def fits_its_place(relative: PurePosixPath) -> bool:
    """True when a file at `relative` keeps usr/'s shape: a part's file is that file, a
    part's folder holds files (never is one). `settings.json/x` restored would make the
    settings a folder, `chats` restored as a file would leave nowhere for the chats."""
    if not relative.parts:
        return False
    return (len(relative.parts) == 1) == (relative.parts[0] in FILE_PATHS)


def is_secret_file(relative: PurePosixPath) -> bool:
    """A file of someone's holding secrets: a project's secrets file
    (`[users/<name>/]projects/<project>/secrets.json`, profiles/projects.py) or a person's
    own settings (`users/<name>/my_settings.json`, accounts/personal.py: keys, secrets)."""
    parts = relative.parts
    if len(parts) >= 2 and parts[0] == USERS_DIR:  # in a person's space: as usr/'s shape
        if len(parts) == 3 and parts[2] == personal.FILE:
            return True
        parts = parts[2:]
    return len(parts) >= 3 and parts[0] == "projects" and parts[-1] in PROJECT_SECRET_FILES
