"""The entry point starts without importing what it does not use."""

from __future__ import annotations

import subprocess
import sys

from helpers.files import BASE_DIR


def test_start_up_imports_no_http_client_it_does_not_use():
    """python-socketio imports its clients' stack (aiohttp, a fifth of the start-up) for
    clients Cadre never makes: held back (server/socketio_import.py), and importable after,
    as litellm does. httpx waits for the setup dialog's model list."""
    code = (
        "import sys, run_ui\n"
        "print(*(m in sys.modules for m in ('aiohttp', 'httpx', 'litellm', 'openai')))\n"
        "import aiohttp, socketio\n"
        "print(aiohttp.ClientSession is not None, socketio.AsyncClient is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False"] * 4 + ["True"] * 2
