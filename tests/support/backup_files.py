"""A lived-in `usr/` for the backup tests, and ways to compare one with another."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from memory.store import MemoryStore

#: The settings of the lived-in usr/, secrets included.
SECRET_SETTINGS = {
    "chat_model": "openai/gpt-4.1-mini",
    "chat_api_key": "sk-chat-secret-1234",
    "api_key": "external-key-5678",
    "auth_login": "ada",
    "auth_password": "pbkdf2$hash-of-a-password",
    "secrets": {"GITHUB_TOKEN": "ghp-secret-token"},
    "mcp_servers": json.dumps(
        {"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GH_TOKEN": "mcp-token-9999"}}}}
    ),
}


def lived_in(usr: Path) -> None:
    """Every part of usr/ with something in it (and what no backup takes)."""
    files = {
        "settings.json": json.dumps(SECRET_SETTINGS, indent=2),
        "chats/c1/chat.json": json.dumps({"id": "c1", "name": "First"}),
        "chats/c1/messages/1.txt": "a long tool result",
        "chats/c2/chat.json": json.dumps({"id": "c2", "name": "Second"}),
        "openai_conversations.json": "{}",
        "a2a/contexts.json": json.dumps({"version": 1, "contexts": {}}),
        "a2a/tasks/0a1b/2c3d.json": "{}",
        "telegram/chats.json": json.dumps({"version": 1, "chats": {}}),
        "agents/writer/agent.yaml": "title: Writer\n",
        "agents/writer/prompts/agent.system.role.md": "You write.\n",
        "skills/tidy/SKILL.md": "---\nname: tidy\ndescription: Tidies.\n---\nTidy up.\n",
        "projects/p1/settings.json": "{}",
        "projects/p1/secrets.json": '{"P1_TOKEN": "project-secret"}\n',
        "projects/p1/work/notes.txt": "project work",
        "knowledge/guide.md": "# Guide\n\nRead me.\n",
        "scheduler/tasks.json": json.dumps({"version": 1, "tasks": []}),
        "workdir/scratch.txt": "not backed up",
        "sessions.json": "{}",
    }
    for name, text in files.items():
        path = usr / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (usr / "secret_key").write_bytes(os.urandom(32))
    (usr / "binary.bin").write_bytes(bytes(range(256)))  # of no part: stays out
    MemoryStore(usr / "memory" / "default" / "memory.db").save("Ada likes tea", tags=["t"])


def tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every regular file under `root` with its bytes (memory databases by content); the
    restores' lock file (empty, left in place) is not usr/'s content."""
    found = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if (
            not path.is_file()
            or name.startswith((*skip, ".restore.lock"))
            or name.endswith(("-wal", "-shm"))
        ):
            continue
        found[name] = _database(path) if path.suffix == ".db" else path.read_bytes()
    return found


def _database(path: Path) -> bytes:
    db = sqlite3.connect(path)
    try:
        return "\n".join(db.iterdump()).encode()
    finally:
        db.close()
