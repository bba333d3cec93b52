"""Agent profiles: where a profile's prompt and tool folders are.

A profile is a folder named after it (`agents/<name>/`, overridden by
`usr/agents/<name>/`). Its `prompts/` and `tools/` override single files of
the shared `prompts/` and `tools/` by name, so a profile changes only what it
must. Folders are looked up on every call: a profile dropped into
`usr/agents/` is there without a restart.
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers.errors import UserError
from helpers.files import base_path, usr_path

_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_profile_name(name: str) -> str:
    """A profile name is a plain folder name; anything path-like is refused."""
    if not _PROFILE_NAME.match(name) or ".." in name:
        raise UserError(f"invalid agent profile name {name!r}: use letters, digits, '-', '_', '.'")
    return name


def profile_roots(profile: str) -> list[Path]:
    """A profile's own folders, most specific first (user's before shipped)."""
    if not profile:
        return []
    check_profile_name(profile)
    return [usr_path("agents", profile), base_path("agents", profile)]


def layered_folders(profile: str, kind: str) -> list[Path]:
    """`prompts` or `tools` folders for `profile`, first wins, ending with the shared one."""
    return [root / kind for root in profile_roots(profile)] + [base_path(kind)]
