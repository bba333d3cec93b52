"""The tests' forked run_ui.py servers (tests/support/server_fork.py) behave as the
processes they stand for: exit codes, signals, a template that ended before its child."""

from __future__ import annotations

import signal

from tests.support import processes, server_fork
from tests.support.server_process import ServerProcess, server_env


def test_a_forked_run_ui_exits_as_the_command_would(tmp_path):
    log = tmp_path / "help.log"
    shown = server_fork.fork_run_ui(["--help"], server_env(), log)
    assert shown.wait(30) == 0 and "usage: run_ui.py" in log.read_text()
    refused = server_fork.fork_run_ui(["--port", "many"], server_env(), tmp_path / "bad.log")
    assert refused.wait(30) == 2 and refused.poll() == 2  # argparse's code, kept


def test_a_server_outliving_its_template_is_still_stopped(llm, usr_dir, tmp_path):
    server = ServerProcess(server_env(), tmp_path / "server.log").start()
    assert isinstance(server.process, server_fork.Forked)
    pid = server.process.pid
    template = server_fork._template._process
    assert template is not None
    template.kill()  # its children's exit codes go with it
    template.wait(10)
    server.stop()  # told by /proc instead: the signal still reaches the server
    assert server.process.returncode == server_fork.UNKNOWN_EXIT
    assert processes.state(pid) in ("", "Z")
    # The next server gets a template of its own.
    again = ServerProcess(server_env(), tmp_path / "again.log").start()
    again.stop(signal.SIGTERM)
    assert again.process is not None and again.process.returncode == 0
