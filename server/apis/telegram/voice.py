"""Voice notes sent to the bot: their text, when a speech-to-text model is set up.

The seam to issue 40's voice part: `models.voice.transcribe(audio, filename, mime)` (the
`stt_model` setting), written alongside this bridge. It is looked up when a voice note
comes (`_transcriber`), so the bridge works before and after it lands; without it, or
without an `stt_model`, the sender is told in plain words what to set up (`NO_STT`).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable

from helpers.errors import CadreError
from helpers.settings import load_settings

log = logging.getLogger(__name__)

#: What a voice note gets when no speech-to-text model is set.
NO_STT = ("Voice notes need speech to text, which is not set up in Cadre: set a speech-to-text"
          " model in Settings (or send your message as text).")  # fmt: skip

Transcribe = Callable[[bytes, str, str], Awaitable[str]]


class NoTranscript(Exception):  # noqa: N818 - what the sender is told, not a failure of theirs
    """The voice note has no text: the message says why, for the sender."""


def _transcriber() -> Transcribe | None:
    """models.voice.transcribe, when it exists and a speech-to-text model is set."""
    if not str(getattr(load_settings(), "stt_model", "") or "").strip():
        return None
    try:
        module = importlib.import_module("models.voice")
    except ImportError:
        return None
    found = getattr(module, "transcribe", None)
    return found if callable(found) else None


async def transcript(audio: bytes, filename: str, mime: str) -> str:
    """The text of a voice note; NoTranscript saying why there is none."""
    transcribe = _transcriber()
    if transcribe is None:
        raise NoTranscript(NO_STT)
    try:
        text = (await transcribe(audio, filename, mime)).strip()
    except CadreError as exc:
        log.warning("telegram: a voice note was not transcribed: %s", exc)
        raise NoTranscript(f"Your voice note could not be turned into text: {exc}") from None
    if not text:
        raise NoTranscript("Nothing could be heard in your voice note: try again, or write.")
    return text
