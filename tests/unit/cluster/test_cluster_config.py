"""Cluster mode's switch and a node's name (cluster/config.py): read from the environment,
a wrong value refused in words that say what to write (and never show Redis's password);
a node's record read back tolerantly (cluster/node.py)."""

from __future__ import annotations

import logging
import os
import socket

import pytest

from cluster.config import DEFAULT_TTL, cluster_config
from cluster.node import NodeRecord, node_address
from cluster.redis_node import socketio_channel
from helpers.errors import UserError


def test_without_a_redis_url_cadre_is_one_process_named_by_host_and_pid():
    config = cluster_config({})
    assert not config.enabled and config.redis_port() is None and config.secrets() == []
    assert config.node_id == f"{socket.gethostname()}-{os.getpid()}"
    assert config.ttl == DEFAULT_TTL and config.beat == pytest.approx(DEFAULT_TTL / 3)


def test_a_redis_url_makes_a_node_of_a_cluster():
    config = cluster_config({"CADRE_REDIS_URL": " redis://cache.lan:6380/2 ",
                             "CADRE_NODE_ID": "web-1", "CADRE_NODE_TTL": "4.5"})  # fmt: skip
    assert config.enabled and config.redis_url == "redis://cache.lan:6380/2"
    assert (config.node_id, config.ttl, config.redis_port()) == ("web-1", 4.5, 6380)
    assert config.redis_address() == "redis://cache.lan:6380/2"
    assert cluster_config({"CADRE_REDIS_URL": "rediss://cache.lan"}).redis_port() == 6379


def test_redis_password_is_a_secret_and_never_named():
    config = cluster_config({"CADRE_REDIS_URL": "redis://:s3cret-pw@cache.lan:6379/0"})
    assert config.secrets() == ["redis://:s3cret-pw@cache.lan:6379/0", "s3cret-pw"]
    assert config.redis_address() == "redis://cache.lan:6379/0"


@pytest.mark.parametrize("url", [
    "http://cache.lan:6379", "cache.lan:6379", "redis://", "unix:///run/redis.sock",
    "redis://:s3cret-pw@cache.lan:port/0",
])  # fmt: skip
def test_an_address_that_is_no_redis_url_is_refused_in_words(url):
    with pytest.raises(UserError) as refused:
        cluster_config({"CADRE_REDIS_URL": url})
    assert "is no Redis address: write redis://host:port/db" in str(refused.value)
    assert "s3cret-pw" not in str(refused.value)


@pytest.mark.parametrize("name", ["web 1", "a*b", "-web", "x" * 101])
def test_a_node_name_that_could_not_be_a_key_is_refused(name):
    with pytest.raises(UserError, match="is no node name: use letters, digits"):
        cluster_config({"CADRE_NODE_ID": name})


@pytest.mark.parametrize("ttl", ["0", "abc", "99999", "-3"])
def test_a_heartbeat_life_out_of_range_is_refused(ttl):
    with pytest.raises(UserError, match="give the seconds a node's heartbeat lives, from 1"):
        cluster_config({"CADRE_REDIS_URL": "redis://h:1/0", "CADRE_NODE_TTL": ttl})


def test_each_database_has_its_own_socketio_channel():
    """Redis's publish/subscribe ignores databases: two clusters on one Redis must not hear
    each other's page events."""
    assert socketio_channel("redis://h:6379/0") == socketio_channel("redis://h:6379")
    assert socketio_channel("redis://h:6379/1") != socketio_channel("redis://h:6379/0")


def test_a_node_says_where_it_serves():
    assert node_address("127.0.0.1", 5080) == "127.0.0.1:5080"
    assert node_address("0.0.0.0", 5080) == f"{socket.gethostname()}:5080"
    assert node_address("::1", 5080) == "[::1]:5080"


def test_a_record_round_trips_and_junk_is_skipped_with_a_line_in_the_log(caplog):
    record = NodeRecord("web-1", "10.0.0.5:5080", 1700000000.0, 2, 1700000009.5)
    assert NodeRecord.from_json(record.to_json()) == record
    with caplog.at_level(logging.WARNING):
        assert NodeRecord.from_json('{"node": "web-2"}') is None
        assert NodeRecord.from_json("[1, 2]") is None
        assert NodeRecord.from_json("not json") is None
    assert caplog.text.count("a node's record in Redis is not one Cadre reads") == 3
