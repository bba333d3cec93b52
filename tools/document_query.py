"""The `document_query` tool: answer questions from one document with the utility model.

The document is a file in the work folder, the chat's folder or the knowledge folder
(the chat owner's; txt, md, html, pdf), or an http(s) URL. A long document is narrowed to the
parts that share the most words with the questions. The answer is marked in history as
text from outside, from the document (core/prompt/untrusted.py).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Annotated

from pydantic import Field

from core.tool import EXPANDS_SECRETS, Response, Tool, ToolArgs
from helpers import outbound
from helpers.confine import PathRefused, resolve_inside
from helpers.errors import RepairableException, UserError
from helpers.folders import chat_dir, work_dir
from helpers.told import Told, told
from memory import knowledge

#: Most characters of a document handed to the utility model.
CONTEXT = 40_000
#: Largest download read from a URL.
DOWNLOAD_LIMIT = 20_000_000


class DocumentQueryArgs(ToolArgs):
    #: A URL may need a secret (an access token); the questions never get one: they go
    #: to the utility model.
    document: Annotated[str, EXPANDS_SECRETS] = Field(
        min_length=1, max_length=2_000, description="Path or http(s) URL."
    )
    questions: list[str] = Field(min_length=1, max_length=10)


class DocumentQuery(Tool):
    Args = DocumentQueryArgs

    async def execute(self, args: DocumentQueryArgs) -> Response:
        named = str(self.args.get("document", ""))  # as written: a secret in it stays hidden
        try:
            text = await asyncio.to_thread(self._read, args.document)
        except (UserError, PathRefused, OSError) as exc:
            raise self._unreadable(named, exc) from None
        if isinstance(text, Told):
            raise self._unreadable(named, text.render(self.ctx.read_prompt))
        if not text.strip():
            raise RepairableException(
                self.ctx.read_prompt("fw.document_query.empty.md", document=named)
            )
        # Ranking a long document's pieces is seconds of CPU at worst: not on the loop.
        document = await asyncio.to_thread(relevant, text, args.questions)
        questions = "\n".join(f"- {q}" for q in args.questions)
        answer = await self.ctx.call_utility_model(
            self.ctx.read_prompt("fw.document_query.sys.md"),
            self.ctx.read_prompt(
                "fw.document_query.msg.md",
                document=document,
                questions=questions,
            ),  # fmt: skip
            heading=f"{self.ctx.name}: Reading {named[:80]}",
        )
        # The answer retells the document, which may carry orders: marked as its text.
        return Response(answer, source=named)

    def _unreadable(self, named: str, why: object) -> RepairableException:
        return RepairableException(
            self.ctx.read_prompt("fw.document_query.unreadable.md", document=named, error=why)
        )

    def _read(self, document: str) -> str | Told:
        """The document's text, or why there is none where Cadre looks (told)."""
        space = self.ctx.space  # whose work folder and knowledge: the chat owner's
        if document.startswith(("http://", "https://")):
            runtime = self.ctx.runtime
            loopback_only = runtime.loopback_only if runtime is not None else True
            return _download(outbound.policy(self.ctx.settings, loopback_only, space), document)
        roots = [
            work_dir(self.ctx.settings.work_dir, space),
            chat_dir(self.ctx.chat_id),
            knowledge.folder(None, space),  # the owner's, as the work folder
        ]
        if self.ctx.project:  # the project's own knowledge files
            roots.append(knowledge.folder(self.ctx.project, space))
        path = Path(document)
        for root in roots:
            try:
                real = resolve_inside(document, root)
            except PathRefused:
                continue
            if real.is_file():
                return knowledge.read_document(real, roots)  # refuses a hard link
        if path.is_absolute():
            return told("fw.document_query.outside.md")
        return told("fw.document_query.not_found.md")


def _download(policy: outbound.OutboundPolicy, url: str) -> str:
    """The document at `url`, if the outbound policy lets Cadre fetch it."""
    with outbound.open_url(policy, url, timeout=30) as answer:
        kind = answer.headers.get_content_type()
        data = answer.read(DOWNLOAD_LIMIT)
    suffix = ".pdf" if kind == "application/pdf" else ".html" if "html" in kind else ".txt"
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"document{suffix}"
        path.write_bytes(data)
        return knowledge.read_document(path, [Path(scratch)])


def relevant(text: str, questions: list[str]) -> str:
    """`text` if it fits; else its chunks sharing the most words with the questions, in order."""
    if len(text) <= CONTEXT:
        return text
    words = {w.lower() for q in questions for w in q.split() if len(w) > 3}
    pieces = knowledge.chunks(text)
    lowered = [piece.lower() for piece in pieces]
    ranked = sorted(range(len(pieces)), key=lambda i: -sum(w in lowered[i] for w in words))
    chosen, size = [], 0
    for index in ranked:
        if size + len(pieces[index]) > CONTEXT:
            break
        chosen.append(index)
        size += len(pieces[index])
    return "\n[...]\n".join(pieces[i] for i in sorted(chosen))
