"""The `text_editor` tool: `text_editor:read`, `:write` and `:patch` a text file.

Paths resolve inside the work folder (relative paths start there); reading
may also reach the chat's own folder (attachments, saved results). Anything
else is refused with the reason.

What a read returns is marked in history as text from outside, from the file
(core/prompt/untrusted.py), unless this agent wrote the file as it is now: the
digest of every file it wrote or patched is kept in its data (`WROTE`, saved with
the chat), and a read whose bytes have that digest is its own words. A patch keeps a
file its own only when it was so before (one line changed does not make the rest of a
download its words), and its result, which shows lines around the edit, is marked alike;
a file written from a §§include is the cited file's words, not the agent's.
Anything else (an upload, a download, a file a command, another agent or a person wrote
or changed since) is another's words, read as data: the safe side when the two cannot be
told apart.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Annotated

from pydantic import Field

from core.prompt import long_results
from core.tool import EXPANDS_SECRETS, Response, Tool, ToolArgs
from helpers import text_files
from helpers.confine import PathRefused, inside, resolve_inside
from helpers.errors import RepairableTold
from helpers.folders import chat_dir, work_dir
from helpers.text_files import Edit
from helpers.told import Told, render_lines, told

METHODS = ("read", "write", "patch")
#: The agent's data key of the files it wrote: real path → SHA-256 of the bytes it wrote.
WROTE = "text_editor_wrote"


class TextEditorArgs(ToolArgs):
    path: str = Field(description="File path, relative to the work folder or absolute inside it.")
    line_from: int | None = Field(default=None, ge=1, description="read: first line (1-based).")
    line_to: int | None = Field(default=None, ge=1, description="read: last line (inclusive).")
    # A file's content may need a secret's value (a configuration file): expanded there.
    content: Annotated[str | None, EXPANDS_SECRETS] = Field(
        default=None, description="write: the whole new content."
    )
    edits: Annotated[list[Edit] | None, EXPANDS_SECRETS] = Field(
        default=None, description="patch: line-range edits."
    )


class TextEditor(Tool):
    """Reads, writes and patches text files by line numbers."""

    Args = TextEditorArgs
    methods = METHODS

    #: Whether the arguments cited a file with §§include (core/tool.py expands it).
    included = False

    async def expand_includes(self) -> None:
        self.included = long_results.has_includes(self.args)
        await super().expand_includes()

    async def execute(self, args: TextEditorArgs) -> Response:
        wrote: dict[str, str] = dict(self.ctx.get_data(WROTE) or {})
        parts, path, digest, before = await asyncio.to_thread(self._run, args)
        message = render_lines(parts, self.ctx.read_prompt)
        # Its own words: what it wrote whole (not a file it cited with §§include), or a
        # file that was its own as it read or patched it. A patch of another's file leaves
        # the rest of it another's words.
        own = (self.method == "write" and not self.included) or wrote.get(str(path)) == before
        if self.method != "read":
            if own:
                wrote[str(path)] = digest
            else:
                wrote.pop(str(path), None)
            self.ctx.set_data(WROTE, wrote)
        if own or self.method == "write":  # a write's result is only the framework's words
            return Response(message=message)
        return Response(message=message, source=str(self.args.get("path", "")))

    def _run(self, args: TextEditorArgs) -> tuple[list[Told | str], Path, str, str]:
        """The result's lines (told ones rendered on the loop), the file's real path, the
        digest of the bytes read or written and that of the file before ("" for a write);
        off the loop, so a refusal is a `RepairableTold`, rendered by `Tool.run`."""
        path = self._resolve(args.path, writing=self.method != "read")
        roots = [work_dir(self.ctx.settings.work_dir, self.ctx.space), chat_dir(self.ctx.chat_id)]
        reads = self.ctx.file_reads
        if self.method == "read":
            data = text_files.load(path, args.path, roots)
            reads.record(path, data)
            lines = text_files.read_range(data, args.path, args.line_from, args.line_to)
            return lines, path, _digest(data), _digest(data)
        if self.method == "write":
            if args.content is None:
                raise RepairableTold("fw.text_editor.content_missing.md")
            path.parent.mkdir(parents=True, exist_ok=True)
            written = text_files.write(path, args.content)
            reads.record(path, written)
            wrote = told("fw.text_editor.wrote.md", path=args.path,
                         lines=len(args.content.splitlines()))  # fmt: skip
            return [wrote], path, _digest(written), ""
        if not args.edits:
            raise RepairableTold("fw.text_editor.edits_missing.md")
        data = text_files.load(path, args.path, roots[:1], utf8=True)
        if not reads.matches(path, data):
            raise RepairableTold("fw.text_editor.changed.md", path=args.path)
        text, spans = text_files.apply_edits(data, args.edits, args.path)
        written = text_files.write(path, text)
        reads.record(path, written)
        patched = told("fw.text_editor.patched.md", path=args.path, edits=len(args.edits))
        shown = [patched, text_files.show_spans(text, spans)]
        return shown, path, _digest(written), _digest(data)

    def _resolve(self, raw: str, writing: bool) -> Path:
        work = work_dir(self.ctx.settings.work_dir, self.ctx.space)
        work.mkdir(parents=True, exist_ok=True)
        chat = chat_dir(self.ctx.chat_id)
        try:
            if not writing and Path(raw).is_absolute() and inside(Path(raw).resolve(), [chat]):
                return resolve_inside(raw, chat, what="this chat's folder")
            return resolve_inside(raw, work)
        except PathRefused as exc:
            raise RepairableTold("fw.path_refused.md", reason=str(exc)) from None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
