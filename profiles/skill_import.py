"""Putting skills into a skills folder from a zip or an uploaded folder, and taking them out.

The folder is the shared `usr/skills/` (the admin's, for everyone) by default, or a
person's own `<space>/skills/` (server/routes/skills.py picks it by who asks).

What comes in is untrusted: every entry's path is checked (no `..`, no
absolute path or drive letter, no backslash, no control characters: see
helpers/confine.py), links and special files are refused, and sizes are
bounded as the bytes arrive, not as the archive claims (a zip bomb lies about
them). Each `SKILL.md` found marks a skill: its folder and everything under
it are that skill; a SKILL.md at the top of the archive makes the archive one
skill, named by its front matter. Every skill's SKILL.md must be usable.

Nothing is half-written: everything is unpacked into a hidden folder next to
the destination, checked, and only then moved into place, each skill by one
rename. A name already in the folder is refused unless `replace` is asked.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from helpers.confine import PathRefused, check_name
from helpers.errors import NotFound, UserError
from helpers.files import usr_path
from profiles.skill_format import SKILL_FILE, SkillFormatError, parse_skill
from profiles.skills import check_skill_name, read_skill_file

log = logging.getLogger(__name__)

#: Limits of one import (a skill is instructions and a few helper files).
MAX_FILES = 500
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_TOTAL_BYTES = 50 * 1024 * 1024
#: Largest uncompressed/compressed ratio of a zip entry worth more than a few KB.
MAX_RATIO = 200
_CHUNK = 64 * 1024


class ImportRefused(UserError):
    """Why nothing was imported, in words a person can act on."""


class SkillsTaken(ImportRefused):
    """Skills of these names are installed already (import again with `replace`)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(
            f"already installed: {', '.join(names)}. Delete it first, or import again"
            " choosing to replace it"
        )
        self.names = names


@dataclass(frozen=True)
class Entry:
    """One file to import: its path as given, and how to read its bytes."""

    path: str
    open: Callable[[], BinaryIO]
    #: What the source says of its size (a zip's header: checked, not trusted).
    declared: int = 0


@dataclass
class ImportResult:
    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    #: Entries outside any skill's folder, left out (a README beside the skills...).
    skipped: list[str] = field(default_factory=list)


def user_skills() -> Path:
    """The shared skills folder, usr/skills/ (the admin's, offered to everyone)."""
    return usr_path("skills")


def _clean_path(raw: str) -> PurePosixPath:
    """`raw` as a relative path inside the import, or ImportRefused saying why not."""
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise ImportRefused(f"{raw!r} is an absolute path; an import holds relative paths only")
    try:
        path = check_name(raw)
    except PathRefused as exc:
        raise ImportRefused(f"refused entry: {exc}") from None
    parts = [part for part in path.parts if part not in ("", ".")]
    if not parts:
        raise ImportRefused(f"{raw!r} is not a file name")
    return PurePosixPath(*parts)


def zip_entries(archive: zipfile.ZipFile) -> Iterator[Entry]:
    """The files of `archive`, checked for what a zip alone can hide (links, bombs, locks)."""
    infos = archive.infolist()
    if len(infos) > MAX_FILES * 2:
        raise ImportRefused(f"the zip holds {len(infos)} entries; an import takes {MAX_FILES}")
    for info in infos:
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise ImportRefused(f"{info.filename!r} is a symbolic link; links are not imported")
        if info.is_dir():
            _clean_path(info.filename)
            continue
        if stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: made without file type bits
            raise ImportRefused(f"{info.filename!r} is not a regular file")
        if info.flag_bits & 0x1:
            raise ImportRefused(f"{info.filename!r} is encrypted; import an unencrypted zip")
        if info.file_size > _CHUNK and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ImportRefused(
                f"{info.filename!r} expands {info.file_size // max(info.compress_size, 1)} times"
                " its packed size: refused as a zip bomb"
            )
        yield Entry(info.filename, lambda info=info: archive.open(info), info.file_size)


def _skill_roots(paths: list[PurePosixPath]) -> list[PurePosixPath]:
    """The folders holding a SKILL.md, outermost only (a skill's own files may hold more)."""
    roots = sorted({p.parent for p in paths if p.name == SKILL_FILE}, key=lambda p: len(p.parts))
    kept: list[PurePosixPath] = []
    for root in roots:
        if not any(root.is_relative_to(outer) for outer in kept):
            kept.append(root)
    return kept


def _copy(entry: Entry, target: Path, budget: list[int]) -> None:
    """Copy one entry, counting bytes as they come: a declared size can lie."""
    if entry.declared > MAX_FILE_BYTES:
        raise ImportRefused(f"{entry.path!r} is larger than {MAX_FILE_BYTES // 2**20} MB")
    both = (FileExistsError, NotADirectoryError, IsADirectoryError)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except both:  # a file of the zip has the name of this entry's folder
        raise ImportRefused(
            f"{entry.path.rsplit('/', 1)[0]!r} is both a file and a folder"
        ) from None
    try:
        out = open(target, "xb")  # noqa: SIM115 - closed by the `with` below
    except both:  # a folder of the zip has this file's name
        raise ImportRefused(f"{entry.path!r} is both a file and a folder") from None
    written = 0
    with entry.open() as source, out:
        while chunk := source.read(_CHUNK):
            written += len(chunk)
            budget[0] -= len(chunk)
            if written > MAX_FILE_BYTES:
                raise ImportRefused(f"{entry.path!r} is larger than {MAX_FILE_BYTES // 2**20} MB")
            if budget[0] < 0:
                raise ImportRefused(
                    f"the import unpacks to more than {MAX_TOTAL_BYTES // 2**20} MB; refused"
                )
            out.write(chunk)


def _skill_name(root: PurePosixPath, staged: Path, fallback: str) -> str:
    """A skill's name: its folder's; for a SKILL.md at the top, its front matter's (else
    `fallback`). Its SKILL.md must be usable, read as discovery reads it (its size, UTF-8,
    its front matter within profiles/bounded_load.py's bounds)."""
    where = f"{root}/{SKILL_FILE}" if root.parts else SKILL_FILE
    try:
        head = parse_skill(read_skill_file(staged), root.name)
    except SkillFormatError as exc:
        raise ImportRefused(f"{where}: {exc}") from None
    candidates = [root.name] if root.parts else [head.name, fallback]
    for name in candidates:
        try:
            return check_skill_name(name)
        except UserError:
            continue
    raise ImportRefused(
        f"{where}: {candidates[0]!r} cannot be a folder's name; use letters, digits, '-', '_'"
    )


def import_skills(
    entries: list[Entry], *, replace: bool = False, fallback: str = "",
    destination: Path | None = None,
) -> ImportResult:  # fmt: skip
    """Unpack `entries` as skills into `destination` (None: usr/skills/; see the module's
    docstring).

    `fallback` names a skill whose SKILL.md sits at the top when its front matter's name
    cannot be a folder name (the zip's own name, say).
    """
    paths = [(_clean_path(entry.path), entry) for entry in entries]
    if len(paths) > MAX_FILES:
        raise ImportRefused(f"{len(paths)} files; an import takes at most {MAX_FILES}")
    if len({path for path, _ in paths}) != len(paths):
        raise ImportRefused("the same file name comes twice; nothing was imported")
    roots = _skill_roots([path for path, _ in paths])
    if not roots:
        raise ImportRefused(
            f"no {SKILL_FILE} found: a skill is a folder with a {SKILL_FILE} whose front"
            " matter gives its name and description"
        )
    destination = destination if destination is not None else user_skills()
    destination.mkdir(parents=True, exist_ok=True)
    result = ImportResult()
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=destination))
    try:
        budget = [MAX_TOTAL_BYTES]
        for path, entry in paths:
            root = next((r for r in roots if path.is_relative_to(r)), None)
            if root is None:
                result.skipped.append(str(path))
                continue
            index = roots.index(root)
            _copy(entry, staging / str(index) / path.relative_to(root), budget)
        names = {}
        for index, root in enumerate(roots):
            name = _skill_name(root, staging / str(index), fallback)
            if name in names:
                raise ImportRefused(f"two skills named {name!r} in one import")
            names[name] = staging / str(index)
        taken = sorted(name for name in names if (destination / name).exists())
        if taken and not replace:
            raise SkillsTaken(taken)
        _move_into_place(names, destination, staging, result)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("imported skills %s into %s (replaced %s)", result.imported, destination,
             result.replaced)  # fmt: skip
    return result


def _move_into_place(
    names: dict[str, Path], destination: Path, staging: Path, result: ImportResult
) -> None:
    """Each staged skill into `destination` by one rename; one being replaced goes aside first,
    and is put back if its successor cannot be moved in."""
    for name, staged in sorted(names.items()):
        target = destination / name
        old = staging / f"old-{name}"
        if target.exists() or target.is_symlink():
            os.replace(target, old)
            result.replaced.append(name)
        try:
            os.replace(staged, target)
        except OSError:
            if old.exists():
                os.replace(old, target)
            raise
        result.imported.append(name)


def import_zip(
    source: BinaryIO, *, replace: bool = False, fallback: str = "",
    destination: Path | None = None,
) -> ImportResult:  # fmt: skip
    """Import the skills of the zip `source` (a seekable file) into `destination` (None:
    usr/skills/)."""
    try:
        with zipfile.ZipFile(source) as archive:
            entries = list(zip_entries(archive))
            return import_skills(entries, replace=replace, fallback=fallback,
                                 destination=destination)  # fmt: skip
    except zipfile.BadZipFile as exc:
        raise ImportRefused(f"not a readable zip file ({exc})") from None


def delete_user_skill(name: str, folder: Path | None = None) -> None:
    """Remove `<folder>/<name>` (None: usr/skills/; a shipped, profile's or project's skill
    is never touched)."""
    check_skill_name(name)
    folder = folder if folder is not None else user_skills()
    target = folder / name
    if target.is_symlink():
        target.unlink()  # the link, never what it points to
        return
    if not target.is_dir():
        raise NotFound(f"no skill {name!r} in {folder}")
    # Moved aside by one rename first: a failure halfway leaves no half-deleted skill in use.
    aside = Path(tempfile.mkdtemp(prefix=".deleting-", dir=folder))
    os.replace(target, aside / name)
    shutil.rmtree(aside, ignore_errors=True)
    log.info("deleted skill %s from %s", name, folder)


#: The checks of one entry's path and the bounded copy, shared with plugins' installs
#: (profiles/plugin_install.py): what comes in is checked the same way.
clean_path = _clean_path
copy_entry = _copy
