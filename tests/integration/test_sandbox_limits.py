"""What one sandboxed session may take: processes, scratch space, time left running; and who
its commands run as (issue 32). Real processes, real bubblewrap, through the loop."""

from __future__ import annotations

import os
import secrets
import time

from agent import UserMessage
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
def test_writing_past_the_scratch_space_stops_the_session(make_context, llm, usr_dir):
    context, seen = run(
        make_context, llm,
        code("terminal", "dd if=/dev/zero of=/tmp/big bs=1M count=2048 2>&1 | tail -1"),
        code("terminal", "ls /tmp/big 2>&1 | tail -c 26"),
        code_exec_scratch_mb=64, **SANDBOX,
    )  # fmt: skip
    stopped, after = map(body, seen)
    assert "2147483648 bytes" not in stopped  # the 2 GB never got written
    assert "Cadre stopped session 0: its scratch space (/tmp, /var/tmp and its home) held more" \
        " than 64 MB (setting code_exec_scratch_mb)" in stopped  # fmt: skip
    assert after == "No such file or directory"  # a new session, with a new /tmp

    # Given back (in a worker thread): only the new session's, nearly empty, is left.
    def sizes() -> list[int]:
        return [sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
                for d in (usr_dir / "scratch").iterdir()]  # fmt: skip

    wait_for(lambda: len(sizes()) == 1, timeout=10, what="the stopped session's space to go")
    assert sizes()[0] < 1024 * 1024


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
