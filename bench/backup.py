"""Backups: how long a backup and a restore of a lived-in usr/ take.

A usr/ with many chats (each a chat.json of about 60 kB and a few saved
results) and a memory area of a thousand memories: the backup (the zip
written, the memory database copied through SQLite) and the restore (the
whole zip checked, unpacked beside usr/, checked again, swapped in).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from bench.harness import Row, stopwatch
from helpers.files import usr_path
from memory.store import MemoryStore
from store.backup.check import Limits
from store.backup.make import make_backup
from store.backup.parts import default_parts
from store.backup.restore import restore_backup

#: Chats in the benchmark's usr/ (a busy user's year).
MANY = 500


def _lived_in(chats: int) -> None:
    line = "A line of the conversation. " * 20
    history = [{"ai": n % 2 == 1, "content": line} for n in range(100)]
    for number in range(chats):
        folder = usr_path("chats", f"chat-{number:04d}")
        (folder / "messages").mkdir(parents=True, exist_ok=True)
        (folder / "chat.json").write_text(json.dumps({"id": folder.name, "history": history}))
        for result in range(3):
            (folder / "messages" / f"{result}.txt").write_text("A long tool result.\n" * 200)
    store = MemoryStore(usr_path("memory", "default", "memory.db"))
    store.save_many([f"Memory number {n}: something the user said once." for n in range(1000)])


def run(quick: bool) -> list[Row]:
    chats = 50 if quick else MANY
    _lived_in(chats)
    with tempfile.TemporaryDirectory(prefix="cadre-bench-backup-") as scratch:
        target = Path(scratch) / "backup.zip"
        with stopwatch() as backup:
            made = make_backup(target, default_parts())
        with stopwatch() as restore:
            restore_backup(target, None, Limits(max_bytes=2**34, max_files=10**6))
        megabytes = made.bytes / 2**20
    return [
        Row(f"backup: {chats} chats and 1,000 memories ({megabytes:.0f} MB) into a zip",
            backup[0], "s", note="noisy: shared CPU; one run"),
        Row("backup: restoring it (checked, unpacked beside usr/, swapped in)",
            restore[0], "s", note="noisy: shared CPU; one run"),
    ]  # fmt: skip
