"""Text from outside that is not valid Unicode (a lone surrogate) never breaks a chat.

A model's reply, a tool's output, a plugin's agent data: whatever holds a lone
surrogate is stored with it replaced (U+FFFD), the chat is saved, it goes on
working, and it comes back whole after a restart.
"""

from __future__ import annotations

import json
import os

import pytest

from core.agent_types import UserMessage
from initialize import ChatFactory
from store import persist_chat
from store.chats import ChatManager
from tests.integration.test_persistence import reload
from tests.support.agents import answer, history_text, make_profile, reply, wait_for
from tests.support.fake_llm import Reply, model_is

HALF = "\ud800"
REPLACED = "\ufffd"

#: Lists a folder as Python sees it: a file name that is not UTF-8 comes back with
#: lone surrogates standing for its bytes (PEP 383), as `os.listdir` gives them.
LIST_TOOL = """
import os

from core.tool import Response, Tool, ToolArgs


class ListArgs(ToolArgs):
    folder: str
    pad: int = 0


class ListFolder(Tool):
    Args = ListArgs

    async def execute(self, args):
        names = sorted(os.listdir(args.folder))
        return Response(message="files: " + ", ".join(names) + "." * args.pad)
"""

#: A plugin tool that keeps what it saw in the agent's data: a text with a lone
#: surrogate and an object that is not JSON.
KEEP_TOOL = """
from core.tool import Response, Tool, ToolArgs


class KeepArgs(ToolArgs):
    note: str


class Keep(Tool):
    Args = KeepArgs

    async def execute(self, args):
        self.agent.set_data("note", args.note + "\\ud800")
        self.agent.set_data("seen", {"when": object()})
        return Response(message="kept")
"""


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    llm.add_rule(model_is("util-model"), Reply("A name"))
    return ChatManager(runtime, ChatFactory(runtime))


def settled(chats: ChatManager, context) -> None:
    """Named after its first exchange (a background call that logs) and saved."""
    wait_for(lambda: context.name, what="the chat's name")
    chats.save_now(context)


def restored_log(usr_dir, chat_id: str) -> list[dict]:
    manager, runtime = reload(usr_dir)
    try:
        context = manager.get(chat_id)
        return runtime.call(context.log.to_list)
    finally:
        runtime.stop()


def test_a_lone_surrogate_in_a_streamed_reply_leaves_the_chat_working(chats, llm, usr_dir):
    # ensure_ascii=False keeps the half as a character in the reply text; the fake
    # server sends it on the wire as the JSON escape \\ud800 in the SSE data.
    broken = json.dumps(
        {"thoughts": [f"thinking {HALF} hard"], "headline": f"Answering {HALF}",
         "tool_name": "response", "tool_args": {"text": f"half {HALF} here"}},
        ensure_ascii=False,
    )  # fmt: skip
    llm.script(Reply(broken, chunk_size=7), Reply(answer("second answer")))
    context = chats.new_chat()

    first = context.communicate(UserMessage("first")).result(30)
    assert first == f"half {REPLACED} here"
    wait_for(lambda: not persist_chat.read_chat(context.id).running, what="the final save")
    second = context.communicate(UserMessage("second")).result(30)
    assert second == "second answer"
    settled(chats, context)

    live = chats.runtime.call(context.log.to_list)
    assert HALF not in json.dumps(live, ensure_ascii=False)
    assert f"half {REPLACED} here" in history_text(context.agent0)
    assert not [i for i in live if i["type"] == "error"]
    saved = persist_chat.read_chat(context.id)
    assert not saved.running and len(saved.log["items"]) == len(live)
    assert restored_log(usr_dir, context.id) == live


def test_a_lone_surrogate_in_a_tools_output_reaches_history_and_disk(chats, llm, usr_dir):
    folder = usr_dir / "odd"
    folder.mkdir()
    (folder / "plain.txt").write_text("x")
    (folder / os.fsdecode(b"caf\xe9.txt")).write_text("x")  # a Latin-1 name: not UTF-8
    make_profile(usr_dir, "lister", tools={"list_folder": LIST_TOOL})
    llm.script(
        Reply(reply("list_folder", folder=str(folder))),
        Reply(reply("list_folder", folder=str(folder), pad=600)),  # long: saved to a file
        Reply(answer("listed")),
        Reply(answer("still here")),
    )
    context = chats.new_chat(agent_profile="lister")
    assert context.communicate(UserMessage("list it")).result(30) == "listed"
    assert context.communicate(UserMessage("again")).result(30) == "still here"
    settled(chats, context)

    shown = f"caf{REPLACED}.txt"
    results = [m.content for m in context.agent0.history.output() if "files:" in m.content]
    assert len(results) == 2 and all(shown in r for r in results)
    saved = persist_chat.read_chat(context.id)
    assert json.dumps(saved.model_dump(), ensure_ascii=False).count(shown) >= 4
    long_file = usr_dir / "chats" / context.id / "messages" / "1.txt"
    assert shown in long_file.read_text(encoding="utf-8")
    assert len(restored_log(usr_dir, context.id)) == len(context.log.items)


def test_data_that_cannot_be_written_is_repaired_reported_once_and_saved(chats, llm, usr_dir):
    make_profile(usr_dir, "keeper", tools={"keep": KEEP_TOOL})
    llm.script(
        Reply(reply("keep", note="first")),
        Reply(answer("kept it")),
        Reply(reply("keep", note="second")),
        Reply(answer("kept again")),
    )
    context = chats.new_chat(agent_profile="keeper")
    assert context.communicate(UserMessage("keep one")).result(30) == "kept it"
    assert context.communicate(UserMessage("keep two")).result(30) == "kept again"
    settled(chats, context)

    live = chats.runtime.call(context.log.to_list)
    reports = [i for i in live if i["type"] == "warning" and i["heading"] == "Saved with repairs"]
    assert len(reports) == 1, [(i["type"], i["heading"]) for i in live]
    saved = persist_chat.read_chat(context.id)
    assert saved.agents[0].data["note"] == f"second{REPLACED}"
    assert isinstance(saved.agents[0].data["seen"]["when"], str)
    assert len(saved.log["items"]) == len(live)
    assert restored_log(usr_dir, context.id) == live


def test_an_import_with_lone_surrogates_is_made_valid_and_saved(chats, usr_dir):
    raw = (
        '{"cadre_export": 1, "files": {"messages/1.txt": "saved \\ud800 result"},'
        ' "chat": {"version": 2, "id": "x", "created_at": 1, "name": "odd \\udfff name",'
        ' "agents": [{"number": 0, "profile": "agent0", "history": {"current": {"messages":'
        ' [{"ai": false, "content": "hello \\ud800"}]}}}]}}'
    )
    context = chats.import_chat(json.loads(raw))
    assert context.name == f"odd {REPLACED} name (imported)"
    saved = persist_chat.read_chat(context.id)
    assert saved.agents[0].history["current"]["messages"][0]["content"] == f"hello {REPLACED}"
    result = usr_dir / "chats" / context.id / "messages" / "1.txt"
    assert result.read_text(encoding="utf-8") == f"saved {REPLACED} result"
