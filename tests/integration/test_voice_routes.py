"""The voice routes over the real Flask app and the real clients (the openai SDK, litellm)
against the fake model server's audio endpoints: a recording written down, a text read
aloud, the size limits, a provider's failure in plain words, and a line in the log for
each refusal."""

from __future__ import annotations

import io
import logging

import pytest

from helpers.settings import Settings
from models import speech_builtin, voice
from tests.support.fake_llm_audio import SPEECH_AUDIO, SPEECH_PATH, TRANSCRIPTIONS_PATH, tone_wav

RECORDING = tone_wav(0.2)


@pytest.fixture
def stt(llm, monkeypatch):
    monkeypatch.setenv("CADRE_STT_MODEL", "openai/whisper-1")
    monkeypatch.setenv("CADRE_STT_API_BASE", llm.base_url)
    monkeypatch.setenv("CADRE_STT_API_KEY", "stt-key-1234")
    return llm


@pytest.fixture
def tts(llm, monkeypatch):
    monkeypatch.setenv("CADRE_TTS_MODEL", "openai/tts-1")
    monkeypatch.setenv("CADRE_TTS_API_BASE", llm.base_url)
    monkeypatch.setenv("CADRE_TTS_API_KEY", "tts-key-1234")
    monkeypatch.setenv("CADRE_TTS_VOICE", "nova")
    return llm


@pytest.fixture
def no_builtin(monkeypatch):
    """As where the built-in speech model is not installed (not Linux x86-64)."""
    monkeypatch.setattr(speech_builtin, "available", lambda: False)


def post_recording(http, data: bytes = RECORDING, name: str = "speech.webm"):
    form = {"audio": (io.BytesIO(data), name, "audio/webm;codecs=opus")}
    return http.post("/api/voice/transcribe", data=form, content_type="multipart/form-data")


@pytest.mark.parametrize("client", ["auto", "litellm"])
def test_a_recording_reaches_the_provider_and_its_text_comes_back(http, stt, monkeypatch, client):
    monkeypatch.setenv("CADRE_MODEL_CLIENT", client)
    stt.audio.transcript = "Make me a plan for Monday"
    response = post_recording(http)
    assert response.status_code == 200, response.json
    assert response.json == {"text": "Make me a plan for Monday"}
    [got] = stt.audio_requests(TRANSCRIPTIONS_PATH)
    assert got.body["model"] == "whisper-1"
    assert got.body["file"]["data"] == RECORDING
    assert got.body["file"]["filename"] == "speech.webm"
    assert got.headers["authorization"] == "Bearer stt-key-1234"


def test_the_page_is_told_what_the_server_offers(http, stt, monkeypatch):
    monkeypatch.setenv("CADRE_VOICE_SEND_AT_ONCE", "true")
    offer = http.get("/api/voice").json
    assert offer["transcribe"] is True and offer["speech"] is False
    assert offer["send_at_once"] is True and offer["read_aloud"] is False
    assert offer["max_bytes"] == voice.MAX_AUDIO_BYTES
    masked = http.get("/api/settings").json
    assert masked["stt_api_key"] == "***" and masked["tts_api_key"] == ""


def test_without_a_model_the_words_say_where_to_set_one(http, llm, no_builtin):
    response = post_recording(http)
    assert response.status_code == 400
    assert "No speech-to-text model is set" in response.json["error"]
    assert "Settings, Voice" in response.json["error"]
    spoken = http.post("/api/voice/speech", json={"text": "Hello"})
    assert spoken.status_code == 400 and "browser's own voice" in spoken.json["error"]
    assert llm.audio_requests() == []


def test_a_recording_over_the_limit_is_refused_unsent(http, stt):
    response = post_recording(http, b"\0" * (voice.MAX_AUDIO_BYTES + 1))
    assert response.status_code == 413
    assert "the most sent at once is 25 MB" in response.json["error"]
    empty = post_recording(http, b"")
    assert empty.status_code == 400 and "nothing was heard" in empty.json["error"]
    assert stt.audio_requests() == []


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (500, "Speech to text failed: The model provider had an internal error (HTTP 500)."),
        (401, "Speech to text failed: The provider refused the API key (HTTP 401)."),
    ],
)
def test_a_provider_failure_is_told_in_plain_words(http, stt, status, words):
    stt.audio.failure = status
    response = post_recording(http)
    assert response.status_code == 502
    assert response.json["error"].startswith(words)
    assert "Traceback" not in response.json["error"]


def test_a_text_is_read_aloud_by_the_provider(http, tts):
    response = http.post("/api/voice/speech", json={"text": "  The plan is ready.  "})
    assert response.status_code == 200
    assert response.mimetype == "audio/wav" and response.data == SPEECH_AUDIO
    [got] = tts.audio_requests(SPEECH_PATH)
    assert got.body == {
        "model": "tts-1", "voice": "nova", "input": "The plan is ready.", "response_format": "mp3",
    }  # fmt: skip
    too_long = http.post("/api/voice/speech", json={"text": "a" * (voice.MAX_SPEECH_CHARS + 1)})
    assert too_long.status_code == 400 and "Send it in parts" in too_long.json["error"]
    tts.audio.failure = 503
    failed = http.post("/api/voice/speech", json={"text": "Again"})
    assert failed.status_code == 502
    assert failed.json["error"].startswith("Reading aloud failed: The model provider had")


async def test_transcribe_takes_the_settings_it_is_given(llm):
    """As the Telegram bridge calls it: a voice note (Ogg), settings of its own."""
    settings = Settings(stt_model="openai/whisper-1", stt_api_base=llm.base_url, stt_api_key="k-1")
    llm.audio.transcript = " Remind me at five "
    text = await voice.transcribe(RECORDING, "note.ogg", "audio/ogg", settings)
    assert text == "Remind me at five"
    [got] = llm.audio_requests(TRANSCRIPTIONS_PATH)
    assert got.body["file"]["filename"] == "note.ogg"
    assert got.body["file"]["content_type"] == "audio/ogg"


def voice_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "server.routes.voice" and r.levelno == logging.WARNING]  # fmt: skip


def test_each_refused_recording_is_a_line_in_the_log(http, stt, caplog):
    caplog.set_level(logging.INFO)
    assert post_recording(http, b"\0" * (voice.MAX_AUDIO_BYTES + 1)).status_code == 413
    assert post_recording(http, b"").status_code == 400
    missing = http.post("/api/voice/transcribe", data={}, content_type="multipart/form-data")
    assert missing.status_code == 400
    lines = voice_warnings(caplog)
    assert len(lines) == 3, lines
    assert "25 MB" in lines[0] and "empty" in lines[1] and "'audio'" in lines[2]


def test_without_a_model_the_recording_is_not_read(http, llm, caplog, no_builtin):
    """The setting is looked at first: a large body is refused for want of a model, unread."""
    caplog.set_level(logging.INFO)
    response = post_recording(http, b"\0" * (voice.MAX_AUDIO_BYTES + 1))
    assert response.status_code == 400
    assert "No speech-to-text model is set" in response.json["error"]
    [line] = voice_warnings(caplog)
    assert "No speech-to-text model" in line


def test_a_text_to_read_is_capped_and_its_refusals_logged(http, tts, caplog):
    caplog.set_level(logging.INFO)
    huge = http.post("/api/voice/speech", data=b"{" + b" " * (2 * 1024 * 1024) + b"}",
                     content_type="application/json")  # fmt: skip
    assert huge.status_code == 413
    assert "Send it in parts" in huge.json["error"]
    no_text = http.post("/api/voice/speech", json={"words": "Hello"})
    assert no_text.status_code == 400
    assert len(voice_warnings(caplog)) == 2
    assert tts.audio_requests() == []
