"""The names of folders Cadre finds things by: projects, agent profiles, skills.

One rule wherever such a name comes in (a route, a setting, a file): a plain
folder name of letters, digits, '-', '_' and '.', starting with a letter or a
digit, at most 64 characters, never '..'; anything path-like is refused, so a
name can never lead out of the folder it is looked up in.
"""

from __future__ import annotations

import re

from helpers.errors import UserError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: What a name may be, in words (the end of every refusal).
RULE = "use letters, digits, '-', '_', '.' (at most 64, starting with a letter or digit)"


def is_plain_name(name: str) -> bool:
    return bool(_NAME.fullmatch(name)) and ".." not in name


def check_name(name: str, what: str) -> str:
    """`name` when it is a plain folder name; UserError naming `what` otherwise."""
    if not is_plain_name(name):
        raise UserError(f"invalid {what} name {name[:100]!r}: {RULE}")
    return name
