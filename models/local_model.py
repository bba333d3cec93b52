"""GGUF models run inside Cadre's process, seen by the rest of the code as `local/<name>`.

xllamacpp runs llama.cpp's server in-process: it loads the model once and
answers OpenAI-style chat completions on a loopback port, which litellm
calls like any OpenAI-compatible provider. Requests from every chat share
the one loaded model and are served in turn.

With no model file set, the built-in default is used (models/builtin_model.py:
Qwen2.5-Coder-1.5B-Instruct, downloaded once and assembled into `usr/models/`).
Downloading, assembling and loading run in a background thread so the UI is
usable at once; a model call waits for it, and `progress` says how far it is.

`LOCAL` is the process's one instance: a loaded model is a process-wide
resource (memory, threads), shared by all chats by design.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from helpers import own_ports
from helpers.errors import UserError
from helpers.files import usr_path
from helpers.programs import check_model_file
from models.builtin_model import BUILTIN, DOWNLOAD_ENV, ModelFileError, ensure

log = logging.getLogger(__name__)

PREFIX = "local/"
#: The name of the built-in default model, as in `local/qwen2.5-coder-1.5b`.
EMBEDDED = BUILTIN.name
#: Seconds a replaced model is kept, so requests still streaming from it finish.
RETIRE_AFTER = 600.0
#: Seconds a model whose load a newer setting replaced is kept before it is let go.
REPLACED_AFTER = 2.0

State = Literal["idle", "loading", "ready", "failed"]


def is_local(model: str) -> bool:
    return model.startswith(PREFIX)


#: What a local model's replies are asked for unless the `*_kwargs` setting says
#: otherwise: a cap (a small model held to a grammar may still ramble inside a string)
#: and a cool temperature (llama.cpp samples at 0.8 unless told, and the built-in model
#: then strayed from its tool calls: the same code run three times instead of answering).
REPLY_DEFAULTS: dict[str, Any] = {"max_tokens": 1_024, "temperature": 0.2}


@dataclass(frozen=True)
class LocalSpec:
    """What to load: the file, its context length and threads (0: all cores)."""

    path: str
    ctx_length: int
    threads: int


def embedded_model_file(progress: Callable[[str], None] = lambda text: None) -> Path:
    """The built-in model's file in usr/models/, downloaded (when allowed) and assembled
    on first use; `progress` hears how far that is, in words."""

    def parts_done(done: int, total: int) -> None:
        size = BUILTIN.size / 1e6
        progress(f"Downloading the built-in model: {done * size / total:,.0f} of {size:,.0f} MB")
        log.info("built-in model: part %d of %d downloaded", done, total)

    if not usr_path("models", BUILTIN.file).exists():
        progress("Preparing the built-in model")
    allowed = os.environ.get(DOWNLOAD_ENV) == "1"
    try:
        return ensure(usr_path(), sys.executable, allowed, progress=parts_done)
    except ModelFileError as exc:
        raise UserError(str(exc)) from None


def local_file_check(path: str) -> str:
    """'a GGUF file of 253 MB' for a model file that looks right (UserError otherwise).

    Empty `path`: the embedded model, which is always there.
    """
    if not path:
        return "the built-in model"
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
        size = os.path.getsize(path)
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    if magic != b"GGUF":
        raise UserError(f"{path} is not a GGUF model file")
    return f"a GGUF file of {size / 1e6:,.0f} MB; it loads when saved"


class LocalModels:
    """The loaded local model (at most one) and its state."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.state: State = "idle"
        self.error = ""
        self.spec: LocalSpec | None = None
        self.base_url = ""
        self._server: Any = None
        #: What loading does now, in words ("Downloading the built-in model: 40 of 1,117 MB").
        self.progress = ""

    def status(self) -> dict[str, Any]:
        name = Path(self.spec.path).name if self.spec else ""
        return {"state": self.state, "error": self.error, "model": name, "progress": self.progress}

    def _say(self, text: str) -> None:
        self.progress = text

    def load(self, spec: LocalSpec) -> None:
        """Start loading `spec` in the background (nothing happens if it is loaded or loading)."""
        with self._lock:
            if self.spec == spec and self.state in ("loading", "ready"):
                return
            self.spec, self.state, self.error = spec, "loading", ""
            self._ready.clear()
        threading.Thread(
            target=self._load, args=(spec,), name="cadre-local-model", daemon=True
        ).start()

    def _load(self, spec: LocalSpec) -> None:
        try:
            import xllamacpp

            # llama.cpp parses the file inside Cadre's process: never one an agent could
            # have written (the setting may come from a restore, or the file swapped since).
            check_model_file(spec.path)
            path = spec.path or str(embedded_model_file(self._say))
            self._say("Loading the model into memory")
            if not Path(path).is_file():
                raise UserError(f"local model file {path} does not exist")
            params = xllamacpp.CommonParams()
            params.model.path = path
            params.n_ctx = spec.ctx_length
            params.n_parallel = 1  # one request at a time, the others wait their turn
            params.warmup = False
            params.verbosity = 0  # llama.cpp's own log is hundreds of lines per load
            if spec.threads:
                params.cpuparams.n_threads = spec.threads
                params.cpuparams_batch.n_threads = spec.threads
            server = xllamacpp.Server(params)
            base_url = str(server.listening_address).rstrip("/")
            own_ports.add(_port(base_url))  # agents never reach it (helpers/own_ports.py)
        except Exception as exc:  # noqa: BLE001 - whatever failed, the UI shows why
            log.error("local model %s failed to load: %s", spec.path or EMBEDDED, exc)
            with self._lock:
                if self.spec == spec:
                    self.state, self.error, self.progress = "failed", str(exc), ""
                    self._ready.set()
            return
        with self._lock:
            if self.spec != spec:  # replaced while loading: this one is not wanted
                # Not dropped at once: llama.cpp's server dropped the moment it was made can
                # wait for ever on its own HTTP thread (seen: its destructor joined a
                # thread that never ended, and the load's thread with it).
                _retire(server, base_url, REPLACED_AFTER)
                return
            old, old_url = self._server, self.base_url
            self._server, self.base_url, self.state = server, base_url, "ready"
            self.progress = ""
            self._ready.set()
        if old is not None:
            # A request may still stream from the previous model: release it later.
            _retire(old, old_url, RETIRE_AFTER)
        log.info("local model %s ready at %s", Path(path).name, base_url)

    async def endpoint(self, spec: LocalSpec) -> str:
        """The OpenAI-compatible base URL of the local model, loading `spec` if none is.

        Only settings changes swap the loaded model (`load`): a chat that still
        carries an older spec uses the model loaded now rather than reloading
        its own over everybody's.
        """
        with self._lock:
            idle = self.state in ("idle", "failed") and self.spec != spec
        if idle:
            self.load(spec)
        while not self._ready.is_set():
            # Short waits: a stopped run must not keep a worker thread for minutes.
            await asyncio.to_thread(self._ready.wait, 1.0)
        if self.state != "ready":
            raise UserError(f"the local model could not be loaded: {self.error or self.state}")
        return f"{self.base_url}/v1"


def _retire(server: Any, base_url: str, after: float) -> None:
    """Let `server` go in `after` seconds, on a thread of its own."""
    retire = threading.Timer(after, _release, args=([server], base_url))
    retire.name = "cadre-local-model-retire"
    retire.daemon = True  # never holds up Cadre's exit
    retire.start()


def _release(holder: list[Any], base_url: str) -> None:
    holder.clear()  # the last reference: the server shuts down
    own_ports.remove(_port(base_url))


def _port(base_url: str) -> int:
    return urlsplit(base_url).port or 80


LOCAL = LocalModels()
