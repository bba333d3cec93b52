"""The cluster tests' Redis (tests/support/redis_server.py): a real redis-server that keeps
nothing on disk, stopped and started again on the same address mid-test."""

from __future__ import annotations

import pytest
import redis

from tests.support.redis_server import RedisServer


def test_it_answers_keeps_nothing_and_comes_back_on_the_same_port(redis_server, tmp_path):
    folder = tmp_path / "redis"
    own = RedisServer(folder).start()  # its own: the session's is shared with other tests
    try:
        client = own.client()
        client.set("kept?", "no")
        port = own.port
        own.stop()
        assert not own.running()
        with pytest.raises(redis.ConnectionError):
            client.ping()
        own.start()
        assert own.port == port and own.ping()
        assert client.get("kept?") is None  # --save '' and no append-only file
        assert [p.name for p in folder.iterdir()] == ["redis.log"]
    finally:
        own.close()
    assert redis_server.ping() and redis_server.url.startswith("redis://127.0.0.1:")
