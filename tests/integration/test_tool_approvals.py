"""The tool policy end to end (helpers/tool_rules.py, core/tooling/approval_gate.py): rules
that ask hold a call until a person answers it through the API, for a file write, a real
MCP server's tool and the real browser; a denial's reason reaches the model; a rule that
denies refuses; a held call survives a restart; siblings each hold their own.

One MCP server (the SDK's own, over stdio) and one web site serve the whole module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.agent_types import UserMessage
from core.chat import Chat
from helpers.runtime import AgentRuntime
from initialize import agent_config
from mcp_client.supervisor import McpSupervisor
from store import persist_chat
from tests.integration.test_parallel_subordinates import TASKS, delegate_all, task_is
from tests.integration.test_persistence import crash, reload
from tests.integration.test_restore import chats  # noqa: F401 - the fixture
from tests.support.agents import answer, project_settings, reply, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.mcp_servers import read_pid, servers_text, stdio_entry
from tests.support.web_pages import start_site

KEY = {"X-API-Key": "api-secret"}
#: Seconds a test waits for the MCP server to start: generous, the CPU is shared.
START = 60.0


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("approvals")


@pytest.fixture(scope="module")
def runtime(folder: Path) -> Iterator[AgentRuntime]:
    """The agents' loop with an MCP client connected to the test server `calc` (replaces the
    per-test runtime: the server starts once for the module)."""
    rt = AgentRuntime().start()
    supervisor = rt.provide(McpSupervisor(rt))
    supervisor.apply(servers_text(calc=stdio_entry(folder / "calc.pid")))
    states = lambda: {s.name: s.state for s in supervisor.statuses()}  # noqa: E731
    wait_for(lambda: states().get("calc") == "ready", START, "the MCP server")
    yield rt
    read_pid(folder / "calc.pid")
    supervisor.stop()
    rt.stop()


@pytest.fixture(scope="module")
def site():
    website = start_site()
    yield website
    website.stop()


@pytest.fixture
def rules(monkeypatch, llm):
    """Set the tool rules (and the API's key) as the environment gives them."""
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    llm.add_rule(model_is("util-model"), Reply("Held calls"))  # the chat's name

    def set_rules(*entries: dict) -> None:
        monkeypatch.setenv("CADRE_TOOL_RULES", json.dumps(list(entries)))

    return set_rules


def agent_requests(llm) -> list:
    return [r for r in llm.chat_requests() if r.body["model"] != "util-model"]


def chat_view(http, chat_id: str) -> dict:
    return http.get(f"/api/v1/chats/{chat_id}", headers=KEY).json


def held(http, chat_id: str, count: int = 1) -> list[dict]:
    """The chat's held calls, once there are `count` of them."""

    def listed() -> list[dict]:
        calls = chat_view(http, chat_id)["approvals"]
        return calls if len(calls) >= count else []

    return wait_for(listed, what=f"{count} held call(s)")


def start(http, message: str) -> str:
    started = http.post("/api/v1/message", headers=KEY, json={"message": message, "wait": False})
    assert started.status_code == 200, started.json
    return started.json["context_id"]


def finished(http, chat_id: str) -> None:
    wait_for(lambda: not chat_view(http, chat_id)["running"], 30, "the run's end")


def decide(http, approval: str, decision: str, **extra: str):
    return http.post(f"/api/v1/approvals/{approval}", headers=KEY,
                     json={"decision": decision, **extra})  # fmt: skip


def test_a_write_waits_for_its_answer_through_the_api(rules, http, sio, llm, usr_dir):
    rules({"tool": "text_editor:write", "rule": "ask"})
    llm.script(Reply(reply("text_editor:write", path="a.txt", content="hello\n")),
               Reply(answer("Written.")))  # fmt: skip
    chat_id = start(http, "write it")
    [call] = held(http, chat_id)
    assert {k: call[k] for k in ("agent", "tool", "args")} == {
        "agent": "A0", "tool": "text_editor:write",
        "args": {"path": "a.txt", "content": "hello\n"}}  # fmt: skip
    assert not (usr_dir / "workdir" / "a.txt").exists()  # held, not run
    # The chat list's badge, the agent tree's mark and the log item's question.
    view = chat_view(http, chat_id)
    assert view["chat"]["approvals"] == 1
    assert view["agents"][0]["held"] == "text_editor:write"
    [item] = [i for i in view["log"] if i["id"] in call["id"]]
    assert item["kvps"]["approval"] == "pending"
    # And the notifications: one entry, for the chat's owner.
    listed = sio.emit("notifications:list", {}, callback=True)["items"]
    assert [(n["kind"], n["title"], n["chat_id"]) for n in listed] == [
        ("approval", "Waiting for your answer", chat_id)]  # fmt: skip
    assert "A0 wants to use text_editor:write" in listed[0]["message"]

    allowed = decide(http, call["id"], "allow")
    assert allowed.status_code == 200 and allowed.json["tool"] == "text_editor:write"
    finished(http, chat_id)
    assert (usr_dir / "workdir" / "a.txt").read_text() == "hello\n"
    view = chat_view(http, chat_id)
    assert view["approvals"] == [] and view["chat"]["approvals"] == 0
    assert view["agents"][0]["held"] is None
    # Answered once: a second answer finds nothing, in words.
    again = decide(http, call["id"], "deny")
    assert again.status_code == 404 and "no tool call waits" in again.json["error"]


def test_a_denial_s_reason_reaches_the_model_and_nothing_runs(rules, http, llm, usr_dir):
    rules({"tool": "text_editor", "rule": "ask"})
    llm.script(Reply(reply("text_editor:write", path="b.txt", content="x")),
               Reply(answer("Understood.")))  # fmt: skip
    chat_id = start(http, "write it")
    [call] = held(http, chat_id)
    denied = decide(http, call["id"], "deny", reason="write it to notes.md instead")
    assert denied.status_code == 200
    finished(http, chat_id)
    told = agent_requests(llm)[1].messages[-1]["content"]
    assert "The user denied the call text_editor:write" in told
    assert "write it to notes.md instead" in told
    assert not (usr_dir / "workdir" / "b.txt").exists()
    [item] = [i for i in chat_view(http, chat_id)["log"] if i["id"] in call["id"]]
    assert item["kvps"]["approval"] == "denied"
    assert item["kvps"]["approval_reason"] == "write it to notes.md instead"


def test_a_rule_that_denies_refuses_without_asking(rules, http, llm, usr_dir):
    rules({"tool": "text_editor", "rule": "deny"}, {"tool": "text_editor:read", "rule": "allow"})
    (usr_dir / "workdir").mkdir(exist_ok=True)
    (usr_dir / "workdir" / "c.txt").write_text("kept\n")
    llm.script(Reply(reply("text_editor:write", path="c.txt", content="gone")),
               Reply(reply("text_editor:read", path="c.txt")),
               Reply(answer("Done.")))  # fmt: skip
    chat_id = start(http, "try")
    finished(http, chat_id)
    refused, read = (r.messages[-1]["content"] for r in agent_requests(llm)[1:3])
    assert "refused by a rule of the tool policy" in refused and "text_editor:write" in refused
    assert "kept" in read
    assert (usr_dir / "workdir" / "c.txt").read_text() == "kept\n"
    assert chat_view(http, chat_id)["approvals"] == []


def test_an_mcp_tool_waits_for_its_answer(rules, http, llm):
    rules({"tool": "mcp:calc:add", "rule": "ask"})
    llm.script(Reply(reply("calc.add", a=2, b=3)), Reply(answer("Five.")))
    chat_id = start(http, "add")
    [call] = held(http, chat_id)
    assert call["tool"] == "mcp:calc:add" and call["args"] == {"a": 2, "b": 3}
    assert len(agent_requests(llm)) == 1
    assert decide(http, call["id"], "allow").status_code == 200
    finished(http, chat_id)
    assert "5" in agent_requests(llm)[1].messages[-1]["content"]


def test_browser_open_waits_for_its_answer(rules, http, llm, site):
    rules({"tool": "browser:open", "rule": "ask"})
    llm.script(Reply(reply("browser:open", url=site.url + "/")), Reply(answer("Read.")))
    chat_id = start(http, "browse")
    [call] = held(http, chat_id)
    assert call["tool"] == "browser:open" and call["args"] == {"url": site.url + "/"}
    assert decide(http, call["id"], "allow").status_code == 200
    finished(http, chat_id)
    assert "Welcome to the test shop" in agent_requests(llm)[1].messages[-1]["content"]


def test_an_approval_of_no_chat_or_no_call_is_a_404_in_words(rules, http, sio):
    chat = sio.emit("chat:new", {}, callback=True)["chat"]
    for approval in (f"{chat['id']}.nothing", "nochat.nothing"):
        answer_ = decide(http, approval, "allow")
        assert answer_.status_code == 404 and "no tool call waits" in answer_.json["error"]
    bad = decide(http, "no-dot", "allow")
    assert bad.status_code == 400 and "no approval's id" in bad.json["error"]
    wrong = decide(http, f"{chat['id']}.x", "maybe")
    assert wrong.status_code == 400 and "decision" in wrong.json["error"]


def test_a_held_call_survives_a_restart_and_goes_on_once_allowed(chats, llm, usr_dir, monkeypatch):  # noqa: F811
    monkeypatch.setenv("CADRE_TOOL_RULES", '[{"tool": "text_editor:write", "rule": "ask"}]')
    llm.add_rule(model_is("util-model"), Reply("Held"))
    llm.script(Reply(reply("text_editor:write", path="later.txt", content="after\n")))
    context = chats.new_chat()
    run = context.communicate(UserMessage("write it"))
    [item_id] = wait_for(lambda: chats.runtime.call(context.approvals.pending), what="held")
    # On disk, held (the hold is saved at once), before the process "dies".
    wait_for(lambda: persist_chat.load_chat(context.id).approvals == 1, what="the saved hold")
    crash(context, run, usr_dir)

    manager, runtime = reload(usr_dir)
    try:
        back = manager.get(context.id)
        assert runtime.call(back.approvals.pending) == [item_id]
        [item] = [i for i in back.log.items if i.id == item_id]
        assert item.kvps["approval"] == "pending" and back.interrupted
        assert not (usr_dir / "workdir" / "later.txt").exists()
        llm.script(Reply(answer("Written after the restart.")))
        back.approve(item_id, True)  # the run goes on with the held call
        wait_for(lambda: (usr_dir / "workdir" / "later.txt").exists(), what="the write")
        wait_for(lambda: not back.running and not back.interrupted, what="the run's end")
        last = agent_requests(llm)[-1].messages
        assert "later.txt" in last[-1]["content"]  # the tool's result, where its call was
        assert last[-2]["role"] == "assistant" and "text_editor:write" in last[-2]["content"]
        assert item.kvps["approval"] == "allowed"
        assert any(i.type == "response" and "after the restart" in i.content
                   for i in back.log.items)  # fmt: skip
    finally:
        runtime.stop()


def test_three_siblings_each_hold_their_own_call(make_context, llm, usr_dir):
    for task in TASKS:
        name = task.split(":")[0].split()[-1].lower()
        llm.add_rule(task_is(task.split(":")[0]),
                     Reply(reply("text_editor:write", path=f"{name}.txt", content=name)),
                     times=1)  # fmt: skip
        llm.add_rule(task_is(task.split(":")[0]), Reply(answer(f"{name} written")))
    llm.script(delegate_all(*TASKS), Reply(answer("All three written.")))
    context = make_context(tool_rules=[{"tool": "text_editor:write", "rule": "ask"}])
    run = context.communicate(UserMessage("Write three files."))
    call = context.runtime.call
    waiting = wait_for(lambda: len(call(context.approvals.held)) == 3 and
                       call(context.approvals.held), what="three held calls")  # fmt: skip
    assert sorted(h.agent for h in waiting) == ["A1.1", "A1.2", "A1.3"]
    work = usr_dir / "workdir"
    for done, one in enumerate(sorted(waiting, key=lambda h: h.agent), start=1):
        context.approve(one.id, True)
        path = work / one.args["path"]
        wait_for(path.exists, what=f"{one.agent}'s write")
        left = sorted(h.agent for h in call(context.approvals.held))
        assert left == sorted(h.agent for h in waiting)[done:]  # the others still held
        written = sorted(p.name for p in work.iterdir())
        assert len(written) == done
    assert run.result(30) == "All three written."


ASK_WRITE = [{"tool": "text_editor:write", "rule": "ask"}]


def test_a_wait_past_its_limit_denies_in_a_scheduled_run(make_context, llm, usr_dir):
    llm.script(Reply(reply("text_editor:write", path="late.txt", content="x")),
               Reply(answer("Nobody answered.")))  # fmt: skip
    # approval_timeout_action (pause) is for runs a person started; a task's run denies.
    context = make_context(tool_rules=ASK_WRITE, approval_timeout=0.2)
    context.task_run = "nightly"
    assert context.communicate(UserMessage("write")).result(30) == "Nobody answered."
    told = agent_requests(llm)[1].messages[-1]["content"]
    assert "Nobody allowed the call text_editor:write within 0.2 s" in told
    assert not (usr_dir / "workdir" / "late.txt").exists()
    assert [i.kvps["approval"] for i in context.log.items if "approval" in i.kvps] == ["denied"]


def test_a_wait_past_its_limit_pauses_the_run_and_the_call_still_waits(make_context, llm, usr_dir):
    llm.script(Reply(reply("text_editor:write", path="paused.txt", content="x")),
               Reply(answer("Written at last.")))  # fmt: skip
    context = make_context(tool_rules=ASK_WRITE, approval_timeout=0.2)
    run = context.communicate(UserMessage("write"))
    wait_for(lambda: context.paused, what="the pause")
    [held_call] = context.runtime.call(context.approvals.held)
    assert any(i.type == "warning" and "Paused: nobody answered" in i.heading
               for i in context.log.items)  # fmt: skip
    context.approve(held_call.id, True)
    wait_for((usr_dir / "workdir" / "paused.txt").exists, what="the write")
    context.resume()
    assert run.result(30) == "Written at last."


def test_allow_always_lasts_for_the_chat_or_is_saved_as_a_rule(rules, http, sio, llm, usr_dir):
    # The rules are the settings file's here (no CADRE_TOOL_RULES), which an answer adds to.
    stored = http.post("/api/settings", json={"tool_rules": ASK_WRITE})
    assert stored.status_code == 200, stored.json
    write = lambda name: Reply(reply("text_editor:write", path=name, content=name))  # noqa: E731
    llm.script(write("one.txt"), write("two.txt"), Reply(answer("Both.")))
    chat_id = start(http, "write two")
    [first] = held(http, chat_id)
    assert decide(http, first["id"], "allow", always="chat").status_code == 200
    finished(http, chat_id)  # the second write was not held: allowed for the rest of it
    assert {p.name for p in (usr_dir / "workdir").iterdir()} == {"one.txt", "two.txt"}

    llm.script(write("three.txt"), Reply(answer("Three.")))
    other = start(http, "another chat")
    [third] = held(http, other)  # a new chat asks again
    item = third["id"].split(".")[1]
    ack = sio.emit("chat:approve", {"chat_id": other, "item_id": item, "approved": True,
                                    "always": "rule"}, callback=True)  # fmt: skip
    assert ack == {"ok": True}
    finished(http, other)
    saved = json.loads((usr_dir / "settings.json").read_text())["tool_rules"]
    assert saved == [{"tool": "text_editor:write", "rule": "allow"}]  # in place of the ask
    llm.script(write("four.txt"), Reply(answer("Four.")))
    finished(http, start(http, "a third chat"))  # not held: the saved rule allows it
    assert (usr_dir / "workdir" / "four.txt").exists()


def test_a_project_s_rules_ask_or_deny_more_never_less(runtime, llm, usr_dir):
    project_settings(usr_dir, "site", {"tool_rules": [
        {"tool": "text_editor:write", "rule": "deny"},
        {"tool": "text_editor:read", "rule": "allow"},  # left out: a project only adds
    ]})  # fmt: skip
    (usr_dir / "workdir").mkdir(exist_ok=True)
    (usr_dir / "workdir" / "r.txt").write_text("secret plans\n")
    llm.script(Reply(reply("text_editor:write", path="w.txt", content="x")),
               Reply(reply("text_editor:read", path="r.txt")),
               Reply(answer("Neither.")))  # fmt: skip
    rules = {"tool_rules": [{"tool": "text_editor:read", "rule": "deny"}]}
    context = Chat(agent_config(rules, project="site"), runtime, project="site")
    assert context.communicate(UserMessage("try")).result(30) == "Neither."
    wrote, read = (r.messages[-1]["content"] for r in agent_requests(llm)[1:3])
    assert "refused by a rule" in wrote and "text_editor:write" in wrote
    assert "refused by a rule" in read and "secret plans" not in read
    assert not (usr_dir / "workdir" / "w.txt").exists()

    # Outside the project, its rules do not apply.
    llm.script(Reply(reply("text_editor:write", path="w.txt", content="x")), Reply(answer("Ok.")))
    elsewhere = Chat(agent_config(), runtime)
    assert elsewhere.communicate(UserMessage("write")).result(30) == "Ok."
    assert (usr_dir / "workdir" / "w.txt").read_text() == "x"


def test_siblings_held_at_a_restart_are_each_held_again_and_released_one_by_one(
    chats,  # noqa: F811
    llm,
    usr_dir,
    monkeypatch,
):
    monkeypatch.setenv("CADRE_TOOL_RULES", '[{"tool": "text_editor:write", "rule": "ask"}]')
    llm.add_rule(model_is("util-model"), Reply("Held"))
    for task in TASKS:
        name = task.split(":")[0].split()[-1].lower()
        llm.add_rule(task_is(task.split(":")[0]),
                     Reply(reply("text_editor:write", path=f"{name}.txt", content=name)),
                     times=1)  # fmt: skip
        llm.add_rule(task_is(task.split(":")[0]), Reply(answer(f"{name} written")))
    llm.script(delegate_all(*TASKS))
    context = chats.new_chat()
    run = context.communicate(UserMessage("Write three files."))
    wait_for(lambda: len(chats.runtime.call(context.approvals.pending)) == 3, what="three held")
    wait_for(lambda: persist_chat.load_chat(context.id).approvals == 3, what="the saved holds")
    crash(context, run, usr_dir)

    manager, runtime = reload(usr_dir)
    try:
        back = manager.get(context.id)
        waiting = sorted(runtime.call(back.approvals.held), key=lambda h: h.agent)
        assert [h.agent for h in waiting] == ["A1.1", "A1.2", "A1.3"]
        llm.script(Reply(answer("All three written.")))
        work = usr_dir / "workdir"
        for done, one in enumerate(waiting, start=1):
            back.approve(one.id, True)  # the first answer continues the run
            path = work / one.args["path"]
            wait_for(path.exists, what=f"{one.agent}'s write")
            # The others are held again, under the same ids, until each is answered.
            left = sorted(h.id for h in waiting[done:])
            still = lambda left=left: sorted(runtime.call(back.approvals.pending)) == left  # noqa: E731
            wait_for(still, what="the others still held")
            assert len(list(work.iterdir())) == done
        wait_for(lambda: not back.running and not back.interrupted, what="the run's end")
        assert any(i.type == "response" and i.content == "All three written."
                   for i in back.log.items)  # fmt: skip
    finally:
        runtime.stop()
