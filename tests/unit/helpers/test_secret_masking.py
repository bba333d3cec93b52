"""The masking rule catches a secret value as written and in the encodings programs give it.

Each encoded form here is made by the standard library's own encoder (never by the code
under test), inside other text, so the masker must find it where it sits.
"""

from __future__ import annotations

import base64
import email.base64mime
import inspect
import logging
import random
import re
import sys
import urllib.parse

import pytest

from helpers import secrets
from helpers.secrets import (
    MaskingFilter,
    SecretMasker,
    chat_masker,
    expand_secrets,
    refresh_log_masking,
)
from helpers.settings import Settings
from store.backup.parts import secret_fields

SECRET = "k3y/5a4b?3c2d+1e0f>>&z"


@pytest.fixture(autouse=True)
def _fresh_finders():
    """Each test makes its maskers' finders itself, not one cached by an earlier test with
    the same secrets: what each test shows does not hang on the order they run in (and the
    mutation check, which notes the code each test reaches, sees each reach it)."""
    secrets._finder.cache_clear()


#: Longest piece of an encoding that may stay: base64 keeps up to a character or two of
#: the text around the value, and its padding, at each end.
KEPT = 7


def leaked(encoded: str, text: str) -> bool:
    """Does `text` hold a piece of `encoded` longer than what masking leaves at its ends?"""
    size = KEPT + 1
    return any(encoded[i : i + size] in text for i in range(len(encoded) - size + 1))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


ENCODINGS = {
    "base64": b64(SECRET.encode()),
    "base64, one byte before": b64(b"x" + SECRET.encode() + b"tail"),
    "base64, two bytes before": b64(b"xy" + SECRET.encode() + b"t"),
    "base64url": base64.urlsafe_b64encode(b"xy" + SECRET.encode()).decode(),
    "base64url, unpadded": base64.urlsafe_b64encode(SECRET.encode()).decode().rstrip("="),
    "hex": SECRET.encode().hex(),
    "HEX": SECRET.encode().hex().upper(),
    "percent": urllib.parse.quote(SECRET, safe=""),
    "percent, slash kept": urllib.parse.quote(SECRET),
    "percent, lower-case escapes": re.sub(
        "%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(SECRET, safe="")
    ),
    "form-encoded": urllib.parse.urlencode({"token": SECRET}),
    "reversed": SECRET[::-1],
}


@pytest.mark.parametrize("around", [0, 2000], ids=["short text", "long text"])
@pytest.mark.parametrize("name", list(ENCODINGS))
def test_an_encoded_secret_is_masked_inside_other_text(name, around):
    encoded = ENCODINGS[name]
    assert encoded != SECRET and leaked(encoded, encoded)  # a real encoding, checked below
    before = "x" * around + "the tool said: "
    masked = SecretMasker([SECRET]).mask(f"{before}{encoded} (done)")
    assert "***" in masked and not leaked(encoded, masked), masked
    assert masked.startswith(before) and masked.endswith(" (done)")


@pytest.mark.parametrize("around", [0, 2000], ids=["alone", "in a long text"])
def test_wrapped_base64_and_hex_are_masked_across_their_line_breaks(around):
    # `base64` wraps at 76 columns and `xxd -p` at 60: the value's encoding is cut by a
    # line break wherever it falls in a longer text.
    long = b"A" * 50 + SECRET.encode() + b"B" * 50
    wrapped = base64.encodebytes(long).decode()
    hexdump = long.hex()
    hexdump = "\n".join(hexdump[i : i + 60] for i in range(0, len(hexdump), 60))
    masker = SecretMasker([SECRET])
    words = "some words of a tool's output\n" * (around // 30)
    for text, one_line in ((wrapped, b64(long)), (hexdump, long.hex())):
        assert text.count("\n") >= 2
        masked = masker.mask(words + text + words)
        assert masked.startswith(words) and masked.endswith(words)
        secret_part = one_line[len(one_line) // 2 - 8 : len(one_line) // 2 + 8]
        assert secret_part not in masked.replace("\n", "") and "***" in masked


@pytest.mark.parametrize("around", [0, 2000], ids=["alone", "in a long text"])
def test_base64_wrapped_with_crlf_line_breaks_is_masked(around):
    """E-mail (MIME) wraps base64 with CRLF, as Windows files and multipart bodies do: a
    line break is a line break there too (it was found only with a bare LF)."""
    long = b"A" * 50 + SECRET.encode() + b"B" * 50
    wrapped = email.base64mime.body_encode(long, maxlinelen=40, eol="\r\n")
    assert wrapped.count("\r\n") >= 4
    words = "some words of a tool's output\r\n" * (around // 30)
    masked = SecretMasker([SECRET]).mask(words + wrapped + words)
    one_line = b64(long)
    secret_part = one_line[len(one_line) // 2 - 8 : len(one_line) // 2 + 8]
    assert "***" in masked and secret_part not in re.sub("[\r\n]", "", masked)
    assert masked.startswith(words) and masked.endswith(words)


def test_values_of_four_characters_and_more_are_masked_and_shorter_ones_are_not():
    """Shorter ones would blot out ordinary words (an empty value would match everywhere)."""
    masker = SecretMasker(["abcd", "xyz", ""])
    assert masker.mask("abcd xyz abcde") == "*** xyz ***e"
    assert not SecretMasker(["xyz", ""])


def test_short_values_are_masked_only_as_written():
    masker = SecretMasker(["pin1234"])  # shorter than 8: its encodings would blot out text
    assert masker.mask("pin1234 4321nip") == "*** 4321nip"
    assert masker.mask(b64(b"pin1234")) == b64(b"pin1234")


def test_other_encoded_data_is_left_alone():
    rng = random.Random(5)
    blob = base64.encodebytes(rng.randbytes(300_000)).decode()
    hexes = rng.randbytes(100_000).hex()
    values = [f"sk-{rng.randbytes(20).hex()}", "ghp_" + b64(rng.randbytes(27)), "hunter2hunter2"]
    masker = SecretMasker(values)
    assert masker.mask(blob) == blob and masker.mask(hexes) == hexes
    assert masker.mask("an ordinary line of text") == "an ordinary line of text"


def test_a_long_secret_and_many_alike_make_a_masker():
    long = "".join(random.Random(3).choice("abcdef0123456789") for _ in range(4998))
    alike = [f"token-{n:04d}-common-suffix" for n in range(300)]
    masker = SecretMasker([long, *alike])
    assert masker.mask(f"<{b64(long.encode())}>") == "<***>"  # 4998 bytes: no padding
    assert masker.mask("x token-0042-common-suffix y") == "x *** y"
    assert masker.mask("x token-0042-common-suffiX y") == "x token-0042-common-suffiX y"


@pytest.mark.parametrize("around", [0, 2000], ids=["short text", "long text"])
def test_a_secret_of_several_lines_is_masked(around):
    key = "\n".join(["-----BEGIN KEY-----", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
                     "BKcwggSjAgEAAoIBAQC7", "-----END KEY-----"])  # fmt: skip
    text = "x" * around + f"the file holds:\n{key}\n(end)"
    masked = SecretMasker([key]).mask(text)
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in masked and "***" in masked
    assert masked.endswith("the file holds:\n***\n(end)")


@pytest.mark.parametrize("around", [0, 2000], ids=["short text", "long text"])
def test_a_secret_that_begins_another_leaves_nothing_of_the_longer_one(around):
    # Each value is the start of the next, and other secrets sort between them: the
    # longest one at a place must be masked whole, not its beginning with the rest shown.
    values = ["tok-1234", "tok-1234-5678", "tok-1234-5678-abcd", "tok-2", "zzzz-other"]
    masker = SecretMasker(values)
    before = "x" * around + "said "
    for value in values:
        assert masker.mask(f"{before}{value} ok") == f"{before}*** ok", value
    for value in values[:3]:  # the encoded forms of each, one the start of the next too
        hexed = value.encode().hex()
        assert masker.mask(f"{before}{hexed} ok") == f"{before}*** ok", hexed


def test_values_each_the_start_of_the_next_by_hundreds_are_masked_whole():
    """Past the depth the trie's recursion takes, the pattern is one alternative per form,
    the longest first. The interpreter's stack is made shallow for the moment rather than
    a thousand values made: the masker's own code runs as it is."""
    values = [f"secret-{'x' * n}" for n in range(1, 60)]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 40)  # the trie of 59 levels needs more
    try:
        masker = SecretMasker(values)
        masked = masker.mask(f"a {values[-1]} b {values[3]} c {values[50][::-1]} d")
    finally:
        sys.setrecursionlimit(limit)
    assert masked == "a *** b *** c *** d"


@pytest.mark.parametrize("field", secret_fields())
def test_every_setting_the_form_marks_secret_is_masked(field):
    value = {"GITHUB_TOKEN": "ghp-abcd1234"} if field == "secrets" else "ghp-abcd1234"
    masker = chat_masker(Settings(**{field: value}))
    assert masker.mask("the value is ghp-abcd1234.") == "the value is ***."


def test_a_placeholder_becomes_its_secret_and_an_unknown_name_is_listed_and_kept():
    """What a tool marked for secrets gets: each `§§secret(NAME)` (spaces allowed inside the
    brackets) replaced by its value, in nested data too; a name with no secret stays as
    written and is listed, so the tool can say which."""
    unknown: list[str] = []
    given = {"command": "curl -H 'Key: §§secret(API_TOKEN)' §§secret( HOST )/x",
             "input": ["§§secret(MISSING)", 3, "no placeholder"]}  # fmt: skip
    expanded = expand_secrets(given, {"API_TOKEN": "t0ken-value", "HOST": "example.org"}, unknown)
    assert expanded == {"command": "curl -H 'Key: t0ken-value' example.org/x",
                        "input": ["§§secret(MISSING)", 3, "no placeholder"]}  # fmt: skip
    assert unknown == ["MISSING"]


def test_every_percent_encoders_form_is_masked():
    """Python's quote with no safe character and with its `/`, JavaScript's
    encodeURIComponent (`!'()*` left), spaces as `+`; upper- or lower-case escapes."""
    value = "a/b!c'd(e)*f g&h"
    masker = SecretMasker([value])
    for safe in ("", "/", "!'()*"):
        for encoded in (urllib.parse.quote(value, safe=safe),
                        urllib.parse.quote_plus(value, safe=safe)):  # fmt: skip
            lower = re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)
            assert masker.mask(f"<{encoded}>") == "<***>", encoded
            assert masker.mask(f"<{lower}>") == "<***>", lower


def test_a_value_with_a_lone_surrogate_still_makes_a_masker():
    value = "pass\ud800word-123"  # text decoded with surrogateescape can hold one
    assert SecretMasker([value]).mask(f"[{value}]") == "[***]"


def test_a_form_of_eight_characters_is_looked_for():
    assert SecretMasker(["abcdefgh"]).mask("hgfedcba") == "***"  # reversed, 8 long


def test_a_line_break_where_two_secrets_part_is_allowed_too():
    """Values sharing a beginning share it in the pattern: a wrapped line may break right
    where they part, as anywhere else."""
    masker = SecretMasker(["tok-1234-abcd", "tok-5678-efgh"])
    assert masker.mask("tok-\n1234-abcd and tok-5678-\nefgh") == "*** and ***"


def test_nested_data_is_masked_string_by_string():
    masker = SecretMasker(["abcd1234"])
    data = {"args": ["run abcd1234", {"key": "abcd1234"}], "count": 5}
    assert masker.mask_value(data) == {"args": ["run ***", {"key": "***"}], "count": 5}
    assert SecretMasker([]).mask_value(data) is data  # nothing to mask: handed back as it is


def test_the_server_log_masks_a_secret_saved_after_it_started(monkeypatch):
    """The filter on the log's handlers masks the message with its arguments put in; a key
    saved later is masked from then on (refresh_log_masking)."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    handler = Keep()
    handler.addFilter(MaskingFilter(SecretMasker(["old-key-1"])))
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [handler])
    log = logging.getLogger("tests.masking")
    log.warning("calling with %s and %s", "old-key-1", "new-key-2")
    refresh_log_masking(["new-key-2"])
    log.warning("calling with %s and %s", "old-key-1", "new-key-2")
    assert records == ["calling with *** and new-key-2", "calling with old-key-1 and ***"]


def test_secrets_from_outside_the_settings_stay_masked_after_a_save(monkeypatch):
    """The cluster's Redis URL and password are no setting: a settings save (which makes the
    log's masker anew from the settings) must not drop them (it did)."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    handler = Keep()
    handler.addFilter(MaskingFilter(SecretMasker(["old-key-1"]), lasting=["redis-pw-9"]))
    monkeypatch.setattr(logging.getLogger(), "handlers", [handler])
    log = logging.getLogger("tests.masking")
    refresh_log_masking(["new-key-2"])  # a key saved in Settings
    log.warning("redis://:%s@cache and %s", "redis-pw-9", "new-key-2")
    assert records == ["redis://:***@cache and ***"]
