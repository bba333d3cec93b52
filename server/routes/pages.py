"""HTTP routes of the page: static files, health, profiles, a chat's files and prompt.

The settings routes are in server/routes/settings.py; what every route module
shares (the chat store, bodies, error replies by error type) in server/routes/routing.py.
"""

from __future__ import annotations

import re

from flask import Blueprint, Response, jsonify, request, send_from_directory
from werkzeug.exceptions import RequestEntityTooLarge

from core.prompt import vision
from helpers.files import base_path
from helpers.folders import chat_dir
from helpers.images import ImageRefused, ref_in_chat
from models.llm import preloaded
from models.tokens import count_content
from profiles.catalog import discover_profiles
from server.routes import views
from server.routes.attachments import save_attachment
from server.routes.cluster import node
from server.routes.projects import asked_project
from server.routes.routing import chat, chats, error
from server.routes.upload_limits import file_size, upload_cap
from server.security import guard, identity

WEBUI = base_path("webui")
#: An image opened on its own runs nothing and loads nothing else.
IMAGE_SANDBOX = "sandbox; default-src 'none'; img-src 'self'"

pages = Blueprint("pages", __name__)


@pages.get("/")
def index() -> Response:
    response = send_from_directory(WEBUI, "index.html")
    response.headers["Cache-Control"] = "no-cache"
    return response


@pages.get("/<any(js, css, vendor, img):folder>/<path:name>")
def static_file(folder: str, name: str) -> Response:
    # send_from_directory refuses paths that leave the folder.
    return send_from_directory(WEBUI / folder, name)


@pages.get("/health")
def health() -> Response:
    """A liveness check for anyone: `ready` once start-up's imports are done (a message
    before is answered too, a little later); in a cluster, the node's id and whether Redis
    answers (server/routes/cluster.py); the number of chats only for a logged-in caller."""
    answer = {"status": "ok", "ready": preloaded(), **node().health()}
    if guard.logged_in():
        answer["chats"] = len(chats())
    return jsonify(answer)


@pages.get("/api/profiles")
def profiles() -> Response:
    project = asked_project(request.args.get("project"))  # the asker's own
    found = discover_profiles(project)
    return jsonify([views.profile_view(p, project) for _, p in sorted(found.items())])


@pages.get("/api/profiles/graph")
def profile_graph() -> Response:
    """Who may call whom (read only): the settings page draws it."""
    return jsonify(views.profile_graph(asked_project(request.args.get("project"))))


@pages.post("/api/chats/<chat_id>/attachments")
def upload(chat_id: str) -> Response | tuple[Response, int]:
    chat(chat_id)
    cap = upload_cap()  # the person's own limit, if an admin set one (or the members')
    cap.cap_request()
    try:
        upload = request.files.get("file")
    except RequestEntityTooLarge:
        if refused := cap.refusal(request.content_length or 0):
            return error(refused, 413)
        raise  # past the app's own limit: its 413
    if upload is None or not upload.filename:
        return error("send the file as multipart field 'file'")
    if refused := cap.refusal(file_size(upload.stream)):
        return error(refused, 413)
    return jsonify({"path": save_attachment(chat_id, upload.filename, upload.stream)})


@pages.get("/api/chats/<chat_id>/images/<any(attachments, images):folder>/<name>")
def chat_image(chat_id: str, folder: str, name: str) -> Response | tuple[Response, int]:
    """An image of the chat (an attachment, one vision_load kept) for the page's thumbnails;
    a file that is not an image is not served (it could be a page run in Cadre's origin)."""
    chat(chat_id)
    try:
        image = ref_in_chat(chat_dir(chat_id), f"{folder}/{name}", name)
    except ImageRefused as exc:
        return error(str(exc), 404)
    response = send_from_directory(chat_dir(chat_id) / folder, name, mimetype=image.mime)
    response.headers["Content-Security-Policy"] = IMAGE_SANDBOX
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@pages.get("/api/chats/<chat_id>/export")
def export(chat_id: str) -> Response:
    document = chats().export(chat_id, identity.viewer())
    response = jsonify(document)
    name = f"cadre-chat-{chat_id}.json"
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@pages.post("/api/chats/import")
def import_chat() -> Response | tuple[Response, int]:
    document = request.get_json(silent=True)
    if document is None:
        return error("send an exported chat as JSON")
    context = chats().import_chat(document, identity.viewer())
    return jsonify({"chat": chats().runtime.call(views.chat_summary, context)})


@pages.get("/api/chats/<chat_id>/context")
def prompt_context(chat_id: str) -> Response | tuple[Response, int]:
    context = chat(chat_id)
    wanted = request.args.get("agent", "0")
    # A number, or a name where numbers are shared (siblings: "A1.2").
    # Any agent on record, one a later delegation replaced too (the tree lists it).
    agents = context.contexts()
    if wanted.isdigit():
        agent = next((a for a in agents if a.number == int(wanted)), None)
    elif re.fullmatch(r"A\d+(\.\d+)*", wanted):
        agent = next((a for a in agents if a.name == wanted), None)
    else:
        return error("agent must be an agent's number, or its name (A1.2)")
    if agent is None:
        return error(f"this chat has no agent {wanted}", 404)
    messages = vision.for_display(agent.last_prompt)
    tokens = sum(count_content(m["content"]) for m in agent.last_prompt)
    return jsonify(
        {"agent": agent.number, "name": agent.name, "messages": messages, "tokens": tokens}
    )
