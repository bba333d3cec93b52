"""`GET /api/export` (the page) and `GET /api/v1/export` (the API): the asker's own chats,
memory, knowledge and projects in one zip (store/user_export.py). Anyone may take their
own; nobody another's (an admin backs up the whole server instead: server/routes/backups.py).
"""

from __future__ import annotations

import time

from flask import Blueprint, Response, send_file

from server.routes.routing import chats
from server.security import identity
from store.user_export import export_user


def export_mine() -> Response:
    owner = identity.viewer()
    archive = export_user(chats(), owner, identity.space())
    day = time.strftime("%Y-%m-%d")
    name = f"cadre-{owner or 'export'}-{day}.zip"
    return send_file(archive, mimetype="application/zip", as_attachment=True, download_name=name)


def add_routes(blueprint: Blueprint, prefix: str) -> None:
    blueprint.add_url_rule(f"{prefix}/export", "export_mine", export_mine, methods=["GET"])


export_pages = Blueprint("own_export", __name__)
add_routes(export_pages, "/api")
