"""Serving Cadre with gunicorn: one worker process with many threads, started from here.

Flask-SocketIO's deployment guide names gunicorn's threaded worker (`gthread`) with
simple-websocket for its threading mode, and one worker process only: Socket.IO's
sessions, the agents' loop and every open chat live in that process, and a second
one would be a second Cadre on the same `usr/`.

gunicorn's arbiter (this process) binds the port and forks the worker; threads do not
survive a fork, so the worker builds Cadre itself (`Service.build`: the agents' loop,
the chats, the app, their threads) and a worker the arbiter starts again after a crash
reads every chat from disk, never a stale copy of the arbiter's. The worker:

- stops at once on SIGTERM, SIGINT, SIGQUIT or SIGHUP and saves every chat
  (`Service.end`) before it ends: gunicorn's graceful stop would wait for every open
  connection, and a page's WebSocket never ends by itself;
- dies with the arbiter: killed (SIGKILL) it cannot stop its worker, which would live on
  holding the port (Linux: `PR_SET_PDEATHSIG`; elsewhere the worker's own check of its
  parent, once a second);
- is restarted by the arbiter if it crashes or its main loop is silent for `TIMEOUT`.

A request with a body larger than gunicorn would drain unread closes its connection
after the answer, and says so. gunicorn's log lines go to the root logger's handlers,
where the masking filter is (helpers/secrets.py); its access log stays off.
"""

from __future__ import annotations

import ctypes
import logging
import math
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

from gunicorn import glogging
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.workers.base import Worker
from gunicorn.workers.gthread import ThreadWorker

from server.serving import Service, WSGIApp

log = logging.getLogger(__name__)

#: Request threads of the worker (the guide's number). A page's WebSocket holds one for
#: as long as the page is open, and so does an API call that waits for its answer.
THREADS = 100
#: Seconds the worker's main loop may be silent (it beats once a second while it runs)
#: before the arbiter ends it and starts another: a stuck process, never a busy one.
TIMEOUT = 120
#: Seconds the arbiter waits for the worker to save every chat and end, once told to stop.
GRACEFUL_TIMEOUT = 60
#: The signals that stop the worker (each saves every chat).
STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)
#: The most of a request's body gunicorn reads and throws away when the app answered
#: without reading it (its own cap, to keep the connection for the next request).
DRAINED = 64 * 1024
#: prctl(2)'s option: the signal this process gets when its parent ends.
PR_SET_PDEATHSIG = 1


def bind_address(host: str, port: int) -> str:
    """gunicorn's form of an address: an IPv6 one in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def die_with_parent(parent: int) -> None:
    """Be killed (SIGKILL) when the arbiter `parent` ends, by the kernel (Linux only)."""
    if sys.platform != "linux":
        return  # CadreWorker.is_parent_alive ends the worker instead
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        log.warning("the worker cannot be tied to its arbiter: %s", os.strerror(ctypes.get_errno()))
    if os.getppid() != parent:  # the arbiter ended before the line above took effect
        os._exit(1)


class CadreWorker(ThreadWorker):
    """gunicorn's threaded worker, stopping at once on every stop signal and dying with
    its arbiter."""

    def init_process(self) -> None:
        die_with_parent(self.ppid)
        super().init_process()

    def init_signals(self) -> None:
        super().init_signals()
        # SIGTERM is gunicorn's graceful stop, which waits for every open connection to
        # end; SIGHUP (a closed terminal) ended the process without saving. Both stop as
        # Ctrl-C does: the chats are saved either way, the connections cut.
        signal.signal(signal.SIGTERM, self.handle_quit)
        signal.signal(signal.SIGHUP, self.handle_quit)

    def handle_quit(self, sig: int, frame: FrameType | None) -> None:
        # One stop: after a Ctrl-C (to the worker and the arbiter alike) the arbiter sends
        # SIGQUIT, which must not cut the saving short. A handler that does nothing, not
        # SIG_IGN: a signal already on its way would then raise ("ignored due to race").
        for stop in STOPS:
            signal.signal(stop, _already_stopping)
        # Not ThreadWorker's own: it shuts its thread pool down right here, in the signal
        # handler, which hung for good when the signal came while the main thread was in
        # the pool's `submit` (the same lock, not reentrant). The base worker's stops the
        # worker; the pool's threads are joined as the process exits.
        Worker.handle_quit(self, sig, frame)

    def is_parent_alive(self) -> bool:
        if super().is_parent_alive():
            return True
        os._exit(1)  # as if killed with it (where PR_SET_PDEATHSIG is missing)


def _already_stopping(sig: int, frame: FrameType | None) -> None:
    """A stop signal while the worker stops: nothing more to do."""


class OneWorkerArbiter(Arbiter):
    """gunicorn's arbiter, never with two workers at once (two Cadres on one `usr/`, each
    with its own copy of every chat): SIGHUP stops Cadre (gunicorn would start a new
    worker beside the old), and more workers (SIGTTIN) or a second arbiter (SIGUSR2)
    are refused."""

    def handle_hup(self) -> None:
        self.log.info("hangup: stopping")
        raise StopIteration

    def handle_ttin(self) -> None:
        self.log.warning("SIGTTIN ignored: Cadre runs one worker process")

    def handle_usr2(self) -> None:
        self.log.warning("SIGUSR2 ignored: Cadre runs one arbiter")


class RootLogging(glogging.Logger):  # type: ignore[misc]
    """gunicorn's log lines through the root logger's handlers (Cadre's format, and the
    masking filter on each); no handlers of its own."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for logger in (self.error_log, self.access_log):
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.propagate = True


class CadreApplication(BaseApplication):  # type: ignore[misc]
    """gunicorn configured in code (no config file, no GUNICORN_CMD_ARGS), serving the app
    `service` builds in the worker."""

    def __init__(
        self, service: Service, host: str, port: int, exit_process: Callable[[int], NoReturn]
    ) -> None:
        self.service = service
        self.exit_process = exit_process
        self.options: dict[str, Any] = {
            "bind": [bind_address(host, port)],
            "workers": 1,
            "worker_class": CadreWorker,
            "threads": THREADS,
            "timeout": TIMEOUT,
            # A node of a cluster lets its runs go on first (run_ui.Cadre.grace).
            "graceful_timeout": GRACEFUL_TIMEOUT + math.ceil(getattr(service, "grace", 0.0)),
            "max_requests": 0,  # never restarted for its age: that would stop every run
            # The longest request line gunicorn takes (nginx's default too; gunicorn's is
            # 4094): a file's path in a URL may be long.
            "limit_request_line": 8190,
            "proc_name": "cadre",
            "logger_class": RootLogging,
            "loglevel": "warning",  # a restart, a timeout, a bad request; not its start
            "accesslog": None,
            # X-Forwarded-Proto is Cadre's to trust, from its trusted_proxies only
            # (server/security/forwarded.py): gunicorn believed it from 127.0.0.1.
            "forwarded_allow_ips": "",
            "secure_scheme_headers": {},
            "control_socket_disable": True,  # no socket file in ~/.gunicorn, no thread
            "pre_request": self.pre_request,
            "post_worker_init": self.post_worker_init,
            "worker_exit": self.worker_exit,
        }
        super().__init__()

    def load_config(self) -> None:
        for name, value in self.options.items():
            self.cfg.set(name, value)

    def load(self) -> WSGIApp:
        """In the worker, after the fork: Cadre is built here."""
        return self.service.build()

    def pre_request(self, worker: CadreWorker, request: Any) -> None:
        """A request whose body is larger than gunicorn drains ends its connection after
        the answer, saying so (`Connection: close`). Cadre refuses some bodies unread (an
        upload over a limit: 413); gunicorn answered those "keep-alive", then closed the
        connection as it could not drain it, and the client's next request on it failed.
        A large upload costs one new connection instead."""
        length = next((value for name, value in request.headers if name == "CONTENT-LENGTH"), "")
        chunked = any(name == "TRANSFER-ENCODING" for name, _ in request.headers)
        if chunked or (length.isdigit() and int(length) > DRAINED):
            request.must_close = True

    def post_worker_init(self, worker: CadreWorker) -> None:
        self.service.begin()

    def worker_exit(self, arbiter: Arbiter, worker: CadreWorker) -> None:
        """The worker's last step (gunicorn calls it as the worker unwinds): save and stop
        everything, then end the process at once, with the code it was ending with."""
        if os.getpid() != worker.pid:
            return  # the arbiter calls it too, for a worker it found gone
        for stop in STOPS:  # however it ends (a timeout's SIGABRT too), nothing cuts the save
            signal.signal(stop, _already_stopping)
        ending = sys.exc_info()[1]  # the SystemExit that ends the worker, or what broke it
        code = ending.code if isinstance(ending, SystemExit) else (1 if ending else 0)
        try:
            self.service.end()
        finally:
            self.exit_process(0 if code is None else code if isinstance(code, int) else 1)

    def run(self) -> None:
        try:
            OneWorkerArbiter(self).run()
        except RuntimeError as exc:  # gunicorn's own words for a setting it refuses
            raise SystemExit(f"gunicorn could not start: {exc}") from exc
