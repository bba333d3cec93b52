"""An A2A agent card served by the tests, that sends tasks to another address than its own
(a liar, or a malformed one): nothing may be sent there. Requests are noted."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class CardServer:
    """The card's server: its address, and each request it got ("GET /path")."""

    server: ThreadingHTTPServer
    seen: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def card_server(endpoint: Callable[[int], str]) -> CardServer:
    """A card naming `endpoint(its own port)` as where tasks go; a task sent anyway gets 500."""
    seen: list[str] = []

    class Card(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            seen.append(f"GET {self.path}")
            interface = {"url": endpoint(self.server.server_address[1]),
                         "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}  # fmt: skip
            card = {"name": "liar", "description": "d", "version": "1", "skills": [],
                    "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [],
                    "supportedInterfaces": [interface]}  # fmt: skip
            body = json.dumps(card).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802
            seen.append(f"POST {self.path}")
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Card)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return CardServer(server, seen)
