"""Voice in Chromium: a fake microphone (a WAV file the test makes, fed by Chromium's fake
capture device) records into the composer through the fake model server's
/audio/transcriptions; an answer's Listen button plays what /audio/speech gave; a refused
microphone is told in plain words.

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

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, open_page
from tests.e2e.test_chat_ui import new_chat
from tests.support.agents import answer
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


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[object]:
    """Chromium with a fake microphone fed from a WAV (the conftest's, with the flags)."""
    from playwright.sync_api import sync_playwright

    wav: Path = tmp_path_factory.mktemp("microphone") / "speech.wav"
    wav.write_bytes(MICROPHONE)
    flags = ["--use-fake-device-for-media-stream", f"--use-file-for-fake-audio-capture={wav}"]
    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, *flags]
    )
    yield chromium
    chromium.close()
    playwright.stop()


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
    yield from open_page(browser, request, cadre.url, permissions=["microphone"])


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
    expect(mic).to_have_text("Stop")
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


def test_the_listen_button_plays_what_the_provider_read(llm, page):
    new_chat(page)
    llm.script(Reply(answer("The **plan** is ready.")))
    page.get_by_test_id("message-input").fill("Read me the plan")
    page.get_by_test_id("send").click()
    expect(page.locator(RESPONSE)).to_contain_text("The plan is ready.", timeout=60_000)

    listen = page.locator(RESPONSE).get_by_test_id("speak-answer")
    expect(listen).to_have_attribute("aria-pressed", "false")
    listen.click()
    page.wait_for_function(PLAYED)
    expect(listen).to_have_attribute("aria-pressed", "false")
    expect(listen).to_have_text("Listen")
    [asked] = llm.audio_requests(SPEECH_PATH)
    assert asked.body["input"] == "The plan is ready."  # words, not markdown marks
    assert asked.body["model"] == "tts-1"
    shots(page, "answer")


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
