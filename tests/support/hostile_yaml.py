"""YAML written to hurt a reader: aliases that stand for billions of values, deep nesting,
numbers and dates Python refuses late. The tests of every place that reads YAML from
outside use these."""

from __future__ import annotations

import io
import zipfile

from tests.support.skill_files import skill_md

#: Levels and width of the alias bomb: 9 levels of 9 aliases stand for 9**9 (387 million)
#: values, each printed by str() (the attack seen: a 260-byte zip, 4 GB in a minute).
LEVELS = 9
WIDTH = 9


def alias_bomb(indent: str = "  ") -> str:
    """YAML lines (a mapping, each line indented by `indent`) of nested aliases."""
    names = "abcdefghijklmnopqrstuvwxyz"[:LEVELS]
    lines = [f"{indent}{names[0]}: &{names[0]} [{','.join('l' * WIDTH)}]"]
    for lower, name in zip(names, names[1:], strict=False):
        lines.append(f"{indent}{name}: &{name} [{','.join([f'*{lower}'] * WIDTH)}]")
    return "\n".join(lines) + "\n"


def bomb_skill_md(name: str = "laughs") -> str:
    """A SKILL.md whose front matter's metadata holds the alias bomb."""
    return skill_md(name, "Laughs.", extra="metadata:\n" + alias_bomb())


def bomb_zip(name: str = "laughs") -> bytes:
    """The hostile skill zip: one folder whose SKILL.md holds the alias bomb (a few hundred
    bytes once packed)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr(f"{name}/SKILL.md", bomb_skill_md(name))
    return buffer.getvalue()


def deep_list(depth: int = 100_000) -> str:
    """A flow list nested `depth` deep: `[[[...]]]`."""
    return "[" * depth + "]" * depth
