"""Processes that leave their session (`setsid`, double forks) still end with it.

Each test marks the processes it starts with a unique variable and finds them
through /proc/<pid>/environ, so it never looks at (or kills) anything else.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.agent_types import UserMessage
from execution import cgroup_tree, process_tree
from tests.integration.test_code_execution import FAST, code
from tests.support.agents import answer, wait_for
from tests.support.fake_llm import Reply
from tests.support.marked import kill_marked, marked, new_mark
from tests.support.server_process import ServerProcess, server_env


def escapes(mark: str) -> str:
    """A command starting processes that leave its session: a setsid child, a setsid shell
    with a disowned child, and an orphan of a subshell (at least four processes)."""
    return (
        f"export ESCAPE_MARK={mark}; setsid sleep 1000 & "
        "setsid bash -c 'sleep 1001 & disown; sleep 1002' & "
        "setsid bash -c '(sleep 1003 &) ; exit 0' & "
        "unset ESCAPE_MARK; sleep 0.5; echo started"
    )


@pytest.fixture
def mark() -> Iterator[str]:
    value = new_mark()
    yield value
    kill_marked(value)


def test_setsid_and_double_forked_children_end_with_reset(make_context, llm, mark):
    started = threading.Event()
    llm.script(
        Reply(code("terminal", escapes(mark))),
        Reply(code("reset"), gate=started),
        Reply(answer("done")),
    )
    context = make_context(**FAST)
    handle = context.communicate(UserMessage("start servers"))
    # The command has ended (its result went to the model, which waits for the gate):
    # what still carries the mark is the four long sleeps.
    wait_for(lambda: len(llm.chat_requests()) == 2, timeout=60, what="the command's end")
    pids = marked(mark)
    assert len(pids) >= 4  # five where bash does not exec its last command
    started.set()
    handle.result(60)
    assert "was reset" in llm.chat_requests()[-1].messages[-1]["content"]
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []  # killed and reaped
    assert marked(mark) == []


def test_escapers_of_a_closed_chat_are_gone_even_unseen(make_context, llm, mark):
    """Processes that escaped before any look at the tree: closing still finds them."""
    llm.script(Reply(code("terminal", escapes(mark))), Reply(answer("left running")))
    context = make_context(**FAST)
    context.communicate(UserMessage("start servers")).result(60)
    assert len(marked(mark)) > 3
    context.runtime.call(context.code_sessions.close_all)
    assert marked(mark) == []


def running(mark: str, *argv: str) -> bool:
    """Whether a process of `mark`'s runs the command line `argv`."""
    wanted = b"\0".join(part.encode() for part in argv) + b"\0"
    for pid in marked(mark):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == wanted:
                return True
        except OSError:  # ended meanwhile
            continue
    return False


def start_shell(tree: process_tree.AncestryTree, script: str) -> subprocess.Popen[bytes]:
    """`script` in bash as a session's program, followed by `tree` (as TerminalSession does)."""
    process_tree.become_subreaper()  # as Cadre is once it runs a session
    env = {**tree.env(), "PATH": os.environ["PATH"]}
    shell = subprocess.Popen(tree.wrap(["bash", "-c", script]), env=env,
                             start_new_session=True, stdout=subprocess.DEVNULL)  # fmt: skip
    tree.adopt(shell.pid)
    return shell


def test_the_ancestry_tracker_alone_follows_escapers_over_time(mark):
    """Where cgroups cannot be used, the tree is followed through /proc: the mark finds the
    escapers, and a process that dropped the mark is known from an earlier look."""
    tree = process_tree.AncestryTree()
    unmarked = f"setsid bash -c 'env -i ESCAPE_MARK={mark} sleep 1004 & sleep 1' & "
    shell = start_shell(tree, unmarked + escapes(mark) + "; sleep 1000")
    # Every escaper up, the env -i sleep among them (on a busy machine the others came
    # first, and a look before it started never knew it).
    wait_for(lambda: len(marked(mark)) > 4 and running(mark, "sleep", "1004"),
             what="the escapers")  # fmt: skip
    tree.checkpoint()  # a command's end: the env -i sleep is still below the session
    me = os.getpid()
    # Its parent has ended: it is now an orphan of this process, in a session of its own,
    # with no mark; only the earlier look knows it.
    wait_for(lambda: any(process_tree.start_time(p) and parent(p) == me for p in marked(mark)
                         if b"CADRE_SESSION" not in Path(f"/proc/{p}/environ").read_bytes()),
             what="the unmarked sleep to be orphaned")  # fmt: skip
    process_tree.reap(tree.kill(leader_alive=True))
    shell.wait(5)
    assert marked(mark) == []


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_cgroup_holds_what_nothing_else_could_find(mark):
    """An escaper that drops the mark and leaves before any look is still in the cgroup."""
    tree = cgroup_tree.CgroupTree.create(new_mark())
    if tree is None:
        pytest.skip("cgroup v2 is not writable here")
    script = f"setsid bash -c '(env -i ESCAPE_MARK={mark} sleep 1006 &)'; sleep 1000"
    shell = start_shell(tree, script)
    wait_for(lambda: tree.joined, what="the shell in its cgroup")
    wait_for(lambda: marked(mark), what="the hidden escaper")
    process_tree.reap(tree.kill(leader_alive=True))
    shell.wait(5)
    tree.close()
    assert marked(mark) == [] and not tree.group.exists()


KEY = "escape-key"


def test_a_server_stop_leaves_no_session_process(llm, usr_dir, tmp_path, monkeypatch, mark):
    monkeypatch.setenv("CADRE_API_KEY", KEY)
    llm.script(Reply(code("terminal", escapes(mark))), Reply(answer("left running")))
    server = ServerProcess(server_env(), tmp_path / "server.log").start()
    try:
        request = urllib.request.Request(
            server.url + "/api/v1/message",
            data=json.dumps({"message": "start servers"}).encode(),
            headers={"X-API-Key": KEY, "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            assert json.loads(reply.read())["response"] == "left running"
        assert len(marked(mark)) > 3
    finally:
        server.stop()  # SIGTERM
    wait_for(lambda: marked(mark) == [], timeout=5, what="every session process to end")
