"""Speech to text and text to speech through the provider (the `stt_*` and `tts_*` settings).

Both speak OpenAI's audio API, which OpenAI, Groq and local servers (faster-whisper-server,
Speaches, LocalAI) offer: `POST /audio/transcriptions` (a recording in, its text out) and
`POST /audio/speech` (text in, audio out). Which client calls them follows the chat
models' rule (models/model.py `client_for`): the `openai` SDK where the provider speaks
OpenAI's API or an address is given, litellm (`atranscription`, `aspeech`) for the
providers only it knows; `model_client` chooses as it does for the chat model.

`transcribe` is what the page's microphone (server/routes/voice.py) and the Telegram
bridge's voice notes call; `speak` is what the page's speaker button asks for. A provider
that fails is a `ProviderError` in plain words (models/provider_faults.py), a missing
setting or a recording too large a `UserError` that says what to do.

With no `stt_model` set (or `local/moonshine` named), speech is written down on this
machine by the built-in model where its package is installed (models/speech_builtin.py:
English, no key, in a process of its own; 16 kHz WAV recordings, which the page then makes
itself: `offer`'s "format"); `off` turns speech to text off.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from helpers.errors import ProviderError, UserError
from models import speech_builtin
from models.llm import ModelConfig, litellm_loaded, openai_loaded
from models.openai_model import endpoint, speaks_openai
from models.provider_faults import classify

if TYPE_CHECKING:
    from helpers.settings import Settings

log = logging.getLogger(__name__)

#: The largest recording sent (OpenAI's own limit for /audio/transcriptions).
MAX_AUDIO_BYTES = 25 * 1024 * 1024
#: The longest text one /audio/speech call reads (OpenAI's limit); the page sends longer
#: answers in parts.
MAX_SPEECH_CHARS = 4096
#: Seconds one call may take: a long recording takes a while to write down.
TIMEOUT = 120.0
#: What the speech comes as: mp3 plays in every browser.
SPEECH_FORMAT = "mp3"

NO_STT = (
    "No speech-to-text model is set (the built-in one runs on Linux x86-64 only). An admin "
    "sets one in Settings, Voice (e.g. openai/whisper-1, or a local server's model with its "
    "address)."
)
NO_TTS = (
    "No text-to-speech model is set: the page reads answers with the browser's own voice. "
    "An admin can set one in Settings, Voice."
)


@dataclass(frozen=True)
class Speech:
    """Audio the provider made of a text."""

    audio: bytes
    #: Its media type, as the provider said (audio/mpeg for mp3).
    mime: str


def uses_builtin(settings: Settings) -> bool:
    """Whether the built-in model writes speech down: `stt_model` empty where its package
    is installed, or it named."""
    model = settings.stt_model.strip()
    return model == speech_builtin.NAME or (not model and speech_builtin.available())


def no_stt(settings: Settings) -> str:
    """Why there is no speech to text, in words: turned off, the built-in model named where
    it cannot run, or nothing set."""
    model = settings.stt_model.strip()
    if model == speech_builtin.OFF:
        return "Speech to text is turned off here (Settings, Voice: the speech-to-text model)."
    return speech_builtin.NOT_HERE if model == speech_builtin.NAME else NO_STT


def offer(settings: Settings) -> dict[str, Any]:
    """Whether the page may record, and in what: `{"transcribe", "format"}` ("wav": 16 kHz
    mono PCM for the built-in model; "" whatever the browser records best)."""
    if uses_builtin(settings):
        return {"transcribe": speech_builtin.available(), "format": "wav"}
    return {"transcribe": stt_config(settings) is not None, "format": ""}


def stt_config(settings: Settings) -> ModelConfig | None:
    """The provider's speech-to-text model the settings name (None: none is set, or the
    built-in one is named)."""
    if settings.stt_model.strip() in ("", speech_builtin.NAME, speech_builtin.OFF):
        return None
    return ModelConfig(
        model=settings.stt_model.strip(), api_base=settings.stt_api_base.strip(),
        api_key=settings.stt_api_key, timeout=TIMEOUT, client=settings.model_client,
    )  # fmt: skip


def tts_config(settings: Settings) -> ModelConfig | None:
    """The text-to-speech model the settings name (None: the browser reads)."""
    if not settings.tts_model.strip():
        return None
    return ModelConfig(
        model=settings.tts_model.strip(), api_base=settings.tts_api_base.strip(),
        api_key=settings.tts_api_key, timeout=TIMEOUT, client=settings.model_client,
    )  # fmt: skip


async def transcribe(
    audio_bytes: bytes, filename: str, mime: str, settings: Settings | None = None
) -> str:
    """The text of a recording (`filename` and `mime` tell the provider its format: webm,
    ogg, mp3, wav...), through the `stt_model` of `settings` (None: the server's)."""
    settings = settings if settings is not None else _server_settings()
    config = stt_config(settings)
    if config is None and not offer(settings)["transcribe"]:
        raise UserError(no_stt(settings))
    if not audio_bytes:
        raise UserError("The recording is empty: nothing was heard. Record again.")
    if len(audio_bytes) > MAX_AUDIO_BYTES:
        raise UserError(too_long(len(audio_bytes)))
    if config is None:  # the built-in model, in a process of its own
        return await speech_builtin.transcribe(audio_bytes)
    file = (filename or "speech.webm", audio_bytes, mime or "application/octet-stream")
    try:
        if _through_sdk(config):
            text = await _sdk_transcription(config, file)
        else:
            text = await _litellm_transcription(config, file)
    except Exception as exc:  # noqa: BLE001 - every provider failure is told in words
        raise _failed("Speech to text", config, exc) from exc
    return text.strip()


async def speak(text: str, settings: Settings | None = None) -> Speech:
    """Audio of `text` read by the `tts_model` of `settings` (None: the server's)."""
    settings = settings if settings is not None else _server_settings()
    config = tts_config(settings)
    if config is None:
        raise UserError(NO_TTS)
    text = text.strip()
    if not text:
        raise UserError("There is no text to read aloud.")
    if len(text) > MAX_SPEECH_CHARS:
        raise UserError(
            f"The text is {len(text):,} characters long; the most read at once is "
            f"{MAX_SPEECH_CHARS:,}. Send it in parts."
        )
    voice = settings.tts_voice.strip() or "alloy"
    try:
        if _through_sdk(config):
            return await _sdk_speech(config, text, voice)
        return await _litellm_speech(config, text, voice)
    except Exception as exc:  # noqa: BLE001 - every provider failure is told in words
        raise _failed("Reading aloud", config, exc) from exc


def too_long(size: int) -> str:
    """What a recording over the limit is told."""
    return (
        f"The recording is {size / 1_048_576:.1f} MB; the most sent at once is "
        f"{MAX_AUDIO_BYTES // 1_048_576} MB. Record a shorter piece."
    )


def _server_settings() -> Settings:
    from helpers.settings import load_settings  # read at each call: a change applies at once

    return load_settings()


def _through_sdk(config: ModelConfig) -> bool:
    """The chat models' rule (models/model.py `client_for`): the SDK unless litellm is chosen
    or only litellm knows the provider."""
    if config.client == "litellm":
        return False
    return speaks_openai(config) or bool(config.api_base) or config.client == "openai"


def _failed(what: str, config: ModelConfig, exc: BaseException) -> ProviderError:
    fault = classify(exc, model=config.model, api_base=config.api_base)
    log.warning("%s with %s failed: %s", what, config.model, fault.detail or exc)
    words = f"{what} failed: {fault.headline} {fault.fix}"
    return ProviderError(words, fault)


async def _sdk_client(config: ModelConfig) -> Any:
    """An SDK client for this call alone (voice calls are few: no pool kept)."""
    where = await endpoint(config)
    sdk = await openai_loaded()
    client = sdk.AsyncOpenAI(
        base_url=where.base_url, api_key=where.api_key, max_retries=0, timeout=config.timeout
    )
    return client, where.model


async def _sdk_transcription(config: ModelConfig, file: tuple[str, bytes, str]) -> str:
    client, model = await _sdk_client(config)
    async with client:
        found = await client.audio.transcriptions.create(
            model=model, file=file, response_format="json", **config.kwargs
        )
    return str(getattr(found, "text", found) or "")


async def _litellm_transcription(config: ModelConfig, file: tuple[str, bytes, str]) -> str:
    litellm = await litellm_loaded()
    found = await litellm.atranscription(
        model=config.model, file=file, timeout=config.timeout, max_retries=0,
        **_litellm_credentials(config),
    )  # fmt: skip
    return str(getattr(found, "text", "") or "")


async def _sdk_speech(config: ModelConfig, text: str, voice: str) -> Speech:
    client, model = await _sdk_client(config)
    async with client:
        found = await client.audio.speech.create(
            model=model, voice=voice, input=text, response_format=SPEECH_FORMAT
        )
        return Speech(found.content, _mime(found))


async def _litellm_speech(config: ModelConfig, text: str, voice: str) -> Speech:
    litellm = await litellm_loaded()
    found = await litellm.aspeech(
        model=config.model, voice=voice, input=text, response_format=SPEECH_FORMAT,
        timeout=config.timeout, max_retries=0, **_litellm_credentials(config),
    )  # fmt: skip
    return Speech(found.content, _mime(found))


def _litellm_credentials(config: ModelConfig) -> dict[str, str]:
    found = {}
    if config.api_base:
        found["api_base"] = config.api_base
    if config.api_key:
        found["api_key"] = config.api_key
    elif config.api_base:
        # A server of one's own often wants no key, but the client sends none without one.
        found["api_key"] = "no-key"
    return found


def _mime(found: Any) -> str:
    """The audio's media type, as the provider's reply said (mp3's by default)."""
    response = getattr(found, "response", None)
    said = response.headers.get("content-type", "") if response is not None else ""
    said = said.split(";", 1)[0].strip()
    return said if said.startswith("audio/") else "audio/mpeg"
