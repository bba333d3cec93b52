"""The Telegram bridge (server/apis/telegram/) against a fake Bot API server
(tests/support/fake_telegram.py) and a real run_ui.py (the one test modules share,
tests/support/shared_desktop.py), whose models are the scripted fake server.

The module turns the bot on as a person would, by saving its settings through the Settings
route (no restart), and off again at its end. Each test talks in a Telegram chat of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.support import shared_desktop
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.fake_telegram import FakeTelegram, Sent
from tests.support.images import png
from tests.support.live_web import log_text
from tests.support.server_process import ServerProcess, call_api

KEY = shared_desktop.KEY
#: The Telegram account allowed to use the bot, and one that is not.
FRIEND = 4242
STRANGER = 666
#: Generous: the machine is shared.
WAIT = 60


@pytest.fixture(scope="module")
def telegram() -> Iterator[FakeTelegram]:
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def shared(desktop_server: ServerProcess, telegram: FakeTelegram) -> Iterator[ServerProcess]:
    """The shared run_ui.py with the bot set up in Settings (and images sent to the model)."""
    with shared_desktop.for_module(
        desktop_server, telegram_bot_token=telegram.token, telegram_allowed_users=str(FRIEND),
        telegram_api_base=telegram.url, chat_vision="on", llm_retries=0,
        tool_rules=[{"tool": "notify_user", "rule": "ask"}],
    ) as server:  # fmt: skip
        with telegram.changed:  # the bot connected: saved settings apply without a restart
            assert telegram.changed.wait_for(lambda: telegram.state.polls > 0, timeout=WAIT)
        yield server


@pytest.fixture
def llm(llm):
    llm.add_rule(model_is("util-model"), Reply("Named", usage=(0, 0)))  # naming a chat
    return llm


def said(telegram: FakeTelegram, chat: int, text: str) -> list[Sent]:
    """Wait until the bot said `text` in `chat` (a message containing it)."""
    return telegram.wait_sent(
        lambda sent: [s for s in sent if s.chat == chat and text in s.text],
        timeout=WAIT, what=f"{text!r} in chat {chat}",
    )  # fmt: skip


def chat_count(server: ServerProcess) -> int:
    return len(call_api(server, "GET", "/api/v1/chats", key=KEY)["chats"])


def test_an_allowed_account_gets_the_agents_answer(shared, telegram, llm):
    llm.script(Reply(answer("Hello from **Cadre**.")))
    telegram.text(FRIEND, "Hi there", chat=101)
    (reply,) = said(telegram, 101, "Hello from")
    assert reply.text == "Hello from <b>Cadre</b>." and reply.params["parse_mode"] == "HTML"
    assert "Hi there" in llm.chat_requests("chat-model")[-1].text
    actions = telegram.sent(101, "sendChatAction")  # "typing…" while it worked
    assert actions and actions[0].params["action"] == "typing"


def test_a_stranger_is_refused_and_reaches_no_agent(shared, telegram, llm):
    chats_before, calls_before = chat_count(shared), len(llm.chat_requests("chat-model"))
    telegram.text(STRANGER, "Let me in", chat=102)
    (refusal,) = said(telegram, 102, "private")
    assert str(STRANGER) in refusal.text and "allowed Telegram users" in refusal.text
    # The refusal is all the update did: no chat was made, no model was asked.
    assert chat_count(shared) == chats_before
    assert len(llm.chat_requests("chat-model")) == calls_before
    assert "refused an update of user 666" in log_text(shared)


def test_a_photo_reaches_the_model_as_an_image(shared, telegram, llm):
    llm.script(Reply(answer("An orange square.")))
    telegram.photo(FRIEND, png(), caption="What is this?", chat=103)
    said(telegram, 103, "An orange square.")
    (request,) = [r for r in llm.chat_requests("chat-model") if "What is this?" in r.text]
    parts = [part for message in request.messages if isinstance(message["content"], list)
             for part in message["content"]]  # fmt: skip
    images = [p for p in parts if p.get("type") == "image_url"]
    assert images and images[0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_new_chats_and_stop(shared, telegram, llm):
    llm.script(Reply(answer("First answer.")))
    telegram.text(FRIEND, "first", chat=104)
    said(telegram, 104, "First answer.")
    before = chat_count(shared)
    telegram.text(FRIEND, "/new", chat=104)
    said(telegram, 104, "A new chat is started")
    held = threading.Event()  # the model's answer waits: the run is going on
    try:
        llm.script(Reply(answer("Never seen."), gate=held))
        telegram.text(FRIEND, "second", chat=104)
        telegram.wait_sent(lambda sent: [s for s in sent if s.chat == 104
                                         and s.method == "sendChatAction"],
                           timeout=WAIT, what="typing in chat 104")  # fmt: skip
        telegram.text(FRIEND, "/stop", chat=104)
        said(telegram, 104, "Stopped.")
    finally:
        held.set()
    assert chat_count(shared) == before + 1  # the second message went to a new chat
    telegram.text(FRIEND, "/chats", chat=104)
    (listing,) = said(telegram, 104, "Your chats:")
    assert listing.text.count("\n") == 2 and "← current" in listing.text.splitlines()[2]
    assert not telegram.messages(104).count("Never seen.")


def test_a_long_answer_is_split_with_its_code_as_code(shared, telegram, llm):
    code = "\n".join(f"print({n})" for n in range(700))
    long = "Here it is:\n\n```python\n" + code + "\n```\n\n" + "All done. " * 300
    llm.script(Reply(answer(long)))
    telegram.text(FRIEND, "write a long program", chat=105)
    said(telegram, 105, "All done.")
    parts = telegram.messages(105)
    assert len(parts) >= 3 and all(len(part) <= 4096 for part in parts)
    assert parts[0].startswith("Here it is:")
    assert parts[1].startswith('<pre><code class="language-python">')
    shown = "".join(parts)
    assert "print(0)" in shown and "print(699)" in shown and shown.count("All done.") == 300


def test_the_bridge_reconnects_after_the_bot_api_comes_back(shared, telegram, llm):
    telegram.restart()  # the long poll in flight is cut, the port closed, then served again
    llm.script(Reply(answer("Still here.")))
    telegram.text(FRIEND, "are you there?", chat=106)
    said(telegram, 106, "Still here.")
    log = log_text(shared)
    assert "telegram: the Bot API at" in log and "telegram: the Bot API answers again" in log


def test_an_answer_that_ends_while_telegram_is_out_of_reach_comes_once_it_is_back(
    shared, telegram, llm
):
    """It was dropped with a line in the log; now it waits in usr/telegram/pending.json."""
    held = threading.Event()
    llm.script(Reply(answer("Worth the wait."), gate=held))
    telegram.text(FRIEND, "Take your time.", chat=113)
    wait_for(lambda: [r for r in llm.chat_requests("chat-model") if "Take your time." in r.text],
             timeout=WAIT, what="its model call")  # fmt: skip
    telegram.stop()  # Telegram out of reach as the run ends
    try:
        held.set()
        kept = shared.usr_dir / "telegram" / "pending.json"
        wait_for(lambda: kept.exists() and "Worth the wait." in kept.read_text(),
                 timeout=WAIT, what="the answer kept")  # fmt: skip
    finally:
        telegram.start()  # the module's other tests need it, whatever happened here
    (late,) = said(telegram, 113, "could not be reached")
    (answered,) = said(telegram, 113, "Worth the wait.")
    assert late.message_id < answered.message_id  # the note first
    wait_for(lambda: "Worth the wait." not in kept.read_text(), timeout=WAIT,
             what="the delivered answer let go")  # fmt: skip


def test_an_approval_request_comes_as_buttons_that_answer_it(shared, telegram, llm):
    llm.script(Reply(reply("notify_user", headline="Telling", message="Backup done.")),
               Reply(answer("I told you in Cadre too.")))  # fmt: skip
    telegram.text(FRIEND, "tell me when done", chat=107)
    (asked,) = telegram.wait_sent(
        lambda sent: [s for s in sent if s.chat == 107 and s.params.get("reply_markup")],
        timeout=WAIT, what="the approval's buttons",
    )  # fmt: skip
    assert "asks to run <b>notify_user</b>" in asked.text and "Backup done." in asked.text
    allow, deny = asked.params["reply_markup"]["inline_keyboard"][0]
    assert (allow["text"], deny["text"]) == ("Allow", "Deny")
    calls = len(llm.chat_requests("chat-model"))
    telegram.press(STRANGER, asked, allow["callback_data"])  # a stranger's press: refused
    (refused,) = telegram.wait_sent(
        lambda sent: [s for s in sent if s.method == "answerCallbackQuery"]
    )
    assert "may not use it" in refused.params["text"] and refused.params["show_alert"]
    telegram.press(FRIEND, asked, allow["callback_data"])
    said(telegram, 107, "I told you in Cadre too.")
    assert len(llm.chat_requests("chat-model")) == calls + 1  # only once allowed
    assert telegram.sent(method="answerCallbackQuery")[-1].params["text"] == "Allowed"
    assert "Backup done." in llm.chat_requests("chat-model")[-1].text  # the tool ran


def test_a_file_the_answer_names_comes_as_a_document(shared, telegram, llm):
    work = shared.usr_dir / "workdir"
    work.mkdir(exist_ok=True)
    (work / "telegram-report.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    llm.script(Reply(answer("Saved as `telegram-report.csv` (and not ../settings.json).")))
    telegram.text(FRIEND, "make the report", chat=108)
    (document,) = telegram.wait_sent(
        lambda sent: [s for s in sent if s.chat == 108 and s.method == "sendDocument"],
        timeout=WAIT, what="the report as a document",
    )  # fmt: skip
    assert document.file == ("telegram-report.csv", b"a,b\n1,2\n")
    assert len(telegram.sent(108, "sendDocument")) == 1  # nothing outside the work folder


def test_a_voice_note_reaches_the_agent_as_its_text(shared, telegram, llm):
    calls = len(llm.chat_requests("chat-model"))
    # No provider's speech to text yet (the built-in model reads the page's WAV only).
    telegram.voice(FRIEND, b"OggS fake opus", chat=109)
    (told,) = said(telegram, 109, "Voice notes need speech to text")
    assert "Settings" in told.text and len(llm.chat_requests("chat-model")) == calls
    shared_desktop.save(shared, {"stt_model": "openai/whisper-1", "stt_api_base": llm.base_url,
                                 "stt_api_key": "test-key"})  # fmt: skip
    llm.audio.transcript = "What is on my calendar?"
    llm.script(Reply(answer("Nothing today.")))
    telegram.voice(FRIEND, b"OggS fake opus", chat=109)
    said(telegram, 109, "Heard: What is on my calendar?")
    said(telegram, 109, "Nothing today.")
    assert "What is on my calendar?" in llm.chat_requests("chat-model")[-1].text
    (upload,) = llm.audio_requests()
    assert upload.body["file"]["data"] == b"OggS fake opus"
