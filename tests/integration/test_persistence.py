"""Chats on disk: round trip, damaged files, migrations, interrupted work, chat operations."""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil

import pytest

from core import chat_migrations, chat_record
from core.agent_types import UserMessage
from helpers.errors import UserError
from helpers.runtime import AgentRuntime
from initialize import ChatFactory
from store import chat_export, persist_chat
from store.chats import ChatManager
from tests.support.agents import answer, make_profile, reply, wait_for
from tests.support.fake_llm import Reply, model_is
from tools import text_editor


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    return ChatManager(runtime, ChatFactory(runtime))


def reload(usr_dir) -> tuple[ChatManager, AgentRuntime]:
    """A second process, as after a restart: a new runtime, every chat read from disk."""
    runtime = AgentRuntime().start()
    manager = ChatManager(runtime, ChatFactory(runtime))
    manager.load_saved()
    return manager, runtime


def crash(context, run, usr_dir) -> None:
    """Leave `usr/chats` as it was on disk at this moment, as if the process had died."""
    crashed = usr_dir.parent / "crash-copy"
    # A write going on behind the agents may remove its temporary file mid-copy; a crash
    # would leave it, and loading ignores it: copy without them.
    shutil.copytree(usr_dir / "chats", crashed, ignore=shutil.ignore_patterns("*.tmp"))
    context.stop()
    with pytest.raises(concurrent.futures.CancelledError):
        run.result(10)
    wait_for(lambda: context.runner.ended is not None and context.runner.ended.done(),
             what="the stopped run's last save")  # fmt: skip
    shutil.rmtree(usr_dir / "chats")
    shutil.copytree(crashed, usr_dir / "chats")


def crashed_while_delegating(chats, llm, usr_dir):
    """A chat whose process 'died' while the researcher A1 streamed its answer."""
    llm.script(
        delegate("Research X.", "researcher"),
        Reply(answer("X is " + "very " * 40 + "old."), chunk_size=4, delay=0.05),
    )
    context = chats.new_chat()
    run = context.communicate(UserMessage("What about X?"))
    wait_for(lambda: any(i.type == "response" and i.agentno == 1 for i in context.log.items),
             what="the subordinate streaming")  # fmt: skip
    crash(context, run, usr_dir)
    return context


def crashed_while_answering(chats, llm, usr_dir):
    """A chat whose process 'died' while Agent 0 streamed its answer."""
    llm.script(Reply(answer("slow " * 40), chunk_size=4, delay=0.05))
    context = chats.new_chat()
    run = context.communicate(UserMessage("Go."))
    wait_for(lambda: any(i.type == "response" for i in context.log.items), what="streaming")
    crash(context, run, usr_dir)
    return context


def delegate(message: str, profile: str) -> Reply:
    return Reply(reply("call_subordinate", message=message, profile=profile, reset=True))


def test_persist_chat_roundtrip_preserves_each_agent_profile(chats, llm, usr_dir):
    llm.add_rule(model_is("util-model"), Reply("Parser work"))
    llm.script(
        delegate("Write the parser.", "developer"),
        Reply(answer("def parse(): ..."), usage=(100, 20)),
        Reply(answer("The parser is written."), usage=(300, 10)),
    )
    context = chats.new_chat()
    context.communicate(UserMessage("Write a parser.")).result(30)
    wait_for(lambda: context.name == "Parser work", what="the automatic name")
    chats.save_now(context)

    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        assert [(a.number, a.config.profile) for a in restored.agents()] == [
            (0, "agent0"),
            (1, "developer"),
        ]
        a1 = restored.agent0.subordinate
        assert a1.superior is restored.agent0
        assert a1.task == "Write the parser."
        for before, after in zip(context.agents(), restored.agents(), strict=True):
            assert after.history.to_dict() == before.history.to_dict()
            assert after.usage == before.usage
        assert len(a1.history.topics) == 1  # its sealed topic came back as a topic
        assert [i.id for i in restored.log.items] == [i.id for i in context.log.items]
        assert restored.log.version == context.log.version
        assert restored.usage == context.usage and restored.usage.calls == 4
        assert restored.name == "Parser work" and not restored.interrupted
    finally:
        runtime.stop()


def test_saved_after_every_iteration_and_at_the_end(chats, llm, usr_dir):
    llm.script(Reply(reply("teleport")), Reply(answer("done")))
    context = chats.new_chat()
    taken: list[dict] = []  # every save's snapshot, taken on the loop as the save is asked
    writes: list[dict] = []  # what reached the disk (a waiting write gives way to a newer one)
    real_snapshot, real_write = chat_record.snapshot, persist_chat.write_chat

    def snapshot(ctx):
        chat = real_snapshot(ctx)
        taken.append({"running": chat.running, "items": len(chat.log["items"])})
        return chat

    def write(chat, path=None):
        real_write(chat, path)
        writes.append({"running": chat.running, "items": len(chat.log["items"])})

    chat_record.snapshot, persist_chat.write_chat = snapshot, write
    try:
        context.communicate(UserMessage("go")).result(30)
        wait_for(lambda: writes and not writes[-1]["running"], what="the final save")
    finally:
        chat_record.snapshot, persist_chat.write_chat = real_snapshot, real_write
    # run start, two iterations, then the final save that says the run is over
    assert len(taken) >= 4 and all(s["running"] for s in taken[:-1])
    assert not taken[-1]["running"]
    saved = persist_chat.read_chat(context.id)
    assert not saved.running and saved.log["items"][-1]["content"] == "done"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"version": 2, "id": "c", "created_at": 1, "agents": [{"number": 0, "pro', "not JSON"),
        (b"\x89PNG\x00\xff garbage", "not JSON"),
        ('["a", "list"]', "not a JSON object"),
        ('{"version": 2, "id": "bad", "created_at": 1, "agents": []}', "wrong shape: agents"),
        ('{"version": 99, "id": "bad", "created_at": 1, "agents": []}', "newer than"),
        ('{"id": "bad"}', "no valid format version"),
    ],
    ids=["cut-short", "binary", "not-object", "wrong-schema", "unknown-version", "no-version"],
)
def test_a_damaged_file_is_set_aside_and_the_rest_loads(chats, usr_dir, content, reason, caplog):
    good = chats.new_chat()
    folder = usr_dir / "chats" / "bad"
    folder.mkdir(parents=True)
    data = content.encode() if isinstance(content, str) else content
    (folder / "chat.json").write_bytes(data)
    again, runtime = reload(usr_dir)
    try:
        assert again.get(good.id).id == good.id  # listed, read on first use
        [damaged] = again.damaged
        assert damaged.id == "bad" and reason in damaged.reason
        assert not folder.exists()
        kept = usr_dir / "chats" / "_damaged"
        [moved] = list(kept.iterdir())
        assert (moved / "chat.json").read_bytes() == data
        assert reason in (moved / "DAMAGED.txt").read_text()
        assert "is damaged" in caplog.text
        assert moved.name.rsplit("-", 1)[0] == "bad"
    finally:
        runtime.stop()


def test_an_older_file_is_migrated_on_load(usr_dir, llm, runtime):
    v1 = {
        "version": 1,
        "id": "old1",
        "name": "From v1",
        "created_at": 1_700_000_000.0,
        "agents": [{"number": 0, "profile": "agent0", "history": {}}],
        "log": [{"no": 0, "id": "abc", "type": "user", "content": "hi", "version": 7}],
    }
    folder = usr_dir / "chats" / "old1"
    folder.mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(v1))
    manager = ChatManager(runtime, ChatFactory(runtime))
    manager.load_saved()
    context = manager.get("old1")
    assert context.name == "From v1" and context.log.items[0].id == "abc"
    assert context.log.version == 7
    manager.save_now(context)
    assert json.loads((folder / "chat.json").read_text())["version"] == chat_migrations.VERSION


def test_interrupted_delegation_resumes_at_the_subordinate(chats, llm, usr_dir):
    """A crash while A1 streams: after restart, A1 finishes and its answer reaches A0."""
    context = crashed_while_delegating(chats, llm, usr_dir)

    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        assert restored.interrupted and restored.working_agent.number == 1
        assert restored.log.items[-1].heading == "Interrupted"
        assert restored.working_agent.config.profile == "researcher"
        llm.script(Reply(answer("X is old.")), Reply(answer("Final: X is old.")))
        assert restored.communicate(UserMessage("please finish")).result(30) == "Final: X is old."
        a1_prompt = llm.chat_requests("chat-model")[-2].messages  # memorizing may follow
        assert "Cadre was restarted" in a1_prompt[-1]["content"]
        assert "please finish" in a1_prompt[-1]["content"]
        assert (
            "[Result of tool `call_subordinate`]\nX is old."
            in (llm.chat_requests("chat-model")[-1].messages[-1]["content"])
        )
        assert not restored.interrupted
        # As after a live call_subordinate: the restored A1's work is a sealed topic.
        a1 = restored.agent0.subordinate
        assert a1.history.current.messages == []
        assert "X is old." in a1.history.topics[-1].messages[-1].content
    finally:
        runtime.stop()


def test_continue_without_a_message(chats, llm, usr_dir):
    context = crashed_while_answering(chats, llm, usr_dir)
    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        llm.script(Reply(answer("Done at last.")))
        assert restored.continue_interrupted().result(30) == "Done at last."
        assert any(i.heading == "Continuing" for i in restored.log.items)
    finally:
        runtime.stop()


def test_rename_delete_and_reset(chats, llm, usr_dir):
    llm.script(Reply(answer("hello")))
    context = chats.new_chat()
    context.communicate(UserMessage("hi")).result(30)
    chats.rename(context.id, "  My   first\nchat  ")
    assert persist_chat.read_chat(context.id).name == "My first chat"

    fresh = chats.reset(context.id)
    assert fresh.id == context.id and fresh.name == "My first chat"
    assert fresh.log.items == [] and fresh.agent0.history.output() == []
    assert fresh.agent0.config.profile == "agent0"
    assert persist_chat.read_chat(context.id).log["items"] == []

    events = []
    chats.subscribe(events.append)
    chats.delete(context.id)
    assert not (usr_dir / "chats" / context.id).exists()
    assert chats.registry.get(context.id) is None
    assert [(e.kind, e.chat_id) for e in events] == [("removed", context.id)]
    with pytest.raises(UserError, match="no chat with id"):
        chats.rename(context.id, "x")


def test_export_and_import_keep_everything_under_a_new_id(chats, llm, usr_dir):
    long_text = "line of a long result\n" * 40
    llm.script(
        delegate("Make the long text.", "developer"),
        Reply(answer(long_text)),
        Reply(answer("See the text.")),
    )
    context = chats.new_chat()
    context.communicate(UserMessage("Make it.")).result(30)
    document = json.loads(json.dumps(chats.export(context.id)))  # survives a JSON file
    assert document["files"] == {"messages/1.txt": long_text}
    imported = chats.import_chat(document)
    assert imported.id != context.id
    assert [a.config.profile for a in imported.agents()] == ["agent0", "developer"]
    new_file = usr_dir / "chats" / imported.id / "messages" / "1.txt"
    assert new_file.read_text() == long_text
    # Saved results are cited relative to the chat's folder: they move with it.
    assert imported.agent0.history.current.messages[-2].file == "messages/1.txt"
    assert persist_chat.read_chat(imported.id).id == imported.id


def test_an_export_carries_no_record_of_the_files_an_agent_wrote(chats, llm, usr_dir):
    """What text_editor wrote (real paths here, with digests: core of what counts as the
    agent's own words) neither leaves the machine nor comes in with a stranger's chat,
    where a digest chosen for a file to come would make it read as the agent's words."""
    llm.script(
        Reply(reply("text_editor:write", path="plan.md", content="the plan\n")),
        Reply(answer("Written.")),
    )
    context = chats.new_chat()
    context.communicate(UserMessage("Write the plan.")).result(30)
    assert context.agent0.data.get("text_editor_wrote")  # the record the export must drop
    document = json.loads(json.dumps(chats.export(context.id)))
    assert "text_editor_wrote" not in document["chat"]["agents"][0]["data"]
    document["chat"]["agents"][0]["data"]["text_editor_wrote"] = {
        str(usr_dir / "workdir" / "downloads" / "page.txt"): "0" * 64
    }
    imported = chats.import_chat(document)
    assert "text_editor_wrote" not in imported.agent0.data
    assert text_editor.WROTE in chat_export.LOCAL_DATA  # the key is the tool's


def test_an_export_takes_no_file_a_command_linked_into_the_chat_folder(chats, llm, usr_dir):
    """A command in the work folder can plant links among a chat's saved results; an export
    (a file meant to be shared) must not carry what they point at."""
    (usr_dir / "settings.json").write_text('{"searxng_url": "http://export-canary.invalid"}')
    context = chats.new_chat()
    messages = usr_dir / "chats" / context.id / "messages"
    messages.mkdir(parents=True)
    (messages / "1.txt").write_text("a real saved result")
    os.link(usr_dir / "settings.json", messages / "2.txt")
    (messages / "3.txt").symlink_to(usr_dir / "settings.json")
    document = json.dumps(chats.export(context.id))
    assert "export-canary" not in document
    assert json.loads(document)["files"] == {"messages/1.txt": "a real saved result"}


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"chat": {}}, "not a Cadre chat export"),
        ([], "not a Cadre chat export"),
        ({"cadre_export": 1, "chat": "x", "files": {}}, "needs a 'chat' object"),
        ({"cadre_export": 1, "chat": {"version": 2, "id": "x"}, "files": {}}, "cannot be read"),
        (
            {
                "cadre_export": 1,
                "chat": {
                    "version": 2,
                    "id": "x",
                    "created_at": 1,
                    "agents": [{"number": 0, "profile": "agent0"}],
                },
                "files": {"../../evil.txt": "x"},
            },
            "unexpected file",
        ),
    ],
)
def test_a_malformed_import_is_refused_and_creates_nothing(chats, usr_dir, document, reason):
    before = sorted(p.name for p in (usr_dir / "chats").glob("*")) if (
        usr_dir / "chats").exists() else []  # fmt: skip
    with pytest.raises(UserError, match=reason):
        chats.import_chat(document)
    after = sorted(p.name for p in (usr_dir / "chats").glob("*")) if (
        usr_dir / "chats").exists() else []  # fmt: skip
    assert after == before and len(chats.registry) == 0


@pytest.mark.parametrize(
    "agents",
    [
        [{"number": 0, "profile": "agent0", "history": {"current": {"messages": [{"x": 1}]}}}],
        [{"number": 0, "profile": "agent0", "history": {"topics": "not a list"}}],
        [{"number": 0, "profile": "agent0", "overrides": {"no_such_setting": 1}}],
        [{"number": 0, "profile": "../../etc"}],
    ],
    ids=["message-shape", "topics-shape", "unknown-override", "bad-profile-name"],
)
def test_a_file_that_parses_but_cannot_be_restored_is_set_aside(usr_dir, llm, agents):
    folder = usr_dir / "chats" / "odd"
    folder.mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(
        {"version": 2, "id": "odd", "created_at": 1.0, "agents": agents}))  # fmt: skip
    again, runtime = reload(usr_dir)
    try:
        [damaged] = again.damaged
        assert damaged.id == "odd" and "cannot be restored" in damaged.reason
        assert len(again) == 0
    finally:
        runtime.stop()


def test_a_log_item_of_unknown_type_is_set_aside(usr_dir, llm):
    folder = usr_dir / "chats" / "odd"
    folder.mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps({
        "version": 2, "id": "odd", "created_at": 1.0,
        "agents": [{"number": 0, "profile": "agent0"}],
        "log": {"items": [{"no": 0, "type": "shout"}]}}))  # fmt: skip
    again, runtime = reload(usr_dir)
    try:
        assert [d.id for d in again.damaged] == ["odd"]
    finally:
        runtime.stop()


def test_each_agent_comes_back_with_its_own_profile_even_agent0(usr_dir, llm, chats):
    context = chats.new_chat(agent_profile="researcher")
    chats.save_now(context)
    from helpers.settings import Settings, save_settings

    save_settings(Settings(agent_profile="developer"))
    again, runtime = reload(usr_dir)
    try:
        assert again.get(context.id).agent0.config.profile == "researcher"
        assert again.reset(context.id).agent0.config.profile == "researcher"
    finally:
        runtime.stop()


def test_an_interrupted_chat_stays_interrupted_until_resumed(chats, llm, usr_dir):
    context = crashed_while_answering(chats, llm, usr_dir)
    again, runtime = reload(usr_dir)
    try:
        again.rename(context.id, "Renamed while interrupted")
    finally:
        runtime.stop()
    third, runtime = reload(usr_dir)
    try:
        assert third.get(context.id).interrupted
        with pytest.raises(UserError, match="not interrupted"):
            chats.get(context.id).continue_interrupted()  # the first process's copy: not
    finally:
        runtime.stop()


def test_a_message_sent_while_paused_is_on_disk_at_once(chats, llm, usr_dir):
    llm.script(Reply(answer("slow " * 40), chunk_size=4, delay=0.05), Reply(answer("ok")))
    context = chats.new_chat()
    run = context.communicate(UserMessage("Go."))
    wait_for(lambda: any(i.type == "response" for i in context.log.items), what="streaming")
    context.pause()
    context.communicate(UserMessage("remember the milk"))
    wait_for(lambda: any(a.intervention and a.intervention.message == "remember the milk"
                         for a in persist_chat.read_chat(context.id).agents),
             what="the intervention on disk")  # fmt: skip
    saved = persist_chat.read_chat(context.id)
    assert any(i["content"] == "remember the milk" for i in saved.log["items"])
    context.resume()
    run.result(30)


def test_a_failing_subordinate_after_restore_is_handed_to_its_superior(chats, llm, usr_dir):
    context = crashed_while_delegating(chats, llm, usr_dir)
    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        llm.script(Reply("bad"), Reply("worse"), Reply("worst"), Reply(answer("I did it myself.")))
        assert restored.continue_interrupted().result(30) == "I did it myself."
        assert (
            "Your subordinate A1 stopped without an answer"
            in (llm.chat_requests("chat-model")[-1].messages[-1]["content"])
        )
    finally:
        runtime.stop()


def test_an_import_takes_no_settings_from_the_file(chats, usr_dir):
    document = {
        "cadre_export": 1,
        "chat": {"version": 2, "id": "x", "created_at": 1, "running": True, "working_agent": 0,
                 "name": "n" * 5000,
                 "agents": [{"number": 0, "profile": "agent0",
                             "overrides": {"chat_api_base": "https://attacker.example/v1",
                                           "work_dir": "/", "chat_api_key": "sk-theirs"}}]},
        "files": {},
    }  # fmt: skip
    context = chats.import_chat(document)
    assert context.agent0.config.chat_model.api_base != "https://attacker.example/v1"
    assert context.agent0.config.settings.work_dir == ""
    assert not context.interrupted and len(context.name) <= 120
    exported = json.dumps(chats.export(context.id))
    assert "sk-" not in exported and "attacker" not in exported


def test_a_refused_import_leaves_no_files(chats, usr_dir):
    document = {
        "cadre_export": 1,
        "chat": {"version": 2, "id": "x", "created_at": 1,
                 "agents": [{"number": 0, "profile": "agent0",
                             "history": {"current": {"messages": [{"no_ai_field": 1}]}}}]},
        "files": {"messages/1.txt": "first"},
    }  # fmt: skip
    with pytest.raises(UserError, match="cannot be restored"):
        chats.import_chat(document)
    document["files"] = {"messages/1.txt": "ok", "../evil": "x"}
    with pytest.raises(UserError, match="unexpected file"):
        chats.import_chat(document)
    folder = usr_dir / "chats"
    assert not folder.exists() or list(folder.iterdir()) == []


def test_saved_chats_are_listed_at_start_and_read_when_opened(chats, llm, usr_dir):
    llm.script(Reply(answer("hello")))
    context = chats.new_chat()
    context.communicate(UserMessage("hi")).result(30)
    chats.rename(context.id, "Listed")
    again, runtime = reload(usr_dir)
    try:
        assert again.registry.get(context.id) is None  # not read yet
        [entry] = again.summaries(lambda c: {})
        assert entry["id"] == context.id and entry["name"] == "Listed"
        assert len(again) == 1
        restored = again.get(context.id)  # read now
        assert "hello" in [i.content for i in restored.log.items]  # memorizing may follow
        assert again.registry.get(context.id) is restored
    finally:
        runtime.stop()


def test_a_summary_older_than_its_chat_file_is_not_trusted(chats, usr_dir):
    context = chats.new_chat()
    chats.rename(context.id, "Old name")
    path = usr_dir / "chats" / context.id / "chat.json"
    data = json.loads(path.read_text())
    data["name"] = "Edited by hand"
    path.write_text(json.dumps(data))
    again, runtime = reload(usr_dir)
    try:
        # Read whole at start, since its summary no longer matches.
        assert again.registry.get(context.id).name == "Edited by hand"
    finally:
        runtime.stop()


def test_a_chat_damaged_after_listing_is_set_aside_when_opened(chats, usr_dir):
    context = chats.new_chat()
    again, runtime = reload(usr_dir)
    try:
        (usr_dir / "chats" / context.id / "chat.json").write_text('{"broken": ')
        with pytest.raises(UserError, match="is damaged and was set aside"):
            again.get(context.id)
        assert [d.id for d in again.damaged] == [context.id] and len(again) == 0
    finally:
        runtime.stop()


SLOW_TOOL = """
import asyncio

from core.tool import Response, Tool, ToolArgs


class SlowArgs(ToolArgs):
    seconds: float


class Slow(Tool):
    Args = SlowArgs

    async def execute(self, args):
        await asyncio.sleep(args.seconds)
        return Response(message="slept")
"""


def test_the_step_a_crash_cut_is_marked_interrupted(chats, llm, usr_dir, monkeypatch):
    """After a restart the cut command's card carried no mark: it read as if it still ran,
    or had ended well. The step before it, which ended, keeps no mark."""
    make_profile(usr_dir, "sleeper", tools={"slow": SLOW_TOOL})
    monkeypatch.setenv("CADRE_AGENT_PROFILE", "sleeper")
    llm.script(Reply(reply("slow", seconds=0)), Reply(reply("slow", seconds=60)))
    context = chats.new_chat()
    run = context.communicate(UserMessage("Sleep twice."))

    def cut_step_saved() -> bool:
        saved = persist_chat.read_chat(context.id).log.get("items", [])
        return len([i for i in saved if i["type"] == "tool"]) == 2

    wait_for(cut_step_saved, timeout=20, what="the second call saved while it runs")
    crash(context, run, usr_dir)

    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        marks = [(i.type, i.kvps.get("status")) for i in restored.log.items
                 if i.type in ("agent", "tool")]  # fmt: skip
        assert marks == [("agent", None), ("tool", None),
                         ("agent", "interrupted"), ("tool", "interrupted")]  # fmt: skip
    finally:
        runtime.stop()
