"""Secrets: usable by tools through §§secret(NAME), never in the log, chat files or prompts."""

from __future__ import annotations

import json
import logging

from core.agent_types import UserMessage
from helpers.secrets import MaskingFilter, SecretMasker
from initialize import ChatFactory
from store.chats import ChatManager
from tests.support import probe
from tests.support.agents import answer, make_profile, reply
from tests.support.fake_llm import Reply

TOKEN = "tok-9f8e7d6c5b4a"

SPY_TOOL = """
from typing import Annotated

from core.tool import EXPANDS_SECRETS, Response, Tool, ToolArgs
from tests.support import probe


class SpyArgs(ToolArgs):
    token: Annotated[str, EXPANDS_SECRETS]
    note: str = ""


class Spy(Tool):
    Args = SpyArgs

    async def execute(self, args):
        probe.calls.append(args.token)
        if args.note:
            probe.calls.append("note: " + args.note)
        return Response(message="the service said: authorised as " + args.token)
"""


def test_a_secret_reaches_the_tool_and_nothing_else(llm, runtime, usr_dir, monkeypatch):
    monkeypatch.setenv("CADRE_SECRETS", json.dumps({"SERVICE_TOKEN": TOKEN}))
    probe.reset()
    make_profile(usr_dir, "spy", tools={"spy": SPY_TOOL})
    llm.script(
        Reply(reply("spy", token="§§secret(SERVICE_TOKEN)", note="as §§secret(SERVICE_TOKEN)")),
        Reply(reply("spy", token="§§secret(NOPE)")),
        Reply(answer(f"Done; by the way the token is {TOKEN}")),
    )
    chats = ChatManager(runtime, ChatFactory(runtime))
    context = chats.new_chat(agent_profile="spy")
    context.communicate(UserMessage(f"Use the service; my token is {TOKEN}")).result(30)
    chats.save_now(context)

    # The value only in the argument marked for it; the note keeps the placeholder.
    assert probe.calls == [TOKEN, "note: as §§secret(SERVICE_TOKEN)"]
    prompts = json.dumps([r.body["messages"] for r in llm.chat_requests()])
    assert TOKEN not in prompts and "authorised as ***" in prompts
    assert "no secret named NOPE" in prompts
    log_text = json.dumps(context.log.to_list())
    assert TOKEN not in log_text and "***" in log_text
    saved = (usr_dir / "chats" / context.id / "chat.json").read_text()
    assert TOKEN not in saved


def test_a_raw_secret_in_an_argument_not_marked_for_it_reaches_the_tool_masked(
    llm, runtime, usr_dir, monkeypatch
):
    """The model may write the value itself (it was in the user's words): only an argument
    marked for secrets gets it; any other gets it masked."""
    monkeypatch.setenv("CADRE_SECRETS", json.dumps({"SERVICE_TOKEN": TOKEN}))
    probe.reset()
    make_profile(usr_dir, "spy", tools={"spy": SPY_TOOL})
    llm.script(Reply(reply("spy", token=TOKEN, note=f"sent {TOKEN}")), Reply(answer("Done.")))
    chats = ChatManager(runtime, ChatFactory(runtime))
    context = chats.new_chat(agent_profile="spy")
    context.communicate(UserMessage("Use the service.")).result(30)
    assert probe.calls == [TOKEN, "note: sent ***"]


def test_server_log_records_are_masked(caplog):
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "key is %s", (TOKEN,), None)
    MaskingFilter(SecretMasker([TOKEN])).filter(record)
    assert record.getMessage() == "key is ***"


def test_short_values_are_not_masked():
    assert SecretMasker(["ab", ""]).mask("ab cd") == "ab cd"
    assert not SecretMasker([])


def test_secrets_are_masked_in_the_settings_page_and_kept(http, usr_dir):
    from helpers.settings import Settings, save_settings

    save_settings(Settings(secrets={"SERVICE_TOKEN": TOKEN}))
    shown = http.get("/api/settings").json
    assert shown["secrets"] == {"SERVICE_TOKEN": "***"} and TOKEN not in json.dumps(shown)
    http.post("/api/settings", json={"secrets": {"SERVICE_TOKEN": "***", "OTHER": "v-12345"}})
    stored = json.loads((usr_dir / "settings.json").read_text())["secrets"]
    assert stored == {"SERVICE_TOKEN": TOKEN, "OTHER": "v-12345"}


def test_a_key_saved_while_running_is_masked_from_then_on(http, server, usr_dir):
    import logging as _logging

    from helpers.secrets import MaskingFilter, SecretMasker

    chats = server.app.extensions["cadre.chats"]
    context = chats.new_chat()
    handler = _logging.StreamHandler()
    handler.addFilter(MaskingFilter(SecretMasker([])))
    root = _logging.getLogger()
    root.addHandler(handler)
    try:
        http.post("/api/settings", json={"secrets": {"LATE": "late-secret-98765"}})
        chats.runtime.call(lambda: None)  # the refresh queued on the agents' loop has run
        item = chats.runtime.call(context.log.log, "info", "x", "it is late-secret-98765")
        assert item.content == "it is ***"
        record = _logging.LogRecord(
            "x", _logging.INFO, __file__, 1, "late-secret-98765", None, None
        )
        handler.filters[0].filter(record)
        assert record.getMessage() == "***"
    finally:
        root.removeHandler(handler)
