"""One person's own things in one zip file: what they take with them, or keep aside.

`chats/<id>.json` is each of their chats as the chat export makes it (importable one by
one on any Cadre, through Import); `files/` holds their memory, knowledge, projects and
their own agent profiles and skills from their space (accounts/spaces.py), as they lie on
disk. Left out, as in a backup: their work folder (often big, and the file panel
downloads it file by file) and the projects' `secrets.json` (secrets leave only when
asked for, from an admin's backup).
The zip is written to a temporary file, so a big export never sits in memory.
"""

from __future__ import annotations

import json
import logging
import tempfile
import zipfile
from pathlib import Path
from typing import IO

from helpers.errors import NotFound
from profiles.projects import SECRETS_FILE
from store.backup.make import copy_database
from store.chats import ChatManager

log = logging.getLogger(__name__)

#: The folders of a space an export takes.
PERSONAL = ("memory", "knowledge", "projects", "agents", "skills")


def export_user(chats: ChatManager, owner: str | None, space: Path) -> IO[bytes]:
    """A zip of `owner`'s chats and personal folders (in `space`), rewound to its start."""
    archive = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, who closes it
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        chat_ids = chats.ids_of(owner)
        for chat_id in chat_ids:
            try:
                document = chats.export(chat_id, owner)
            except NotFound:
                continue  # deleted meanwhile
            zipped.writestr(f"chats/{chat_id}.json", json.dumps(document, ensure_ascii=False))
        with tempfile.TemporaryDirectory() as copies:
            for path in _personal_files(space):
                name = f"files/{path.relative_to(space).as_posix()}"
                try:
                    if path.suffix == ".db":  # a consistent copy of a database in use
                        zipped.write(copy_database(path, Path(copies)), name)
                    else:
                        zipped.write(path, name)
                except FileNotFoundError:  # removed since it was listed: not theirs any more
                    log.info("export of %s: %s went meanwhile", owner or "the one user", path)
    log.info("exported %d chat(s) and the folders of %s", len(chat_ids), owner or "the one user")
    archive.seek(0)
    return archive


def _personal_files(space: Path) -> list[Path]:
    """The files of `space`'s personal folders an export takes (no links, no secrets, no
    side files of a database, its rollback journal included, no write in progress)."""
    found = []
    for folder in PERSONAL:
        root = space / folder
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            name = path.name
            if (not path.is_file() or path.is_symlink() or name == SECRETS_FILE
                    or name.endswith(("-wal", "-shm", "-journal", ".tmp"))):  # fmt: skip
                continue
            found.append(path)
    return found
