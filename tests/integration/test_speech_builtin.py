"""The built-in speech-to-text model for real (Moonshine in a process of its own, no key):
with no `stt_model` set the page is told to record WAV and its recording is written down
on this machine, never sent to a provider; a long recording goes in pieces cut where it is
quiet; a clip that makes the library abort its process costs that recording only; a third
recording waiting is told the model is busy; what it cannot read (the browser's Opus,
another rate, floats, an empty file), `off`, and where it cannot run are told in plain
words; a Telegram voice note is told to ask for a provider. The page's WAV recorder in
Chromium is tests/e2e/test_voice_builtin_ui.py."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
import threading
import wave
from pathlib import Path

import pytest

from helpers.errors import UserError
from models import speech_builtin
from tests.support.fake_llm_audio import tone_wav

moonshine_cpp = pytest.importorskip("moonshine_cpp")

#: The package's own clip: Beckett read aloud (16 kHz mono, 10 s): "Ever tried, ever
#: failed. No matter. Try again. Fail again. Fail better."
BECKETT = Path(moonshine_cpp.__file__).parent / "test-data" / "beckett.wav"


def frames_of(path: Path, seconds: float | None = None) -> bytes:
    with wave.open(str(path)) as source:
        count = source.getnframes() if seconds is None else int(seconds * source.getframerate())
        return source.readframes(count)


def wav(frames: bytes, rate: int = 16_000, width: int = 2) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as made:
        made.setnchannels(1)
        made.setsampwidth(width)
        made.setframerate(rate)
        made.writeframes(frames)
    return out.getvalue()


#: "Ever tried, ever failed."
CLIP = wav(frames_of(BECKETT, 2.5))


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
    assert llm.audio_requests() == []  # nothing left this machine
    process = speech_builtin.WORKER.process
    assert process is not None and process.poll() is None  # in a process of its own


def test_a_long_recording_is_written_down_in_pieces_cut_where_it_is_quiet(http, llm):
    whole = frames_of(BECKETT) * 2  # 20 s: Beckett twice
    cut = speech_builtin.pieces(whole)
    assert len(cut) == 3 and b"".join(cut) == whole
    assert all(len(piece) <= speech_builtin.PIECE_SECONDS * 16_000 * 2 for piece in cut)
    answered = post(http, wav(whole))
    assert answered.status_code == 200, answered.json
    assert answered.json["text"].lower().count("ever tried") == 2, answered.json


def test_a_piece_is_cut_in_the_quietest_place_of_its_end():
    loud = tone_wav(8.5)[44:]  # 16 kHz 16-bit samples after the header
    quiet = b"\0" * (16_000 * 2 // 2)  # half a second of silence
    whole = loud + quiet + tone_wav(4.0)[44:]
    first = speech_builtin.pieces(whole)[0]
    assert len(loud) < len(first) < len(loud) + len(quiet)  # inside the silence


def test_a_clip_that_aborts_the_library_costs_that_recording_only(tmp_path, caplog):
    """A few hundredths of a second, unpadded, abort Moonshine's process (a review found it
    killing the server when it ran inside): the recording is told so, the next one works."""
    worker = speech_builtin.Worker()
    tiny = tmp_path / "tiny.wav"
    tiny.write_bytes(wav(frames_of(BECKETT, 0.02)))  # 320 samples: no padding here
    clip = tmp_path / "clip.wav"
    clip.write_bytes(CLIP)
    try:
        with caplog.at_level(logging.ERROR), pytest.raises(UserError) as told:
            worker.write_down(tiny)
        assert str(told.value) == speech_builtin.STOPPED
        assert "process ended (exit code" in caplog.text
        assert heard(worker.write_down(clip))  # started again
    finally:
        worker.let_go()


def test_the_same_clip_padded_is_written_down_without_harm(http, llm):
    answered = post(http, wav(frames_of(BECKETT, 0.02)))
    assert answered.status_code == 200 and isinstance(answered.json["text"], str)


def test_a_model_that_cannot_start_says_it_cannot_run_here(tmp_path, caplog):
    """Its own words on stderr are lines of the server's log (they went around it to the
    terminal before), ahead of the line saying it ended."""
    fails = "import sys; print('no model weights at /x', file=sys.stderr); sys.exit(3)"
    worker = speech_builtin.Worker([sys.executable, "-c", fails])
    clip = tmp_path / "clip.wav"
    clip.write_bytes(CLIP)
    with caplog.at_level(logging.WARNING), pytest.raises(UserError) as told:
        worker.write_down(clip)
    assert str(told.value) == speech_builtin.NOT_HERE and "exit code 3" in caplog.text
    said = caplog.text.index("process says: no model weights at /x")
    assert said < caplog.text.index("exit code 3")


def test_two_recordings_at_once_each_get_their_own_text_and_a_third_waiting_is_busy(
    server, llm, monkeypatch
):
    answers: list[dict] = []

    def one(data: bytes) -> None:
        client = server.app.test_client()
        client.environ_base["HTTP_X_CSRF_TOKEN"] = client.get("/api/csrf").json["token"]
        answers.append(post(client, data).json)

    threads = [threading.Thread(target=one, args=(data,)) for data in (CLIP, tone_wav(1.0))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(answers) == 2 and sum(heard(a.get("text", "")) for a in answers) == 1, answers

    monkeypatch.setattr(speech_builtin, "_admitted", threading.BoundedSemaphore(1))  # none waits
    with speech_builtin._turn():  # one being written down, none may wait
        with pytest.raises(UserError) as told:
            asyncio.run(speech_builtin.transcribe(CLIP))
    assert str(told.value) == speech_builtin.BUSY


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\x1a\x45\xdf\xa3 webm from MediaRecorder", "and this one is not WAV."),
        (tone_wav(0.5, rate=48_000), "and this one is 48000 Hz, 1 channel(s), 16-bit."),
        (wav(b"\0" * 800, width=4), "16 kHz mono 16-bit WAV"),
        (wav(b""), "The recording is empty: nothing was heard. Record again."),
    ],
)
def test_what_it_cannot_read_is_refused_in_plain_words(http, llm, caplog, data, says):
    caplog.set_level(logging.WARNING)
    refused = post(http, data, "speech.webm", "audio/webm")
    assert refused.status_code == 400
    assert says in refused.json["error"]
    assert any(says in r.getMessage() for r in caplog.records)  # and a line in the log


def test_a_float_wav_and_a_length_the_header_overstates(http, llm):
    floats = bytearray(wav(b"\0" * 3200))
    floats[20:22] = (3).to_bytes(2, "little")  # format 3: IEEE floats
    refused = post(http, bytes(floats)).json["error"]
    assert "and this one is WAV of another encoding than PCM." in refused
    told = bytearray(wav(b"\0" * 3200))
    told[40:44] = (16_000 * 2 * 700).to_bytes(4, "little")  # "700 s", 0.1 s there
    assert post(http, bytes(told)).status_code == 200  # read as the 0.1 s it holds


def test_off_and_named_where_it_cannot_run_say_so(http, llm, monkeypatch):
    monkeypatch.setenv("CADRE_STT_MODEL", "off")
    assert http.get("/api/voice").json["transcribe"] is False
    assert "Speech to text is turned off here" in post(http, CLIP).json["error"]
    monkeypatch.setenv("CADRE_STT_MODEL", speech_builtin.NAME)
    assert http.get("/api/voice").json["format"] == "wav"
    monkeypatch.setattr(speech_builtin, "available", lambda: False)
    assert http.get("/api/voice").json["transcribe"] is False
    assert post(http, CLIP).json["error"] == speech_builtin.NOT_HERE
    monkeypatch.setenv("CADRE_STT_MODEL", "openai/whisper-1")
    monkeypatch.setenv("CADRE_STT_API_BASE", llm.base_url)
    assert http.get("/api/voice").json["format"] == ""  # a provider: the browser's own


def test_a_telegram_voice_note_is_told_to_ask_for_a_provider(llm):
    from server.apis.telegram.voice import BUILTIN_ONLY, NoTranscript, transcript

    with pytest.raises(NoTranscript) as told:
        asyncio.run(transcript(b"OggS opus", "voice.ogg", "audio/ogg"))
    assert str(told.value) == BUILTIN_ONLY
    assert llm.audio_requests() == []


def test_a_recording_past_its_time_is_told_in_the_built_in_models_words(http, llm, monkeypatch):
    """Not "the provider": there is none. The text nobody waits for is dropped after the
    piece under way, and the next recording is written down."""
    monkeypatch.setattr(speech_builtin, "WAIT", 0.01)
    late = post(http, wav(frames_of(BECKETT) * 2))  # two pieces: the second is never begun
    assert late.status_code == 504
    assert late.json["error"].startswith("The built-in speech model did not finish")
    monkeypatch.setattr(speech_builtin, "WAIT", 300.0)
    assert heard(post(http, CLIP).json["text"])


#: Fake model processes (models/speech_worker.py's protocol): one that says something
#: before it is ready, one that answers another piece than the one asked.
NOISY_START = "print('hello', flush=True); print('{\"ready\": true}', flush=True)"
OUT_OF_TURN = """
import json, sys
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    print(json.dumps({"id": json.loads(line)["id"] + 1, "text": "not yours"}), flush=True)
"""


def test_a_worker_that_answers_out_of_turn_is_ended_and_no_one_gets_anothers_text(tmp_path, caplog):
    clip = tmp_path / "clip.wav"
    clip.write_bytes(CLIP)
    noisy = speech_builtin.Worker([sys.executable, "-c", NOISY_START])
    with pytest.raises(UserError) as told:
        noisy.write_down(clip)
    assert str(told.value) == speech_builtin.NOT_HERE
    wrong = speech_builtin.Worker([sys.executable, "-c", OUT_OF_TURN])
    with caplog.at_level(logging.ERROR), pytest.raises(UserError) as told:
        wrong.write_down(clip)
    assert str(told.value) == speech_builtin.STOPPED
    assert "answered out of turn" in caplog.text and wrong.process is None


@pytest.fixture(autouse=True, scope="module")
def _worker_let_go():
    """The model's process (some 750 MB) goes with this module, not 10 idle minutes later."""
    yield
    speech_builtin.WORKER.let_go()
