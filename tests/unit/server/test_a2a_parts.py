"""What an A2A message brings Agent 0 (server/apis/a2a/parts.py): text, files with their
bytes, data parts as JSON; a file by address, nothing at all, too many files or too long
a text refused in words."""

from __future__ import annotations

import pytest
from a2a.types.a2a_pb2 import Message, Part
from google.protobuf.struct_pb2 import Value

from helpers.errors import UserError
from server.apis.a2a.parts import FILES_LIMIT, read_parts
from server.routes.payloads import MESSAGE_LIMIT


def message(*parts: Part) -> Message:
    return Message(message_id="m1", parts=list(parts))


def test_text_files_and_data_each_reach_the_agent():
    data = Value()
    data.struct_value.update({"city": "Oslo", "days": 3})
    inbound = read_parts(message(
        Part(text="Plan the trip."), Part(raw=b"%PDF-1.4", filename="dir/../tickets.pdf"),
        Part(raw=b"\x89PNG", media_type="image/png"), Part(data=data),
    ))  # fmt: skip
    assert inbound.text.startswith("Plan the trip.\n```json\n")
    assert '"city": "Oslo"' in inbound.text
    assert inbound.files == [("tickets.pdf", b"%PDF-1.4"), ("file-2.png", b"\x89PNG")]


def test_files_alone_are_told_as_what_came():
    inbound = read_parts(message(Part(raw=b"a", filename="a.txt"), Part(raw=b"b")))
    assert inbound.text == "The attached files came with this task."
    assert [name for name, _ in inbound.files] == ["a.txt", "file-2"]


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        ((), "send the task as a text part"),
        ((Part(text="  "),), "send the task as a text part"),
        ((Part(text="See"), Part(url="http://10.0.0.1/secret.pdf")),
         "part 2 names a file by its address (http://10.0.0.1/secret.pdf): Cadre does not fetch"),
        ((Part(text="x" * (MESSAGE_LIMIT + 1)),), "over"),
        (tuple(Part(raw=b"x") for _ in range(FILES_LIMIT + 1)), f"send at most {FILES_LIMIT}"),
    ],
)  # fmt: skip
def test_what_cannot_be_sent_is_refused_in_words(parts, words):
    with pytest.raises(UserError) as refused:
        read_parts(message(*parts))
    assert words in str(refused.value)


@pytest.mark.parametrize(
    ("given", "media_type", "saved"),
    [
        ("отчёт.pdf", "", "file-1.pdf"),  # nothing of the name survives: its type does
        ("отчёт", "application/pdf", "file-1.pdf"),
        ("naïve notes.md", "", "naive_notes.md"),
        ("README", "text/markdown", "README.md"),
        ("../../etc/passwd", "", "passwd"),
        ("..", "", "file-1"),
    ],
)
def test_a_files_name_is_made_safe_and_keeps_its_kind(given, media_type, saved):
    [(name, _)] = read_parts(message(Part(raw=b"x", filename=given, media_type=media_type))).files
    assert name == saved


def test_a_name_too_long_for_a_file_system_is_cut_where_it_is_saved(usr_dir):
    from server.routes.attachments import NAME_LIMIT, attach

    [path] = attach("chat1", read_parts(message(Part(raw=b"x", filename="a" * 300 + ".txt"))).files)
    assert path.endswith(".txt") and len(path.rsplit("/", 1)[-1]) == NAME_LIMIT
    [again] = attach("chat1", [("a" * 300 + ".txt", b"y")])  # a second of that name kept apart
    assert again != path and again.endswith(".txt")
