"""code_execution_tool and input through the loop, on real processes in real terminals."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from core import chat_record
from core.agent_types import UserMessage
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is

# Short waits keep the timeout tests quick; nothing here depends on them being exact.
FAST = {
    "code_exec_first_output_timeout": 5.0,
    "code_exec_between_output_timeout": 0.6,
    "code_exec_max_timeout": 20.0,
}


def code(runtime: str, text: str = "", session: int = 0, headline: str = "") -> str:
    return reply(
        "code_execution_tool", headline=headline, runtime=runtime, code=text, session=session
    )


def run(make_context, llm, *replies: str, **settings) -> tuple[object, list[str]]:
    """Agent 0 works through `replies` then answers; each tool result as the model saw it."""
    llm.script(*[Reply(r) for r in replies], Reply(answer("done")))
    context = make_context(**{**FAST, **settings})
    context.communicate(UserMessage("use the computer")).result(60)
    seen = [r.messages[-1]["content"] for r in llm.chat_requests()[1:]]
    return context, seen


def body(result: str) -> str:
    """The tool's own text inside the framework's '[Result of tool ...]' wrapper."""
    if not result.startswith("[Result of tool"):
        return result  # a warning
    return result.split("\n", 1)[1].split("\n\n[Saved in full", 1)[0]


def test_state_is_kept_across_calls(make_context, llm, usr_dir):
    _, seen = run(
        make_context, llm,
        code("terminal", "mkdir -p sub && cd sub && GREETING=hello"),
        code("terminal", 'echo "$GREETING from $(basename $PWD)"; false'),
        code("python", "import math\ncounter = 41"),
        code("python", "counter += 1\ncounter * math.floor(1.5)"),
        code("python", "raise ValueError('boom')"),
    )  # fmt: skip
    made, terminal, imported, python, raised = map(body, seen)
    assert made == "(no output)"
    assert terminal == "hello from sub\n[exit code 1]"
    assert imported == "(no output)" and python == "42"
    assert "ValueError: boom" in raised and "[exit code 1]" in raised
    assert (usr_dir / "workdir" / "sub").is_dir()  # commands run in the work folder


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_nodejs_keeps_state(make_context, llm):
    _, seen = run(make_context, llm, code("nodejs", "let n = 20"), code("nodejs", "n * 2 + 2"))
    assert body(seen[1]) == "42"


def test_a_missing_node_is_said_clearly(make_context, llm):
    _, seen = run(make_context, llm, code("nodejs", "1"), code_exec_node="no-such-node")
    assert "needs Node.js, and 'no-such-node' is not installed" in seen[0]


def test_a_long_command_times_out_and_output_collects_the_rest(make_context, llm):
    _, seen = run(
        make_context, llm,
        code("terminal", "echo started; sleep 2; echo finished"),
        code("terminal", "echo meanwhile"),
        code("output"),
        code("output", headline="Once more"),
    )  # fmt: skip
    first, busy, rest, idle = map(body, seen)
    assert first.startswith("started\n[no new output for 0.6 s: the process is still running")
    assert "still running the previous code" in busy
    assert rest == "finished"
    assert "Nothing is running in session 0" in idle


def test_an_interactive_question_is_answered_with_input(make_context, llm):
    _, seen = run(
        make_context, llm,
        code("terminal", 'read -p "Overwrite the file? [y/N] " yn; echo "answer: $yn"'),
        reply("input", keyboard="y"),
        code("python", "name = input('Your name: ')\nprint('hello', name)"),
        reply("input", keyboard="Ada"),
    )  # fmt: skip
    asked, answered, py_asked, py_answered = map(body, seen)
    assert asked.startswith("Overwrite the file? [y/N]")
    assert "waiting for an answer: reply with the `input` tool" in asked
    assert answered == "answer: y"
    assert py_asked.startswith("Your name:") and py_answered == "hello Ada"


def alive(pid: int) -> bool:
    """True while `pid` exists as a process that is neither dead nor a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def test_reset_leaves_no_process_behind(make_context, llm):
    context, seen = run(
        make_context, llm,
        code("terminal", "sleep 300 & echo bg=$!; (sleep 301; echo never) & echo sub=$!; "
                         "echo shell=$$; sleep 302"),
        code("reset"),
        code("terminal", "echo fresh $GREETING"),
        code_exec_sandbox="none",  # host pids: the tracking of unconfined sessions
    )  # fmt: skip
    started, was_reset, fresh = map(body, seen)
    pids = [int(n) for n in re.findall(r"=(\d+)", started)]
    assert len(pids) == 3 and "still running" in started
    assert "Session 0 was reset: its processes were ended" in was_reset
    assert fresh == "fresh"
    # Killed and reaped: not running, and not left as zombies either.
    assert [(pid, Path(f"/proc/{pid}/stat").read_text()) for pid in pids if exists(pid)] == []
    # make_context ends the sessions on the agents' loop: ended from this thread instead, as
    # this line once did, the loop's own end of the session raced it (EBADF, 1 run in 8).


def test_ten_megabytes_of_output_are_cut_and_saved(make_context, llm, usr_dir):
    context, seen = run(
        make_context, llm,
        code("terminal", "head -c 10000000 /dev/zero | tr '\\0' 'a' | fold -w 99; echo END"),
        code("terminal", "echo next"),
    )  # fmt: skip
    result = seen[0]
    assert len(result) < 25_000 and "characters cut here" in result
    assert body(result).endswith("END")
    saved = re.search(r"saved as (\S+\.txt)", result).group(1)
    assert os.path.getsize(saved) >= 10_000_000
    assert body(seen[1]) == "next"
    item = next(i for i in context.log.items if i.type == "code_exe")
    assert len(item.content) <= 64_000 and item.content.endswith("END")
    saved_chat = context.runtime.call(chat_record.snapshot, context).model_dump_json()
    assert len(saved_chat) < 1_000_000  # the log item and history carry the cut text


def test_binary_and_escape_codes_do_not_break_anything(make_context, llm):
    _, seen = run(
        make_context, llm,
        code("terminal", "head -c 4000 /dev/urandom; echo; printf '\\033[31mred\\033[0m done\\n'"),
        code("terminal", "printf 'progress 10%%\\rprogress 100%%\\n'"),
    )  # fmt: skip
    noise, progress = map(body, seen)
    assert noise.endswith("red done") and "\x1b" not in noise and "\x00" not in noise
    json.dumps(noise)  # plain, encodable text
    assert progress == "progress 100%"


def test_two_sessions_run_side_by_side(make_context, llm):
    _, seen = run(
        make_context, llm,
        code("terminal", "cd /tmp; echo zero-start; sleep 1.5; echo zero-done", session=0),
        code("terminal", "pwd; echo one", session=1),
        code("output", session=0),
        code("terminal", "pwd", session=0),
    )  # fmt: skip
    zero, one, later, where = map(body, seen)
    assert zero.startswith("zero-start") and "still running in session 0" in zero
    assert one.endswith("one") and one.split("\n")[0].endswith("workdir")
    assert later == "zero-done" and where == "/tmp"


def test_a_subordinate_has_its_own_sessions(make_context, llm, usr_dir):
    llm.script(
        Reply(code("terminal", "cd /tmp")),
        Reply(reply("call_subordinate", message="Where are you?", profile="developer", reset=True)),
        Reply(code("terminal", "pwd")),
        Reply(answer("I am in the work folder")),
        Reply(code("terminal", "pwd")),
        Reply(answer("done")),
    )
    context = make_context(**FAST)
    context.communicate(UserMessage("go")).result(60)
    prompts = [r.messages[-1]["content"] for r in llm.chat_requests()]
    assert body(prompts[3]).endswith("workdir")  # A1 starts in the work folder
    assert body(prompts[5]) == "/tmp"  # A0's session kept its cd


def test_deleting_or_resetting_a_chat_ends_its_processes(runtime, llm, usr_dir):
    from initialize import ChatFactory
    from store.chats import ChatManager

    llm.add_rule(model_is("util-model"), Reply("A server"))
    chats = ChatManager(runtime, ChatFactory(runtime))
    pids = []
    for how in (chats.reset, chats.delete):
        llm.script(Reply(code("terminal", "echo pid=$$; sleep 300")), Reply(answer("left running")))
        context = chats.new_chat(**FAST, code_exec_sandbox="none")  # host pids below
        context.communicate(UserMessage("start a server")).result(60)
        started = [r for r in llm.chat_requests() if "pid=" in r.messages[-1]["content"]][-1]
        pid = int(re.search(r"pid=(\d+)", started.messages[-1]["content"]).group(1))
        assert exists(pid)
        how(context.id)
        pids.append(pid)
    assert [pid for pid in pids if exists(pid)] == []


def test_input_only_answers_a_running_program(make_context, llm, usr_dir):
    _, seen = run(
        make_context, llm,
        code("terminal", "echo ready"),
        reply("input", keyboard="touch typed-into-idle-shell"),
        code("python", "x = 1", session=1),
        reply("input", keyboard="print('not code')", session=1, headline="again"),
        code("python", "x + 1", session=1),
    )  # fmt: skip
    assert "Nothing is running in session 0" in seen[1]
    assert not (usr_dir / "workdir" / "typed-into-idle-shell").exists()
    assert "Nothing is running in session 1" in seen[3]
    assert body(seen[4]) == "2"  # the Python session kept its state


def test_a_shell_that_exits_is_replaced_and_run_files_are_removed(make_context, llm, usr_dir):
    context, seen = run(
        make_context, llm,
        code("terminal", "echo bye; exit 3"),
        code("terminal", "echo again"),
    )  # fmt: skip
    assert (
        body(seen[0])
        == "bye\n[The session ended with exit code 3; the next call starts a new one.]"
    )
    assert body(seen[1]) == "again"
    scratch = usr_dir / "chats" / context.id / "code"
    assert [p.name for p in scratch.rglob("run-*")] == []  # code (maybe with secrets) is gone


def test_a_double_forked_process_does_not_escape_reset(make_context, llm):
    context, seen = run(
        make_context, llm,
        code("terminal", "(sleep 1234 & echo inner=$!); (sleep 0.1 &); sleep 0.3; echo started"),
        code("reset"),
        code_exec_sandbox="none",  # a host pid: the tracking of unconfined sessions
    )  # fmt: skip
    pid = int(re.search(r"inner=(\d+)", seen[0]).group(1))
    assert "started" in seen[0]
    assert not exists(pid)


def test_endless_output_is_bounded(make_context, llm):
    _, seen = run(
        make_context, llm,
        code("terminal", "head -c 24000000 /dev/zero | tr '\\0' 'b' | fold -w 100; echo LAST"),
    )  # fmt: skip
    result = seen[0]
    saved = Path(re.search(r"saved as (\S+\.txt)", result).group(1)).read_text()
    assert "characters of output were not kept" in saved  # between the kept head and tail
    assert 15_000_000 < len(saved) < 17_500_000 and body(result).endswith("LAST")


def test_a_stop_while_waiting_for_approval_clears_it(make_context, llm):
    llm.script(Reply(code("terminal", "echo hi")))
    context = make_context(code_exec_confirm=True)
    handle = context.communicate(UserMessage("run"))
    item = wait_for(lambda: next((i for i in context.log.items if i.kvps.get("approval")), None))
    assert item.kvps["approval"] == "pending"
    context.stop()
    with pytest.raises(Exception):  # noqa: B017 - the stopped run's own error
        handle.result(10)
    assert item.kvps["approval"] == "cancelled" and context.approvals.pending() == []
