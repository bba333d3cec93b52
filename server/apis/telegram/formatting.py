"""An agent's answer (markdown) as Telegram messages: HTML that Telegram's parse mode
reads (code blocks as <pre>, inline code, bold), each message at most `LIMIT` long.

Telegram refuses a message past 4,096 characters, counted after its markup is read, in
UTF-16 units: each part is measured with its tags, in those units, so it always fits. A
part is cut at a line's end where it can be; a code block too long for one message is
continued in the next, in a block of its own; a line too long for any is cut where it
must be. `plain_parts` gives the same text unformatted, for when Telegram refuses the HTML.
"""

from __future__ import annotations

import html
import re

from helpers.valid_text import valid_text

#: Telegram's longest message text.
LIMIT = 4096

_FENCE = re.compile(r"^```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")


#: The longest code block language kept (a fence's first line may be anything).
LANGUAGE_LIMIT = 32


def size(text: str) -> int:
    """Telegram's length of `text`: UTF-16 code units (an emoji counts two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def messages(markdown: str, limit: int = LIMIT) -> list[str]:
    """The answer as HTML messages, in order, each at most `limit` long (a lone surrogate, a
    cut emoji from a provider, as U+FFFD: Telegram takes no text that is not Unicode)."""
    markdown = valid_text(markdown)
    pieces: list[str] = []
    at = 0
    for fence in _FENCE.finditer(markdown):
        pieces += _text_pieces(markdown[at : fence.start()], limit)
        pieces += _code_pieces(fence.group(2), fence.group(1), limit)
        at = fence.end()
    pieces += _text_pieces(markdown[at:], limit)
    return _packed(pieces, limit) or [""]


def plain_parts(text: str, limit: int = LIMIT) -> list[str]:
    """`text` as it is, in parts of at most `limit`, cut at line ends where possible."""
    text = valid_text(text)
    lines = [piece for line in text.split("\n") for piece in _cut(line, limit)]
    return _packed(lines, limit) or [""]


def _text_pieces(text: str, limit: int) -> list[str]:
    text = text.strip("\n")
    if not text.strip():
        return []
    pieces = []
    for line in text.split("\n"):
        shown = _inline(line)
        if size(shown) <= limit:
            pieces.append(shown)
        else:  # a line too long for a message: cut, its marks shown as they are
            pieces += [html.escape(part, quote=False) for part in _cut(line, limit // 6)]
    return pieces


def _inline(line: str) -> str:
    """One line of markdown text as HTML: escaped, with inline code and bold."""
    parts = []
    at = 0
    for code in _INLINE_CODE.finditer(line):
        parts.append(_bold(html.escape(line[at : code.start()], quote=False)))
        parts.append(f"<code>{html.escape(code.group(1), quote=False)}</code>")
        at = code.end()
    parts.append(_bold(html.escape(line[at:], quote=False)))
    return "".join(parts)


def _bold(escaped: str) -> str:
    return _BOLD.sub(r"<b>\1</b>", escaped)


def _code_pieces(body: str, language: str, limit: int) -> list[str]:
    """A code block as one piece, or as several blocks when it does not fit one message."""
    # A fence's "language" may be as long as a message (text copied from a page): cut.
    language = language[:LANGUAGE_LIMIT]
    opening = f'<pre><code class="language-{html.escape(language)}">' if language else "<pre><code>"
    closing = "</code></pre>"
    room = limit - size(opening) - size(closing)
    blocks: list[str] = []
    current: list[str] = []
    for line in body.rstrip("\n").split("\n"):
        for part in _cut(line, room // 6):  # escaping makes a character up to 5 long
            escaped = html.escape(part, quote=False)
            if current and size("\n".join([*current, escaped])) > room:
                blocks.append("\n".join(current))
                current = []
            current.append(escaped)
    blocks.append("\n".join(current))
    return [opening + block + closing for block in blocks]


def _cut(line: str, width: int) -> list[str]:
    """`line` in parts of at most `width` UTF-16 units, after a space where there is one in
    the part's second half (a character is never split)."""
    parts: list[str] = []
    width = max(width, 1)  # no room is one character a part, never an endless loop
    while size(line) > width:
        end = 0
        while end < len(line) and size(line[: end + 1]) <= width:
            end += 1
        space = line.rfind(" ", end // 2, end)
        end = space + 1 if space > 0 else max(end, 1)
        parts.append(line[:end])
        line = line[end:]
    return [*parts, line]


def _packed(pieces: list[str], limit: int) -> list[str]:
    """Pieces joined by line ends into as few messages as fit `limit`."""
    out: list[str] = []
    current = ""
    for piece in pieces:
        joined = f"{current}\n{piece}" if current else piece
        if current and size(joined) > limit:
            out.append(current)
            current = piece
        else:
            current = joined
    if current:
        out.append(current)
    return out
