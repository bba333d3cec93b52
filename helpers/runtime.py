"""The one asyncio event loop that runs all agent work, in its own thread.

Web handlers run in other threads and never block on an agent: they hand
work to this loop (`submit`, `call_soon`) and return. Blocking work inside
agents (subprocesses, file I/O, big token counts) goes to the loop's default
executor, sized so that many chats can wait on it at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from browsing.host import BrowserHost
    from mcp_client.supervisor import McpSupervisor
    from scheduler.service import Scheduler

T = TypeVar("T")

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
        #: The MCP servers' connections, whose tools every agent on this loop gets (None:
        #: none; run_ui.py sets it up, tests that need it too).
        self.mcp: McpSupervisor | None = None
        #: Cadre serves only on a loopback address (run_ui.py sets it from --host): the
        #: outbound policy's "auto" allows local addresses then (helpers/outbound.py).
        self.loopback_only = True
        #: The browser tool's Chromium (browsing/host.py), made on first use; ended
        #: first thing in `stop`, so no browser process outlives Cadre.
        self.browser: BrowserHost | None = None
        #: The scheduled tasks (scheduler/service.py), for the agents' `scheduler` tool;
        #: the server sets it up (None: no scheduler, as in most tests).
        self.scheduler: Scheduler | None = None

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
            if self.browser is not None:
                try:
                    await asyncio.wait_for(self.browser.close(), timeout / 2)
                except Exception:
                    log.exception("the browser did not close cleanly")
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.submit(_shutdown()).result(timeout)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
