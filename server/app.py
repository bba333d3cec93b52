"""The app factory: Flask for HTTP, Flask-SocketIO (threading mode, real WebSockets)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from flask import Flask, Response, jsonify
from flask_socketio import SocketIO
from werkzeug.exceptions import HTTPException

from helpers.chats import ChatManager
from server import guard, sockets
from server.api import api
from server.memory_routes import memory_pages
from server.push import Pusher
from server.routes import pages
from server.setup import setup

log = logging.getLogger(__name__)

#: Largest request body (attachments are the big ones).
UPLOAD_LIMIT = 64 * 1024 * 1024


@dataclass
class Server:
    app: Flask
    socketio: SocketIO
    pusher: Pusher


def create_app(chats: ChatManager) -> Server:
    """A ready server for `chats`; nothing runs until `socketio.run` (or a test client)."""
    app = Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = UPLOAD_LIMIT
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["cadre.chats"] = chats
    guard.install(app)
    app.register_blueprint(pages)
    app.register_blueprint(api)
    app.register_blueprint(setup)
    app.register_blueprint(memory_pages)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> tuple[Response, int]:
        return jsonify({"error": exc.description or exc.name}), exc.code or 500

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> tuple[Response, int]:
        # Never a traceback in a response: it goes to the server log under an id.
        incident = uuid.uuid4().hex[:8]
        log.exception("request failed (incident %s)", incident)
        return jsonify({"error": f"internal error (incident {incident})"}), 500

    # async_handlers=False: one browser's events are handled in the order it sent them
    # (a send then a stop must not run as stop then send).
    socketio = SocketIO(
        app, async_mode="threading", async_handlers=False, logger=False, engineio_logger=False
    )
    sockets.register(socketio, chats)
    pusher = Pusher(socketio, chats)
    return Server(app, socketio, pusher)
