"""Which web server serves: gunicorn, unless asked otherwise or it cannot run here."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from helpers.files import BASE_DIR
from server.gunicorn_app import bind_address
from server.serving import Choice, choose


def test_gunicorn_serves_by_default():
    assert choose(environ={}).server == "gunicorn"
    assert choose(environ={"CADRE_SERVER": " Gunicorn "}).server == "gunicorn"


def test_werkzeug_when_asked():
    assert choose(dev=True, environ={}) == Choice("werkzeug", "--dev was given")
    assert choose(environ={"CADRE_SERVER": "werkzeug"}) == Choice(
        "werkzeug", "CADRE_SERVER=werkzeug"
    )
    # --dev wins over the variable.
    assert choose(dev=True, environ={"CADRE_SERVER": "gunicorn"}).server == "werkzeug"


def test_an_unknown_server_is_said_and_the_default_used(caplog):
    with caplog.at_level(logging.WARNING, logger="server.serving"):
        assert choose(environ={"CADRE_SERVER": "uwsgi"}).server == "gunicorn"
    assert "CADRE_SERVER=uwsgi is no server Cadre knows: it takes gunicorn or werkzeug" in (
        caplog.text
    )


@pytest.mark.parametrize(
    ("missing", "words"),
    [("fcntl", "gunicorn cannot run on this system (it needs fcntl: not on Windows)"),
     ("gunicorn", "gunicorn is not installed")],
)  # fmt: skip
def test_werkzeug_where_gunicorn_cannot_run(missing, words):
    """As on Windows (no fcntl), or where gunicorn is not installed: a fresh interpreter
    where that module cannot be imported."""
    code = (
        f"import sys; sys.modules[{missing!r}] = None\n"
        "from server.serving import choose\n"
        "print(choose(environ={}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "server='werkzeug'" in done.stdout and words in done.stdout


def test_an_ipv6_address_is_bound_in_brackets():
    assert bind_address("::1", 5080) == "[::1]:5080"
    assert bind_address("127.0.0.1", 5080) == "127.0.0.1:5080"
    assert bind_address("localhost", 80) == "localhost:80"
