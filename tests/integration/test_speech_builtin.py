"""The built-in speech-to-text model for real (Moonshine base in this process, no key):
with no `stt_model` set the page is told to record WAV and its recording is written down
here, never sent to a provider; two at once both come back right; what it cannot read (the
browser's Opus, another rate) and where it is not installed are told in plain words; a
Telegram voice note is told to ask for a provider. The page's WAV recorder in Chromium is
tests/e2e/test_voice_builtin_ui.py."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
import wave
from pathlib import Path

import pytest

from models import speech_builtin
from tests.support.fake_llm_audio import tone_wav

moonshine_cpp = pytest.importorskip("moonshine_cpp")

#: The package's own clip (Beckett, read aloud: 16 kHz mono), its first 2.5 s: "Ever tried,
#: ever failed."
BECKETT = Path(moonshine_cpp.__file__).parent / "test-data" / "beckett.wav"


def first_seconds(path: Path, seconds: float) -> bytes:
    with wave.open(str(path)) as source:
        frames = source.readframes(int(seconds * source.getframerate()))
        out = io.BytesIO()
        with wave.open(out, "wb") as cut:
            cut.setparams(source.getparams())
            cut.writeframes(frames)
    return out.getvalue()


CLIP = first_seconds(BECKETT, 2.5)


def post(http, data: bytes, name: str = "speech.wav", mime: str = "audio/wav"):
    form = {"audio": (io.BytesIO(data), name, mime)}
    return http.post("/api/voice/transcribe", data=form, content_type="multipart/form-data")


def heard(text: str) -> bool:
    words = text.lower()
    return "ever tried" in words and "failed" in words


def test_with_no_model_set_speech_is_written_down_here_without_a_provider(http, llm):
    offer = http.get("/api/voice").json
    assert offer["transcribe"] is True and offer["format"] == "wav"
    answered = post(http, CLIP)
    assert answered.status_code == 200, answered.json
    assert heard(answered.json["text"]), answered.json
    assert llm.audio_requests() == []  # nothing left this process


def test_named_it_runs_too_and_a_provider_named_gets_the_browsers_own_format(
    http, llm, monkeypatch
):
    monkeypatch.setenv("CADRE_STT_MODEL", speech_builtin.NAME)
    assert http.get("/api/voice").json["format"] == "wav"
    refused = post(http, tone_wav(0.2, rate=48_000)).json["error"]  # its own words: it ran
    assert refused.startswith("The built-in speech model reads 16 kHz mono WAV")
    monkeypatch.setenv("CADRE_STT_MODEL", "openai/whisper-1")
    monkeypatch.setenv("CADRE_STT_API_BASE", llm.base_url)
    assert http.get("/api/voice").json["format"] == ""


def test_two_recordings_at_once_each_get_their_own_text(server, llm):
    """One is written down at a time (the library's model is shared): both come back right."""
    answers: list[dict] = []

    def one(data: bytes) -> None:
        client = server.app.test_client()
        client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
        answers.append(post(client, data).json)

    short = tone_wav(1.0)  # a tone: no words, or next to none
    threads = [threading.Thread(target=one, args=(data,)) for data in (CLIP, short)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(answers) == 2 and sum(heard(a["text"]) for a in answers) == 1, answers


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\x1a\x45\xdf\xa3 webm from MediaRecorder", "not WAV"),
        (tone_wav(0.5, rate=48_000), "48000 Hz, 1 channel(s), 16-bit"),
    ],
)
def test_what_it_cannot_read_is_refused_in_plain_words(http, llm, caplog, data, says):
    caplog.set_level(logging.WARNING)
    refused = post(http, data, "speech.webm", "audio/webm")
    assert refused.status_code == 400
    error = refused.json["error"]
    assert error.startswith("The built-in speech model reads 16 kHz mono WAV recordings")
    assert says in error and "Settings, Voice" in error
    assert any(says in r.getMessage() for r in caplog.records)  # and a line in the log


def test_where_it_is_not_installed_named_it_says_so(http, llm, monkeypatch):
    monkeypatch.setenv("CADRE_STT_MODEL", speech_builtin.NAME)

    def missing():
        raise ImportError("No module named 'moonshine_cpp'")

    monkeypatch.setattr(speech_builtin, "available", lambda: False)
    assert http.get("/api/voice").json["transcribe"] is False
    refused = post(http, CLIP)
    assert refused.status_code == 400
    assert "No speech-to-text model is set" in refused.json["error"]
    # Found but not loadable (a library missing from the system): said at the first use.
    monkeypatch.setattr(speech_builtin, "_library", missing)
    monkeypatch.setattr(speech_builtin, "_model", None)
    error = asyncio.run(_direct(CLIP))
    assert error == speech_builtin.NOT_HERE


async def _direct(data: bytes) -> str:
    try:
        await speech_builtin.transcribe(data)
    except Exception as exc:  # noqa: BLE001 - what it says is the point
        return str(exc)
    return ""


def test_a_telegram_voice_note_is_told_to_ask_for_a_provider(llm):
    from server.apis.telegram.voice import BUILTIN_ONLY, NoTranscript, transcript

    with pytest.raises(NoTranscript) as told:
        asyncio.run(transcript(b"OggS opus", "voice.ogg", "audio/ogg"))
    assert str(told.value) == BUILTIN_ONLY
    assert llm.audio_requests() == []
