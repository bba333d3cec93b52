"""The forms of a secret value the masking rule looks for, and one fast pattern for them all.

A program can print a secret other than as written: `base64`, `xxd -p`, a URL's
query, `rev`. Each value of at least `ENCODED_MIN_LENGTH` characters is also
looked for as
- base64 (standard and URL-safe alphabets) at each of its three alignments: a
  value inside a longer text starts at any byte, and base64 turns each of the
  three cases into other characters. Only the characters that depend on the
  value alone are looked for, so the one or two characters at each end that
  also carry a neighbouring byte (and any padding) stay;
- hex, lower and upper case;
- percent-encoded as URLs and forms do it (every reserved character escaped, or
  `/` kept, or JavaScript's `encodeURIComponent`, or spaces as `+`), with upper-
  or lower-case escapes;
- reversed.
A line break (LF or CRLF) may fall anywhere inside any form: programs wrap long output
(`base64` at 76 columns, `xxd -p` at 60, e-mail's base64 with CRLF).

Not caught (README.md, "Secrets"): a value cut into pieces that come out apart (in
two outputs, or with other text between them), and any other transformation (a
hash, a cipher, another encoding, two encodings in a row). Shorter values are
looked for only as written: their encodings are short enough to turn up in
ordinary text and data.

Masking runs on every update of a streamed reply and every save of a history, so
it must cost little where there is nothing to mask (`FormFinder`), and the pattern
is a trie (forms sharing a beginning share its test) rather than one alternative
per form: Python's engine tries the alternatives one after another at each
position of the text.
"""

from __future__ import annotations

import base64
import itertools
import os
import re
import urllib.parse
from collections.abc import Iterable

#: Values shorter than this are looked for only as written.
ENCODED_MIN_LENGTH = 8
#: Allowed before each character of a form but its first: where a program wrapped a line.
_WRAP = r"\n?"
#: The same in a text holding a CR (e-mail, Windows files and multipart bodies wrap base64
#: with CRLF): a pattern of its own, made only for such a text, as this one costs twice as
#: much to make and to run.
_WRAP_CRLF = r"(?:\r?\n)?"
#: What percent-encoders leave as it is besides letters, digits and `-._~` (Python's
#: `quote` with no safe characters and with its default `/`; JavaScript's
#: `encodeURIComponent`).
_URL_SAFE = ("", "/", "!'()*")
_ESCAPE = re.compile(r"%[0-9A-F]{2}")
_URL_SAFE_ALPHABET = str.maketrans("+/", "-_")


def forms(value: str) -> set[str]:
    """`value` and, when it is long enough, its encoded forms (module docstring)."""
    if len(value) < ENCODED_MIN_LENGTH:
        return {value}
    # surrogatepass: a lone surrogate in a value must not stop the masker being made.
    data = value.encode("utf-8", "surrogatepass")
    found = {value, value[::-1], data.hex(), data.hex().upper()}
    for core in _base64_cores(data):
        found |= {core, core.translate(_URL_SAFE_ALPHABET)}
    for safe in _URL_SAFE:
        for quoted in (urllib.parse.quote(data, safe=safe),
                       urllib.parse.quote_plus(data, safe=safe)):  # fmt: skip
            found |= {quoted, _ESCAPE.sub(lambda m: m.group(0).lower(), quoted)}
    return {form for form in found if len(form) >= ENCODED_MIN_LENGTH} | {value}


def _base64_cores(data: bytes) -> list[str]:
    """The characters of `data`'s base64 that do not depend on what comes before or after
    it, for `data` starting 0, 1 or 2 bytes past a multiple of three in the encoded text.

    Each character holds 6 bits: after `skip` bytes of other text, the value's bits
    start at bit 8*skip, so the first character that is the value's alone is the
    ceil(8*skip/6)-th, and the last one ends at bit 8*(skip + len) rounded down."""
    cores = []
    for skip in range(3):
        encoded = base64.b64encode(bytes(skip) + data).decode("ascii")
        first = -(-8 * skip // 6)
        end = 8 * (skip + len(data)) // 6
        cores.append(encoded[first:end])
    return cores


class FormFinder:
    """Replaces every occurrence of some words (a line break allowed inside each) in a text.

    Most texts hold none, and a search for each word alone (C's substring search, in the
    text with its line breaks taken out, where a wrapped word is whole again) says so
    several times faster than the pattern can on a long text. The pattern runs only where
    a word was found, and on short texts once it is made: making it takes tens of
    milliseconds, so it is made the first time a word is found, never for a masker that
    never finds one (and the one allowing CRLF breaks only for a text holding a CR)."""

    #: Characters from which a text is searched word by word before the pattern runs.
    SEARCH_FIRST = 256

    def __init__(self, words: Iterable[str]) -> None:
        self._words = sorted({word for word in words if word})
        # Searched for in the text without its line breaks: a word of several lines too.
        self._flat_words = tuple({_flat(word) for word in self._words})
        #: The pattern for texts without a CR (False) and with one (True), once made.
        self._patterns: dict[bool, re.Pattern[str]] = {}

    def __bool__(self) -> bool:
        return bool(self._words)

    def replace(self, text: str, by: str) -> str:
        if not self._words or not text:
            return text
        crlf = "\r" in text
        pattern = self._patterns.get(crlf)
        if pattern is None or len(text) >= self.SEARCH_FIRST:
            flat = text.replace("\n", "").replace("\r", "") if crlf else text.replace("\n", "")
            if not any(word in flat for word in self._flat_words):
                return text
            if pattern is None:  # two threads may both make it: the same pattern, no harm
                wrap = _WRAP_CRLF if crlf else _WRAP
                pattern = self._patterns.setdefault(crlf, _compiled(self._words, wrap))
        return pattern.sub(by, text)


def _flat(word: str) -> str:
    """`word` without its line breaks (LF, and the CR of a CRLF)."""
    return word.replace("\n", "").replace("\r", "")


def _compiled(words: list[str], wrap: str) -> re.Pattern[str]:
    """One pattern finding each of `words` (sorted, some; `wrap`, a line break, allowed
    inside), the longest where several start at one place."""
    try:
        return re.compile(_tree(words, True, wrap))
    except RecursionError:  # hundreds of values each the start of the next: no trie then
        longest_first = sorted(words, key=len, reverse=True)
        return re.compile("|".join(_chars(word, True, wrap) for word in longest_first))


def _tree(words: list[str], at_start: bool, wrap: str) -> str:
    """The regex of a trie of `words` (sorted): words sharing a beginning are one branch
    that tests it once. Recurses only where words part, never once per character."""
    ends_here = "" in words
    branches = []
    for _, grouped in itertools.groupby((w for w in words if w), key=lambda w: w[0]):
        group = list(grouped)
        shared = os.path.commonprefix(group)
        rest = [word[len(shared) :] for word in group]
        branches.append(_chars(shared, at_start, wrap) + _tree(rest, False, wrap))
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    # Optional and greedy where a shorter word ends: the longer one is taken when it is there.
    return f"(?:{body})?" if ends_here else body


def _chars(text: str, at_start: bool, wrap: str) -> str:
    escaped = [re.escape(char) for char in text]
    joined = wrap.join(escaped)
    return joined if at_start or not joined else wrap + joined
