"""Voice in Chromium: a fake microphone (a WAV file the test makes, fed by Chromium's fake
capture device) records into the composer through the fake model server's
/audio/transcriptions; an answer's Listen button plays what /audio/speech gave; a refused
microphone is told in plain words. The microphone is released on every path: a chat switched
while recording, a double press of Speak, a recorder the browser cannot make.

One run_ui.py with speech-to-text and text-to-speech models on the fake server, and one
Chromium, serve the module; a context granted the microphone records, one without it is
refused (no fake-UI flag: nothing grants it behind the test's back).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import chromium_hearing, open_page
from tests.e2e.test_chat_ui import new_chat
from tests.support.agents import answer, wait_for
from tests.support.axe import axe_violations, describe
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.fake_llm_audio import SPEECH_PATH, TRANSCRIPTIONS_PATH, tone_wav
from tests.support.live_web import live_server, settings_kept, warm_up
from tests.support.server_process import ServerProcess

RESPONSE = '[data-testid="log-item"][data-type="response"]'
USER = '[data-testid="log-item"][data-type="user"]'
#: The page's own request to save settings (with its CSRF token), as the Settings form sends.
SAVE_SETTINGS = """async (changes) => {
  const token = (await (await fetch('/api/csrf')).json()).token;
  const response = await fetch('/api/settings', {method: 'POST', body: JSON.stringify(changes),
    headers: {'Content-Type': 'application/json', 'X-CSRF-Token': token}});
  return response.status;
}"""
#: The page's audio element has played a whole clip as long as the fake server's (0.3 s).
PLAYED = """() => { const a = document.querySelector('[data-testid=answer-audio]');
  return a.ended && a.played.length > 0 && Math.abs(a.duration - 0.3) < 0.05; }"""
#: What Chromium's fake capture device plays as the microphone: a loud, steady tone.
MICROPHONE = tone_wav(2.0, hertz=330.0, rate=48_000)
#: A WebM file starts with EBML's magic number: what MediaRecorder sent, unconverted.
WEBM_MAGIC = b"\x1a\x45\xdf\xa3"
#: Every stream the page got from getUserMedia, and how often it asked.
WATCH_STREAMS = """(() => {
  window.__asked = 0; window.__streams = [];
  const md = navigator.mediaDevices;
  if (!md) return;
  const original = md.getUserMedia.bind(md);
  md.getUserMedia = async (c) => { window.__asked += 1; const s = await original(c);
    window.__streams.push(s); return s; };
})();"""
#: How many microphone tracks the page got are still on.
LIVE_TRACKS = """() => window.__streams.flatMap((s) => s.getTracks())
  .filter((t) => t.readyState === 'live').length"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[object]:
    """Chromium with a fake microphone fed from a WAV (the conftest's, with the flags)."""
    wav: Path = tmp_path_factory.mktemp("microphone") / "speech.wav"
    wav.write_bytes(MICROPHONE)
    yield from chromium_hearing(wav)


@pytest.fixture(scope="module")
def cadre(tmp_path_factory, _fake_llm_server: FakeLLMServer) -> Iterator[ServerProcess]:
    base = _fake_llm_server.base_url
    server = live_server(
        tmp_path_factory.mktemp("voice-ui"), base, llm_retry_delay="0.01",
        stt_model="openai/whisper-1", stt_api_base=base, stt_api_key="test-key",
        tts_model="openai/tts-1", tts_api_base=base, tts_api_key="test-key",
    )  # fmt: skip
    warm_up(server, _fake_llm_server)
    yield server
    server.stop()


@pytest.fixture
def page(browser, request: pytest.FixtureRequest, cadre: ServerProcess, llm: FakeLLMServer):
    """A page whose context may use the microphone; the utility model names chats."""
    llm.add_rule(model_is("util-model"), Reply("Spoken"))
    for found in open_page(browser, request, "about:blank", permissions=["microphone"]):
        found.add_init_script(WATCH_STREAMS)
        found.goto(cadre.url)
        yield found


def shots(page, name: str) -> None:
    """Screenshots to look at by hand (VOICE_SHOTS=<folder>), at desktop and phone width."""
    folder = os.environ.get("VOICE_SHOTS")
    if not folder:
        return
    page.screenshot(path=f"{folder}/{name}-desktop.png")
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(600)  # the drawers' slide to their phone places (by hand only)
    page.screenshot(path=f"{folder}/{name}-phone.png")
    page.set_viewport_size({"width": 1280, "height": 800})


def test_speech_is_recorded_written_down_and_put_in_the_composer(llm, page):
    llm.audio.transcript = "Plan my Monday, please"
    page.get_by_test_id("message-input").fill("Hello.")
    mic = page.get_by_test_id("mic")
    expect(mic).to_be_visible()  # once the page knows the server writes speech down
    expect(mic).to_have_attribute("aria-pressed", "false")
    mic.focus()
    page.keyboard.press("Enter")  # the keyboard starts it as a click would
    expect(mic).to_have_attribute("aria-pressed", "true")
    expect(mic).to_have_accessible_name("Speak")  # one name: aria-pressed says it records
    expect(page.get_by_test_id("mic-time")).to_have_text(re.compile(r"^0:0\d$"))
    # The meter moves with the fake microphone's tone.
    page.wait_for_function(
        "() => Number(document.querySelector('[data-testid=mic-meter]').dataset.level) > 0.05"
    )
    shots(page, "recording")
    mic.click()

    box = page.get_by_test_id("message-input")
    expect(box).to_have_value("Hello. Plan my Monday, please")
    expect(box).to_be_focused()
    expect(mic).to_have_attribute("aria-pressed", "false")
    expect(page.get_by_test_id("mic-status")).to_contain_text("check it, then send")
    [sent] = llm.audio_requests(TRANSCRIPTIONS_PATH)
    assert sent.body["model"] == "whisper-1"
    recording = sent.body["file"]
    assert recording["content_type"] == "audio/webm" and recording["filename"] == "speech.webm"
    assert recording["data"].startswith(WEBM_MAGIC) and recording["size"] > 1000
    shots(page, "written")


def ask(page, text: str, answer_text: str = "") -> None:
    """Send `text` from the composer; wait for Agent 0's answer holding `answer_text`."""
    page.get_by_test_id("message-input").fill(text)
    page.get_by_test_id("send").click()
    if answer_text:
        expect(page.locator(RESPONSE).last).to_contain_text(answer_text, timeout=60_000)


def test_the_listen_button_plays_what_the_provider_read(llm, page):
    new_chat(page)
    llm.script(Reply(answer("The **plan** is ready.")))
    ask(page, "Read me the plan", "The plan is ready.")

    listen = page.locator(RESPONSE).get_by_test_id("speak-answer")
    expect(listen).to_have_attribute("aria-pressed", "false")
    listen.click()
    page.wait_for_function(PLAYED)
    expect(listen).to_have_attribute("aria-pressed", "false")
    expect(listen).to_have_accessible_name("Listen to this answer")
    [asked] = llm.audio_requests(SPEECH_PATH)
    assert asked.body["input"] == "The plan is ready."  # words, not markdown marks
    assert asked.body["model"] == "tts-1"
    shots(page, "answer")


def test_listen_keeps_its_name_and_stops_when_a_recording_starts(llm, page):
    new_chat(page)
    llm.script(Reply(answer("Read me, then hush.")))
    ask(page, "Say something", "Read me, then hush.")
    held = []
    page.route(
        "**/api/voice/speech", lambda route: held.append(route)
    )  # the audio on its way while we look
    listen = page.locator(RESPONSE).get_by_test_id("speak-answer")
    listen.click()
    expect(listen).to_have_attribute("aria-pressed", "true")
    expect(listen).to_have_accessible_name("Listen to this answer")
    mic = page.get_by_test_id("mic")
    mic.click()
    expect(mic).to_have_attribute("aria-pressed", "true")
    expect(listen).to_have_attribute("aria-pressed", "false")  # the microphone would hear it
    page.keyboard.press("Escape")
    expect(mic).to_have_attribute("aria-pressed", "false")
    assert len(held) == 1
    held[0].abort()
    page.wait_for_function(f"() => ({LIVE_TRACKS})() === 0")


def test_speech_sent_at_once_and_the_answer_read_aloud(llm, page, cadre):
    with settings_kept(cadre):
        assert page.evaluate(SAVE_SETTINGS, {"voice_send_at_once": True,
                                             "voice_read_aloud": True}) == 200  # fmt: skip
        new_chat(page)
        llm.audio.transcript = "What is on Monday?"
        llm.script(Reply(answer("Monday is planned.")))
        mic = page.get_by_test_id("mic")
        mic.click()
        expect(mic).to_have_attribute("aria-pressed", "true")
        page.wait_for_function(
            "() => Number(document.querySelector('[data-testid=mic-meter]').dataset.level) > 0"
        )
        mic.click()
        expect(page.locator(USER).last).to_contain_text("What is on Monday?")
        expect(page.get_by_test_id("message-input")).to_have_value("")
        expect(page.locator(RESPONSE).last).to_contain_text("Monday is planned.", timeout=60_000)
        page.wait_for_function(PLAYED)  # read as the run ended, with no click
        [asked] = llm.audio_requests(SPEECH_PATH)
        assert asked.body["input"] == "Monday is planned."


def hide_running(page) -> list[str]:
    """The page's socket loses every state that says a chat runs, as when a quick run starts
    and ends between two pushes of the state (seen once in a full run: nothing was read)."""
    dropped: list[str] = []

    def route(ws) -> None:
        server = ws.connect_to_server()

        def down(message) -> None:
            if (
                isinstance(message, str)
                and message.startswith('42["state"')
                and ('"running":true' in message.replace(" ", ""))
            ):
                dropped.append(message)
                return
            ws.send(message)

        server.on_message(down)
        ws.on_message(server.send)

    page.route_web_socket("**/socket.io/**", route)
    return dropped


@pytest.fixture
def unseen_runs(browser, request, cadre: ServerProcess, llm: FakeLLMServer):
    """A page that reads answers aloud and never sees a chat running (`hide_running`): the
    page and the states it lost."""
    llm.add_rule(model_is("util-model"), Reply("Spoken"))
    with settings_kept(cadre):
        for page in open_page(browser, request, "about:blank"):
            dropped = hide_running(page)
            page.goto(cadre.url)
            assert page.evaluate(SAVE_SETTINGS, {"voice_read_aloud": True}) == 200
            page.reload()  # the page asks what the server offers as it opens
            yield page, dropped


def test_an_answer_is_read_aloud_when_its_run_was_never_seen_running(llm, unseen_runs):
    page, dropped = unseen_runs
    new_chat(page)
    # Slow enough that the server surely sends a running state for the page to lose (a
    # quick one can end before the first state is read, and then nothing was hidden).
    llm.script(Reply(answer("Quick answer."), first_delay=1.0))
    ask(page, "Quick?", "Quick answer.")
    page.wait_for_function(PLAYED)  # read all the same
    assert dropped, "the test hid no state"
    [asked] = llm.audio_requests(SPEECH_PATH)
    assert asked.body["input"] == "Quick answer."


def test_an_answer_to_a_chat_left_before_it_came_is_not_read_when_opened_later(llm, unseen_runs):
    page, _ = unseen_runs
    first = new_chat(page)
    llm.script(Reply(answer("Late answer."), first_delay=1.0))
    ask(page, "Slow?")
    new_chat(page)  # left before the answer came
    wait_for(lambda: len(llm.chat_requests("chat-model")) == 1, what="the call")
    page.wait_for_timeout(1500)  # the answer came meanwhile, unseen
    page.locator(f'[data-testid="chat-item"][data-chat-id="{first}"]').click()
    expect(page.locator(RESPONSE).last).to_contain_text("Late answer.")
    page.wait_for_timeout(800)  # a reading would have asked for the audio by now
    assert llm.audio_requests(SPEECH_PATH) == []


def test_a_refused_microphone_is_told_in_plain_words(browser, request, cadre, llm):
    # No permission granted and no fake UI: Chromium refuses the page the microphone. (This
    # context alone lets the test inject axe past the page's CSP: the others keep the CSP
    # their audio must pass.)
    for page in open_page(browser, request, cadre.url, bypass_csp=True):
        page.get_by_test_id("mic").click()
        toast = page.get_by_test_id("toast").filter(has_text="Microphone")
        expect(toast).to_contain_text("The microphone was refused. Allow it for this page")
        expect(page.get_by_test_id("mic")).to_have_attribute("aria-pressed", "false")
        shots(page, "refused")
        found = axe_violations(page, ".composer")
        assert not found, describe(found)
    assert llm.audio_requests() == []


def test_switching_chats_while_recording_drops_the_recording(llm, page):
    llm.audio.transcript = "meant for the second chat"
    first = new_chat(page)
    new_chat(page)
    mic = page.get_by_test_id("mic")
    mic.click()
    expect(mic).to_have_attribute("aria-pressed", "true")
    page.locator(f'[data-testid="chat-item"][data-chat-id="{first}"]').click()
    page.wait_for_function("id => location.hash.endsWith(id)", arg=first)
    expect(mic).to_have_attribute("aria-pressed", "false")
    page.wait_for_function(f"() => ({LIVE_TRACKS})() === 0")  # the microphone is off
    expect(page.get_by_test_id("mic-status")).to_contain_text("dropped")
    expect(page.get_by_test_id("message-input")).to_have_value("")
    assert llm.audio_requests(TRANSCRIPTIONS_PATH) == []  # nothing sent to the other chat


def test_a_text_written_down_after_leaving_its_chat_is_not_put_in_another(llm, page):
    llm.audio.transcript = "only for the second chat"
    first = new_chat(page)
    new_chat(page)
    held = []
    page.route("**/api/voice/transcribe", lambda route: held.append(route))
    mic = page.get_by_test_id("mic")
    mic.click()
    expect(mic).to_have_attribute("aria-pressed", "true")
    # Something heard first (a recording stopped at once may hold nothing on a busy machine).
    page.wait_for_function(
        "() => Number(document.querySelector('[data-testid=mic-meter]').dataset.level) > 0.05"
    )
    mic.click()  # Stop: the recording is on its way to be written down
    page.wait_for_function("() => document.querySelector('[data-testid=mic]').disabled")
    page.locator(f'[data-testid="chat-item"][data-chat-id="{first}"]').click()
    page.wait_for_function("id => location.hash.endsWith(id)", arg=first)
    assert len(held) == 1
    held[0].continue_()
    toast = page.get_by_test_id("toast").filter(has_text="recorded in another chat")
    expect(toast).to_contain_text("only for the second chat")
    expect(page.get_by_test_id("message-input")).to_have_value("")
    expect(mic).to_be_enabled()


def test_a_double_press_of_speak_records_once(llm, page):
    llm.audio.transcript = "hello"
    new_chat(page)
    mic = page.get_by_test_id("mic")
    expect(mic).to_be_visible()
    # Two presses at once: the second comes while the first waits for /api/voice.
    page.evaluate("() => { const m = document.querySelector('[data-testid=mic]');"
                  " m.click(); m.click(); }")  # fmt: skip
    expect(mic).to_have_attribute("aria-pressed", "true")
    page.wait_for_function(
        "() => Number(document.querySelector('[data-testid=mic-meter]').dataset.level) > 0"
    )
    mic.click()  # Stop
    expect(page.get_by_test_id("mic-status")).to_contain_text("check it, then send")
    expect(page.get_by_test_id("message-input")).to_have_value("hello")
    assert page.evaluate("window.__asked") == 1
    page.wait_for_function(f"() => ({LIVE_TRACKS})() === 0")


def test_a_recorder_that_cannot_start_releases_the_microphone(page):
    new_chat(page)
    # A recorder the browser refuses to make (NotSupportedError for the format, say).
    page.evaluate("""() => { window.MediaRecorder = class {
      static isTypeSupported() { return true; }
      constructor() { throw new DOMException('no recorder', 'NotSupportedError'); } }; }""")
    mic = page.get_by_test_id("mic")
    mic.click()
    toast = page.get_by_test_id("toast").filter(has_text="Microphone")
    expect(toast).to_contain_text("could not start recording")
    page.wait_for_function(f"() => ({LIVE_TRACKS})() === 0")
    expect(mic).to_have_attribute("aria-pressed", "false")
    expect(mic).to_be_enabled()
    assert page.evaluate("window.__asked") == 1


def test_only_words_are_read_aloud(page):
    """Code (fenced with ``` or ~~~, or indented), tables, rules and tags are left out;
    names with underscores keep them."""
    said = page.evaluate("""async () => {
      const { speakable } = await import('/js/stores/voice.js');
      return [
        "Run this:\\n~~~python\\nimport os\\n~~~\\nDone.",
        "Run this:\\n\\n    rm -rf build/\\n    make all\\n\\nDone.",
        "| name | size |\\n|---|---|\\n| a.txt | 3 |",
        "Set `max_tokens` in my_config_file.py",
        "Use <kbd>Ctrl</kbd>+<kbd>S</kbd>",
        "Intro\\n\\n---\\n\\nMore",
      ].map(speakable); }""")
    assert "import" not in said[0] and said[0].endswith("Done.")
    assert "rm -rf" not in said[1] and said[1].endswith("Done.")
    assert "|" not in said[2] and "---" not in said[2]
    assert said[3] == "Set max_tokens in my_config_file.py"
    assert said[4] == "Use Ctrl+S"
    assert "---" not in said[5] and "Intro" in said[5] and "More" in said[5]
