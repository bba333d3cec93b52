"""Memory's SQLite files used by several nodes at once (memory/sharing.py), with a real
redis-server and real processes: each use of a database is held under the nodes' shared
lock, and the database keeps a rollback journal (no WAL index in shared memory, which
does not reach across machines).

Two processes, each a node's stand-in, save memories into one area at the same time:
every memory is there after, the export log has every event once, and no `-wal` file is
left. A process alone still uses WAL.
"""

from __future__ import annotations

import json
import select
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from memory import sharing
from memory.store import MemoryStore
from tests.support.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
#: A node's stand-in: the shared lock of cluster/claims.py over the real Redis, then
#: SAVES memories into the area, one at a time (each its own use of the database).
NODE = textwrap.dedent("""
    import sys
    import redis
    from cluster.claims import Claims
    from cluster.config import ClusterConfig
    from memory import sharing
    from memory.store import MemoryStore

    url, name, path, saves = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    config = ClusterConfig(url, name)
    claims = Claims(redis.Redis.from_url(url, decode_responses=True), config)
    sharing.share_between_nodes(lambda lock: claims.shared_lock(lock, 30.0))
    store = MemoryStore(__import__("pathlib").Path(path))
    sys.stdout.write("ready\\n")
    sys.stdout.flush()
    sys.stdin.readline()  # both start saving together
    for i in range(saves):
        store.save(f"{name} remembers fact {i}")
""")
SAVES = 40


def _node(redis_server: RedisServer, name: str, path: Path, env: dict[str, str]
          ) -> subprocess.Popen[str]:  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-c", NODE, redis_server.url, name, str(path), str(SAVES)],
        cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_two_nodes_saving_into_one_area_at_once_keep_every_memory(tmp_path, redis_server):
    usr = tmp_path / "usr"
    path = usr / "memory" / "default" / "memory.db"
    env = {"CADRE_USR_DIR": str(usr), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    nodes = [_node(redis_server, name, path, env) for name in ("node-a", "node-b")]
    try:
        for node in nodes:
            assert node.stdout is not None and node.stdout.readline().strip() == "ready"
        for node in nodes:
            assert node.stdin is not None
            node.stdin.write("go\n")
            node.stdin.flush()
        for node in nodes:
            assert node.wait(120) == 0
    finally:
        for node in nodes:
            node.kill() if node.poll() is None else None
    with sqlite3.connect(path) as db:
        texts = [row[0] for row in db.execute("SELECT text FROM memories")]
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    expected = {f"{name} remembers fact {i}" for name in ("node-a", "node-b") for i in range(SAVES)}
    assert sorted(texts) == sorted(expected)  # every one, once
    assert mode == "delete"
    assert not Path(f"{path}-wal").exists()
    events = [json.loads(line) for line in path.with_name("export.jsonl").read_text().splitlines()]
    assert sorted(e["text"] for e in events) == sorted(expected)
    # The lock was the nodes' own, by the area's place under usr/ (the same on every node).
    assert sharing.lock_name(path).startswith("memory:") and str(usr) not in sharing.lock_name(path)


def test_a_node_waits_while_another_holds_the_area(tmp_path, redis_server, monkeypatch):
    """The lock is real: while this process holds the area's lock (as a node would, mid
    use), another node's save waits, and goes through once it is let go."""
    import redis

    from cluster.claims import Claims
    from cluster.config import ClusterConfig

    usr = tmp_path / "usr"
    monkeypatch.setenv("CADRE_USR_DIR", str(usr))
    path = usr / "memory" / "default" / "memory.db"
    claims = Claims(redis.Redis.from_url(redis_server.url, decode_responses=True),
                    ClusterConfig(redis_server.url, "holder"))  # fmt: skip
    env = {"CADRE_USR_DIR": str(usr), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    with claims.shared_lock(sharing.lock_name(path), 30.0):
        node = _node(redis_server, "waiter", path, env)
        try:
            assert node.stdout is not None and node.stdin is not None
            # Opening the store is a use of it: it waits for the lock, and says nothing.
            assert select.select([node.stdout], [], [], 1.5)[0] == []
            assert node.poll() is None and not path.exists()
        except BaseException:
            node.kill()
            raise
    assert node.stdout.readline().strip() == "ready"
    node.stdin.write("go\n")
    node.stdin.flush()
    assert node.wait(60) == 0
    assert _count(path) == SAVES


def _count(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM memories").fetchone()[0])


def test_a_process_alone_keeps_wal_and_takes_no_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("CADRE_USR_DIR", str(tmp_path / "usr"))
    assert not sharing.shared()
    store = MemoryStore(tmp_path / "usr" / "memory" / "default" / "memory.db")
    store.save("alone")
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
