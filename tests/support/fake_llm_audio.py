"""The fake model server's audio endpoints (see fake_llm.py): OpenAI's `/audio/transcriptions`
(a multipart upload in, `{"text": ...}` out) and `/audio/speech` (JSON in, a WAV out), each
answering what the test set in `FakeLLMServer.audio` and recording what it got."""

from __future__ import annotations

import io
import math
import struct
import wave
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.fake_llm_http import _Handler

TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions"
SPEECH_PATH = "/v1/audio/speech"
AUDIO_PATHS = frozenset({TRANSCRIPTIONS_PATH, SPEECH_PATH})


@dataclass
class AudioScript:
    """What the audio endpoints answer until the test changes it (`reset` puts it back)."""

    #: The text every transcription gets.
    transcript: str = "Hello from the fake microphone"
    #: An HTTP status both endpoints answer instead (None: they work), with its message.
    failure: int | None = None
    failure_message: str = "fake_llm: scripted audio failure"


def tone_wav(seconds: float = 0.5, hertz: float = 440.0, rate: int = 16_000) -> bytes:
    """A mono 16-bit WAV of a sine tone: audio a browser plays, a microphone can be fed."""
    frames = int(seconds * rate)
    samples = (int(12_000 * math.sin(2 * math.pi * hertz * n / rate)) for n in range(frames))
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(b"".join(struct.pack("<h", s) for s in samples))
    return out.getvalue()


#: What /audio/speech answers with: a short tone, played by the page's audio element.
SPEECH_AUDIO = tone_wav(0.3)


def form_fields(content_type: str, raw: bytes) -> dict[str, Any] | None:
    """A multipart/form-data body as a dict: text fields as strings, a file as
    `{"filename", "content_type", "size", "data"}`; None when the body is not multipart."""
    if not content_type.lower().startswith("multipart/form-data"):
        return None
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + raw)
    found: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is not None:
            found[str(name)] = {
                "filename": filename, "content_type": part.get_content_type(),
                "size": len(data), "data": data,
            }  # fmt: skip
        else:
            found[str(name)] = data.decode("utf-8", "replace")
    return found


def answer_audio(handler: _Handler, path: str, body: dict[str, Any]) -> None:
    """Answer an audio request as `handler.fake.audio` says."""
    script: AudioScript = handler.fake.audio
    if script.failure is not None:
        handler._send_error(script.failure, script.failure_message)
    elif path == TRANSCRIPTIONS_PATH:
        if not isinstance(body.get("file"), dict):
            handler._send_error(400, "fake_llm: a transcription needs a file")
        else:
            handler._send_json(200, {"text": script.transcript})
    else:
        handler.send_response(200)
        handler.send_header("Content-Type", "audio/wav")
        handler.send_header("Content-Length", str(len(SPEECH_AUDIO)))
        handler.end_headers()
        handler.wfile.write(SPEECH_AUDIO)
