"""Plugins' run-event handlers through a real chat store: how a handler may be written,
which handlers get the chat, a call changed before it goes out, history entries and a
subordinate's end heard, and the shipped chat-naming plugin when Cadre lets go of a
chat (deleted, handed over) while its naming is under way."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from core import plugin_handlers
from core.agent_types import UserMessage
from core.events import ChatSaved, RunEnded
from initialize import ChatFactory
from store.chats import ChatManager
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is

HANDLERS = """
from pathlib import Path
HERE = Path(__file__).parent

def _record(event):
    (HERE / "ended.txt").write_text("heard")

on_run_ended = _record          # bound by assignment, as a decorator factory would

async def on_tool_ended(event, seen=None):   # an optional parameter of its own
    (HERE / "seen.txt").write_text(type(seen).__name__)
"""


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    return ChatManager(runtime, ChatFactory(runtime))


def plugin(usr_dir, name: str, handlers: str):
    """A plugin of the user's with `handlers` as its handlers.py; its folder."""
    root = usr_dir / "plugins" / name
    root.mkdir(parents=True)
    (root / "plugin.yaml").write_text(f"name: {name}\n")
    (root / "handlers.py").write_text(handlers)
    return root


def ask(chats: ChatManager, llm, question: str, said: str) -> None:
    """A new chat's run of `question`, which the model answers `said`."""
    llm.script(Reply(answer(said)))
    assert chats.new_chat().communicate(UserMessage(question)).result(30) == said


def test_a_handler_bound_by_assignment_runs_and_an_optional_parameter_gets_no_chat(
    chats, llm, usr_dir
):
    root = plugin(usr_dir, "probe", HANDLERS)
    ask(chats, llm, "what is 17*23?", "391")
    wait_for(lambda: (root / "ended.txt").exists(), what="on_run_ended")
    assert (root / "seen.txt").read_text() == "NoneType"  # the response tool ended


@pytest.mark.parametrize(
    "text, kind",
    [
        ("def _r(event):\n    pass\n\non_run_ended = _r\n", RunEnded),
        ("try:\n    import json\nexcept ImportError:\n    json = None\nelse:\n"
         "    def on_chat_saved(event):\n        pass\n", ChatSaved),
        ("from elsewhere import on_chat_saved\n", ChatSaved),
    ],
)  # fmt: skip
def test_a_handler_is_found_however_the_file_binds_its_name(tmp_path, text, kind):
    path = tmp_path / "handlers.py"
    path.write_text(text)
    assert kind in plugin_handlers._kinds_in(path)


def test_only_an_async_handler_asking_for_it_is_given_the_chat():
    async def wants(event, chat): ...
    async def named(event, chat=None): ...
    async def optional(event, verbose=False): ...
    def plain(event, chat): ...

    asks = [plugin_handlers._takes_chat(h) for h in (wants, named, optional, plain)]
    assert asks == [True, True, False, False]


def _naming_held(chats, llm) -> tuple[object, threading.Event]:
    """A chat whose naming call is held at the fake model server until the gate opens."""
    gate = threading.Event()
    llm.add_rule(model_is("util-model"), Reply("Multiplying numbers", gate=gate))
    llm.script(Reply(answer("391")))
    context = chats.new_chat()
    context.communicate(UserMessage("what is 17*23?")).result(30)
    wait_for(lambda: llm.chat_requests("util-model"), what="the naming call")
    return context, gate


def test_deleting_a_chat_stops_its_naming(chats, llm, runtime):
    context, gate = _naming_held(chats, llm)
    try:
        chats.delete(context.id)  # tells the plugin (ChatClosed) before it returns
        pending = list(context.events._pending)

        async def settled() -> None:
            await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 10)

        # Cancelled, the naming ends without its answer; going on, it would wait for the gate.
        runtime.submit(settled()).result(15)
    finally:
        gate.set()
    assert context.name == ""


def test_a_chat_handed_over_while_being_named_is_named(chats, llm):
    context, gate = _naming_held(chats, llm)
    fresh = chats.hand_over(context.id, None, None)
    gate.set()
    wait_for(lambda: fresh.name == "Multiplying numbers", what="the fresh chat's name")


WATCHER = """
import json
from pathlib import Path
HERE = Path(__file__).parent

def _note(line):
    with open(HERE / "heard.txt", "a") as out:
        out.write(json.dumps(line) + "\\n")

async def on_model_calling(event):
    if event.role == "chat":
        event.messages[-1]["content"] += "\\nA line from the plugin."

def on_history_added(event):
    _note(["history", event.ctx.name, event.kind])

def on_monologue_ended(event):
    _note(["ended", event.ctx.name, event.answer])
"""


def test_handlers_change_a_call_and_hear_history_and_a_subordinates_end(chats, llm, usr_dir):
    root = plugin(usr_dir, "watcher", WATCHER)
    llm.script(
        Reply(reply("call_subordinate", message="Add 2 and 2.", reset=True)),
        Reply(answer("4")),  # the subordinate
        Reply(answer("It is 4.")),
    )
    context = chats.new_chat()
    assert context.communicate(UserMessage("What is 2+2?")).result(30) == "It is 4."
    sent = [r.body["messages"][-1]["content"] for r in llm.chat_requests("chat-model")]
    assert len(sent) == 3 and all(s.endswith("A line from the plugin.") for s in sent)
    heard = root / "heard.txt"
    wait_for(lambda: heard.exists() and '"A0", "It is 4."' in heard.read_text(), what="A0's end")
    lines = [json.loads(line) for line in heard.read_text().splitlines()]
    assert ["ended", "A1", "4"] in lines and lines[-1] == ["ended", "A0", "It is 4."]
    assert ["history", "A0", "user"] in lines and ["history", "A1", "ai"] in lines
    assert ["history", "A0", "tool"] in lines  # the subordinate's answer, as its result


SLOW_LISTENER = """
import json, time
from pathlib import Path
HERE = Path(__file__).parent

def _note(line):
    with open(HERE / "heard.txt", "a") as out:
        out.write(json.dumps(line) + "\\n")

def on_history_added(event):
    time.sleep(0.3)  # slower than the events after it come
    _note(["history", event.kind])

def on_monologue_ended(event):
    _note(["ended", event.answer])
"""


def test_plain_handlers_hear_a_chats_events_in_the_order_they_happened(chats, llm, usr_dir):
    root = plugin(usr_dir, "listener", SLOW_LISTENER)
    ask(chats, llm, "what is 17*23?", "391")
    heard = root / "heard.txt"
    wait_for(lambda: heard.exists() and '"391"' in heard.read_text(), what="the end")
    lines = [json.loads(line) for line in heard.read_text().splitlines()]
    assert lines == [["history", "user"], ["history", "ai"], ["ended", "391"]]


SAVED_READER = """
import json
from pathlib import Path
HERE = Path(__file__).parent

def on_run_ended(event):  # a plain handler reads the chat's file: the end is in it
    [saved] = [json.loads(f.read_text()) for f in (HERE.parents[1] / "chats").glob("*/chat.json")]
    (HERE / "read.txt").write_text(str(saved["running"] is False))

def on_chat_saved(event):  # told inside the save of the run's end: heard, never waited for
    with open(HERE / "saves.txt", "a") as out:
        out.write("saved\\n")
"""


def test_a_plain_handler_of_a_runs_end_reads_it_saved(chats, llm, usr_dir):
    root = plugin(usr_dir, "reader", SAVED_READER)
    ask(chats, llm, "what is 43*91?", "Saved answer 3913")
    read = root / "read.txt"
    wait_for(read.exists, what="on_run_ended")
    assert read.read_text() == "True"
    assert (root / "saves.txt").exists()
