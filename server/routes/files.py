"""The file panel's routes, under `/api/files/`: browse the work folder or a chat's folder,
upload, download, rename, make a folder, delete, preview. Each is the asker's own: their
work folder (in their space, accounts/spaces.py) and their chats' folders.

Every route names its place with `?root=work` or `?root=chat&chat=<id>` and a path
from that folder down (`path=notes/a.md`); changes send the same fields as JSON.
Login and CSRF are checked for these as for every route (server/security/guard.py).

`GET /api/files/text` gives a text file to edit with its version, `POST
/api/files/save` writes it back unless it changed meanwhile (a 409; `server/routes/file_text.py`),
and `POST /api/files/new` makes an empty one to edit (refused where anything is).
Every refusal (a path leading out, a read-only place, a conflict) is a line in the log too.

`GET /api/files/raw?root=...&chat=...&path=...` is the stable address of a file's
bytes for the page (an image's `src`, a thumbnail): images as themselves, text as
plain text, the rest as bytes; never as HTML, and under a sandboxing policy.
"""

from __future__ import annotations

import logging

from flask import Blueprint, Response, jsonify, request, send_file
from pydantic import BaseModel, Field
from werkzeug.exceptions import RequestEntityTooLarge

from execution import sandbox_choice
from helpers.errors import NotFound, UserError
from helpers.files import usr_dir
from helpers.settings import load_settings
from server.routes import file_ops, file_text
from server.routes.file_places import Place, TooBig, new_name, place
from server.routes.routing import body, chats, error, status_for
from server.routes.upload_limits import upload_cap
from server.security import identity

log = logging.getLogger(__name__)

file_pages = Blueprint("files", __name__)

#: A served file may not run anything, nor be framed, whatever it holds.
SANDBOX = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox"
#: Room for the multipart framing around the files of one upload.
FORM_OVERHEAD = 1024 * 1024
#: Largest body of a save: a text of EDIT_LIMIT bytes may take 6 bytes of JSON for each
#: (a control character is written \u0001), and the other fields are short.
SAVE_BODY_LIMIT = 6 * file_text.EDIT_LIMIT + 64 * 1024


class Where(BaseModel):
    """The place and path a change names."""

    root: str = "work"
    chat: str = ""
    path: str = ""


class RenameBody(Where):
    name: str = Field(min_length=1, max_length=1000)


class FolderBody(Where):
    name: str = Field(min_length=1, max_length=1000)


class SaveBody(Where):
    text: str
    #: The version the page loaded ("" for a file that should not exist yet).
    version: str = Field(default="", max_length=64)
    #: Write over whatever is there now (the person chose to overwrite after a conflict).
    force: bool = False


#: The status of each refusal of the editor's own (the rest: routing.STATUS).
EDIT_STATUS = ((file_text.Conflict, 409), (file_text.TooBigToEdit, 413), (file_text.NotText, 415))


@file_pages.errorhandler(UserError)
def refused(exc: UserError) -> tuple[Response, int]:
    """A refusal in words for the page, and a line in the log (a hostile path shows there)."""
    status = next((code for kind, code in EDIT_STATUS if isinstance(exc, kind)), 0)
    status = status or status_for(exc)
    log.warning("file panel refused %s %s (%s): %s", request.method, request.path, status, exc)
    if isinstance(exc, file_text.Conflict):  # the version on disk now, for an overwrite
        return jsonify({"error": str(exc), "current": exc.current}), status
    return error(str(exc), status)


def _place(root: str, chat_id: str) -> Place:
    """The folder asked for, the asker's own: their work folder (the `work_dir` setting is
    the first admin's and the desktop mode's; anyone else's is in their space); with
    their open chat named, its agents' (a chat in a project works in the project's).
    Another person's chat is taken for none: the asker's own folder is shown."""
    context = None
    if chat_id:
        try:
            context = chats().get(chat_id, identity.viewer())
        except NotFound:
            context = None
    space = identity.space()
    if context is not None:
        work = context.agent0.ctx.settings.work_dir
    else:
        work = load_settings().work_dir if space == usr_dir() else ""
    return place(root, chat_id, work, context is not None, space)


def _asked() -> tuple[Place, str]:
    """The place and path of a GET (or an upload): from the query string."""
    args = request.args
    return _place(args.get("root", "work"), args.get("chat", "")), args.get("path", "")


def _limit() -> int:
    return load_settings().file_upload_limit_mb * 1024 * 1024


@file_pages.get("/api/files/list")
def list_folder() -> Response:
    where, path = _asked()
    folder = where.resolve(path)
    entries, cut = file_ops.listing(where, folder)
    return jsonify({
        "root": where.root, "label": where.label, "writable": where.writable,
        "path": where.relative(folder), "entries": file_ops.entries_json(entries),
        "truncated": cut, "upload_limit": _limit(),
        "edit_limit": file_text.EDIT_LIMIT,
        # How commands run: shown by the work folder (commands see the chat's read-only).
        "sandbox": sandbox_choice.status(load_settings()),
    })  # fmt: skip


@file_pages.get("/api/files/preview")
def preview() -> Response:
    where, path = _asked()
    real = where.resolve(path)
    return jsonify({"path": where.relative(real), **file_ops.preview(where, real)})


def _send(as_attachment: bool) -> Response:
    where, path = _asked()
    real = where.resolve(path)
    handle = file_ops.open_file(where, real)
    response = send_file(
        handle,
        mimetype=file_ops.raw_type(real),
        as_attachment=as_attachment,
        download_name=real.name,
        max_age=0,
    )
    response.headers["Content-Security-Policy"] = SANDBOX
    return response


@file_pages.get("/api/files/text")
def text() -> Response:
    """A text file to edit and its version; refused when too big (413) or binary (415)."""
    where, path = _asked()
    return jsonify({**file_text.load(where, where.resolve(path)), "limit": file_text.EDIT_LIMIT})


@file_pages.post("/api/files/save")
def save() -> Response:
    """Save an edited text file unless it changed since the page loaded it (a 409)."""
    # A body that cannot hold a text within the limit is refused before it is read (the
    # app's own limit is the uploads', many times larger), from its length when it says it.
    request.max_content_length = SAVE_BODY_LIMIT
    try:
        data = body(SaveBody)
    except RequestEntityTooLarge:
        raise file_text.TooBigToEdit(_too_big_to_save(request.content_length)) from None
    where = _place(data.root, data.chat)
    saved = file_text.save(where, where.resolve(data.path), data.text, data.version, data.force)
    return jsonify(saved)


def _too_big_to_save(size: int | None) -> str:
    limit = f"{file_text.EDIT_LIMIT / (1024 * 1024):.1f} MB"
    sent = f" ({size / (1024 * 1024):.1f} MB was sent)" if size else ""
    return (
        f"the text is too large to save here: the editor saves at most {limit} of text{sent};"
        " change a bigger file with a program of your own and upload it"
    )


@file_pages.get("/api/files/raw")
def raw() -> Response:
    """A file's bytes shown in the page (an <img>); stable for other parts to use."""
    return _send(as_attachment=False)


@file_pages.get("/api/files/download")
def download() -> Response:
    return _send(as_attachment=True)


@file_pages.post("/api/files/upload")
def upload() -> Response | tuple[Response, int]:
    """Files of the multipart field `files` (several), saved in the folder `path` names."""
    where, path = _asked()
    where.check_writable()  # before the body is read: a read-only place takes nothing
    folder = where.resolve(path)
    cap = upload_cap(_limit())  # the lower of the setting and the person's own limit
    limit = cap.bytes
    request.max_content_length = limit + FORM_OVERHEAD
    try:
        sent = request.files.getlist("files")
    except RequestEntityTooLarge:
        size = request.content_length or 0
        return error(cap.refusal(size) or file_ops.too_big(size, limit), 413)
    uploads = [file_ops.Upload(f.filename or "", f.stream) for f in sent if f.filename]
    if not uploads:
        return error("send the files as the multipart field 'files'")
    if refused := cap.refusal(sum(u.size() for u in uploads)):
        return error(refused, 413)
    try:
        saved = file_ops.save_uploads(where, folder, uploads, limit)
    except TooBig as exc:
        return error(str(exc), 413)
    return jsonify({"saved": saved})


@file_pages.post("/api/files/rename")
def rename() -> Response:
    data = body(RenameBody)
    where = _place(data.root, data.chat)
    target = file_ops.rename(where, where.entry(data.path), data.name)
    return jsonify({"path": where.relative(target)})


@file_pages.post("/api/files/folder")
def new_folder() -> Response:
    data = body(FolderBody)
    where = _place(data.root, data.chat)
    target = file_ops.make_folder(where, where.resolve(data.path), data.name)
    return jsonify({"path": where.relative(target)})


@file_pages.post("/api/files/new")
def new_file() -> Response:
    """An empty text file named `name` in the folder `path`, for the editor to open."""
    data = body(FolderBody)
    where = _place(data.root, data.chat)
    parent = where.resolve(data.path)
    return jsonify(file_text.make(where, parent / new_name(data.name)))


@file_pages.post("/api/files/delete")
def delete() -> Response:
    data = body(Where)
    where = _place(data.root, data.chat)
    file_ops.delete(where, where.entry(data.path))
    return jsonify({"deleted": data.path})
