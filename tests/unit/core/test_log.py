"""The typed log: versions, deltas, subscribers, round trip."""

from __future__ import annotations

import threading

import pytest
from pydantic import ValidationError

from core.log import LOG_KINDS, Log


def test_every_change_bumps_the_version_and_stamps_the_item():
    log = Log()
    first = log.log("user", "User message", "hi")
    second = log.log("agent", "A0: Thinking")
    assert (first.no, second.no) == (0, 1)
    assert (first.version, second.version, log.version) == (1, 2, 2)
    second.stream(content="abc")
    second.stream(content="def")
    assert second.content == "abcdef" and second.version == 4


def test_changes_since_returns_each_change_once():
    log = Log()
    a = log.log("user", content="a")
    b = log.log("agent")
    seen = log.version
    b.update(heading="A0: new")
    log.log("response", content="r")
    changed = log.changes_since(seen)
    assert [item.no for item in changed] == [1, 2]
    assert changed[0].heading == "A0: new"
    assert log.changes_since(log.version) == []
    assert a.version <= seen


def test_update_merges_kvps():
    log = Log()
    item = log.log("tool", kvps={"a": 1})
    item.update(kvps={"b": 2})
    assert item.kvps == {"a": 1, "b": 2}


def test_subscribers_hear_every_change_until_they_leave():
    log = Log()
    heard: list[tuple[int, int]] = []
    leave = log.subscribe(lambda item: heard.append((item.no, item.version)))
    item = log.log("info", "x")
    item.update(content="y")
    leave()
    item.update(content="z")
    assert heard == [(0, 1), (0, 2)]


def test_unknown_kind_is_refused():
    with pytest.raises(ValidationError):
        Log().log("shout")  # type: ignore[arg-type]


def test_round_trip_keeps_ids_and_versions():
    log = Log()
    log.log("user", "h", "c", kvps={"k": [1, 2]}, agentno=1).stream(content="!")
    again = Log.from_list(log.to_list())
    assert again.to_list() == log.to_list()
    assert again.version == log.version
    again.items[0].update(content="new")  # restored items still notify and version
    assert again.version == log.version + 1


def test_concurrent_writers_lose_nothing():
    log = Log()

    def write(n: int) -> None:
        for i in range(200):
            log.log("info", f"{n}-{i}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(log.items) == 800
    assert sorted(i.no for i in log.items) == list(range(800))
    assert len({i.version for i in log.items}) == 800


def test_kinds_are_the_documented_list():
    assert set(LOG_KINDS) == {
        "user", "agent", "response", "tool", "subagent", "code_exe", "util",
        "warning", "error", "info", "hint", "progress", "input", "notify", "mcp_tool",
        "browser",
    }  # fmt: skip


def test_to_list_follows_every_change_though_unchanged_items_are_dumped_once():
    log = Log()
    first, second = log.log("user", "one", "a"), log.log("agent", "two", "b")
    listed = log.to_list()
    assert log.to_list()[0] is listed[0]  # unchanged: the same dict, not dumped again
    second.stream(content=" more")
    again = log.to_list()
    assert again[0] is listed[0] and again[1]["content"] == "b more"
    assert again == [item.model_dump() for item in log.items]
    del log.items[1:]  # cut back, as an edited message does, then logged again
    third = log.log("info", "three", "c")
    assert third.no == 1 and log.to_list()[1]["content"] == "c"
    log.reset()
    assert log.to_list() == []
    assert first.version < second.version < third.version
