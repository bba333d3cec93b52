"""What one sandboxed session may take: processes, scratch space, time left running; and who
its commands run as (issue 32). Real processes, real bubblewrap, through the loop."""

from __future__ import annotations

import os
import secrets
import threading
import time

from core.agent_types import UserMessage
from tests.integration.test_code_execution import FAST, body, code, run
from tests.integration.test_sandbox import SANDBOX, host_processes, needs_bwrap
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply

FORK_LOOP = """
import os, time
children = 0
try:
    while children < 2000:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        children += 1
except OSError as exc:
    print("stopped at", children, type(exc).__name__)
"""


@needs_bwrap
def test_a_fork_loop_stops_at_the_process_limit_and_other_chats_go_on(make_context, llm):
    llm.script(Reply(code("python", FORK_LOOP)), Reply(answer("done")))
    looping = make_context(code_exec_max_processes=40, **FAST, **SANDBOX)
    looping.communicate(UserMessage("fork")).result(60)
    words = body(llm.chat_requests()[1].messages[-1]["content"]).split()
    # The loop's children are still there (sleeping): the limit held them at 40 in all.
    assert words[:2] == ["stopped", "at"] and int(words[2]) < 40 and words[3] == "BlockingIOError"
    # Meanwhile another chat works as usual.
    llm.script(Reply(answer("still here")))
    other = make_context(**FAST)
    assert other.communicate(UserMessage("hello?")).result(30) == "still here"


@needs_bwrap
def test_a_chat_runs_a_bounded_number_of_sessions_at_once(make_context, llm, monkeypatch):
    """Each session brings its own process limit, scratch space and memory: an agent opening
    session after session (64 of 512 processes take every pid of a machine whose pid_max is
    32,768) would multiply them without end. Past the chat's most, a new one is refused
    until one is reset."""
    from execution import code_sessions

    monkeypatch.setattr(code_sessions, "MOST_SESSIONS", 2)
    _, seen = run(
        make_context, llm,
        code("terminal", "echo zero"), code("python", "print('one')", session=1),
        code("terminal", "echo two", session=2),
        code("reset", session=1), code("terminal", "echo two", session=2),
        **SANDBOX,
    )  # fmt: skip
    assert list(map(body, seen[:2])) == ["zero", "one"]
    assert "already runs 2 code sessions" in seen[2] and "two" not in seen[2]
    assert "terminal session 0, python session 1" in seen[2]  # what it could reset
    assert body(seen[4]) == "two"


@needs_bwrap
def test_writing_past_the_scratch_space_stops_the_session(make_context, llm, usr_dir):
    context, seen = run(
        make_context, llm,
        code("terminal", "dd if=/dev/zero of=/tmp/big bs=1M count=2048 2>&1 | tail -1"),
        code("terminal", "ls /tmp/big 2>&1 | tail -c 26"),
        code_exec_scratch_mb=64, **SANDBOX,
    )  # fmt: skip
    stopped, after = map(body, seen)
    assert "2147483648 bytes" not in stopped  # the 2 GB never got written
    assert "Cadre stopped session 0: its scratch space (/tmp, /var/tmp, /dev/shm and its home)" \
        " held more than 64 MB (setting code_exec_scratch_mb)" in stopped  # fmt: skip
    assert after == "No such file or directory"  # a new session, with a new /tmp

    # Given back (in a worker thread): only the new session's, nearly empty, is left.
    def sizes() -> list[int]:
        return [sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
                for d in (usr_dir / "scratch").iterdir()]  # fmt: skip

    wait_for(lambda: len(sizes()) == 1, timeout=10, what="the stopped session's space to go")
    assert sizes()[0] < 1024 * 1024


@needs_bwrap
def test_dev_and_its_shared_memory_are_no_way_round_the_scratch_limit(make_context, llm):
    """bubblewrap's /dev and /dev/shm are folders in memory (half of it, each): 400 MB
    written there raised the host's shared memory by as much, counted by nobody, and
    memory a killed process cannot give back. /dev is read-only now, and /dev/shm part of
    the scratch space on disk, counted with it."""
    wait = "for i in 1 2 3 4 5 6; do sleep 0.4; echo waiting; done; echo still running"
    _, seen = run(
        make_context, llm,
        code("terminal", "{ echo x > /dev/note; } 2>&1 | tail -c 22;"
                         f" dd if=/dev/zero of=/dev/shm/big bs=1M count=100 2>/dev/null; {wait}"),
        code_exec_scratch_mb=64, **SANDBOX,
    )  # fmt: skip
    said = body(seen[0])
    assert said.splitlines()[0] == "Read-only file system"
    assert "Cadre stopped session 0: its scratch space" in said and "still running" not in said


MANY_FILES = """
import os
os.makedirs("/tmp/many")
for n in range(100_000):
    open(f"/tmp/many/{n}", "w").close()
open("counting", "w").close()
"""


@needs_bwrap
def test_counting_a_scratch_space_of_many_files_takes_a_small_share_of_cadre(
    make_context, llm, usr_dir
):
    """Each count looks at every file: with 190,000 small files (under the limit of entries)
    the counts, twice a second, kept Cadre at 60 % of a core for as long as they stayed.
    The pause between two counts grows with the time a count takes."""
    spent: list[float] = []

    def measure() -> None:
        wait_for((usr_dir / "workdir" / "counting").exists, timeout=60, what="the files")
        before, began = os.times(), time.monotonic()
        time.sleep(3)
        after = os.times()
        busy = after.user + after.system - before.user - before.system
        spent.append(busy / (time.monotonic() - began))

    measurer = threading.Thread(target=measure)
    measurer.start()
    slow = {"code_exec_first_output_timeout": 60.0, "code_exec_max_timeout": 60.0}
    try:
        run(make_context, llm, code("python", f"{MANY_FILES}\nimport time; time.sleep(4)"),
            **slow, **SANDBOX)  # fmt: skip
    finally:
        measurer.join()
    assert spent[0] < 0.2  # of one core


@needs_bwrap
def test_a_command_left_running_is_interrupted_then_gone(make_context, llm):
    token = secrets.token_hex(4)
    llm.script(Reply(code("terminal", f"yes {token} > /dev/null")), Reply(answer("done")))
    context = make_context(
        **{**FAST, "code_exec_first_output_timeout": 1.0, "code_exec_stop_after": 1.0}, **SANDBOX
    )
    context.communicate(UserMessage("go")).result(60)
    seen = body(llm.chat_requests()[1].messages[-1]["content"])
    assert "interrupted 1 s from now" in seen
    assert host_processes(f"yes {token}")  # the agent stopped waiting: it still runs...
    wait_for(lambda: not host_processes(f"yes {token}"), timeout=15, what="yes to be stopped")
    session = context.code_sessions.last(0, 0)
    assert session is not None and session.alive  # ...then only the command went, not the shell


@needs_bwrap
def test_a_flood_nobody_reads_waits_for_its_reader(make_context, llm):
    """`yes` printing to the terminal while no call waits: Cadre stops reading (the program
    then waits on its full terminal), so it costs Cadre next to nothing meanwhile."""
    llm.script(Reply(code("terminal", "yes")), Reply(answer("done")))
    context = make_context(**{**FAST, "code_exec_max_timeout": 1.0}, **SANDBOX)
    context.communicate(UserMessage("go")).result(60)
    session = context.code_sessions.last(0, 0)
    assert session is not None
    wait_for(lambda: not session.reading, timeout=10, what="Cadre to stop reading the flood")
    kept = session.unread
    time.sleep(0.5)
    assert session.alive and session.unread == kept  # nothing more read: `yes` waits
    # (bench/sandbox.py measures what it costs: the CPU Cadre spends on such a flood)


@needs_bwrap
def test_commands_run_as_a_user_that_owns_nothing_and_see_no_mark_of_cadres(
    make_context, llm, usr_dir
):
    marks = "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '^CADRE_' || true"
    _, seen = run(
        make_context, llm,
        code("terminal", f"id -u; cat /etc/shadow >/dev/null 2>&1 && echo READ || echo blocked;"
                         f" {marks}; echo made > mine.txt; stat -c %u mine.txt"),
        **SANDBOX,
    )  # fmt: skip
    uid, shadow, found, owner = body(seen[0]).splitlines()
    assert found == "0"  # no CADRE_SESSION, no token: not in any process's environment inside
    if os.geteuid() == 0:  # Cadre as root (a container, CI): commands are not root inside
        assert (uid, shadow) == ("1000", "blocked")
        # What they write in the work folder is root's on disk, as Cadre's own files are.
        assert (usr_dir / "workdir" / "mine.txt").stat().st_uid == 0
    else:
        assert uid == str(os.getuid()) and owner == uid


@needs_bwrap
def test_a_session_that_ends_by_itself_gives_back_its_scratch_space(make_context, llm, usr_dir):
    """A shell that exits ends its session: its scratch space (up to code_exec_scratch_mb on
    disk) goes with it, not when the chat closes. Kept, an agent could leave one full space
    per session number and runtime (300 an agent), none of them counted as running."""
    context, seen = run(
        make_context, llm,
        code("terminal", "head -c 5000000 /dev/zero > /tmp/kept; ls /tmp; exit"),
        **SANDBOX,
    )  # fmt: skip
    assert "kept" in seen[0]
    assert context.code_sessions.last(0, 0) is not None  # the chat still holds the session
    wait_for(lambda: not any((usr_dir / "scratch").iterdir()), timeout=10,
             what="the ended session's scratch space to go")  # fmt: skip
