"""The audit file: whole lines from many threads at once, a damaged line skipped."""

from __future__ import annotations

import threading

from server.security import audit


def test_lines_written_by_many_threads_at_once_stay_whole(usr_dir):
    def write(n: int) -> None:
        for k in range(50):
            audit.record("login", f"user{n}", "127.0.0.1", attempt=k, note="x" * 500)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = audit.entries(limit=1_000)
    assert len(entries) == 400
    assert {e.actor for e in entries} == {f"user{n}" for n in range(8)}


def test_a_damaged_line_is_skipped_and_the_rest_read(usr_dir):
    audit.record("login", "ada", "127.0.0.1")
    with (usr_dir / "audit.log").open("ab") as file:
        file.write(b'{"half a line\n\xff not json either\n')
    audit.record("logout", "ada", "127.0.0.1")
    assert [e.event for e in audit.entries()] == ["logout", "login"]


def test_the_newest_come_first_and_a_limit_holds(usr_dir):
    for k in range(5):
        audit.record("login", f"u{k}", "127.0.0.1")
    assert [e.actor for e in audit.entries(limit=2)] == ["u4", "u3"]
