"""A script run in a fresh interpreter, where nothing is imported yet (what start-up and
first calls meet), with none of the test process's CADRE_* settings but those given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from helpers.files import BASE_DIR


def run_script(script: str, timeout: float = 120, **settings: str) -> Any:
    """Run `script` from Cadre's folder; the JSON of its last line of output (it must exit
    0: its stderr's end is the failure's message)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRE_")}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=BASE_DIR, env={**env, **settings},
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
