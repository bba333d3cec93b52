"""Tests for core/reply/extract_tools.py: reading the model's JSON reply tolerantly."""

from __future__ import annotations

import json
import random
import sys

import pytest

from core.reply.extract_tools import (
    AgentReply,
    JsonObjectScanner,
    PartialReply,
    ReplyFormatError,
    extract_partial,
    parse_reply,
    split_tool_name,
)
from helpers.errors import RepairableException

# A realistic reply: fenced, with prose around it, escapes, braces and quotes in
# strings, raw and escaped non-ASCII (an astral character as a surrogate pair).
REALISTIC = (
    "Sure, here is my answer:\n```json\n"
    "{\n"
    '  "thoughts": [\n'
    '    "The user wants a \\"hello world\\" in C: int main() { return 0; }",\n'
    '    "Path is C:\\\\tmp\\\\x; tabs\\tand\\nnewlines",\n'
    '    "Unicode: caf\\u00e9, na\\u00efve, \\ud83d\\ude00 and raw \u00fc \u2713"\n'
    "  ],\n"
    '  "headline": "Writing {hello} \\"world\\" caf\\u00e9 \\ud83c\\udf89",\n'
    '  "tool_name": "response",\n'
    '  "tool_args": {\n'
    '    "meta": {"text": "not this one"},\n'
    '    "text": "Here it is:\\n```c\\n#include <stdio.h>\\n'
    'int main(void) { printf(\\"Hello, world!\\\\n\\"); return 0; }\\n```\\n'
    'Caf\\u00e9 \\ud83d\\ude80 done \u2014 \u00e9t\u00e9."\n'
    "  }\n"
    "}\n"
    "```\n"
    "Let me know if you need more!"
)

VALID = {
    "thoughts": ["plan it"],
    "headline": "Answering",
    "tool_name": "response",
    "tool_args": {"text": "Hi there"},
}
VALID_TEXT = json.dumps(VALID)


# --------------------------------------------------------------------------- parse_reply


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(VALID_TEXT, id="plain"),
        pytest.param(f"Sure! Here you go:\n{VALID_TEXT}\nHope that helps.", id="prose-around"),
        pytest.param(f"```json\n{VALID_TEXT}\n```", id="json-fence"),
        pytest.param(f"```\n{VALID_TEXT}\n```", id="bare-fence"),
        pytest.param(f"I'll answer now.\n```json\n{VALID_TEXT}\n```\nDone.", id="fence+prose"),
        pytest.param(
            '{"thoughts": ["plan it",], "headline": "Answering", "tool_name": "response",'
            ' "tool_args": {"text": "Hi there",},}',
            id="trailing-commas",
        ),
        pytest.param(
            "{'thoughts': ['plan it'], 'headline': 'Answering', 'tool_name': 'response',"
            " 'tool_args': {'text': 'Hi there'}}",
            id="single-quotes",
        ),
        pytest.param(
            '{thoughts: ["plan it"], headline: "Answering", tool_name: "response",'
            ' tool_args: {text: "Hi there"}}',
            id="unquoted-keys",
        ),
        pytest.param(VALID_TEXT[:-2], id="truncated-missing-braces"),
        pytest.param(VALID_TEXT[:-3], id="truncated-missing-quote-and-braces"),
        pytest.param(
            VALID_TEXT + '\n{"tool_name": "other", "tool_args": {"text": "no"}}',
            id="two-objects",
        ),
        pytest.param(
            VALID_TEXT.replace('"Answering",', '"Answering",,') + '{"tool_name": "other"}',
            id="two-objects-first-broken",
        ),
        pytest.param(
            json.dumps({**VALID, "thoughts": "plan it"}),
            id="thoughts-as-string",
        ),
        pytest.param(
            '{"thought": "plan it", "headline": "Answering", "tool": "response",'
            ' "args": {"text": "Hi there"}}',
            id="key-variants",
        ),
        pytest.param(
            '{"thoughts": ["plan it"], "headline": "Answering", "tool_name": "response",\n'
            '"tool_args": {"text": "Hi there"}}',
            id="newline-between-keys",
        ),
    ],
)
def test_parse_reply_tolerates(text: str) -> None:
    reply = parse_reply(text)
    assert reply is not None
    assert reply == AgentReply(
        thoughts=["plan it"],
        headline="Answering",
        tool_name="response",
        tool_args={"text": "Hi there"},
        raw=reply.raw,
    )


def test_parse_reply_truncated_inside_string_keeps_what_was_written() -> None:
    reply = parse_reply('{"thoughts": ["a"], "tool_name": "response", "tool_args": {"text": "Hel')
    assert reply is not None
    assert reply.tool_args == {"text": "Hel"}


@pytest.mark.parametrize(
    ("args_key", "args_value"),
    [("arguments", {"x": 1}), ("tool_input", {"x": 1}), ("args", {"x": 1})],
)
def test_parse_reply_args_key_variants(args_key: str, args_value: dict) -> None:
    reply = parse_reply(json.dumps({"tool_name": "t", args_key: args_value}))
    assert reply is not None
    assert reply.tool_args == args_value


def test_parse_reply_canonical_key_wins_over_variant() -> None:
    reply = parse_reply(json.dumps({"tool": "b", "tool_name": "a", "tool_args": {"k": 1}}))
    assert reply is not None
    assert reply.tool_name == "a"


@pytest.mark.parametrize(
    ("name", "tool", "method"),
    [
        ("response", "response", None),
        ("memory:load", "memory", "load"),
        (" memory : load ", "memory", "load"),
        ("memory:", "memory", None),
    ],
)
def test_tool_name_method(name: str, tool: str, method: str | None) -> None:
    assert split_tool_name(name) == (tool, method)
    reply = parse_reply(json.dumps({"tool_name": name, "tool_args": {}}))
    assert reply is not None
    assert (reply.tool_name, reply.tool_method) == (tool, method)


@pytest.mark.parametrize(
    "text",
    [
        '{"tool_name": "response"}',
        '{"tool_name": "response", "tool_args": null}',
        '{"tool_name": "response", "tool_args": {}}',
    ],
)
def test_parse_reply_empty_or_absent_args(text: str) -> None:
    reply = parse_reply(text)
    assert reply is not None
    assert reply.tool_args == {}
    assert reply.thoughts == []
    assert reply.headline == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"tool_name": "t", "tool_args": [1, 2]}', "tool_args must be a JSON object, got list"),
        ('{"tool_name": "t", "tool_args": "x=1"}', "tool_args must be a JSON object, got str"),
        ('{"tool_name": "t", "tool_args": 3}', "tool_args must be a JSON object, got int"),
        ('{"thoughts": ["x"], "tool_args": {}}', "tool_name is missing"),
        ('{"tool_name": "", "tool_args": {}}', "tool_name is missing"),
        ('{"tool_name": null}', "tool_name is missing"),
        ('{"tool_name": ":load"}', "tool_name is missing"),
        ("{}", "tool_name is missing"),
        ('{"tool_name": 5}', "tool_name must be a string, got int"),
    ],
)
def test_parse_reply_format_errors(text: str, message: str) -> None:
    with pytest.raises(ReplyFormatError, match=message) as caught:
        parse_reply(text)
    # The loop feeds these back to the model like any other repairable mistake.
    assert isinstance(caught.value, RepairableException)
    assert isinstance(caught.value, ValueError)


def test_parse_reply_missing_name_lists_keys_present() -> None:
    with pytest.raises(ReplyFormatError, match=r"keys present: thoughts, headline"):
        parse_reply('{"thoughts": [], "headline": "h"}')


def test_parse_reply_error_mentions_truncation() -> None:
    with pytest.raises(ReplyFormatError, match="ended before the JSON object was closed"):
        parse_reply('{"tool_name": "response", "tool_args": ')


@pytest.mark.parametrize(
    "text",
    ["", "   ", "Hello!", "I'm not sure what to do.", "[1, 2]", '["a", "b"]', "```\n```"],
)
def test_parse_reply_without_object_is_none(text: str) -> None:
    assert parse_reply(text) is None


def test_parse_reply_takes_an_object_inside_a_list() -> None:
    reply = parse_reply('[{"tool_name": "response", "tool_args": {"text": "hi"}}, 2]')
    assert reply is not None
    assert reply.tool_args == {"text": "hi"}


def test_parse_reply_braces_and_quotes_inside_strings() -> None:
    args = {"code": 'if (a) { b("}"); } else {{ c(); }', "note": "she said \"hi\" {'x'}"}
    text = json.dumps({"thoughts": ["use { and }"], "tool_name": "code", "tool_args": args})
    reply = parse_reply(f"Prose.\n{text}\nMore prose {{ with braces }}")
    assert reply is not None
    assert reply.tool_args == args
    assert reply.thoughts == ["use { and }"]


def test_parse_reply_single_quoted_with_braces_and_escaped_apostrophe() -> None:
    text = "{'thoughts': ['it\\'s {fine}'], 'tool_name': 'response', 'tool_args': {'text': 'a}'}}"
    reply = parse_reply(text + " {'tool_name': 'other'}")
    assert reply is not None
    assert reply.thoughts == ["it's {fine}"]
    assert reply.tool_args == {"text": "a}"}


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_parse_reply_unicode(ensure_ascii: bool) -> None:
    value = "caf\u00e9 \u2713 \U0001f600 \u4e2d\u6587"
    text = json.dumps(
        {"headline": value, "tool_name": "t", "tool_args": {"text": value}},
        ensure_ascii=ensure_ascii,
    )
    reply = parse_reply(text)
    assert reply is not None
    assert reply.headline == value
    assert reply.tool_args["text"] == value


def test_parse_reply_escapes_json_refuses() -> None:
    reply = parse_reply('{"tool_name": "response", "tool_args": {"text": "I\\\'m \\x"}}')
    assert reply is not None
    assert reply.tool_args["text"] == "I'm \\x"


def test_parse_reply_raw_newline_in_string() -> None:
    reply = parse_reply('{"tool_name": "response", "tool_args": {"text": "line 1\nline 2"}}')
    assert reply is not None
    assert reply.tool_args["text"] == "line 1\nline 2"


def test_parse_reply_normalises_thoughts_and_keeps_raw() -> None:
    obj = {"thoughts": ["a", 2, None, {"k": "v"}], "headline": 7, "tool_name": "t"}
    reply = parse_reply(json.dumps(obj))
    assert reply is not None
    assert reply.thoughts == ["a", "2", '{"k": "v"}']
    assert reply.headline == "7"
    assert reply.raw == obj


def test_parse_reply_realistic() -> None:
    reply = parse_reply(REALISTIC)
    assert reply is not None
    assert reply.tool_name == "response"
    assert reply.thoughts[2].startswith("Unicode: caf\u00e9")
    assert reply.tool_args["text"].startswith("Here it is:\n```c\n#include")
    assert reply.tool_args["meta"] == {"text": "not this one"}


# --------------------------------------------------------------------------- scanner


def _end_of_first_object(text: str) -> int:
    start = text.index("{")
    return json.JSONDecoder(strict=False).raw_decode(text, start)[1]


SCANNER_TEXTS = [
    pytest.param(VALID_TEXT, id="plain"),
    pytest.param(REALISTIC, id="realistic"),
    pytest.param('{"a": "}}}{{{", "b": {"c": ["}"]}}', id="braces-in-strings"),
    pytest.param('{"a": "\\"}\\\\", "b": "\\\\\\"}"}', id="escaped-quotes-and-backslashes"),
    pytest.param('prose } ] with "quotes" and it\'s {"a": 1}', id="junk-before"),
    pytest.param(f"```json\n{VALID_TEXT}\n```", id="fenced"),
    pytest.param(VALID_TEXT + ' {"second": "object"}', id="two-objects"),
    pytest.param(VALID_TEXT + VALID_TEXT, id="two-objects-adjacent"),
    pytest.param('{"s": "\\u00e9\U0001f600 caf\u00e9 {"}', id="unicode"),
]


@pytest.mark.parametrize("text", SCANNER_TEXTS)
@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 64, 10_000])
def test_scanner_chunking_does_not_change_the_end(text: str, chunk_size: int) -> None:
    scanner = JsonObjectScanner()
    ends = [scanner.feed(text[i : i + chunk_size]) for i in range(0, len(text), chunk_size)]
    expected = _end_of_first_object(text)
    assert ends[-1] == expected == scanner.end
    assert scanner.start == text.index("{")
    assert scanner.text == text
    # None until the chunk holding the closing brace, then the same index for good.
    first_hit = next(i for i, end in enumerate(ends) if end is not None)
    assert (first_hit + 1) * chunk_size >= expected > first_hit * chunk_size
    assert all(end == expected for end in ends[first_hit:])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{'a': '}'} {'b': 2}", len("{'a': '}'}")),
        ("{'a': \"it's\"}", len("{'a': \"it's\"}")),
        ("{'a': 'x\\'}'}", len("{'a': 'x\\'}'}")),
    ],
)
def test_scanner_single_quoted_strings(text: str, expected: int) -> None:
    whole = JsonObjectScanner()
    assert whole.feed(text) == expected
    by_char = JsonObjectScanner()
    assert [by_char.feed(char) for char in text][-1] == expected


@pytest.mark.parametrize(
    "chunks",
    [
        ['{"a": "x\\', '"', '}"}'],  # escape split: \" is an escaped quote
        ['{"a": "x\\\\', '"}'],  # \\ is complete, so the quote closes the string
        ['{"a": "x\\', "", '"', '}"}'],  # an empty chunk keeps the pending escape
        ['{"a": "x\\\\\\', '"}', '"}'],  # three backslashes: the quote is escaped
    ],
)
def test_scanner_escape_across_chunks(chunks: list[str]) -> None:
    scanner = JsonObjectScanner()
    for chunk in chunks:
        scanner.feed(chunk)
    text = "".join(chunks)
    assert scanner.end == _end_of_first_object(text) == len(text)


@pytest.mark.parametrize("text", ["", "no json here", '{"a": {"b": 1}', '{"a": "}', "```json\n{"])
def test_scanner_incomplete_is_none(text: str) -> None:
    scanner = JsonObjectScanner()
    assert scanner.feed(text) is None
    assert scanner.end is None
    assert scanner.text == text


def test_scanner_keeps_text_after_the_end() -> None:
    scanner = JsonObjectScanner()
    assert scanner.feed('{"a": 1} and') == 8
    assert scanner.feed(" more") == 8
    assert scanner.text == '{"a": 1} and more'


# --------------------------------------------------------------------------- extract_partial


PARTIAL_REPLIES = [
    pytest.param(REALISTIC, id="realistic"),
    pytest.param(VALID_TEXT, id="plain"),
    pytest.param(json.dumps({**VALID, "thoughts": "one \\ string"}), id="thoughts-as-string"),
    pytest.param(
        '{"headline": "a\\\\u00e9 \\\\\\u00e9 \\\\\\\\", "tool_name": "memory:load",'
        ' "tool_args": {"text": "\\\\\\"\\ud83d\\ude00\\\\\\ud83d\\ude00\\\\"}}',
        id="backslash-runs",
    ),
    pytest.param(
        "{'thoughts': ['it\\'s'], 'headline': 'He said \"hi\"', 'tool_name': 'response',"
        " 'tool_args': {'text': 'a\\'b\\nc'}}",
        id="single-quotes",
    ),
    pytest.param(
        '{"thoughts": ["I\\\'m sure"], "headline": "it\\\'s \\x \\uZZ \\\\q",'
        ' "tool_name": "response", "tool_args": {"text": "Don\\\'t \\q \\u00e9 {\\\\\\\'}"}}',
        id="escapes-json-refuses",
    ),
]


def _is_prefix(partial: str | None, final: str) -> bool:
    return partial is None or final.startswith(partial)


@pytest.mark.parametrize("text", PARTIAL_REPLIES)
def test_extract_partial_every_prefix_is_a_prefix_of_the_final(text: str) -> None:
    final = parse_reply(text)
    assert final is not None
    final_name = final.raw.get("tool_name", "")
    final_text = final.tool_args["text"]
    seen_text = False
    for cut in range(len(text) + 1):
        partial = extract_partial(text[:cut])
        assert _is_prefix(partial.headline, final.headline), cut
        assert _is_prefix(partial.tool_name, final_name), cut
        assert _is_prefix(partial.text, final_text), cut
        assert len(partial.thoughts) <= len(final.thoughts), cut
        if partial.thoughts:
            *done, current = partial.thoughts
            assert done == final.thoughts[: len(done)], cut
            assert final.thoughts[len(done)].startswith(current), cut
        # Once shown, the text never disappears.
        assert not (seen_text and partial.text is None), cut
        seen_text = seen_text or partial.text is not None
    complete = extract_partial(text)
    assert complete == PartialReply(
        headline=final.headline,
        thoughts=final.thoughts,
        tool_name=final_name,
        text=final_text,
    )


def test_extract_partial_grows_while_streaming() -> None:
    start = REALISTIC.index('"text": "Here')
    lengths = [
        len(extract_partial(REALISTIC[:cut]).text or "") for cut in range(start, len(REALISTIC))
    ]
    assert lengths == sorted(lengths)
    assert lengths[-1] > 50


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", PartialReply()),
        ("Thinking about it...", PartialReply()),
        ("```json\n{", PartialReply()),
        ('{"headline"', PartialReply()),
        ('{"headline": ', PartialReply()),
        ('{"headline": "', PartialReply(headline="")),
        ('{"headline": "Sea', PartialReply(headline="Sea")),
        ('{"thoughts": ["one", "tw', PartialReply(thoughts=["one", "tw"])),
        ('{"thoughts": "sing', PartialReply(thoughts=["sing"])),
        ('{"thought": ["a"], "tool": "resp', PartialReply(thoughts=["a"], tool_name="resp")),
        (
            '{"tool_name": "response", "tool_args": {"text": "Hi',
            PartialReply(tool_name="response", text="Hi"),
        ),
        ('{"args": {"text": "Hi"', PartialReply(text="Hi")),
        ('{"tool_args": {"message": "no", "text', PartialReply()),
        ('{"tool_args": {"nested": {"text": "no"}, "text": "yes', PartialReply(text="yes")),
        ('{"tool_args": {"text": ["no"]}, "headline": "h"', PartialReply(headline="h")),
        ('{"text": "top level is not tool_args"}', PartialReply()),
        (
            '{"thoughts": ["\\"headline\\": \\"fake\\""], "headline": "real"',
            PartialReply(thoughts=['"headline": "fake"'], headline="real"),
        ),
        ('{"headline": "a"} {"headline": "second"}', PartialReply(headline="a")),
        (
            "{headline: 'unquoted key', tool_name: 'x'}",
            PartialReply(headline="unquoted key", tool_name="x"),
        ),
    ],
)
def test_extract_partial_cases(text: str, expected: PartialReply) -> None:
    assert extract_partial(text) == expected


@pytest.mark.parametrize(
    ("tail", "headline"),
    [
        ("a\\", "a"),
        ("a\\n", "a\n"),
        ("a\\u", "a"),
        ("a\\u00", "a"),
        ("a\\u00e9", "a\u00e9"),
        ("a\\ud83d", "a"),
        ("a\\ud83d\\", "a"),
        ("a\\ud83d\\ude0", "a"),
        ("a\\ud83d\\ude00", "a\U0001f600"),
        ("a\\\\", "a\\"),
        ("a\\\\u00", "a\\u00"),
        ("a\\\\\\u00", "a\\"),
        ("a\\'b", "a'b"),
        ("a\\\\\\'b\\n", "a\\'b\n"),
        ("a\\xb", "a\\xb"),
        ("a\\uZZ", "a\\uZZ"),
        ("a\\u00e9\\'\\", "a\u00e9'"),
        ("line\nbreak", "line\nbreak"),
    ],
)
def test_extract_partial_unfinished_escapes(tail: str, headline: str) -> None:
    assert extract_partial('{"headline": "' + tail).headline == headline


@pytest.mark.parametrize(
    "text",
    [
        "{]]]}}}",
        '{"a": ]',
        "{:::,,,",
        '{"tool_args": {"text": }',
        '{"thoughts": [[[["x"',
        "{'''",
        '{"headline": "\\uZZZZ"}',
        "{" + "[" * 500,
    ],
)
def test_extract_partial_never_raises_on_garbage(text: str) -> None:
    assert isinstance(extract_partial(text), PartialReply)


def test_extract_partial_is_cheap_on_a_long_reply() -> None:
    """Its Python work does not grow with the reply (the scanning runs in C): counted in
    Python lines run (a timed bound failed on a loaded machine), for a reply and one twice
    as long. A Python loop per character, or per piece of it, would run more for the longer."""
    head = '{"thoughts": ["x"], "headline": "h", "tool_name": "response", "tool_args": {"text": "'
    body = 'Some words of a long answer, with \\"quotes\\" and\\nnewlines. '

    def lines_run(repeats: int) -> int:
        count = 0

        def trace(frame, event, arg):  # noqa: ANN001, ANN202 - sys.settrace's signature
            nonlocal count
            count += event == "line"
            return trace

        sys.settrace(trace)
        try:
            partial = extract_partial(head + body * repeats)
        finally:
            sys.settrace(None)
        assert partial.text is not None and len(partial.text) > 50 * repeats
        return count

    short, long = lines_run(400), lines_run(800)
    assert long < 1.5 * short + 50, (short, long)


def test_mangled_replies_never_raise_anything_unexpected() -> None:
    # Seeded fuzz: random edits and cuts of real replies, with the characters that
    # matter most to a JSON reader.
    rng = random.Random(20240601)
    bases = [param.values[0] for param in PARTIAL_REPLIES]
    for _ in range(500):
        chars = list(rng.choice(bases))
        for _ in range(rng.randint(1, 5)):
            at = rng.randrange(len(chars) + 1)
            if rng.random() < 0.5:
                chars.insert(at, rng.choice("{}[]\"'\\:, u0d8\n"))
            else:
                del chars[at : at + rng.randint(1, 3)]
        text = "".join(chars)
        assert isinstance(extract_partial(text), PartialReply)
        try:
            parse_reply(text)
        except ReplyFormatError:
            pass
        whole, by_char = JsonObjectScanner(), JsonObjectScanner()
        assert [by_char.feed(char) for char in text][-1:] == ([whole.feed(text)] if text else [])


def test_braces_in_prose_before_the_reply_are_passed_over():
    text = 'I will fill in {name} and {"x": 1} first: {"tool_name": "response", "tool_args": {}}'
    parsed = parse_reply(text)
    assert parsed is not None and parsed.tool_name == "response"


def test_objects_without_a_tool_name_still_report_the_first():
    with pytest.raises(ReplyFormatError, match="tool_name is missing"):
        parse_reply('{"a": 1} and {"b": 2}')
