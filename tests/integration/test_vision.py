"""Images reach the model: an attached image and `vision_load` as `image_url` parts for a
model that sees, a note and no bytes for one that reads text only; refused files, and
a chat's images kept through save, restore, export and import."""

from __future__ import annotations

import base64
import io
import json

import pytest

from core.agent_types import UserMessage
from helpers.errors import UserError
from helpers.folders import chat_dir
from initialize import ChatFactory
from server.routes.attachments import resolve_attachments, save_attachment
from store.chats import ChatManager
from tests.integration.test_persistence import reload
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply
from tests.support.fake_llm_script import model_is
from tests.support.images import png

PICTURE = png(6, 4)
DATA_URL = "data:image/png;base64," + base64.b64encode(PICTURE).decode()


def image_parts(body: dict) -> list[str]:
    """The `image_url` URLs of a recorded chat request."""
    return [
        part["image_url"]["url"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


def attach(context, name: str, data: bytes) -> list[str]:
    path = save_attachment(context.id, name, io.BytesIO(data))
    return resolve_attachments(context.id, [path])


def test_an_attached_image_reaches_a_vision_model_as_an_image_part(make_context, llm, model_client):
    llm.script(Reply(answer("a red square")))
    context = make_context(chat_vision="on")
    files = attach(context, "shot.png", PICTURE)
    context.communicate(UserMessage("what is this?", attachments=files)).result(30)
    body = llm.chat_requests()[-1].body
    assert image_parts(body) == [DATA_URL]
    user = body["messages"][-1]["content"]
    assert user[0]["type"] == "text" and "what is this?" in user[0]["text"]
    assert "shot.png, 6x4 pixels" in json.dumps(user)


def test_a_large_photo_reaches_the_model_shrunk_and_stays_whole_in_the_chat(
    make_context, llm, model_client
):
    from PIL import Image

    photo = io.BytesIO()
    Image.linear_gradient("L").resize((4000, 3000)).convert("RGB").save(photo, "JPEG")
    llm.script(Reply(answer("a grey ramp")))
    context = make_context(chat_vision="on")
    files = attach(context, "photo.jpg", photo.getvalue())
    context.communicate(UserMessage("what is this?", attachments=files)).result(30)
    (url,) = image_parts(llm.chat_requests()[-1].body)
    sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert url.startswith("data:image/jpeg;base64,") and sent.size == (2048, 1536)
    kept = chat_dir(context.id) / "attachments" / "photo.jpg"
    assert kept.read_bytes() == photo.getvalue()  # the user still opens it full size


def test_vision_load_shows_the_model_a_work_folder_image(make_context, llm, usr_dir):
    (usr_dir / "workdir" / "screens").mkdir(parents=True)
    (usr_dir / "workdir" / "screens" / "error.png").write_bytes(PICTURE)
    llm.script(Reply(reply("vision_load", paths=["screens/error.png"])), Reply(answer("seen")))
    context = make_context(chat_vision="on")
    context.communicate(UserMessage("look at the screenshot")).result(30)
    first, second = llm.chat_requests()[-2:]
    assert image_parts(first.body) == []
    assert image_parts(second.body) == [DATA_URL]
    kept = chat_dir(context.id) / "images" / "error.png"
    assert kept.read_bytes() == PICTURE  # the chat keeps what its agent saw
    tool_item = next(item for item in context.log.items if item.type == "tool")
    assert tool_item.kvps["images"] == ["images/error.png"]


def test_a_text_only_model_gets_a_note_and_no_bytes(make_context, llm, usr_dir):
    (usr_dir / "workdir").mkdir()
    (usr_dir / "workdir" / "chart.png").write_bytes(PICTURE)
    llm.script(Reply(reply("vision_load", paths="chart.png")), Reply(answer("ok")))
    context = make_context()  # chat_vision "auto": litellm does not know the fake model
    files = attach(context, "photo.png", PICTURE)
    context.communicate(UserMessage("see this", attachments=files)).result(30)
    encoded = base64.b64encode(PICTURE).decode()
    for request in llm.chat_requests():
        text = json.dumps(request.body)
        assert "image_url" not in text and encoded not in text
    last = json.dumps(llm.chat_requests()[-1].body)
    assert "Images attached: photo.png" in last and "Images attached: chart.png" in last
    assert "you cannot see them" in last
    # The person is told too, once for each image (the model was told, the user was not).
    told = [i for i in context.log.items if i.type == "info" and "reads text only" in i.content]
    assert [i.heading for i in told] == ["Images not shown to the model"] * 2
    assert "photo.png" in told[0].content and "chart.png" in told[1].content
    assert "Images to the chat model" in told[0].content  # the setting, by its title


def test_non_images_and_oversized_images_are_refused_clearly(make_context, llm, usr_dir):
    work = usr_dir / "workdir"
    work.mkdir()
    (work / "notes.png").write_text("not an image at all")
    (work / "huge.png").write_bytes(png(2, 2, padding=26 * 1024 * 1024))
    llm.script(
        Reply(reply("vision_load", paths=["notes.png", "huge.png", "../outside.png"])),
        Reply(answer("understood")),
    )
    context = make_context(chat_vision="on")
    context.communicate(UserMessage("look")).result(30)
    last = llm.chat_requests()[-1].body
    warning = json.dumps(last)
    assert image_parts(last) == []
    assert "notes.png is not a PNG, JPEG, GIF or WebP image" in warning
    assert "huge.png is larger than 25.0 MB, the most an image may be" in warning
    assert "goes up a folder" in warning
    assert not (chat_dir(context.id) / "images").exists()


@pytest.fixture
def chats(llm, runtime) -> ChatManager:
    llm.add_rule(model_is("util-model"), Reply("Pictures"))  # the chat's name
    return ChatManager(runtime, ChatFactory(runtime))


def test_a_saved_chat_keeps_its_images_through_restore_export_and_import(
    chats, llm, usr_dir, monkeypatch
):
    monkeypatch.setenv("CADRE_CHAT_VISION", "on")  # an import keeps no setting overrides
    llm.script(Reply(answer("a red square")))
    context = chats.new_chat()
    files = attach(context, "shot.png", PICTURE)
    context.communicate(UserMessage("what is this?", attachments=files)).result(30)
    wait_for(lambda: not context.runner.running, what="the chat's last save")

    again, runtime = reload(usr_dir)
    try:
        restored = again.get(context.id)
        (message,) = [m for m in restored.agent0.history.current.messages if m.images]
        assert [i.to_dict() for i in message.images] == [
            {"path": "attachments/shot.png", "mime": "image/png", "width": 6, "height": 4,
             "size": len(PICTURE), "name": "shot.png"}
        ]  # fmt: skip
        document = again.export(context.id)
        assert document["images"] == {"attachments/shot.png": base64.b64encode(PICTURE).decode()}
        imported = again.import_chat(json.loads(json.dumps(document)))
        assert (chat_dir(imported.id) / "attachments" / "shot.png").read_bytes() == PICTURE
        llm.script(Reply(answer("still red")))
        imported.communicate(UserMessage("and now?")).result(30)
        imported_call = llm.chat_requests("chat-model")[-1]
        assert image_parts(imported_call.body) == [DATA_URL]
    finally:
        runtime.stop()


@pytest.mark.parametrize(
    ("images", "error"),
    [
        ({"../chat.json": base64.b64encode(PICTURE).decode()}, "unexpected image"),
        ({"images/a.png": base64.b64encode(b"plain text").decode()}, "is not a PNG, JPEG"),
        ({"images/a.png": "not base64!"}, "cannot be taken"),
    ],
)
def test_an_import_refuses_images_it_cannot_trust(chats, llm, images, error):
    llm.script(Reply(answer("ok")))
    context = chats.new_chat()
    context.communicate(UserMessage("hello")).result(30)
    document = {**chats.export(context.id), "images": images}
    before = sorted(p.name for p in chat_dir(context.id).parent.iterdir())
    with pytest.raises(UserError, match=error):
        chats.import_chat(document)
    assert sorted(p.name for p in chat_dir(context.id).parent.iterdir()) == before


def test_the_page_is_served_a_chats_images_and_nothing_else(http, server, usr_dir):
    chat = server.app.extensions["cadre.chats"].new_chat()
    for name, data in (("shot.png", PICTURE), ("page.png", b"<script>alert(1)</script>")):
        http.post(f"/api/chats/{chat.id}/attachments", data={"file": (io.BytesIO(data), name)})
    shown = http.get(f"/api/chats/{chat.id}/images/attachments/shot.png")
    assert shown.status_code == 200 and shown.data == PICTURE
    assert shown.mimetype == "image/png" and "sandbox" in shown.headers["Content-Security-Policy"]
    refused = http.get(f"/api/chats/{chat.id}/images/attachments/page.png")
    assert refused.status_code == 404 and "not a PNG, JPEG, GIF or WebP" in refused.json["error"]
    (usr_dir / "chats" / chat.id / "secret.png").write_bytes(PICTURE)
    for path in ("attachments/..%2Fsecret.png", "messages/1.txt", "attachments/nope.png"):
        assert http.get(f"/api/chats/{chat.id}/images/{path}").status_code == 404


def test_vision_load_is_offered_unless_images_are_off(make_context, llm):
    assert "vision_load" in make_context().agent0.available_tools()
    assert "vision_load" not in make_context(chat_vision="off").agent0.available_tools()


def test_an_image_gone_from_the_chats_folder_is_named_not_sent(make_context, llm):
    llm.script(Reply(answer("red")), Reply(answer("ok")))
    context = make_context(chat_vision="on")
    files = attach(context, "shot.png", PICTURE)
    context.communicate(UserMessage("what is this?", attachments=files)).result(30)
    (chat_dir(context.id) / "attachments" / "shot.png").unlink()
    context.communicate(UserMessage("and again?")).result(30)
    last = llm.chat_requests()[-1].body
    assert image_parts(last) == []
    assert "Images that could not be shown" in json.dumps(last)
    assert "shot.png is no longer in the chat" in json.dumps(last)


def test_the_context_view_shows_an_image_by_its_size_not_its_bytes():
    from core.prompt.vision import for_display

    messages = [{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": DATA_URL}},
    ]}]  # fmt: skip
    shown = for_display(messages)
    assert shown[0]["content"][0] == {"type": "text", "text": "look"}
    url = shown[0]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,… (") and len(url) < 60
    assert messages[0]["content"][1]["image_url"]["url"] == DATA_URL  # the prompt is untouched
