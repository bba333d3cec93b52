"""HTTP routes of the page's voice: what it offers, a recording to text, a text to speech.

- `GET /api/voice`: whether the server writes speech down (`stt_model`) and reads aloud
  (`tts_model`; without one the page uses the browser's own voice), and the two switches.
- `POST /api/voice/transcribe`: a recording (multipart, field `audio`), its text back
  (`{"text": ...}`); one larger than models/voice.py's limit is a 413, read no further.
- `POST /api/voice/speech`: `{"text": ...}`, the provider's audio back.

The calls run on the agents' loop (models/voice.py is async, as the Telegram bridge calls
it); a provider that fails is a 502 with its plain words, a missing model a 400 that says
where to set one. Every signed-in person may use them: the models are the server's.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from helpers.errors import ProviderError, UserError
from helpers.settings import load_settings
from models import voice
from server.routes.routing import chats, error

log = logging.getLogger(__name__)

voice_pages = Blueprint("voice", __name__)

#: Room for the multipart framing around the recording.
FORM_OVERHEAD = 64 * 1024
#: Seconds the page's request waits for the provider (models/voice.py has its own limit).
WAIT = voice.TIMEOUT + 10


@voice_pages.get("/api/voice")
def voice_offer() -> Response:
    settings = load_settings()
    return jsonify({
        "transcribe": voice.stt_config(settings) is not None,
        "speech": voice.tts_config(settings) is not None,
        "send_at_once": settings.voice_send_at_once,
        "read_aloud": settings.voice_read_aloud,
        "max_bytes": voice.MAX_AUDIO_BYTES,
        "max_chars": voice.MAX_SPEECH_CHARS,
    })  # fmt: skip


@voice_pages.post("/api/voice/transcribe")
def transcribe() -> Response | tuple[Response, int]:
    # Read no more than a recording may be: a larger body is refused before it is read.
    request.max_content_length = voice.MAX_AUDIO_BYTES + FORM_OVERHEAD
    try:
        upload = request.files.get("audio")
    except RequestEntityTooLarge:
        return error(voice.too_long(request.content_length or 0), 413)
    if upload is None:
        return error("send the recording as the form field 'audio'")
    audio = upload.read(voice.MAX_AUDIO_BYTES + 1)
    if len(audio) > voice.MAX_AUDIO_BYTES:
        return error(voice.too_long(len(audio)), 413)
    name, mime = upload.filename or "speech.webm", upload.mimetype or ""
    return _answer(lambda: voice.transcribe(audio, name, mime), lambda text: {"text": text})


@voice_pages.post("/api/voice/speech")
def speech() -> Response | tuple[Response, int]:
    body = request.get_json(silent=True)
    text = body.get("text") if isinstance(body, dict) else None
    if not isinstance(text, str):
        return error('send the text to read as JSON: {"text": "..."}')
    return _answer(lambda: voice.speak(text), None)


def _answer(call: Any, shape: Any) -> Response | tuple[Response, int]:
    """Run `call()`'s coroutine on the agents' loop; its result as JSON (`shape`) or audio."""
    try:
        found = chats().runtime.submit(call()).result(WAIT)
    except ProviderError as exc:
        return error(str(exc), 502)
    except UserError as exc:
        return error(str(exc))
    except TimeoutError:
        log.warning("a voice call took longer than %s s", WAIT)
        return error("The provider did not answer in time. Try again, or a shorter piece.", 504)
    if shape is not None:
        return jsonify(shape(found))
    response = Response(found.audio, mimetype=found.mime)
    response.headers["Cache-Control"] = "no-store"
    return response
