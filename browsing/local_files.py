"""What the browser gets for a `file://` URL: read by Cadre under text_editor's rules.

Chromium opening a file itself would follow whatever the name is when it
opens it: a hard link to Cadre's secret key (which it then saved in
`downloads/` for any tool to read), a FIFO (the step hangs), a device, a link
swapped in after the path was checked. So the guard (browsing/guard.py) gives
it only bytes `read_file_url` read through the descriptor helpers/confine.py
checked (inside the work folder, one name only, not a secret file of Cadre's,
a regular file):

- a page, a frame or a download (a navigation) is answered with those bytes;
- a picture, script, style sheet or other part of a page is handed to Chromium
  as a copy of them in a folder of Cadre's own (browsing/file_copies.py),
  which Chromium then reads itself. Answered directly, it would count as
  coming from the page's own origin: a page's script could then read every
  file in the work folder (fetch(), canvas pixels, style rules, a script's
  error text all did, in Chromium) and send it out. Read from a file,
  Chromium's own rules for files hold: another file stays opaque to a page.

A folder gets a plain listing of our own (names, links to each): it is what
Chromium showed before, it shows no more than a command's `ls` would, and a
page saved with its folder stays browsable; each link followed is checked
like any other file request.
"""

from __future__ import annotations

import html
import mimetypes
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from helpers.confine import PathRefused, open_inside, read_inside
from helpers.outbound import OutboundPolicy, OutboundRefused

#: Largest file the browser opens (a page, a picture, a PDF): it is held in memory on its
#: way to Chromium. A bigger one is for text_editor or a command.
FILE_LIMIT = 32 * 1024 * 1024
#: Most names a folder's listing shows.
LISTED = 1_000


@dataclass(frozen=True)
class FileAnswer:
    """The answer to a file request."""

    body: bytes
    #: From the file's name; None (a name of no known kind) lets Chromium sniff the bytes, as
    #: it does for such a file itself (text shows, anything else downloads).
    content_type: str | None


def read_file_url(policy: OutboundPolicy, url: str) -> FileAnswer:
    """The answer to a request for `url` (a `file://` URL); `OutboundRefused` says why not."""
    path = policy.check_file(url)  # in the work folder by its real path, links followed
    assert policy.work_dir is not None  # check_file refuses every file URL without one
    try:
        if path.is_dir():
            return _listing(path, policy.work_dir, url)
        data = read_inside(path, [policy.work_dir], FILE_LIMIT)
    except PathRefused as exc:  # a hard link, a secret file, not a regular file, swapped
        raise OutboundRefused(str(exc)) from None  # it names the file
    except FileNotFoundError:
        raise OutboundRefused(f"{url[:200]}: no such file in the work folder") from None
    except OSError as exc:
        raise OutboundRefused(f"{url[:200]}: cannot be read ({exc.strerror})") from None
    if len(data) > FILE_LIMIT:
        raise OutboundRefused(
            f"{url[:200]}: larger than {FILE_LIMIT // 2**20} MB, more than the browser opens;"
            " read it with text_editor or a command"
        )
    return FileAnswer(data, mimetypes.guess_type(unquote(urlsplit(url).path))[0])


def _listing(path: Path, root: Path, url: str) -> FileAnswer:
    """A page listing the folder opened (and checked, confine.open_inside) at `path`."""
    fd = open_inside(path, os.O_RDONLY | os.O_DIRECTORY, [root])
    try:
        with os.scandir(fd) as entries:
            names = sorted(e.name + "/" if _is_dir(e) else e.name for e in entries)
    finally:
        os.close(fd)
    parts = urlsplit(url)
    # Links are relative to the folder itself, also when its URL lacks the last slash.
    folder = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/", query="", fragment=""))
    title = html.escape(unquote(urlsplit(folder).path))
    items = "".join(
        # A name need not be UTF-8: the link keeps its bytes, the text shows what it can.
        f'<li><a href="{html.escape(quote(os.fsencode(name)))}">{html.escape(_shown(name))}</a>'
        for name in ([] if path == root.resolve() else ["../"]) + names[:LISTED]
    )  # no way up from the work folder itself: it would only be refused
    more = f"<p>and {len(names) - LISTED} more</p>" if len(names) > LISTED else ""
    page = (
        f'<!doctype html><meta charset="utf-8"><base href="{html.escape(folder)}">'
        f"<title>Index of {title}</title><h1>Index of {title}</h1><ul>{items}</ul>{more}"
    )
    return FileAnswer(page.encode("utf-8"), "text/html; charset=utf-8")


def _shown(name: str) -> str:
    return os.fsencode(name).decode("utf-8", "replace")


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # gone since the listing began
        return False
