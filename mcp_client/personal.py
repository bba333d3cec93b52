"""Each person's MCP servers: their own remote ones, and the admin's servers marked
`per_user`, started once per person with that person's secrets in them.

One `McpSupervisor` a person (made the first time they need one), beside the shared
one of the server's other MCP servers; its servers' file URLs reach that person's
folder only. What a person's servers are is asked of `servers_of(owner)`, which the
server gives (accounts/personal.py says what they are): the registry knows no
accounts. `ensure(owner)` puts them to work and returns once the ones that changed
are stopped (the new ones start behind), from any thread but the agents' loop (the
MCP SDK is imported there the first time): a web request after a change of
settings, the run's start (`ask`, which does it in a worker thread).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Collection
from pathlib import Path

from helpers.runtime import AgentRuntime
from mcp_client.supervisor import McpSupervisor
from mcp_client.tools import McpToolInfo

log = logging.getLogger(__name__)

#: What a person's servers are: their setting's text and their space.
ServersOf = Callable[[str | None], tuple[str, Path]]


class PersonalServers:
    """Every person's own MCP servers (see the module docstring)."""

    def __init__(self, runtime: AgentRuntime, servers_of: ServersOf) -> None:
        self.runtime = runtime
        self._servers_of = servers_of
        #: owner → (the text applied, its supervisor: None while the text names none).
        self._by_owner: dict[str | None, tuple[str, McpSupervisor | None]] = {}
        #: One lock a person: two requests of one person apply one after the other; two
        #: people's never wait on each other (a server may take seconds to stop).
        self._locks: dict[str | None, threading.Lock] = {}
        self._guard = threading.Lock()
        #: Whose servers are being put to work by `ask` (asked again meanwhile: no second).
        self._asked: set[str | None] = set()

    def ensure(self, owner: str | None) -> None:
        """Put `owner`'s servers as their settings say now to work (not on the loop)."""
        with self._guard:
            lock = self._locks.setdefault(owner, threading.Lock())
        with lock:
            text, space = self._servers_of(owner)
            applied, supervisor = self._by_owner.get(owner, (None, None))
            if applied == text:
                return
            if supervisor is None and text:
                supervisor = McpSupervisor(self.runtime, space)
            if supervisor is not None:
                supervisor.apply(text)
                log.info("MCP: the servers of %s applied", owner or "the one user")
            self._by_owner[owner] = (text, supervisor)

    def known(self, owner: str | None) -> bool:
        """Were `owner`'s servers put to work already (none, maybe)?"""
        return owner in self._by_owner

    def refresh(self) -> None:
        """`ensure` everyone's whose servers were put to work: the server's settings
        changed (a per-person server of the admin's, a shared secret)."""
        for owner in list(self._by_owner):
            try:
                self.ensure(owner)
            except ValueError as exc:  # their setting no longer reads: the log says why
                log.error("MCP: the servers of %s: %s", owner or "the one user", exc)

    def ask(self, owner: str | None) -> None:
        """`ensure(owner)` in a worker thread, from the agents' loop: the run goes on, and
        the servers it starts are there from a later step on."""
        with self._guard:
            if owner in self._asked:
                return
            self._asked.add(owner)

        def go() -> None:
            try:
                self.ensure(owner)
            except Exception:  # a person's wrong setting must not end the run
                log.exception("MCP: the servers of %s could not be applied", owner)
                # Not tried again at every step: their next change of settings tries.
                self._by_owner.setdefault(owner, ("", None))
            finally:
                with self._guard:
                    self._asked.discard(owner)

        try:
            asyncio.get_running_loop().run_in_executor(None, go)
        except RuntimeError:  # not on a loop (a prompt built outside a run): here, then
            go()

    def forget(self, owner: str | None) -> None:
        """Stop `owner`'s servers and forget them (their account is gone)."""
        _, supervisor = self._by_owner.pop(owner, ("", None))
        if supervisor is not None:
            supervisor.stop()

    def supervisor(self, owner: str | None) -> McpSupervisor | None:
        """`owner`'s supervisor (None: they have no servers of their own yet)."""
        return self._by_owner.get(owner, ("", None))[1]

    def tools(self, owner: str | None, servers: Collection[str] | None = None) -> list[McpToolInfo]:
        supervisor = self.supervisor(owner)
        return supervisor.tools(servers) if supervisor is not None else []

    def stop(self, timeout: float = 15.0) -> None:
        """Stop everyone's servers."""
        for _, supervisor in list(self._by_owner.values()):
            if supervisor is not None:
                supervisor.stop(timeout)
