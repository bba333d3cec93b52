"""Text from outside, marked in history as data with its source.

A tool result that came from outside Cadre and the chat (a web page, a fetched
document, search results, an MCP server's answer, a file no agent of the chat
wrote) enters history inside a block

    <untrusted-data id="3f9a0c2b71de" tool="browser" source="https://example.com/">
    ...the page's text...
    </untrusted-data id="3f9a0c2b71de">

and the system prompt (`prompts/agent.system.untrusted.md`) tells the model that
such text is information, never instructions. The content cannot end its block
early: every `<untrusted-data` or `</untrusted-data` in it is escaped (its `<`
becomes `‹`), lookalikes too (fullwidth forms, Unicode dashes, invisible characters
inside: `escape`), and the id is random per block, so the model is told that a block
ends only at the closing tag with its own id.

The tags are framework syntax, not prose, so they are written here rather than in a
prompt file: this module must recognise them again wherever history is cut or
summarised (core/prompt/compression.py), and a profile rewording them would break
that. The words around them are prompt files.
"""

from __future__ import annotations

import functools
import re
import secrets
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

#: Longest source shown in a block's opening tag.
SOURCE_LIMIT = 300
#: The tool named on a summary of text that held marked blocks.
SUMMARY_TOOL = "history_summary"

_OPEN = '<untrusted-data id="{id}" tool="{tool}" source="{source}">'
_CLOSE = '</untrusted-data id="{id}">'
# What may begin a tag-like run in content: `<` and its fullwidth and small forms; not
# one an ASCII letter other than `u` follows, alone or after `/` (`<p>`, `</div>`: most of
# a page's `<`, passed over here at C speed).
_OPENER = re.compile("[<\uff1c\ufe64](?!/?[a-tv-zA-TV-Z])")
#: Most characters after a `<` looked at for a tag-like run (what hides among invisible
#: characters further off is no tag a model reads).
SCAN_LIMIT = 4096
# A real tag: only this module writes one, and content cannot hold one (escaped).
_TAG = re.compile(
    r'<untrusted-data id="(?P<open>[0-9a-f]{12})" tool="[^"\n]*" source="(?P<source>[^"\n]*)">'
    r'|</untrusted-data id="(?P<close>[0-9a-f]{12})">'
)
# A real tag with the line break `mark` puts after an opening and before a closing tag.
_TAG_LINE = re.compile(
    r'<untrusted-data id="[0-9a-f]{12}" tool="[^"\n]*" source="[^"\n]*">\n?'
    r'|\n?</untrusted-data id="[0-9a-f]{12}">'
)
# What a source or tool name may not hold: it would end the attribute or the tag.
_ATTRIBUTE_UNSAFE = str.maketrans({'"': "'", "<": "‹", ">": "›", "\n": " ", "\r": " "})


def escape(text: str) -> str:
    """`text` with every tag-like `<untrusted-data` / `</untrusted-data` defused: its `<`
    becomes `‹`. Tag-like is what a model may read as the tag: any case, spaces, `_` or a
    dash between the words, and lookalikes: fullwidth forms, Unicode dashes, invisible
    characters (zero-width, NUL) anywhere in it."""
    found = [m.start() for m in _OPENER.finditer(text) if _tag_like(text, m.start())]
    if not found:
        return text
    parts, last = [], 0
    for start in found:
        parts += [text[last:start], "‹"]
        last = start + 1
    parts.append(text[last:])
    return "".join(parts)


def _tag_like(text: str, start: int) -> bool:
    """Whether what follows the `<` at `start` reads as `/untrusted-data` or `untrusted-data`."""
    chars = _folded(text, start + 1, min(len(text), start + 1 + SCAN_LIMIT))
    char = next(chars, "")
    if char == "/":
        char = next(chars, "")
    for wanted in "untrusted":
        if char != wanted:
            return False
        char = next(chars, "")
    while char in ("_", "-"):
        char = next(chars, "")
    for wanted in "data":
        if char != wanted:
            return False
        char = next(chars, "")
    return True


def _folded(text: str, start: int, end: int) -> Iterator[str]:
    """The characters of `text[start:end]` as a model may read them: folded to lowercase
    ASCII where a lookalike has one, dashes as `-`, without spaces and invisible ones."""
    for index in range(start, end):
        char = _fold(text[index])
        if char:
            yield char


@functools.lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    # Gaps: spaces, NUL, invisible format marks, lone surrogates (invalid text) and the
    # replacement character they become once the text is made valid.
    if char.isspace() or char in "\x00\ufffd" or unicodedata.category(char) in ("Cf", "Cs"):
        return ""
    if unicodedata.category(char) == "Pd" or char == "\u2212":
        return "-"
    folded = unicodedata.normalize("NFKC", char).lower()
    return folded if len(folded) == 1 else char


def _attribute(value: str) -> str:
    value = "".join(c for c in value.translate(_ATTRIBUTE_UNSAFE) if c.isprintable())
    return value if len(value) <= SOURCE_LIMIT else value[: SOURCE_LIMIT - 1] + "…"


def mark(text: str, tool: str, source: str) -> str:
    """`text` as a block of data from `source` (what `tool` returned), its id random."""
    block = secrets.token_hex(6)
    opening = _OPEN.format(id=block, tool=_attribute(tool), source=_attribute(source))
    return f"{opening}\n{escape(text)}\n{_CLOSE.format(id=block)}"


def unmarked(text: str) -> str:
    """`text` without its blocks' tags: what a person reads in the log (the marking is
    for the model; the page shows a result as its source gave it)."""
    return _TAG_LINE.sub("", text)


def sources(text: str) -> list[str]:
    """The sources of the blocks `text` holds, each once, in order."""
    found = [m.group("source") for m in _TAG.finditer(text) if m.group("open")]
    return list(dict.fromkeys(found))


def mark_summary(summarised: str, summary: str) -> str:
    """A summary of `summarised`: marked as data from its sources when that held marked
    text (what a page said stays what a page said once it is only a summary of it)."""
    found = sources(summarised)
    if not found:
        return summary
    return mark(summary, SUMMARY_TOOL, ", ".join(found))


@dataclass(frozen=True)
class _Tag:
    start: int
    end: int
    block: str
    opening: bool


def _tags(text: str) -> list[_Tag]:
    return [
        _Tag(m.start(), m.end(), m.group("open") or m.group("close"), bool(m.group("open")))
        for m in _TAG.finditer(text)
    ]


def _open_at(tags: list[_Tag], position: int) -> list[_Tag]:
    """The opening tags of the blocks open at `position` (blocks never nest: the content
    of one is escaped, so a tag inside it is no tag)."""
    opened: dict[str, _Tag] = {}
    for tag in tags:
        if tag.end > position:
            break
        if tag.opening:
            opened[tag.block] = tag
        else:
            opened.pop(tag.block, None)
    return list(opened.values())


def cut(text: str, head: int, tail: int, note: str) -> str:
    """`text`'s first `head` and last `tail` characters around `note`, every block kept
    whole in form: a tag the cut would split is kept or dropped whole, a block open where
    the cut begins is closed before the note, and one open where it ends is opened again
    after it. So what is left of a block's text stays inside its block, and the note
    (framework words) stands outside every block."""
    if head + tail >= len(text):
        return text
    tags = _tags(text)
    start, end = head, len(text) - tail
    for tag in tags:  # never split a tag: cut before it, or after it
        if tag.start < start < tag.end:
            start = tag.start
        if tag.start < end < tag.end:
            end = tag.end
    if start >= end:
        return text
    before = [_CLOSE.format(id=tag.block) for tag in _open_at(tags, start)]
    after = [text[tag.start : tag.end] for tag in _open_at(tags, end)]
    parts = [text[:start], *before, note, *after, text[end:]]
    return "\n".join(part for part in parts if part)
