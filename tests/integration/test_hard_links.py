"""A hard link made by a command never lets a tool read a file from outside its folders.

A link has no "real path" to check: `ln ../settings.json x.txt` makes `x.txt`
the settings file itself, inside the work folder. Every reader of confined
paths refuses a regular file with more than one name.
"""

from __future__ import annotations

import json

from core.agent_types import UserMessage
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply, model_is

#: A settings value that no masking hides: if it shows anywhere, the file was read.
CANARY = "http://hardlink-canary-3141.invalid"


def test_a_hard_link_to_the_settings_is_refused_by_every_reader(make_context, llm, usr_dir):
    (usr_dir / "settings.json").write_text(json.dumps({"searxng_url": CANARY}))
    llm.add_rule(model_is("util-model"), Reply("what the document says"))
    llm.script(
        Reply(reply("code_execution_tool", runtime="terminal",
                    code="ln ../settings.json x.txt; ln ../settings.json notes.md; echo linked")),
        Reply(reply("text_editor:read", path="x.txt")),
        Reply(reply("text_editor:patch", path="notes.md",
                    edits=[{"line_from": 1, "line_to": 1, "content": "{}"}])),
        Reply(reply("document_query", document="notes.md", questions=["What is the URL?"])),
        Reply(answer("Here: §§include(x.txt)")),
    )  # fmt: skip
    # Unconfined: in the sandbox the settings file is not there to link (test_sandbox.py).
    context = make_context(max_unusable_replies=10, code_exec_sandbox="none")
    final = context.communicate(UserMessage("read the settings")).result(60)

    chat = llm.chat_requests("chat-model")
    seen = [r.messages[-1]["content"] for r in chat[1:]]
    linked, read, patched, queried = seen
    assert "linked" in linked
    assert "x.txt is a hard link" in read
    assert "notes.md is a hard link" in patched
    assert "notes.md is a hard link" in queried
    assert final == "Here: §§include(x.txt)"  # left as written
    refused = [i.content for i in context.log.items if i.heading.endswith("Include refused")]
    assert refused and "hard link" in refused[0]
    # The settings' content reached no model, no log item and no answer.
    assert all(CANARY not in json.dumps(r.body) for r in llm.requests)
    assert all(CANARY not in f"{i.content} {i.kvps}" for i in context.log.items)
    assert json.loads((usr_dir / "settings.json").read_text()) == {"searxng_url": CANARY}
