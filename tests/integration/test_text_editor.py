"""text_editor through the loop: read, write, patch, stale patches and refused paths."""

from __future__ import annotations

import threading

from core.agent_types import UserMessage
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply


def tool_results(context) -> list[str]:
    return [item.content for item in context.log.items if item.type == "tool"]


def run(context) -> list[str]:
    """Let Agent 0 work through the scripted replies; the tools' results."""
    context.communicate(UserMessage("edit files")).result(30)
    return tool_results(context)


def script(llm, *calls: tuple[str, dict]) -> None:
    llm.script(*[Reply(reply(name, **args)) for name, args in calls], Reply(answer("done")))


def test_write_read_and_patch(make_context, llm, usr_dir):
    script(
        llm,
        ("text_editor:write", {"path": "app/hello.py", "content": "a = 1\nb = 2\nc = 3\n"}),
        ("text_editor:read", {"path": "app/hello.py", "line_from": 2}),
        (
            "text_editor:patch",
            {
                "path": "app/hello.py",
                "edits": [
                    {"line_from": 2, "line_to": 2, "content": "b = 20\nb2 = 21"},
                    {"line_from": 4, "line_to": 3, "content": "d = 4"},
                ],
            },
        ),  # fmt: skip
    )
    wrote, read, patched = run(make_context())
    assert wrote == "Wrote app/hello.py (3 lines)."
    assert read == "app/hello.py: lines 2-3 of 3\n2 | b = 2\n3 | c = 3"
    assert patched.startswith("Patched app/hello.py (2 edit(s))") and "3 | b2 = 21" in patched
    assert (
        usr_dir / "workdir/app/hello.py"
    ).read_text() == "a = 1\nb = 20\nb2 = 21\nc = 3\nd = 4\n"


def test_a_patch_needs_a_fresh_read(make_context, llm, usr_dir):
    target = usr_dir / "workdir" / "notes.txt"
    target.parent.mkdir(parents=True)
    target.write_text("one\ntwo\n")
    edits = [{"line_from": 1, "line_to": 1, "content": "ONE"}]
    changed = threading.Event()
    llm.script(
        Reply(reply("text_editor:patch", path="notes.txt", edits=edits)),  # never read: refused
        Reply(reply("text_editor:read", path="notes.txt")),
        Reply(reply("text_editor:patch", path="notes.txt", edits=edits), gate=changed),
        Reply(reply("text_editor:read", path="notes.txt")),
        Reply(reply("text_editor:patch", path="notes.txt", edits=edits)),
        Reply(answer("done")),
    )
    context = make_context()
    handle = context.communicate(UserMessage("edit"))
    wait_for(lambda: len(tool_results(context)) == 2 and tool_results(context)[1], what="the read")
    target.write_text("zero\none\ntwo\n")  # someone else changes the file meanwhile
    changed.set()
    handle.result(30)
    never, _, stale, _, fresh = tool_results(context)
    assert "you have not read it yet" in never and "changed since you last read it" in stale
    assert fresh.startswith("Patched")
    assert target.read_text() == "ONE\none\ntwo\n"


def test_paths_outside_the_work_folder_are_refused(make_context, llm, usr_dir, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("private")
    work = usr_dir / "workdir"
    work.mkdir(parents=True)
    (work / "link.txt").symlink_to(outside)
    hostile = ["../settings.json", "/etc/passwd", str(outside), "link.txt", "%2e%2e/x", "a\\..\\b"]
    script(llm, *[("text_editor:read", {"path": p}) for p in hostile],
           ("text_editor:write", {"path": "../escape.txt", "content": "x"}))  # fmt: skip
    results = run(make_context(max_unusable_replies=20))  # every call here is refused
    assert len(results) == len(hostile) + 1
    assert all(r.startswith("path refused:") for r in results), results
    assert "private" not in "".join(results)
    assert not (usr_dir / "escape.txt").exists()


def test_attachments_are_readable_but_not_writable(make_context, llm, usr_dir):
    context = make_context()
    attachment = usr_dir / "chats" / context.id / "attachments" / "brief.md"
    attachment.parent.mkdir(parents=True)
    attachment.write_text("# Brief\nBuild it.\n")
    script(
        llm,
        ("text_editor:read", {"path": str(attachment)}),
        ("text_editor:write", {"path": str(attachment), "content": "changed"}),
        ("text_editor", {"path": "x.txt"}),
    )
    read, write, no_method = run(context)
    assert read.endswith("1 | # Brief\n2 | Build it.")
    assert write.startswith("path refused:") and attachment.read_text() == "# Brief\nBuild it.\n"
    assert "text_editor needs a method" in no_method
