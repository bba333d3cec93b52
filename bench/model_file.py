"""The GGUF file the local-model benchmarks run: the built-in model's, from the real usr/.

Benchmarks run in a usr/ of their own, where no model has been downloaded, so
the file is looked for where `python3 cadre.py start` puts it (the project's
usr/models/), unless CADRE_LOCAL_MODEL_PATH names one.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers.files import BASE_DIR
from models.builtin_model import model_file


class ModelNotDownloaded(Exception):
    """The built-in model is not on this machine: its benchmark is skipped, said so."""


def use_builtin_model() -> Path:
    """The model file, set as CADRE_LOCAL_MODEL_PATH for the settings the benchmark loads;
    ModelNotDownloaded when there is none (a fresh clone that only ran the tests)."""
    named = os.environ.get("CADRE_LOCAL_MODEL_PATH")
    path = Path(named) if named else model_file(BASE_DIR / "usr")
    if not path.is_file():
        raise ModelNotDownloaded(
            f"not downloaded: no model file at {path} (`python3 cadre.py start` downloads the"
            " built-in model once; or set CADRE_LOCAL_MODEL_PATH to a GGUF file)"
        )
    os.environ["CADRE_LOCAL_MODEL_PATH"] = str(path)
    return path
