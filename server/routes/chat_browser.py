"""The browser tool's screenshots, for the log: `GET /api/chats/<id>/browser/shots/<name>`.

Only files in the chat's `browser/shots/` folder are served, by a name the
tool made (page-3.png, step-12.jpg); login and CSRF apply as to every route.
"""

from __future__ import annotations

import re

from flask import Blueprint, Response, send_from_directory

from helpers.errors import NotFound
from helpers.folders import chat_dir
from server.routes.routing import chat

browser_pages = Blueprint("browser", __name__)

#: The names browsing/session.py gives screenshots; nothing else is served.
SHOT_NAME = re.compile(r"(?:page|step)-\d{1,9}\.(?:png|jpg)")


@browser_pages.get("/api/chats/<chat_id>/browser/shots/<name>")
def screenshot(chat_id: str, name: str) -> Response:
    chat(chat_id)  # a 404 for a chat that does not exist
    if not SHOT_NAME.fullmatch(name):
        raise NotFound(f"there is no screenshot named {name!r}")
    response = send_from_directory(chat_dir(chat_id) / "browser" / "shots", name)
    response.headers["Cache-Control"] = "private, max-age=86400"  # a step's picture never changes
    return response
