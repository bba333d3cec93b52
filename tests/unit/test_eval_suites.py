"""Evaluation suites as read from YAML: the shipped ones parse, and what is wrong with a bad
one is said in plain words with the task, the check and the line."""

from __future__ import annotations

import pytest

from evals import places
from evals.checks import verdict
from evals.suite import FileHas, SuiteError, load_suite, parse_suite


def test_the_shipped_suites_parse_and_are_listed():
    names = [s.name for s in places.suites() if s.shipped]
    assert {"basics", "builtin"} <= set(names)
    for suite in places.suites():
        assert load_suite(suite.path).tasks


def test_a_file_check_is_told_from_a_contains_check():
    text = "tasks:\n  - name: a\n    message: m\n    checks:\n"
    suite = parse_suite(text + "      - {file: out/a.txt, contains: x}\n      - {contains: y}\n")
    first, second = suite.tasks[0].checks
    assert isinstance(first, FileHas) and first.file == "out/a.txt"
    assert second.kind == "contains"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("tasks: [a", "s.yaml is not valid YAML at line 1"),
        ("- a\n- b\n", "s.yaml must be a mapping with a `tasks:` list"),
        ("tasks: []\n", "s.yaml: field `tasks` (line 1): `tasks` needs at least one entry"),
        ("tasks:\n  - name: a\n    checks: [{contains: x}]\n",
         "s.yaml: task 1 ('a'), field `message` (line 2): `message` is missing"),
        ("tasks:\n  - name: a\n    message: m\n    checks:\n      - contains: x\n"
         "      - max_calls: -1\n",
         "s.yaml: task 1 ('a'), check 2 (line 6): `max_calls`: Input should be greater than or "
         "equal to 0"),
        ("tasks:\n  - name: a\n    message: m\n    files: {../x: y}\n    checks: [{contains: x}]\n",
         "s.yaml: task 1 ('a'), field `files` (line 4): '../x' must be a path inside the work "
         "folder (relative, no '..')"),
        ("tasks:\n  - name: a\n    message: m\n    checks: [{regex: '('}]\n",
         "s.yaml: task 1 ('a'), check 1 (line 4): `regex`: not a valid regular expression"),
        ("tasks:\n  - {name: a, message: m, checks: [{contains: x}]}\n"
         "  - {name: a, message: n, checks: [{contains: x}]}\n",
         "two tasks are named 'a'"),
        ("tasks:\n  - {name: a, message: m, colour: red, checks: [{contains: x}]}\n",
         "s.yaml: task 1 ('a'), field `colour` (line 2): `colour` is not a known field"),
    ],
)  # fmt: skip
def test_a_bad_suite_says_what_and_where(text, said):
    with pytest.raises(SuiteError) as raised:
        parse_suite(text, "s.yaml")
    assert said in str(raised.value)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"pass": true, "reason": "fine"}', (True, "fine")),
        ('Here: ```json\n{"pass": false, "reason": "no"}\n```', (False, "no")),
        ("PASS: it names it", (True, "it names it")),
        ("fail - wrong city", (False, "wrong city")),
    ],
)
def test_the_judges_verdict_is_read_tolerantly(reply, expected):
    assert verdict(reply) == expected


def test_a_reply_that_is_no_verdict_fails_saying_so():
    passed, why = verdict("I am not sure.")
    assert not passed and "not a verdict" in why


def test_a_file_check_does_not_follow_a_link_out_of_the_work_folder(tmp_path):
    """An agent under evaluation may leave a link in its work folder to any file of the
    machine: the check (run on the host) must not read through it, neither to pass nor to
    quote the file's content in the report."""
    from evals.checks import Outcome, run_checks

    secret = tmp_path / "secret.txt"
    secret.write_text("the-secret-value")
    work = tmp_path / "work"
    work.mkdir()
    (work / "out.txt").symlink_to(secret)
    outcome = Outcome(answer="", work_dir=work)
    checks = [FileHas(file="out.txt", contains="the-secret-value"),
              FileHas(file="out.txt", contains="nothing like it")]  # fmt: skip
    found = run_checks(checks, outcome, lambda rubric, answer: (False, ""))
    assert [c.passed for c in found] == [False, False]
    assert all("the-secret-value" not in c.detail for c in found)


def test_a_command_check_that_runs_too_long_leaves_no_process_behind(tmp_path, monkeypatch):
    """A check's command stopped at its time limit is stopped whole: what its shell started
    (a pipeline, a server, `make`'s children) is not left running on the machine."""
    import os
    import signal

    from evals import checks
    from evals.suite import Command
    from tests.support.agents import wait_for

    def running(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    monkeypatch.setattr(checks, "COMMAND_TIMEOUT", 1.0)
    check = Command(command="sleep 300 & echo $! > child.pid; wait")
    [found] = checks.run_checks([check], checks.Outcome("", tmp_path), lambda r, a: (False, ""))
    pid = int((tmp_path / "child.pid").read_text())
    try:
        assert not found.passed and "still running" in found.detail
        wait_for(lambda: not running(pid), what="the command's child to be stopped")
    finally:
        if running(pid):
            os.kill(pid, signal.SIGKILL)
