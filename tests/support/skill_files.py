"""Skill folders and zips written by the tests, in the open SKILL.md format."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def skill_md(name: str, description: str, body: str = "Do it well.", extra: str = "") -> str:
    """A SKILL.md: front matter with `name`, `description` (and `extra` lines), then `body`."""
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}\n"


def make_skill(
    folder: Path, name: str, description: str = "", *, body: str = "Do it well.",
    files: dict[str, str] | None = None, text: str | None = None,
) -> Path:  # fmt: skip
    """A skill folder `folder/name` with its SKILL.md (`text` replaces the generated one)."""
    root = folder / name
    root.mkdir(parents=True, exist_ok=True)
    content = text if text is not None else skill_md(name, description or f"{name} skill", body)
    (root / "SKILL.md").write_text(content, encoding="utf-8")
    for path, data in (files or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(data, encoding="utf-8")
    return root


def zip_bytes(entries: dict[str, bytes | str]) -> bytes:
    """A zip holding `entries` (name as written into the archive → content)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()
