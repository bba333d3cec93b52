"""A chat's life at its edges: imported, deleted while a message arrives, its runtime stopped."""

from __future__ import annotations

import asyncio
import threading

from core.agent_types import UserMessage
from helpers.runtime import AgentRuntime
from initialize import ChatFactory
from store import persist_chat
from store.chats import ChatManager
from tests.support import probe
from tests.support.agents import make_profile, reply, wait_for
from tests.support.fake_llm import Reply
from tests.support.sockets import ack

#: A tool that is slow to stop: when cancelled it unwinds only once the test lets it
#: (as a process that takes its time to die), so a delete is seen half-way through.
SLOW_STOP_TOOL = """
import asyncio

from core.tool import Response, Tool
from tests.support import probe


class SlowStop(Tool):
    async def execute(self, args):
        probe.calls.append("working")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            probe.calls.append("stopping")
            await asyncio.to_thread(probe.gates["unwind"].wait, 20)
            raise
        return Response(message="done")
"""


def test_an_imported_chat_joins_no_project(http, server, usr_dir):
    (usr_dir / "projects" / "work").mkdir(parents=True)
    (usr_dir / "projects" / "work" / "settings.json").write_text('{"disabled_agents": []}')
    document = {
        "cadre_export": 1,
        "chat": {"version": 2, "id": "theirs", "created_at": 1, "name": "From a stranger",
                 "project": "work", "agents": [{"number": 0, "profile": "agent0"}]},
        "files": {},
    }  # fmt: skip
    answer = http.post("/api/chats/import", json=document)
    assert answer.status_code == 200, answer.json
    chat_id = answer.json["chat"]["id"]
    context = server.app.extensions["cadre.chats"].get(chat_id)
    assert context.project is None
    assert persist_chat.read_chat(chat_id).project is None


def test_a_message_sent_while_its_chat_is_deleted_is_refused(server, sio, llm, usr_dir):
    probe.reset()
    probe.gates["unwind"] = threading.Event()
    make_profile(usr_dir, "slow", tools={"slow_stop": SLOW_STOP_TOOL})
    llm.script(Reply(reply("slow_stop")))
    chats: ChatManager = server.app.extensions["cadre.chats"]
    context = chats.new_chat(agent_profile="slow")
    assert ack(sio, "chat:send", {"chat_id": context.id, "message": "work"})["ok"]
    wait_for(lambda: "working" in probe.calls, what="the tool working")

    deleting = threading.Thread(target=chats.delete, args=(context.id,))
    deleting.start()
    try:
        wait_for(lambda: "stopping" in probe.calls, what="the delete stopping the run")
        refused = ack(sio, "chat:send", {"chat_id": context.id, "message": "one more"})
    finally:
        probe.gates["unwind"].set()
        deleting.join(30)
    assert refused == {"ok": False, "error": "this chat is being deleted"}
    assert not deleting.is_alive() and chats.registry.get(context.id) is None
    assert not (usr_dir / "chats" / context.id).exists()
    assert len(llm.chat_requests()) == 1  # the refused message started nothing


def test_stopping_the_runtime_with_a_save_in_flight_leaves_no_task_pending(llm):
    """A task still pending when the loop closes is what Python reports at exit as
    "Task was destroyed but it is pending! ... Chat.save()"."""
    gate = threading.Event()
    llm.script(Reply(reply("response", text="late"), gate=gate))
    runtime = AgentRuntime().start()
    chats = ChatManager(runtime, ChatFactory(runtime))
    context = chats.new_chat()
    context.communicate(UserMessage("go"))
    wait_for(lambda: llm.chat_requests(), what="the model call in flight")
    try:
        runtime.stop()  # the run is cancelled; its last save starts as it unwinds
    finally:
        gate.set()
    assert runtime.loop.is_closed()
    left = [repr(task.get_coro()) for task in asyncio.all_tasks(runtime.loop)]
    assert left == []
