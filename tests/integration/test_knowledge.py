"""Knowledge files, automatic recall, document_query and search_engine, against local servers."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from core.agent_types import UserMessage
from memory import knowledge, memories
from tests.support.agents import answer, reply
from tests.support.fake_llm import Reply, model_is

# A one-page PDF whose text is "Knowledge from a PDF file" (Helvetica, one text object).
PDF_STREAM = b"BT /F1 18 Tf 40 100 Td (Knowledge from a PDF file) Tj ET"
PDF_OBJECTS = [
    b"<< /Type /Catalog /Pages 2 0 R >>",
    b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] /Contents 4 0 R"
    b" /Resources << /Font << /F1 5 0 R >> >> >>",
    b"<< /Length %d >>\nstream\n" % len(PDF_STREAM) + PDF_STREAM + b"\nendstream",
    b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
]


def make_pdf() -> bytes:
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(PDF_OBJECTS, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    start = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(PDF_OBJECTS) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(PDF_OBJECTS) + 1, start)  # fmt: skip
    return bytes(out)


@contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_each_file_kind_is_indexed_and_changes_are_picked_up(usr_dir):
    folder = usr_dir / "knowledge"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("The office wifi password is on the fridge.")
    (folder / "guide.md").write_text("# Guide\nDeploy on Fridays is forbidden.")
    (folder / "sub" / "page.html").write_text(
        "<html><script>var hidden=1</script><p>Lunch is at noon</p></html>"
    )
    (folder / "report.pdf").write_bytes(make_pdf())
    (folder / "image.png").write_bytes(b"\x89PNG")
    store = memories.knowledge_store()
    assert knowledge.refresh(store) == 4
    texts = {m.source: m.text for m in store.all()}
    assert texts["knowledge/notes.txt"].startswith("The office wifi")
    assert texts["knowledge/sub/page.html"] == "Lunch is at noon"
    assert "Knowledge from a PDF file" in texts["knowledge/report.pdf"]
    assert [m.source for m in store.search("fridays deploy")] == ["knowledge/guide.md"]
    assert knowledge.refresh(store) == 0  # nothing changed: nothing read again
    (folder / "notes.txt").write_text("The wifi password changed.")
    (folder / "guide.md").unlink()
    assert knowledge.refresh(store) == 1
    assert {m.source for m in store.all()} == {
        "knowledge/notes.txt", "knowledge/sub/page.html", "knowledge/report.pdf"}  # fmt: skip


def test_relevant_memories_and_knowledge_reach_the_prompt(make_context, llm, usr_dir):
    (usr_dir / "knowledge").mkdir()
    (usr_dir / "knowledge" / "team.md").write_text("Ada leads the compiler team.")
    llm.add_rule(model_is("util-model"), Reply("A name"))
    # Recalled unasked only on two shared key words: "Ada" and "like" ("likes").
    llm.script(Reply(reply("memory_save", text="Ada likes short answers")),
               Reply(answer("saved")), Reply(answer("Ada leads it.")))  # fmt: skip
    context = make_context()
    context.communicate(UserMessage("remember this")).result(30)
    context.communicate(UserMessage("Who leads the compiler team, and what does Ada like?")).result(
        30
    )
    last = [r for r in llm.chat_requests() if r.body["model"] != "util-model"][-1].messages
    extras = last[-1]["content"]
    assert "From memory and knowledge" in extras
    assert "Ada leads the compiler team." in extras and "Ada likes short answers" in extras
    question = ["Who leads the compiler team, and what does Ada like?"]
    asked = [r.body["input"] for r in llm.embedding_requests()]
    assert asked.count(question) == 1  # one embedding for both the memories and the knowledge
    off = make_context(memory_recall_tokens=0)
    llm.script(Reply(answer("ok")))
    off.communicate(UserMessage("Who leads the compiler team?")).result(30)
    last = [r for r in llm.chat_requests() if r.body["model"] != "util-model"][-1].messages
    assert "From memory and knowledge" not in last[-1]["content"]


def test_document_query_reads_files_and_urls(make_context, llm, usr_dir, tmp_path):
    work = usr_dir / "workdir"
    work.mkdir(parents=True)
    (work / "report.html").write_text("<h1>Report</h1><p>Revenue in 2025 was 42 million.</p>")
    secret = tmp_path / "outside.txt"
    secret.write_text("private")

    class Page(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(work), **kwargs)

        def log_message(self, *args):
            pass

    with serving(Page) as base:
        llm.add_rule(model_is("util-model"), Reply("It was 42 million."))
        llm.script(
            Reply(reply("document_query", document="report.html", questions=["Revenue in 2025?"])),
            Reply(reply("document_query", document=f"{base}/report.html",
                        questions=["Revenue?"], headline="By URL")),
            Reply(reply("document_query", document=str(secret), questions=["What is it?"])),
            Reply(answer("done")),
        )  # fmt: skip
        context = make_context()
        context.communicate(UserMessage("read the report")).result(30)
    util = [r for r in llm.chat_requests() if r.body["model"] == "util-model"]
    asked = [r.messages[-1]["content"] for r in util if "Questions:" in r.messages[-1]["content"]]
    assert len(asked) == 2 and all("Revenue in 2025 was 42 million." in a for a in asked)
    seen = [
        r.messages[-1]["content"] for r in llm.chat_requests() if r.body["model"] != "util-model"
    ]
    assert "It was 42 million." in seen[1] and "It was 42 million." in seen[2]
    assert "cannot read" in seen[3] and "private" not in json.dumps(seen)


def test_search_engine_asks_searxng_and_says_when_there_is_none(make_context, llm):
    asked: list[str] = []

    class SearXNG(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the handler's own name
            asked.append(self.path)
            body = json.dumps({"results": [
                {"title": "Python 3.13", "url": "https://python.org/3.13", "content": "Released"},
            ]}).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with serving(SearXNG) as base:
        llm.script(Reply(reply("search_engine", query="python 3.13")), Reply(answer("done")))
        make_context(searxng_url=base).communicate(UserMessage("search")).result(30)
    assert asked and "format=json" in asked[0] and "q=python+3.13" in asked[0]
    assert "https://python.org/3.13" in llm.chat_requests()[1].messages[-1]["content"]
    # Without an instance the tool is not offered at all (nor run when called).
    llm.script(Reply(reply("search_engine", query="x")), Reply(answer("done")))
    make_context().communicate(UserMessage("search")).result(30)
    assert "### search_engine" not in llm.chat_requests()[-2].messages[0]["content"]
    assert 'no tool named "search_engine"' in llm.chat_requests()[-1].messages[-1]["content"]


def test_refreshing_from_several_threads_indexes_each_file_once(usr_dir):
    folder = usr_dir / "knowledge"
    folder.mkdir()
    for n in range(5):
        (folder / f"doc{n}.md").write_text(f"Document {n}\n" + "words " * 600)
    store = memories.knowledge_store()
    threads = [threading.Thread(target=knowledge.refresh, args=(store,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    expected = sum(len(knowledge.chunks(p.read_text())) for p in folder.iterdir())
    assert store.count() == expected


def test_a_superior_resuming_its_task_does_not_search_memory_again(make_context, llm, usr_dir):
    store = memories.store_at(usr_dir / "memory" / "default" / "memory.db")
    store.save("Ada leads the compiler team.")
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(
        Reply(reply("call_subordinate", message="Who leads compilers?", profile="researcher",
                    reset=True)),
        Reply(answer("Ada.")),
        Reply(answer("Ada leads it.")),
    )  # fmt: skip
    make_context().communicate(UserMessage("Who leads the compiler team?")).result(30)
    queries = [r.body["input"] for r in llm.embedding_requests()]
    # The stored memory once (re-index), then A0's task and A1's task; A0's return reuses its own.
    assert queries == [["Ada leads the compiler team."], ["Who leads the compiler team?"],
                       ["Who leads compilers?"]]  # fmt: skip


def test_the_memory_panel_lists_areas_but_not_the_knowledge_index(http, usr_dir):
    (usr_dir / "knowledge").mkdir()
    (usr_dir / "knowledge" / "team.md").write_text("Ada leads the compiler team.")
    memories.refresh_knowledge(memories.knowledge_store())
    memories.store_at(usr_dir / "memory" / "work" / "memory.db").save("Ship on Fridays")
    listed = http.get("/api/memory?area=work").get_json()
    assert listed["areas"] == ["work"]  # the knowledge index is rebuilt from files: not editable
    assert [m["text"] for m in listed["memories"]] == ["Ship on Fridays"]
    nowhere = http.get("/api/memory?area=nowhere").get_json()
    assert nowhere["memories"] == [] and nowhere["areas"] == ["work"]
    assert not (usr_dir / "memory" / "nowhere").exists()


def test_recall_brings_no_memory_that_shares_only_common_words(make_context, llm, usr_dir):
    """An earlier chat's sum, recalled on "the" and "is", was answered instead of the task."""
    llm.add_rule(model_is("util-model"), Reply("A name"))
    llm.script(Reply(reply("memory_save", text="The result of 17 * 23 is 391")),
               Reply(answer("saved")), Reply(answer("files")), Reply(answer("391")))  # fmt: skip
    context = make_context()
    context.communicate(UserMessage("remember the sum")).result(30)
    context.communicate(UserMessage("List the files in the work folder")).result(30)
    context.communicate(UserMessage("What is 17 * 23?")).result(30)
    asked = [r for r in llm.chat_requests() if r.body["model"] != "util-model"]
    assert "391" not in asked[-2].messages[-1]["content"]  # "List the files ..."
    assert "The result of 17 * 23 is 391" in asked[-1].messages[-1]["content"]
