"""The one asyncio event loop that runs all agent work, in its own thread.

Web handlers run in other threads and never block on an agent: they hand
work to this loop (`submit`, `call_soon`) and return. Blocking work inside
agents (subprocesses, file I/O, big token counts) goes to the loop's default
executor, sized so that many chats can wait on it at once.

The runtime also holds the process's few services that agents reach through it
(a tool is given the runtime by its run context): the MCP servers' connections
(mcp_client/supervisor.py), the browser tool's Chromium (browsing/host.py) and the
scheduled tasks (scheduler/service.py). Each is held by its class (`provide`) and
found by it (`service`), so this bottom layer names none of them while every use
stays typed: `runtime.service(Scheduler)` is a `Scheduler | None` where the scheduler
tool asks. Not a Protocol here per service: it would have to name what its users
call (an MCP tool's description, a task, a server's status: types of the layers
above) or call them Any. Not an owner above that can name all three (the scheduler
is layer 7): tools reach the runtime through core's run context, which cannot name
that owner. A service that must end with the loop says so (`close_first`: the
browser, so that no Chromium outlives Cadre).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
S = TypeVar("S")

log = logging.getLogger(__name__)

#: Executor threads for blocking work; generous because most of them wait on I/O.
EXECUTOR_THREADS = 64
#: Seconds the tasks left when the loop stops get to unwind once cancelled.
SHUTDOWN_GRACE = 10.0


class AgentRuntime:
    """Owns the agents' event loop thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(EXECUTOR_THREADS, thread_name_prefix="cadre-io")
        )
        self._thread = threading.Thread(target=self._run, name="cadre-agents", daemon=True)
        self._started = threading.Event()
        #: Cadre serves only on a loopback address (run_ui.py sets it from --host): the
        #: outbound policy's "auto" allows local addresses then (helpers/outbound.py).
        self.loopback_only = True
        #: The services held for the agents, by class (see the module docstring): the MCP
        #: supervisor (run_ui.py provides it, tests that need it too), the browser (made on
        #: first use), the scheduler (the server provides it; most tests have none), the
        #: per-user limits (core/run_gate.py's seam; the server provides them).
        self._services: dict[type, object] = {}
        #: Awaited first thing in `stop`, before the tasks left are cancelled: (what, close).
        self._closers: list[tuple[str, Callable[[], Awaitable[object]]]] = []

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            self._finish()

    def _finish(self) -> None:
        """Once the loop has stopped: end what is still pending, then close the loop.

        Cancelling a run starts more work as it unwinds (its last save, a
        naming call); a task left pending when the loop closes is destroyed
        half-way ("Task was destroyed but it is pending!"). So pending tasks
        are cancelled and awaited, round after round, until none is left.
        """
        deadline = self.loop.time() + SHUTDOWN_GRACE
        while (tasks := asyncio.all_tasks(self.loop)) and self.loop.time() < deadline:
            for task in tasks:
                task.cancel()
            wait = asyncio.wait(tasks, timeout=max(0.0, deadline - self.loop.time()))
            self.loop.run_until_complete(wait)
            for task in tasks:
                if task.done() and not task.cancelled():
                    task.exception()  # marked as seen: it is of no use to anyone now
        if tasks:
            log.error("%d task(s) did not end on shutdown: %s", len(tasks), tasks)
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def provide(self, service: S, kind: type | None = None) -> S:
        """Hold `service` for everyone who has this runtime, found again by its class
        (`service`), or by `kind` (a base class it is one of: core's seam, a layer above's
        work); one of each, a new one replaces the one held before."""
        self._services[kind or type(service)] = service
        return service

    def service(self, kind: type[S]) -> S | None:
        """The service of class `kind` this runtime holds (None: none was provided)."""
        found = self._services.get(kind)
        return found if isinstance(found, kind) else None

    def close_first(self, what: str, close: Callable[[], Awaitable[object]]) -> None:
        """Await `close()` first thing in `stop`, while the agents' tasks still run
        (`what` names it in the server's log if it fails)."""
        self._closers.append((what, close))

    def start(self) -> AgentRuntime:
        self._thread.start()
        self._started.wait()
        return self

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run a coroutine on the agents' loop; the future can be waited on or cancelled."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn` on the loop thread (directly when already there)."""
        if self.in_loop_thread():
            fn(*args)
        else:
            self.loop.call_soon_threadsafe(fn, *args)

    def call(self, fn: Callable[..., T], *args: Any, timeout: float = 10.0) -> T:
        """Run `fn` on the loop thread and wait for its result.

        A plain callback, not a task: every message a person sends comes this way
        (`Runner.communicate`), and a task costs its creation and one more turn of
        the loop, which 50 chats at once wait on in turn."""
        if self.in_loop_thread():
            return fn(*args)
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return  # cancelled meanwhile
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - the caller's to handle, in its thread
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return future.result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel what still runs, then end the loop and its thread (see `_finish`)."""
        if not self._thread.is_alive():
            return

        async def _shutdown() -> None:
            for what, close in self._closers:
                try:
                    await asyncio.wait_for(close(), timeout / 2)
                except Exception:
                    log.exception("%s did not close cleanly", what)
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.submit(_shutdown()).result(timeout)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
