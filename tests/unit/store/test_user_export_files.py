"""A person's export takes their memory databases whole, never a database's side files:
SQLite's rollback journal lives only while an area is being made or written (a member's
first recall makes their area, so it can be there while they export), and a file gone
between the listing and the zip was a 500."""

from __future__ import annotations

import io
import zipfile

from helpers.settings import load_settings
from initialize import ChatFactory
from memory import memories
from store.chats import ChatManager
from store.user_export import export_user


def test_an_export_takes_the_database_and_leaves_its_journal(usr_dir, runtime):
    space = usr_dir / "users" / "ann"
    memories.open_area(load_settings(), space).save("Ann's note")
    # As SQLite leaves it while another connection makes or writes the area.
    (space / "memory" / "default" / "memory.db-journal").write_bytes(b"\0" * 512)
    chats = ChatManager(runtime, ChatFactory(runtime))
    with export_user(chats, "ann", space) as archive:
        names = set(zipfile.ZipFile(io.BytesIO(archive.read())).namelist())
    assert "files/memory/default/memory.db" in names
    assert "files/memory/default/memory.db-journal" not in names
