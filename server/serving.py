"""Which web server serves Cadre, and serving with it.

gunicorn by default (server/gunicorn_app.py): the production server Flask-SocketIO's
deployment guide gives for its threading mode with simple-websocket, one worker process
with many threads. Werkzeug's server, which its own documentation calls a development
server, serves with `--dev` or `CADRE_SERVER=werkzeug`, and where gunicorn cannot run:
Windows (no `fcntl`), or gunicorn not installed. The choice is made once and said in
the log.

Both serve a `Service`: Cadre as `run_ui.py` makes it, built in the process that
serves (gunicorn's worker, after its fork), begun once the port is bound, ended on
the way out (every chat saved).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, Protocol

from werkzeug.serving import make_server

log = logging.getLogger(__name__)

#: A WSGI application (Flask's app is one).
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Any]
#: The environment variable that names the server: `gunicorn` or `werkzeug`.
SERVER_ENV = "CADRE_SERVER"


class Service(Protocol):
    """What a web server serves, in three steps."""

    def build(self) -> WSGIApp:
        """Start what runs (threads, the agents' loop) and make the app, in the process
        that will serve it."""
        ...

    def begin(self) -> None:
        """Once the port is bound and the app made, just before the first request."""
        ...

    def end(self) -> None:
        """Save and stop everything (whatever of it `build` got to start)."""
        ...


@dataclass(frozen=True)
class Choice:
    server: Literal["gunicorn", "werkzeug"]
    #: Why, in plain words, for the log.
    why: str


def choose(dev: bool = False, environ: Mapping[str, str] = os.environ) -> Choice:
    """The server for this start: gunicorn unless asked otherwise or it cannot run here."""
    wanted = environ.get(SERVER_ENV, "").strip().lower()
    if dev:
        return Choice("werkzeug", "--dev was given")
    if wanted == "werkzeug":
        return Choice("werkzeug", f"{SERVER_ENV}=werkzeug")
    if wanted not in ("", "gunicorn"):
        log.warning("%s=%s is no server Cadre knows: it takes gunicorn or werkzeug; using the"
                    " default", SERVER_ENV, environ[SERVER_ENV])  # fmt: skip
    if importlib.util.find_spec("fcntl") is None:
        return Choice("werkzeug", "gunicorn cannot run on this system (it needs fcntl: not"
                      " on Windows)")  # fmt: skip
    if importlib.util.find_spec("gunicorn") is None:
        return Choice("werkzeug", "gunicorn is not installed (`python3 cadre.py start`"
                      " installs it)")  # fmt: skip
    return Choice("gunicorn", "the production server")


def serve(
    service: Service, host: str, port: int, choice: Choice, exit_process: Callable[[int], NoReturn]
) -> None:
    """Serve `service` until a stop (SIGTERM, Ctrl-C); `exit_process` ends a gunicorn
    worker once its service has ended (it must not return into the arbiter's code)."""
    if choice.server == "gunicorn":
        from server.gunicorn_app import THREADS, CadreApplication  # imported only when used

        log.info("serving with gunicorn (%s): one worker process, %d threads", choice.why,
                 THREADS)  # fmt: skip
        CadreApplication(service, host, port, exit_process).run()
    else:
        log.info("serving with Werkzeug's development server: %s", choice.why)
        serve_with_werkzeug(service, host, port)


def serve_with_werkzeug(service: Service, host: str, port: int) -> None:
    """One process: the app is built, the port bound, served by a thread per connection."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stops as Ctrl-C does
    try:
        app = service.build()
        http = make_server(host, port, app, threaded=True)
        service.begin()
        http.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        service.end()
