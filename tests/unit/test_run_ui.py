"""The entry point serves other machines only behind a login."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.files import BASE_DIR
from helpers.settings import Settings
from run_ui import check_bind

OPEN = Settings()
LOCKED = Settings(auth_login="ada", auth_password="scrypt$x$y")


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_addresses_are_served(host):
    check_bind(host, OPEN)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.com"])
def test_other_addresses_need_a_login(host):
    with pytest.raises(SystemExit, match="CADRE_AUTH_LOGIN and CADRE_AUTH_PASSWORD"):
        check_bind(host, OPEN)
    check_bind(host, LOCKED)


def test_start_up_imports_no_http_client_it_does_not_use():
    """python-socketio imports its clients' stack (aiohttp, a fifth of the start-up) for
    clients Cadre never makes: held back (server/socketio_import.py), and importable after,
    as litellm does."""
    code = (
        "import sys, run_ui\n"
        "print('aiohttp' in sys.modules, 'litellm' in sys.modules, 'openai' in sys.modules)\n"
        "import aiohttp, socketio\n"
        "print(aiohttp.ClientSession is not None, socketio.AsyncClient is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "False", "False", "True", "True"]
