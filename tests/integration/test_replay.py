"""Replay of a saved chat (core/replay, store/replaying.py): the record followed with no
model call, a changed file caught at its step, recorded results, live continuation, the
route's errors and the command line as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.agent_types import UserMessage
from helpers.errors import NotFound
from helpers.files import BASE_DIR
from store import persist_chat, replaying
from store.backup import swap
from store.chats import ChatManager
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is

KEY = {"X-API-Key": "api-secret"}


@pytest.fixture(autouse=True)
def _api_key(monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")


def chats_of(server) -> ChatManager:
    return server.app.extensions["cadre.chats"]


def command(code: str) -> str:
    return reply("code_execution_tool", runtime="terminal", code=code, session=0)


#: Agent 0's five steps on the first message (the third hands a task to A1), then a
#: second message answered at once.
FIRST_RUN = [
    command("echo ran >> ran.txt; echo started"),
    command("cat notes.txt"),
    reply("call_subordinate", message="Count the lines of notes.txt", reset=True),
    command("wc -l < notes.txt"),  # A1's step 1
    answer("1 line"),  # A1's step 2
    command("echo checked"),
    answer("The notes say alpha."),
]
SECOND_RUN = [answer("You are welcome.")]


@pytest.fixture
def recorded(server, llm, usr_dir):
    """A saved chat of two runs (five steps with commands and a subordinate, then one)."""
    work = usr_dir / "workdir"
    work.mkdir(exist_ok=True)
    (work / "notes.txt").write_text("alpha\n")
    llm.add_rule(model_is("util-model"), Reply("Notes"))  # the chat's name
    chats = chats_of(server)
    source = chats.new_chat()
    llm.script(*[Reply(r) for r in FIRST_RUN])
    assert source.communicate(UserMessage("Look at the notes")).result(60) == (
        "The notes say alpha."
    )
    llm.script(*[Reply(r) for r in SECOND_RUN])
    assert source.communicate(UserMessage("Thanks")).result(60) == "You are welcome."
    chats.save_now(source)
    return source


def answers(context) -> list[str]:
    return [i.content for i in context.log.items if i.type == "response"]


def replayed(server, source, **how) -> tuple[object, str]:
    started = replaying.start_replay(chats_of(server), source.id, None, **how)
    return started, started.done.result(90)


def difference_items(context) -> list[object]:
    return [i for i in context.log.items if i.kvps.get("replay") == "difference"]


def test_a_replay_follows_the_record_without_calling_the_model(server, llm, recorded, usr_dir):
    asked = len(llm.requests)
    started, outcome = replayed(server, recorded)
    assert outcome == "followed"
    assert len(llm.requests) == asked  # not one request: no tokens spent
    assert answers(started.chat) == answers(recorded)
    assert started.replay.replies == len(FIRST_RUN) + len(SECOND_RUN)
    outputs = [i.content for i in started.chat.log.items if i.type == "code_exe"]
    assert outputs == [i.content for i in recorded.log.items if i.type == "code_exe"]
    assert (usr_dir / "workdir" / "ran.txt").read_text() == "ran\nran\n"  # it ran again
    saved = persist_chat.load_chat(started.chat.id)
    assert saved.replay_of == {"id": recorded.id, "tools": "rerun", "on_difference": "stop"}
    assert saved.name == f"Replay of {recorded.name}" and not difference_items(started.chat)
    assert "followed the record to the end" in started.chat.log.items[-1].content
    # A settings change (the chat's config built again) keeps the chat's model seam.
    chats = chats_of(server)
    chats.runtime.call(started.chat.reconfigure, chats.factory.config(started.chat))
    assert started.chat.agent0.config.model_for == started.replay.model_for


def test_a_changed_file_stops_the_replay_at_its_step(server, llm, recorded, usr_dir):
    (usr_dir / "workdir" / "notes.txt").write_text("beta\n")
    asked = len(llm.requests)
    started, outcome = replayed(server, recorded)
    assert outcome == "stopped" and len(llm.requests) == asked
    [item] = difference_items(started.chat)
    assert item.kvps["step"] == 2 and item.kvps["tool"] == "code_execution_tool"
    assert "At step 2 of A0, the tool code_execution_tool gave a different result" in item.content
    assert "Recorded:\n[Result of tool `code_execution_tool`]\nalpha" in item.content
    assert "This time:\n[Result of tool `code_execution_tool`]\nbeta" in item.content
    assert answers(started.chat) == []  # nothing after the difference: no subordinate either
    assert not any(i.type == "user" and i.content == "Thanks" for i in started.chat.log.items)
    assert "stopped at the first difference" in started.chat.log.items[-1].content


def test_recorded_results_run_no_command(server, llm, recorded, usr_dir):
    (usr_dir / "workdir" / "notes.txt").write_text("beta\n")
    asked = len(llm.requests)
    started, outcome = replayed(server, recorded, tools="recorded")
    assert outcome == "followed" and len(llm.requests) == asked
    assert answers(started.chat) == answers(recorded)
    assert (usr_dir / "workdir" / "ran.txt").read_text() == "ran\n"  # not run again
    outputs = [i.content for i in started.chat.log.items if i.type == "code_exe"]
    assert outputs[1] == "alpha"  # the record's, though the file says beta now
    # Word for word; where each message sits in its own chat's log ("at", for branches) is
    # the replay's own (its log opens with the replay's notice).
    assert _words(started.chat.agent0) == _words(recorded.agent0)


def _words(agent) -> object:
    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "at"}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return strip(agent.history.to_dict())


def test_live_goes_on_from_the_difference_with_the_model(server, llm, recorded, usr_dir):
    (usr_dir / "workdir" / "notes.txt").write_text("beta\n")
    asked = len(llm.requests)
    llm.script(Reply(answer("The notes say beta now.")), Reply(answer("Any time.")))
    started, outcome = replayed(server, recorded, on_difference="live")
    assert outcome == "live"
    live = llm.chat_requests()[-2:]
    assert len(llm.requests) == asked + 2
    assert "beta" in live[0].messages[-1]["content"]  # the model read what came this time
    assert answers(started.chat) == ["The notes say beta now.", "Any time."]
    assert len(difference_items(started.chat)) == 1


def test_another_persons_chat_is_not_found(server, recorded):
    chats = chats_of(server)
    recorded.owner = "alice"
    with pytest.raises(NotFound):
        replaying.start_replay(chats, recorded.id, "bob")


def test_the_routes_errors(http, server, recorded):
    unknown = http.post("/api/v1/chats/nosuchchat/replay", headers=KEY)
    assert unknown.status_code == 404 and "error" in unknown.json
    wrong = http.post(f"/api/v1/chats/{recorded.id}/replay", headers=KEY,
                      json={"tools": "sometimes"})  # fmt: skip
    assert wrong.status_code == 400
    assert "tools" in wrong.json["error"] and '"rerun" or "recorded"' in wrong.json["error"]
    not_object = http.post(f"/api/v1/chats/{recorded.id}/replay", headers=KEY, json=[1])
    assert not_object.status_code == 400
    assert http.post(f"/api/v1/chats/{recorded.id}/replay").status_code == 401  # no key
    empty = chats_of(server).new_chat()
    nothing = http.post(f"/api/v1/chats/{empty.id}/replay", headers=KEY)
    assert nothing.status_code == 400 and "no message" in nothing.json["error"]


def test_a_working_chat_is_not_replayed(http, server, llm, recorded):
    llm.script(Reply(answer("slowly " * 60), chunk_size=4, delay=0.05))
    running = recorded.communicate(UserMessage("Once more"))
    wait_for(lambda: recorded.running)
    busy = http.post(f"/api/v1/chats/{recorded.id}/replay", headers=KEY)
    assert busy.status_code == 400 and "working now" in busy.json["error"]
    running.result(60)


def test_the_page_and_the_api_start_a_replay(http, server, llm, recorded):
    asked = len(llm.requests)
    made = http.post(f"/api/chats/{recorded.id}/replay", json={"tools": "recorded"})
    assert made.status_code == 200, made.json
    chats = chats_of(server)
    replay = chats.get(made.json["context_id"]).replay
    assert replay is not None and replay.tools == "recorded"
    by_api = http.post(f"/api/v1/chats/{recorded.id}/replay", headers=KEY)
    assert by_api.status_code == 200 and by_api.json["context_id"] != made.json["context_id"]
    for chat_id in (made.json["context_id"], by_api.json["context_id"]):
        assert _outcome(chats, chat_id) == "followed"
    assert len(llm.requests) == asked


def _outcome(chats: ChatManager, chat_id: str) -> str:
    """How the replay into `chat_id` ended, once its last item says so."""
    context = chats.get(chat_id)
    ended = lambda: context.log.items[-1].kvps.get("replay") in replaying.ENDINGS  # noqa: E731
    wait_for(ended, timeout=60, what="the replay's end")
    return context.log.items[-1].kvps["replay"]


def test_the_command_line_replays_a_chat(server, llm, recorded, usr_dir, tmp_path):
    (usr_dir / "workdir" / "notes.txt").write_text("beta\n")
    asked = len(llm.requests)
    env = {**os.environ, "CADRE_USR_DIR": str(usr_dir)}
    done = subprocess.run(
        [sys.executable, str(BASE_DIR / "cadre.py"), "replay", recorded.id],
        env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("Replay chat: ")
    new_id = first.removeprefix("Replay chat: ")
    assert "At step 2 of A0, the tool code_execution_tool" in done.stdout
    assert "stopped at the first difference" in done.stdout
    assert persist_chat.load_chat(new_id).replay_of["id"] == recorded.id
    assert len(llm.requests) == asked
    followed = subprocess.run(
        [sys.executable, str(BASE_DIR / "cadre.py"), "replay", recorded.id, "--tools",
         "recorded"], env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )  # fmt: skip
    assert followed.returncode == 0, followed.stdout + followed.stderr
    assert "followed the record to the end" in followed.stdout
    unknown = subprocess.run(
        [sys.executable, str(BASE_DIR / "cadre.py"), "replay", "nosuchchat"],
        env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )  # fmt: skip
    assert unknown.returncode == 2 and "No chat 'nosuchchat'" in unknown.stdout
    held = swap.hold_while_running()  # as a running Cadre holds its usr/
    try:
        refused = subprocess.run(
            [sys.executable, str(BASE_DIR / "cadre.py"), "replay", recorded.id],
            env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path,
        )  # fmt: skip
    finally:
        held.close()
    assert refused.returncode == 2 and "Cadre is running on this usr/" in refused.stdout
    assert Path(usr_dir / "chats" / new_id / "chat.json").is_file()


def test_the_command_line_s_replay_is_traced_before_it_exits(server, llm, recorded, usr_dir,
                                                             tmp_path):  # fmt: skip
    """With tracing on, `cadre.py replay` sends the replay's spans before its process ends
    (the SDK sends in batches, every few seconds: the last one waits for the exit)."""
    from tests.support.otlp_receiver import start_otlp_receiver

    receiver = start_otlp_receiver()
    try:
        env = {**os.environ, "CADRE_USR_DIR": str(usr_dir),
               "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url}  # fmt: skip
        done = subprocess.run(
            [sys.executable, str(BASE_DIR / "cadre.py"), "replay", recorded.id, "--tools",
             "recorded"], env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        names = {span.name for span in receiver.received()}
        assert "cadre.run" in names and "invoke_agent A1" in names
    finally:
        receiver.stop()
