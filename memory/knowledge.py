"""Knowledge: the files in a person's knowledge folder (txt, md, html, pdf: `<space>/knowledge/`,
usr/knowledge/ for the desktop mode and the first admin), chunked into a search index of
their own; a project's own knowledge folder has an index of its own, searched by its
chats only.

The index is refreshed before each recall (and usr/knowledge/'s at start: another
person's is first brought up to date at their first recall): a file added or
changed since is read and chunked again, a removed one leaves the index.
Documents are also read whole for `document_query`.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from html.parser import HTMLParser
from pathlib import Path

from helpers.confine import read_inside
from helpers.errors import UserError
from helpers.files import write_text_atomic
from helpers.folders import knowledge_dir
from memory.store import MemoryStore

log = logging.getLogger(__name__)

SUFFIXES = {".txt", ".md", ".markdown", ".html", ".htm", ".pdf"}
#: Characters per chunk, and how many of them the next chunk repeats.
CHUNK = 1_200
OVERLAP = 200
#: Largest document read whole (a file, or a download for `document_query`).
DOCUMENT_LIMIT = 20_000_000


class _Text(HTMLParser):
    """The visible text of an HTML page (scripts and styles left out)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("p", "br", "div", "li", "h1", "h2", "h3", "h4", "tr"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def read_document(path: Path, roots: list[Path]) -> str:
    """The text of a txt, md, html or pdf file inside `roots`.

    Read through the confinement's descriptor checks (no link leads out, no
    hard link): `PathRefused` says why a file is refused; `UserError` is for
    other kinds of files, damage and size.
    """
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise UserError(f"{path.name}: only {', '.join(sorted(SUFFIXES))} files can be read")
    data = read_inside(path, roots, DOCUMENT_LIMIT)
    if len(data) > DOCUMENT_LIMIT:
        raise UserError(f"{path.name} is larger than {DOCUMENT_LIMIT // 1_000_000} MB")
    if suffix == ".pdf":
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError

        try:
            pages = PdfReader(io.BytesIO(data)).pages
            return "\n".join(page.extract_text() or "" for page in pages)
        except (PyPdfError, ValueError, OSError) as exc:
            raise UserError(f"{path.name} could not be read as a PDF: {exc}") from None
    text = data.decode("utf-8", errors="replace")
    return html_text(text) if suffix in (".html", ".htm") else text


def chunks(text: str) -> list[str]:
    """Pieces of `text` of about `CHUNK` characters, cut at line ends where possible."""
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + CHUNK)
        if end < len(text):
            cut = text.rfind("\n", start + CHUNK // 2, end)
            end = cut if cut > 0 else end
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end if end >= len(text) else max(end - OVERLAP, start + 1)
    return pieces


def folder(project: str | None = None, space: Path | None = None) -> Path:
    """The knowledge folder of `space`'s owner (None: usr/knowledge/), or their project's."""
    return knowledge_dir(project, space)


_refreshing = threading.Lock()


def refresh(store: MemoryStore, project: str | None = None, space: Path | None = None) -> int:
    """Bring the index up to date with the knowledge folder of `space`'s owner (None:
    usr/knowledge/), or their `project`'s; how many files were (re)read.

    One refresh at a time (start-up and every chat call it): two at once would
    index each file twice.
    """
    with _refreshing:
        return _refresh(store, folder(project, space))


def _refresh(store: MemoryStore, root: Path) -> int:
    state_path = store.path.with_name("files.json")
    try:
        known: dict[str, float] = json.loads(state_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        known = {}
    present = {
        str(p.relative_to(root)): p.stat().st_mtime
        for p in (root.rglob("*") if root.is_dir() else [])
        if p.is_file() and p.suffix.lower() in SUFFIXES
    }
    changed = [name for name, mtime in present.items() if known.get(name) != mtime]
    removed = [name for name in known if name not in present]
    for name in changed + removed:
        store.delete_source(f"knowledge/{name}")
    for name in changed:
        try:
            text = read_document(root / name, [root])
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
            log.warning("knowledge file %s skipped: %s", name, exc)
            continue
        store.save_many(chunks(text), "knowledge", f"knowledge/{name}")
    if changed or removed:
        write_text_atomic(state_path, json.dumps(present))
    return len(changed)
