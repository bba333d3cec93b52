"""Voice notes sent to the bot: their text, through the speech-to-text model the settings
name (`stt_model`, models/voice.py, as the page's microphone). Without one, the sender is
told in plain words what to set up; a provider that fails, what it said."""

from __future__ import annotations

import asyncio
import logging

from helpers.errors import CadreError
from helpers.settings import load_settings
from models import voice as speech

log = logging.getLogger(__name__)

#: What a voice note gets when no speech-to-text model is set.
NO_STT = ("Voice notes need speech to text, which is not set up in Cadre: an admin sets a "
          "speech-to-text model in Settings, Voice (or send your message as text).")  # fmt: skip

#: What a voice note gets when the built-in speech model is the one in use.
BUILTIN_ONLY = ("Voice notes need speech to text from a provider: Cadre's built-in model "
                "reads only recordings made in its page. An admin sets one in Settings, Voice "
                "(or send your message as text).")  # fmt: skip


class NoTranscript(Exception):  # noqa: N818 - what the sender is told, not a failure of theirs
    """The voice note has no text: the message says why, for the sender."""


async def transcript(audio: bytes, filename: str, mime: str) -> str:
    """The text of a voice note; NoTranscript saying why there is none."""
    settings = await asyncio.to_thread(load_settings)
    if speech.uses_builtin(settings):  # it reads the page's WAV, not Telegram's Ogg/Opus
        raise NoTranscript(BUILTIN_ONLY)
    if speech.stt_config(settings) is None:
        raise NoTranscript(NO_STT)
    try:
        text = (await speech.transcribe(audio, filename, mime, settings)).strip()
    except CadreError as exc:  # a refused recording, a provider's failure: in its words
        log.warning("telegram: a voice note was not transcribed: %s", exc)
        raise NoTranscript(f"Your voice note could not be turned into text: {exc}") from None
    if not text:
        raise NoTranscript("Nothing could be heard in your voice note: try again, or write.")
    return text
