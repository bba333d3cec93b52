"""No secret value leaves a tool: not through delegation, document_query or memory.

Each test gives the model a `§§secret(NAME)` to use and then looks where the
value could have gone: the chat file and its export, the utility model's
request as the fake server received it, the memory store, the Memory API and
a later prompt.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from core import memory_use
from core.agent_types import UserMessage
from initialize import ChatFactory
from store.chats import ChatManager
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is

TOKEN = "tok-5a4b3c2d1e0f"
PLACEHOLDER = "§§secret(SERVICE_TOKEN)"


@pytest.fixture(autouse=True)
def _a_secret(monkeypatch):
    monkeypatch.setenv("CADRE_SECRETS", json.dumps({"SERVICE_TOKEN": TOKEN}))


def settled(chats: ChatManager, context) -> None:
    """Named after its first exchange (a background utility call) and saved."""
    wait_for(lambda: context.name, what="the chat's name")
    chats.save_now(context)


def test_a_delegated_task_with_a_secret_is_saved_and_exported_without_it(llm, runtime, usr_dir):
    llm.add_rule(model_is("util-model"), Reply("Calling the service"))
    task = f"Call the service with the token {PLACEHOLDER} and report the status."
    llm.script(
        Reply(reply("call_subordinate", message=task, profile="developer")),
        Reply(answer("The service answered 200.")),
        Reply(answer("It works.")),
    )
    chats = ChatManager(runtime, ChatFactory(runtime))
    context = chats.new_chat()
    assert context.communicate(UserMessage("Check the service.")).result(30) == "It works."
    settled(chats, context)

    saved = (usr_dir / "chats" / context.id / "chat.json").read_text(encoding="utf-8")
    assert TOKEN not in saved
    exported = json.dumps(chats.export(context.id), ensure_ascii=False)
    assert TOKEN not in exported
    # The subordinate got the placeholder: its own tools can still use the secret.
    assert context.agents()[1].task == task
    assert PLACEHOLDER in saved and PLACEHOLDER in exported


def test_document_query_sends_no_secret_to_the_utility_model(make_context, llm, usr_dir):
    work = usr_dir / "workdir"
    work.mkdir(parents=True)
    (work / "notes.txt").write_text(f"Deploy notes. The service token is {TOKEN}. Renew in May.")
    llm.add_rule(model_is("util-model"), Reply("Yes, and it is renewed in May."))
    llm.script(
        Reply(reply("document_query", document="notes.txt",
                    questions=[f"Is {PLACEHOLDER} the token in the notes?", "When to renew?"])),
        Reply(answer("It is renewed in May.")),
    )  # fmt: skip
    context = make_context()
    assert context.communicate(UserMessage("Read the notes.")).result(30).endswith("May.")

    util = [r.body for r in llm.chat_requests() if r.body["model"] == "util-model"]
    asked = [json.dumps(body, ensure_ascii=False) for body in util]
    assert any("Renew in May" in text for text in asked), "the document reached the model"
    assert not [text for text in asked if TOKEN in text]


def test_a_memory_with_a_secret_holds_none_in_the_store_the_api_or_a_later_prompt(
    http, server, llm, usr_dir
):
    llm.add_rule(model_is("util-model"), Reply("Staging deploys"))
    text = f"To deploy to staging, authenticate with the token {PLACEHOLDER} first."
    llm.script(
        Reply(reply("memory_save", text=text, tags=["staging", PLACEHOLDER])),
        Reply(answer("Saved.")),
        Reply(answer("Authenticate first.")),
    )
    chats: ChatManager = server.app.extensions["cadre.chats"]
    first = chats.new_chat()
    first.communicate(UserMessage("Remember how to deploy to staging.")).result(30)

    stored = b"".join(p.read_bytes() for p in (usr_dir / "memory").rglob("*") if p.is_file())
    assert TOKEN.encode() not in stored
    listed = http.get("/api/memory")
    assert listed.status_code == 200 and len(listed.json["memories"]) == 1
    assert TOKEN not in json.dumps(listed.json, ensure_ascii=False)
    assert listed.json["memories"][0]["text"] == text  # the placeholder, still usable
    searched = http.get("/api/memory", query_string={"q": "deploy to staging"})
    assert searched.json["memories"] and TOKEN not in json.dumps(searched.json)

    later = chats.new_chat()
    later.communicate(UserMessage("How do I deploy to staging?")).result(30)
    prompt = json.dumps(llm.chat_requests("chat-model")[-1].body["messages"], ensure_ascii=False)
    assert "authenticate with the token" in prompt and TOKEN not in prompt


def test_a_memory_saved_before_its_value_became_a_secret_is_masked_in_a_later_prompt(
    make_context, llm, monkeypatch
):
    monkeypatch.setenv("CADRE_SECRETS", "{}")  # not a secret yet: kept as written
    llm.script(
        Reply(reply("memory_save", text=f"The staging deploy token is {TOKEN}.")),
        Reply(answer("Saved.")),
    )
    make_context().communicate(UserMessage("Remember the staging deploy token.")).result(30)
    monkeypatch.setenv("CADRE_SECRETS", json.dumps({"SERVICE_TOKEN": TOKEN}))
    llm.script(Reply(answer("It is a secret now.")))
    make_context().communicate(UserMessage("What is the staging deploy token?")).result(30)
    prompt = json.dumps(llm.chat_requests()[-1].body["messages"], ensure_ascii=False)
    assert "The staging deploy token is ***." in prompt and TOKEN not in prompt


def test_what_reaches_the_memory_store_is_masked_whoever_hands_it_over(make_context, usr_dir):
    """Tools and the utility model mask what they hand over already; the store masks again,
    for any way in that does not (core/memory_use.py's `remember`)."""

    context = make_context()
    saved = context.runtime.submit(
        memory_use.remember(context.agent0.ctx, f"the token is {TOKEN}", "main", [f"t-{TOKEN}"])
    ).result(30)
    assert (saved.text, saved.tags) == ("the token is ***", ["t-***"])
    stored = b"".join(p.read_bytes() for p in (usr_dir / "memory").rglob("*") if p.is_file())
    assert stored and TOKEN.encode() not in stored


def test_a_command_line_gets_the_value_and_what_it_prints_is_masked(make_context, llm):
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    code = f'printf %s "{PLACEHOLDER}" | sha256sum; echo "said {PLACEHOLDER}"'
    llm.script(
        Reply(reply("code_execution_tool", runtime="terminal", code=code)),
        Reply(answer("Checked.")),
    )
    context = make_context()
    context.communicate(UserMessage("Check the token.")).result(60)

    result = next(m.content for m in context.agent0.history.output() if digest in m.content)
    assert "said ***" in result and TOKEN not in result  # the shell had the value
    logged = json.dumps(context.runtime.call(context.log.to_list), ensure_ascii=False)
    assert digest in logged and PLACEHOLDER in logged and TOKEN not in logged


def test_what_a_command_prints_of_the_value_encoded_is_masked_too(
    llm, runtime, usr_dir, monkeypatch
):
    """base64 (each alignment, wrapped, URL-safe), hex, a URL's query, reversed: made by the
    programs an agent would use, in the sandbox's terminal."""
    import base64
    import urllib.parse

    value = "k3y/5a4b?3c2d+1e0f>>&z"  # '/', '+' and '?' make every encoding differ
    monkeypatch.setenv("CADRE_SECRETS", json.dumps({"SERVICE_TOKEN": value}))
    code = "\n".join([
        f"T='{PLACEHOLDER}'",
        'for pad in "" x xy; do printf "$pad%s" "$T" | base64 -w0; echo; done',
        'printf "xy%s" "$T" | basenc --base64url -w0; echo',
        'printf "%045d%s%045d" 0 "$T" 0 | base64',  # wrapped at 76 columns inside the value
        'printf %s "$T" | xxd -p; printf %s "$T" | xxd -p -u',
        'printf %s "$T" | rev; echo',
        "python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=\"\"))'"
        ' "$T"',
        "echo all-printed",
    ])  # fmt: skip
    llm.add_rule(model_is("util-model"), Reply("Encoding"))
    llm.script(
        Reply(reply("code_execution_tool", runtime="terminal", code=code)),
        Reply(answer("Encoded.")),
    )
    chats = ChatManager(runtime, ChatFactory(runtime))
    try:
        context = chats.new_chat()
        context.communicate(UserMessage("Encode the token.")).result(60)
        chats.save_now(context)
    finally:
        chats.close_sessions()

    encodings = {
        "base64": base64.b64encode(value.encode()).decode(),
        "base64 x": base64.b64encode(b"x" + value.encode()).decode(),
        "base64 xy": base64.b64encode(b"xy" + value.encode()).decode(),
        "base64url": base64.urlsafe_b64encode(b"xy" + value.encode()).decode(),
        "base64 wrapped": base64.b64encode(b"0" * 45 + value.encode() + b"0" * 45).decode(),
        "hex": value.encode().hex(),
        "HEX": value.encode().hex().upper(),
        "reversed": value[::-1],
        "percent": urllib.parse.quote(value, safe=""),
    }
    prompt = json.dumps([r.body["messages"] for r in llm.chat_requests()], ensure_ascii=False)
    saved = (usr_dir / "chats" / context.id / "chat.json").read_text(encoding="utf-8")
    assert "all-printed" in prompt and "all-printed" in saved  # the output got there
    for where, text in (("the model's prompt", prompt), ("chat.json", saved)):
        unwrapped = text.replace("\\n", "")  # base64 wrapped its lines
        for name, encoded in encodings.items():
            pieces = [encoded[i : i + 12] for i in range(4, len(encoded) - 16)]
            if name == "base64 wrapped":  # only the part that is the value's (60 to 89)
                pieces = pieces[56:76]
            shown = [piece for piece in pieces if piece in unwrapped]
            assert not shown, f"{name} of the secret reached {where}: {shown[:3]}"
