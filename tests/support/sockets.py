"""Socket.IO test-client helpers: an event with its ack, and what a client received."""

from __future__ import annotations

from typing import Any


def ack(sio: Any, event: str, data: dict[str, Any] | None = None) -> Any:
    """Emit `event` and return the server's ack."""
    return sio.emit(event, data or {}, callback=True)


def received(sio: Any, name: str) -> list[Any]:
    """The payloads of the `name` events received since the last call (they are consumed)."""
    return [e["args"][0] for e in sio.get_received() if e["name"] == name]
