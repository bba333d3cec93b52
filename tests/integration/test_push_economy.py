"""Pushing only what someone can see: a chat no page watches is not pushed (a page that
subscribes later still misses nothing), a chat-list row is sent when it changes."""

from __future__ import annotations

from core.agent_types import UserMessage
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.sockets import ack


def merged(first: list[dict], pushes: list[dict]) -> dict[int, dict]:
    """The page's view: its subscription's items, then every pushed change, newest wins."""
    view: dict[int, dict] = {}
    for item in first + [i for push in pushes for i in push["items"]]:
        if item["version"] >= view.get(item["no"], {}).get("version", -1):
            view[item["no"]] = item
    return view


def test_a_page_subscribing_mid_run_ends_with_the_whole_log(sio, server, llm):
    llm.add_rule(model_is("util-model"), Reply("Late page"))
    llm.script(
        Reply(reply("teleport", to="a")),
        Reply(answer("slow " * 60), chunk_size=4, delay=0.01),
    )
    chat = server.app.extensions["cadre.chats"].new_chat()
    run = chat.communicate(UserMessage("go"))
    # Unwatched so far: a tool step went by, the answer is streaming.
    wait_for(lambda: any(i.type == "response" for i in chat.log.items), what="the answer")
    sub = ack(sio, "chat:subscribe", {"chat_id": chat.id})
    assert sub["ok"] and sub["items"]
    assert run.result(30).startswith("slow")
    pushes: list[dict] = []

    def caught_up() -> bool:
        pushes.extend(e["args"][0] for e in sio.get_received() if e["name"] == "log")
        view = merged(sub["items"], pushes)
        return [(n, i["version"]) for n, i in sorted(view.items())] == [
            (i.no, i.version) for i in chat.log.items
        ]

    wait_for(caught_up, what="the page's log to equal the chat's")
    view = merged(sub["items"], pushes)
    assert [i["content"] for _, i in sorted(view.items())] == [i.content for i in chat.log.items]


def test_a_chat_list_row_is_sent_when_it_changes_not_after_every_step(sio, server, llm):
    llm.add_rule(model_is("util-model"), Reply("Rows"))
    llm.script(*(Reply(reply("teleport", to=str(n))) for n in range(2)), Reply(answer("done")))
    assert ack(sio, "chats:list")["ok"]  # a page showing the chat list
    chat = server.app.extensions["cadre.chats"].new_chat()
    assert chat.communicate(UserMessage("go")).result(30) == "done"
    wait_for(lambda: chat.name == "Rows", what="the automatic name")
    deltas: list[dict] = []

    def named_row_arrived() -> bool:
        deltas.extend(e["args"][0] for e in sio.get_received() if e["name"] == "chats:delta")
        return any(d["chat"].get("name") == "Rows" for d in deltas)

    wait_for(named_row_arrived, what="the renamed row")
    rows = [d["chat"] for d in deltas if d["chat"]["id"] == chat.id]
    assert any(r["running"] for r in rows) and not rows[-1]["running"]
    # Saved after every step, but each row sent differs from the one before it.
    assert all(a != b for a, b in zip(rows, rows[1:], strict=False)), rows
