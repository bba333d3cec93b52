"""HTTP routes of the page's voice: what it offers, a recording to text, a text to speech.

- `GET /api/voice`: whether the server writes speech down (`stt_model`, or the built-in
  model) and in what format the page records (`format`: "wav" for the built-in model),
  whether it reads aloud (`tts_model`; without one the page uses the browser's own voice),
  and the two switches.
- `POST /api/voice/transcribe`: a recording (multipart, field `audio`), its text back
  (`{"text": ...}`); one larger than models/voice.py's limit, or than the person's own
  upload limit (server/routes/upload_limits.py, as the file upload's), is a 413, read no
  further.
- `POST /api/voice/speech`: `{"text": ...}`, the provider's audio back; a body larger than
  the longest text could be is a 413, unread.

The calls run on the agents' loop (models/voice.py is async, as the Telegram bridge calls
it); a provider that fails is a 502 with its plain words, a missing model a 400 that says
where to set one (looked at before the body is read). Every signed-in person may use them:
the models are the server's, but each call counts in the person's usage (server/
run_limits.py) and is refused once their daily limit is reached. Each refusal is a warning
in the log, as the file panel's are.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from helpers.errors import ProviderError, UserError
from helpers.settings import load_settings
from models import speech_builtin, voice
from server.routes.routing import chats, error
from server.routes.upload_limits import upload_cap
from server.run_limits import current
from server.security import identity

log = logging.getLogger(__name__)

voice_pages = Blueprint("voice", __name__)

#: Room for the multipart framing around the recording.
FORM_OVERHEAD = 64 * 1024
#: The largest body of /speech: the longest text, each character as JSON's longest escape
#: (\uXXXX\uXXXX for one outside the BMP is 12 bytes, 3 a character of the two), and room.
SPEECH_BODY_BYTES = voice.MAX_SPEECH_CHARS * 6 + 4096
#: Seconds the page's request waits for the provider (models/voice.py has its own limit).
WAIT = voice.TIMEOUT + 10
#: What a call past its time is told.
LATE = "The provider did not answer in time. Try again, or a shorter piece."
LATE_BUILTIN = ("The built-in speech model did not finish this recording in time. Record a "
                "shorter message, or try again when the server is less busy.")  # fmt: skip


@voice_pages.get("/api/voice")
def voice_offer() -> Response:
    settings = load_settings()
    return jsonify({
        **voice.offer(settings),
        "speech": voice.tts_config(settings) is not None,
        "send_at_once": settings.voice_send_at_once,
        "read_aloud": settings.voice_read_aloud,
        "max_bytes": voice.MAX_AUDIO_BYTES,
        "max_chars": voice.MAX_SPEECH_CHARS,
    })  # fmt: skip


@voice_pages.post("/api/voice/transcribe")
def transcribe() -> Response | tuple[Response, int]:
    settings = load_settings()
    if not voice.offer(settings)["transcribe"]:  # before the body is read: nothing to do
        return _refused(voice.no_stt(settings))
    if why := current().call_refusal(identity.viewer()):
        return _refused(why, 429)
    # Read no more than a recording may be, nor than the person may upload: a larger body
    # is refused before it is read.
    cap = upload_cap(voice.MAX_AUDIO_BYTES)
    request.max_content_length = cap.bytes + FORM_OVERHEAD
    try:
        upload = request.files.get("audio")
    except RequestEntityTooLarge:
        size = request.content_length or 0
        return _refused(cap.refusal(size) or voice.too_long(size), 413)
    if upload is None:
        return _refused("send the recording as the form field 'audio'")
    audio = upload.read(cap.bytes + 1)
    if refused := cap.refusal(len(audio)):
        return _refused(refused, 413)
    if len(audio) > voice.MAX_AUDIO_BYTES:
        return _refused(voice.too_long(len(audio)), 413)
    if not audio:
        return _refused("The recording is empty: nothing was heard. Record again.")
    name, mime = upload.filename or "speech.webm", upload.mimetype or ""
    builtin = voice.uses_builtin(settings)
    return _answer(lambda: voice.transcribe(audio, name, mime, settings),
                   lambda text: {"text": text}, wait=speech_builtin.WAIT if builtin else WAIT,
                   late=LATE_BUILTIN if builtin else LATE)  # fmt: skip


@voice_pages.post("/api/voice/speech")
def speech() -> Response | tuple[Response, int]:
    if voice.tts_config(load_settings()) is None:
        return _refused(voice.NO_TTS)
    if why := current().call_refusal(identity.viewer()):
        return _refused(why, 429)
    if (request.content_length or 0) > SPEECH_BODY_BYTES:
        return _refused(
            f"The text is too long to read at once (the most is {voice.MAX_SPEECH_CHARS:,} "
            "characters). Send it in parts.",
            413,
        )
    request.max_content_length = SPEECH_BODY_BYTES  # a body that does not say its length
    try:
        body = request.get_json(silent=True)
    except RequestEntityTooLarge:
        return _refused("The text is too long to read at once. Send it in parts.", 413)
    text = body.get("text") if isinstance(body, dict) else None
    if not isinstance(text, str):
        return _refused('send the text to read as JSON: {"text": "..."}')
    return _answer(lambda: voice.speak(text), None)


def _refused(words: str, status: int = 400) -> tuple[Response, int]:
    """A refusal of the person's request, in their words and as a line in the log."""
    log.warning("voice refused %s of %s (%s): %s", request.path, identity.viewer() or "the desktop",
                status, words)  # fmt: skip
    return error(words, status)


def _answer(call: Any, shape: Any, wait: float = WAIT,
            late: str = "") -> Response | tuple[Response, int]:  # fmt: skip
    """Run `call()`'s coroutine on the agents' loop; its result as JSON (`shape`) or audio.
    A call the provider answered counts in the person's usage."""
    future = chats().runtime.submit(call())
    try:
        found = future.result(wait)
    except ProviderError as exc:
        return error(str(exc), 502)  # models/voice.py logged the provider's fault
    except UserError as exc:
        return _refused(str(exc))
    except TimeoutError:
        future.cancel()  # nobody waits for it: the built-in model stops after its piece
        log.warning("a voice call took longer than %s s", wait)
        return error(late or LATE, 504)
    current().call_made(identity.viewer())
    if shape is not None:
        return jsonify(shape(found))
    response = Response(found.audio, mimetype=found.mime)
    response.headers["Cache-Control"] = "no-store"
    return response
