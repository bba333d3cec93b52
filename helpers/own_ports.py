"""The TCP ports Cadre's own process listens on, which its agents may never reach.

The outbound policy refuses these on every address of this machine
(helpers/outbound.py): an agent's browser or command that reached Cadre's web
server could use its API, where no login is set, as a person would. Every
listener Cadre opens on this machine's network says so here when it starts
listening and when it stops: the web server and its MCP endpoint (run_ui.py),
the local model's server (models/local_model.py), the browsers' checking proxies
(helpers/checking_proxy.py). A sandbox's own proxy listens in the sandbox's
network, not this machine's, and is not one of them.

One set for the process, as the listeners are the process's: a port is Cadre's
whichever chat or thread opened it.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_ports: dict[int, int] = {}  # port -> how many listeners hold it (a model kept while retired)


def add(port: int) -> None:
    """A listener of Cadre's is on `port`."""
    with _lock:
        _ports[port] = _ports.get(port, 0) + 1


def remove(port: int) -> None:
    """One listener of Cadre's on `port` closed."""
    with _lock:
        left = _ports.get(port, 0) - 1
        if left > 0:
            _ports[port] = left
        else:
            _ports.pop(port, None)


def listening() -> frozenset[int]:
    """The ports Cadre listens on now."""
    with _lock:
        return frozenset(_ports)
