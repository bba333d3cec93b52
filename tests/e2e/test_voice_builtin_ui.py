"""The built-in speech model from the page, in Chromium: with no speech-to-text model set,
the page records 16 kHz WAV itself (webui/js/wav-recorder.js) from a fake microphone that
plays a person reading Beckett (the moonshine_cpp package's own clip), and what Moonshine
wrote down in the server lands in the composer; nothing goes to a provider.

The module's own Chromium (its microphone is that clip) against the shared server, whose
`stt_model` is empty. Set VOICE_SHOTS to a folder to keep screenshots."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import chromium_hearing, open_page
from tests.e2e.test_chat_ui import new_chat
from tests.support.fake_llm import FakeLLMServer, Reply, model_is
from tests.support.server_process import ServerProcess

moonshine_cpp = pytest.importorskip("moonshine_cpp")

BECKETT = Path(moonshine_cpp.__file__).parent / "test-data" / "beckett.wav"
#: Every request body the page sent to /api/voice/transcribe starts with RIFF...WAVE.
WATCH_UPLOADS = """(() => {
  window.__sent = [];
  const send = window.fetch;
  window.fetch = async (url, options) => {
    if (String(url).includes('/api/voice/transcribe')) {
      const audio = options.body.get('audio');
      const head = new Uint8Array(await audio.slice(0, 44).arrayBuffer());
      const view = new DataView(head.buffer);
      const text = (from, to) => String.fromCharCode(...head.slice(from, to));
      window.__sent.push({ type: audio.type, size: audio.size, name: audio.name,
        riff: text(0, 4), wave: text(8, 12), rate: view.getUint32(24, true),
        channels: view.getUint16(22, true), bits: view.getUint16(34, true) });
    }
    return send(url, options);
  };
})();"""


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Chromium whose microphone reads Beckett aloud."""
    yield from chromium_hearing(BECKETT)


@pytest.fixture
def page(browser, request, shared_cadre: ServerProcess, llm: FakeLLMServer):
    llm.add_rule(model_is("util-model"), Reply("Spoken"))
    for found in open_page(browser, request, "about:blank", permissions=["microphone"]):
        found.add_init_script(WATCH_UPLOADS)
        found.goto(shared_cadre.url)
        yield found


def test_the_built_in_model_writes_down_what_the_microphone_heard(page, llm):
    new_chat(page)
    mic = page.get_by_test_id("mic")
    expect(mic).to_be_visible()  # no speech-to-text model set: the built-in one is offered
    mic.click()
    expect(mic).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("mic-time")).to_have_text("0:03", timeout=15_000)
    if folder := os.environ.get("VOICE_SHOTS"):
        page.screenshot(path=f"{folder}/builtin-recording.png")
    mic.click()
    box = page.get_by_test_id("message-input")
    expect(box).to_have_value(re.compile(r"ever tried", re.IGNORECASE), timeout=60_000)
    [sent] = page.evaluate("window.__sent")
    assert sent["type"] == "audio/wav" and sent["name"] == "speech.wav"
    assert (sent["riff"], sent["wave"]) == ("RIFF", "WAVE")
    assert (sent["rate"], sent["channels"], sent["bits"]) == (16_000, 1, 16)
    assert 60_000 < sent["size"] < 200_000  # some 3 s of 16 kHz 16-bit: 32 kB a second
    assert llm.audio_requests() == []  # written down in the server, not by a provider
    expect(page.get_by_test_id("mic-status")).to_contain_text("check it, then send")


#: The recorder's arithmetic in the page: a second of sound at 48, 44.1 and 8 kHz is 16,000
#: samples (8 kHz from a headset in call mode was sped up twice over before), in pieces as
#: the worklet hands them; a constant level stays that level.
RATES = """async () => {
  const { Downsampler, wavBlob } = await import('/js/wav-recorder.js');
  const out = {};
  for (const rate of [48000, 44100, 8000]) {
    const down = new Downsampler(rate, 16000);
    for (let at = 0; at < rate; at += 4096) {
      down.push(new Float32Array(Math.min(4096, rate - at)).fill(0.5));
    }
    const samples = down.samples();
    out[rate] = { count: samples.length, first: samples[0], last: samples[samples.length - 1] };
  }
  const blob = wavBlob(new Int16Array(16000), 16000);
  out.size = blob.size;
  return out;
}"""


def test_the_recorder_brings_any_device_rate_to_16_khz(page):
    found = page.evaluate(RATES)
    for rate in ("48000", "44100", "8000"):
        assert abs(found[rate]["count"] - 16_000) <= 1, (rate, found[rate])
        assert found[rate]["first"] == found[rate]["last"] == 16383  # 0.5 of full scale
    assert found["size"] == 44 + 32_000
