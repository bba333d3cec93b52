"""Evaluations end to end: a three-task suite run against the scripted model server through
the real loop and chat store (a file task, a judged task), the table, the JSON result, the
HTML report, and `python3 cadre.py eval` as a real subprocess comparing with that result.

Runs go one at a time here (`eval_parallel` 1) so that the chat model's replies can be a
queue in the tasks' order; the utility model answers by rules (the judge's request holds
"Rubric:"; other utility calls name chats).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evals.html_report import render_html
from evals.results import compare, load_result, save_result
from evals.runner import Plan, run_suite
from evals.suite import load_suite
from evals.table import render
from helpers.files import BASE_DIR
from initialize import ChatFactory
from store.backup import swap
from store.chats import ChatManager
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply
from tests.support.fake_llm_script import last_user_contains, model_is

SUITE = """\
name: three
tasks:
  - name: capital
    message: What is the capital of France?
    checks:
      - contains: paris
      - regex: "\\\\bParis\\\\b"
      - max_calls: 5
  - name: notes
    message: Write done.txt saying done.
    files:
      notes.txt: buy milk
    checks:
      - file: done.txt
        contains: done
      - command: "grep -q milk notes.txt && test -f done.txt"
      - tool_called: text_editor
      - tool_not_called: code_execution_tool
  - name: sky
    message: Why is the sky blue?
    checks:
      - judge: The answer names Rayleigh scattering.
"""


def script_replies(llm, capital: str = "Paris is the capital of France.") -> None:
    llm.add_rule(last_user_contains("Rubric:"),
                 Reply('{"pass": true, "reason": "It names Rayleigh scattering."}'))  # fmt: skip
    llm.add_rule(model_is("util-model"), Reply("A chat"))  # naming chats, memory
    llm.script(
        Reply(answer(capital)),
        Reply(reply("text_editor:write", path="done.txt", content="done")),
        Reply(answer("Wrote done.txt.")),
        Reply(answer("Because of Rayleigh scattering of sunlight.")),
    )


@pytest.fixture
def suite_file(tmp_path: Path) -> Path:
    path = tmp_path / "three.yaml"
    path.write_text(SUITE)
    return path


@pytest.fixture
def one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CADRE_EVAL_PARALLEL", "1")


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links += [value or "" for name, value in attrs if name == "href"]


def test_a_suite_runs_each_task_in_its_own_chat_and_reports(llm, runtime, usr_dir, suite_file,
                                                             one_at_a_time):  # fmt: skip
    script_replies(llm)
    chats = ChatManager(runtime, ChatFactory(runtime))
    plan = Plan(suite=load_suite(suite_file), profile="default", parallel=1)
    seen: list[tuple[str, int, int]] = []
    result = run_suite(chats, plan, lambda run, done, total: seen.append((run.task, done, total)))

    assert seen == [("capital", 1, 3), ("notes", 2, 3), ("sky", 3, 3)]
    assert [(r.task, r.passed) for r in result.runs] == [
        ("capital", True), ("notes", True), ("sky", True)]  # fmt: skip
    assert [r.calls for r in result.runs] == [1, 2, 1]  # the agents' model calls
    notes = result.runs[1]
    assert notes.tools == ["text_editor:write", "response"] and notes.tokens > 0
    sky = result.runs[2]
    assert sky.checks[0].kind == "judge" and sky.checks[0].detail == "It names Rayleigh scattering."
    judged = [r for r in llm.chat_requests() if "Rubric:" in str(r.messages[-1]["content"])]
    assert (
        len(judged) == 1 and "Rayleigh scattering of sunlight" in judged[0].messages[-1]["content"]
    )
    # Every run is an ordinary chat, saved, with the judge's verdict in its log.
    ids = {r.chat_id for r in result.runs}
    assert len(ids) == 3 and all((usr_dir / "chats" / i).is_dir() for i in ids)
    assert chats.get(sky.chat_id).name == "Eval three: sky (1)"
    assert any(i.type == "util" and "judge" in i.heading
               for i in chats.get(sky.chat_id).log.items)  # fmt: skip
    # Each task in a work folder of its own, the suite's files laid there first.
    work = list((usr_dir / "workdir" / "evals").glob("*/notes-1"))
    assert [p.name for p in sorted(work[0].iterdir())] == ["done.txt", "notes.txt"]

    table = render(result)
    lines = table.splitlines()
    assert lines[-1] == "passed 3 of 3"
    header = next(line for line in lines if line.startswith("task"))
    assert header.split() == ["task", "passed", "rate", "tokens", "cost", "(USD)", "time", "(s)"]
    assert any(line.split()[:3] == ["capital", "1/1", "100%"] for line in lines)
    assert any(line.split()[:3] == ["overall", "3/3", "100%"] for line in lines)

    saved = save_result(result, usr_dir / "r.json")
    data = json.loads(saved.read_text())
    assert data["version"] == 1 and data["suite"] == "three" and data["tasks"] == [
        "capital", "notes", "sky"]  # fmt: skip
    assert load_result(saved) == result

    page = render_html(result, base_url="http://127.0.0.1:5080")
    links = _Links()
    links.feed(page)
    assert sorted(links.links) == sorted(f"http://127.0.0.1:5080/#/chat/{i}" for i in ids)
    assert "<svg role='img'" in page and "capital 100%" in page and "passed 3 of 3" in page


def test_the_report_escapes_what_the_model_wrote(llm):
    from evals.results import EvalResult, Run

    result = EvalResult(suite="<s>", profile="p", tasks=["<b>x</b>"], runs=[
        Run(task="<b>x</b>", chat_id="abc", answer="<script>alert(1)</script>")])  # fmt: skip
    page = render_html(result)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>x</b>" not in page


def cadre_eval(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BASE_DIR / "cadre.py"), "eval", *args],
                          env=dict(os.environ), capture_output=True, text=True, timeout=240,
                          cwd=cwd)  # fmt: skip


def test_the_command_line_compares_with_an_earlier_result(llm, usr_dir, suite_file, tmp_path,
                                                           one_at_a_time):  # fmt: skip
    """The earlier result passed everything; now the capital task answers Lyon: one task
    worse, the rest the same; the command still exits 0 (it ran)."""
    script_replies(llm)
    first = cadre_eval(str(suite_file), "--profile", "default", "--out", str(tmp_path / "a"),
                       cwd=tmp_path)  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[-1] == "passed 3 of 3"
    [earlier] = (tmp_path / "a").glob("three-*.json")
    assert (tmp_path / "a" / earlier.with_suffix(".html").name).is_file()
    assert "3/3" in first.stderr  # the progress bar

    llm.reset()
    script_replies(llm, capital="Lyon, I think.")
    again = cadre_eval(str(suite_file), "--profile", "default", "--against", str(earlier),
                       "--out", str(tmp_path / "b"), cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert lines[-1] == "passed 2 of 3"
    assert "  capital: worse (100% -> 0%)" in lines
    assert not any(line.startswith(("  notes:", "  sky:")) for line in lines)
    assert any("answer contains 'paris': not in the answer" in line for line in lines)
    [later] = (tmp_path / "b").glob("three-*.json")
    changes = compare(load_result(earlier), load_result(later))
    assert [(c.name, c.change) for c in changes] == [
        ("capital", "worse"), ("notes", "same"), ("sky", "same")]  # fmt: skip
    assert "worse" in later.with_suffix(".html").read_text()


def test_a_bad_suite_is_refused_in_plain_words(llm, tmp_path, suite_file):
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks:\n  - name: a\n    message: hi\n    checks:\n      - contains: x\n"
                   "      - sound: loud\n")  # fmt: skip
    done = cadre_eval(str(bad), "--profile", "default", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"cannot run the evaluation: {bad}: task 1 ('a'), check 2 (line 6): unknown check "
        "['sound']: use one of contains, regex, file, command, tool_called, tool_not_called, "
        "max_calls, max_cost, judge"
    )
    assert done.stdout == ""
    missing = cadre_eval("nothing-here", "--profile", "default", cwd=tmp_path)
    assert missing.returncode == 2 and "no suite 'nothing-here'" in missing.stderr
    profile = cadre_eval(str(suite_file), "--profile", "nobody", cwd=tmp_path)
    assert profile.returncode == 2 and "no available profile 'nobody'" in profile.stderr
    assert llm.chat_requests() == []  # nothing ran


def test_the_shipped_basics_suite_passes_when_the_agents_do_the_right_thing(llm, runtime):
    """Each check of evals/suites/basics.yaml can be met: the agents' replies are scripted
    as a capable model would give them (files written, a command run, the judge agreeing)."""
    llm.add_rule(last_user_contains("Rubric:"), Reply('{"pass": true, "reason": "Rayleigh."}'))
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    llm.script(
        Reply(answer("17 * 23 = 391.")),
        Reply(reply("text_editor:read", path="shopping.txt")),
        Reply(answer("There are 4 items on the list.")),
        Reply(reply("text_editor:write", path="hello.py", content='print("Hello, Cadre")\n')),
        Reply(answer("Done: hello.py prints Hello, Cadre.")),
        Reply(reply("code_execution_tool", runtime="terminal", code="wc -l < data.csv")),
        Reply(answer("data.csv has 5 lines.")),
        Reply(
            answer(
                "Sunlight is scattered by the air's molecules, blue light the most "
                "(Rayleigh scattering). So the sky looks blue."
            )
        ),  # fmt: skip
    )
    chats = ChatManager(runtime, ChatFactory(runtime))
    suite = load_suite(BASE_DIR / "evals" / "suites" / "basics.yaml")
    result = run_suite(chats, Plan(suite=suite, profile="agent0", parallel=1))
    failed = {r.task: [c for c in r.checks if not c.passed] or r.error for r in result.runs
              if not r.passed}  # fmt: skip
    assert failed == {} and result.passed == 5
    assert "code_execution_tool" in result.runs[3].tools


def test_the_command_line_runs_on_a_chosen_model_as_often_as_asked(llm, tmp_path, monkeypatch):
    presets = [{"name": "fast", "chat_model": "openai/fast-model",
                "chat_api_base": llm.base_url, "chat_api_key": "k"}]  # fmt: skip
    monkeypatch.setenv("CADRE_MODEL_PRESETS", json.dumps(presets))
    llm.add_rule(model_is("fast-model"), Reply(answer("Paris.")))
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    suite = tmp_path / "one.yaml"
    suite.write_text("tasks:\n  - name: capital\n    message: The capital of France?\n"
                     "    checks: [{contains: paris}]\n")  # fmt: skip
    done = cadre_eval(str(suite), "--profile", "default", "--model", "fast", "--repeat", "2",
                      "--out", str(tmp_path), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "passed 2 of 2"
    assert "profile default, model fast, each task 2 times" in done.stdout
    asked = {r.body["model"] for r in llm.chat_requests() if r.body["model"] != "util-model"}
    assert asked == {"fast-model"}
    [saved] = tmp_path.glob("one-*.json")
    result = load_result(saved)
    assert (result.model, result.repeat) == ("fast", 2)
    assert [r.attempt for r in result.runs] == [1, 2] and len({r.chat_id for r in result.runs}) == 2


def test_the_command_line_refuses_while_cadre_runs_on_the_same_usr(llm, suite_file, tmp_path):
    running = swap.hold_while_running()  # what run_ui.py holds while it serves
    try:
        refused = cadre_eval(str(suite_file), "--profile", "default", cwd=tmp_path)
    finally:
        running.close()
    assert refused.returncode == 2 and refused.stdout == ""
    assert "Cadre is running on this usr/: run the suite from the Evaluations panel" in (
        refused.stderr)  # fmt: skip
    assert llm.chat_requests() == []


def test_tasks_whose_names_read_alike_get_work_folders_of_their_own(llm, runtime, tmp_path,
                                                                     one_at_a_time):  # fmt: skip
    """A task's folder is named after the task: two names made alike by it ("report 1",
    "report/1") must still not share one (the second would find the first's files, and
    run beside it when runs go in parallel)."""
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    llm.script(Reply(answer("Done.")), Reply(answer("Done too.")))
    suite = tmp_path / "alike.yaml"
    suite.write_text(
        "tasks:\n"
        "  - name: report 1\n    message: First.\n    files: {first.txt: one}\n"
        "    checks: [{contains: done}]\n"
        "  - name: report/1\n    message: Second.\n"
        "    checks: [{command: 'test ! -e first.txt'}]\n"
    )  # fmt: skip
    chats = ChatManager(runtime, ChatFactory(runtime))
    result = run_suite(chats, Plan(suite=load_suite(suite), profile="default", parallel=1))
    assert [(r.task, r.passed, [c.detail for c in r.checks]) for r in result.runs] == [
        ("report 1", True, [""]), ("report/1", True, [""])]  # fmt: skip


def test_a_task_s_files_are_not_written_through_a_link_out_of_the_work_folder(tmp_path):
    """Where the runs share the owner's own work folder, what earlier chats left there (a
    link to a file of the server's) must not turn a task's file into a write elsewhere."""
    from evals.runner import lay_files

    settings = tmp_path / "settings.json"
    settings.write_text('{"kept": true}')
    work = tmp_path / "workdir"
    (work / "sub").mkdir(parents=True)
    (work / "notes.txt").symlink_to(settings)
    (work / "out").symlink_to(tmp_path)
    refused = lay_files(work, {"notes.txt": "the suite's notes"})
    assert "outside" in refused and settings.read_text() == '{"kept": true}'
    assert "outside" in lay_files(work, {"out/x.txt": "x"}) and not (tmp_path / "x.txt").exists()
    assert lay_files(work, {"sub/a.txt": "a", "b/c.txt": "c"}) == ""
    assert (work / "sub" / "a.txt").read_text() == "a" and (work / "b" / "c.txt").read_text() == "c"


def test_the_command_line_s_runs_are_traced_before_it_exits(llm, usr_dir, tmp_path):
    """With tracing on, `cadre.py eval` sends its runs' spans before its process ends (the
    SDK sends in batches, every few seconds: the last one waits for the exit)."""
    from tests.support.otlp_receiver import start_otlp_receiver

    llm.add_rule(model_is("util-model"), Reply("A chat"))
    llm.script(Reply(answer("Paris.")))
    suite = tmp_path / "one.yaml"
    suite.write_text("tasks:\n  - name: capital\n    message: The capital of France?\n"
                     "    checks: [{contains: paris}]\n")  # fmt: skip
    receiver = start_otlp_receiver()
    try:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url}
        done = subprocess.run(
            [sys.executable, str(BASE_DIR / "cadre.py"), "eval", str(suite), "--profile",
             "default", "--out", str(tmp_path)],
            env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert {span.name for span in receiver.received()} >= {"cadre.run", "invoke_agent A0"}
    finally:
        receiver.stop()
