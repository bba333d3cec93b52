"""Prompt files: lookup through ordered folders, the strict template syntax, companions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.errors import PromptError, UserError
from profiles.prompts import PromptCache, PromptLoader


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def bump_mtime(path: Path, seconds: int = 10) -> None:
    """Move mtime explicitly so the test never depends on the file system's clock."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "prompts"


@pytest.fixture
def loader(base: Path) -> PromptLoader:
    base.mkdir()
    return PromptLoader([base])


def render(loader: PromptLoader, base: Path, text: str, **variables: object) -> str:
    write(base, "t.md", text)
    return loader.render("t.md", **variables)


# --- variables -----------------------------------------------------------------


def test_variables_are_substituted_with_str(loader: PromptLoader, base: Path) -> None:
    out = render(loader, base, "Hi {{name}}, you are agent {{number}}.\n", name="Ann", number=2)
    assert out == "Hi Ann, you are agent 2."


def test_spaces_inside_braces(loader: PromptLoader, base: Path) -> None:
    assert render(loader, base, "[{{ name }}|{{name  }}|{{\tname}}]", name="x") == "[x|x|x]"


def test_variable_named_like_a_keyword_prefix(loader: PromptLoader, base: Path) -> None:
    text = "{{elsewhere}} {{iffy}} {{endif_count}} {{included}}"
    out = render(loader, base, text, elsewhere=1, iffy=2, endif_count=3, included=4)
    assert out == "1 2 3 4"


def test_unknown_variable_names_file_and_variable(loader: PromptLoader, base: Path) -> None:
    write(base, "agent.system.main.md", "line one\nTools: {{tools}}\n")
    with pytest.raises(PromptError) as info:
        loader.render("agent.system.main.md", agent_name="A0")
    message = str(info.value)
    assert message.startswith("prompt 'agent.system.main.md': unknown variable 'tools'")
    assert "line 2" in message
    assert "agent_name" in message  # what is available, to help fix it


def test_prompt_error_is_a_user_error(loader: PromptLoader, base: Path) -> None:
    with pytest.raises(UserError):
        render(loader, base, "{{missing}}")


def test_render_strips_result_but_keeps_inner_whitespace(loader: PromptLoader, base: Path) -> None:
    assert render(loader, base, "\n\n  a\n\n  b  \n\n") == "a\n\n  b"


def test_name_can_be_a_variable(loader: PromptLoader, base: Path) -> None:
    # `name` is positional-only, so it stays free as a template variable.
    assert render(loader, base, "{{name}}", name="n") == "n"


# --- literal braces ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"tool_name": "response", "tool_args": {"text": "hi"}}',
        '{"a": {"b": {"c": 1}}}',
        '{{"a":1}}',
        '{{ "a": 1 }}',
        "{{a: 1}}",
        "{{ name: value }}",
        "{{}}",
        "{{ }}",
        "{{1abc}}",
        "{{name",
        "name}}",
        "{{include x.md}}",
        "{{ include 'x.md' }}",
        '```json\n{\n  "thoughts": ["..."],\n  "tool_args": {}\n}\n```',
    ],
)
def test_non_tags_pass_through_untouched(loader: PromptLoader, base: Path, text: str) -> None:
    assert render(loader, base, text) == text.strip()


@pytest.mark.parametrize("text", ["{{if}}", "{{ include }}"])
def test_bare_keyword_is_a_strict_error_not_literal(
    loader: PromptLoader, base: Path, text: str
) -> None:
    # Shaped like a tag, so it is one: a forgotten condition must not reach the model.
    with pytest.raises(PromptError, match="unknown variable"):
        render(loader, base, text)


def test_json_example_with_a_variable_inside(loader: PromptLoader, base: Path) -> None:
    text = '~~~json\n{"tool_name": "{{tool}}", "tool_args": {"text": "hi"}}\n~~~'
    out = render(loader, base, text, tool="response")
    assert out == '~~~json\n{"tool_name": "response", "tool_args": {"text": "hi"}}\n~~~'


def test_triple_braces_keep_the_outer_brace(loader: PromptLoader, base: Path) -> None:
    assert render(loader, base, "{{{x}}}", x=5) == "{5}"


# --- include ----------------------------------------------------------------------


def test_include_renders_with_same_variables(loader: PromptLoader, base: Path) -> None:
    write(base, "part.md", "Part for {{who}}.\n")
    out = render(loader, base, 'Start.\n{{include "part.md"}}\nEnd.\n', who="Ann")
    # The included file's final newline is its terminator, not an extra blank line.
    assert out == "Start.\nPart for Ann.\nEnd."


def test_include_spacing(loader: PromptLoader, base: Path) -> None:
    write(base, "part.md", "P")
    assert render(loader, base, '[{{ include  "part.md" }}]') == "[P]"


def test_included_file_overridden_by_profile_folder(tmp_path: Path) -> None:
    profile, shared = tmp_path / "profile", tmp_path / "shared"
    write(shared, "main.md", 'Main: {{include "role.md"}}')
    write(shared, "role.md", "generic role")
    write(profile, "role.md", "researcher role")
    assert PromptLoader([profile, shared]).render("main.md") == "Main: researcher role"
    assert PromptLoader([shared]).render("main.md") == "Main: generic role"


def test_unknown_variable_in_included_file_names_that_file(
    loader: PromptLoader, base: Path
) -> None:
    write(base, "part.md", "x\n{{nope}}")
    with pytest.raises(PromptError) as info:
        render(loader, base, '{{include "part.md"}}')
    assert str(info.value).startswith("prompt 'part.md': unknown variable 'nope'")
    assert "included from 't.md'" in str(info.value)


def test_include_cycle_names_the_chain(loader: PromptLoader, base: Path) -> None:
    write(base, "a.md", 'A {{include "b.md"}}')
    write(base, "b.md", 'B {{include "c.md"}}')
    write(base, "c.md", 'C {{include "a.md"}}')
    with pytest.raises(PromptError, match=r"include cycle: a\.md -> b\.md -> c\.md -> a\.md"):
        loader.render("a.md")


def test_self_include_is_a_cycle(loader: PromptLoader, base: Path) -> None:
    write(base, "a.md", '{{include "a.md"}}')
    with pytest.raises(PromptError, match=r"a\.md -> a\.md"):
        loader.render("a.md")


def test_same_file_included_twice_is_not_a_cycle(loader: PromptLoader, base: Path) -> None:
    write(base, "sep.md", "--")
    assert render(loader, base, '{{include "sep.md"}}x{{include "sep.md"}}') == "--x--"


def test_missing_include_names_the_including_file(loader: PromptLoader, base: Path) -> None:
    with pytest.raises(PromptError) as info:
        render(loader, base, 'a\n{{include "gone.md"}}')
    message = str(info.value)
    assert message.startswith("prompt 't.md': prompt file 'gone.md' not found in: ")
    assert str(base) in message
    assert "line 2" in message


@pytest.mark.parametrize("bad", ["../x.md", "/etc/passwd", "a/b.md", "a\\b.md"])
def test_include_with_hostile_name_refused(loader: PromptLoader, base: Path, bad: str) -> None:
    with pytest.raises(PromptError, match=r"prompt 't\.md': invalid include"):
        render(loader, base, '{{include "' + bad + '"}}')


# --- if / else / endif ---------------------------------------------------------------


def test_if_uses_python_truthiness(loader: PromptLoader, base: Path) -> None:
    text = "{{if x}}yes{{endif}}"
    for value, expected in [(True, "yes"), ("s", "yes"), ([1], "yes"), (1, "yes")]:
        assert render(loader, base, text, x=value) == expected
    for value in [False, "", [], 0, None, {}]:
        assert render(loader, base, text, x=value) == ""


def test_if_else(loader: PromptLoader, base: Path) -> None:
    text = "{{if ok}}good{{else}}bad{{endif}}"
    assert render(loader, base, text, ok=True) == "good"
    assert render(loader, base, text, ok=False) == "bad"
    spaced = "{{ if ok }}good{{ else }}bad{{ endif }}"
    assert render(loader, base, spaced, ok=False) == "bad"


def test_if_not(loader: PromptLoader, base: Path) -> None:
    text = "{{if not ok}}missing{{else}}present{{endif}}"
    assert render(loader, base, text, ok=[]) == "missing"
    assert render(loader, base, text, ok=[1]) == "present"


def test_nested_if(loader: PromptLoader, base: Path) -> None:
    text = "{{if a}}A{{if b}}B{{else}}b{{endif}}{{else}}{{if not b}}nb{{endif}}-{{endif}}"
    assert render(loader, base, text, a=1, b=1) == "AB"
    assert render(loader, base, text, a=1, b=0) == "Ab"
    assert render(loader, base, text, a=0, b=0) == "nb-"
    assert render(loader, base, text, a=0, b=1) == "-"


def test_block_tags_alone_on_a_line_leave_no_blank_line(loader: PromptLoader, base: Path) -> None:
    text = "# Tools\n{{if tools}}\nYou have tools.\n  {{else}}  \nNo tools.\n{{endif}}\nEnd.\n"
    assert render(loader, base, text, tools=True) == "# Tools\nYou have tools.\nEnd."
    assert render(loader, base, text, tools=False) == "# Tools\nNo tools.\nEnd."


def test_inline_block_tags_keep_their_line(loader: PromptLoader, base: Path) -> None:
    text = "a {{if x}}b{{endif}} c\nd"
    assert render(loader, base, text, x=False) == "a  c\nd"


def test_variables_and_includes_in_untaken_branch_are_not_needed(
    loader: PromptLoader, base: Path
) -> None:
    text = '{{if extra}}{{extra_text}} {{include "extra.md"}}{{endif}}done'
    assert render(loader, base, text, extra=False) == "done"


def test_unknown_variable_in_if(loader: PromptLoader, base: Path) -> None:
    with pytest.raises(PromptError, match=r"prompt 't\.md': unknown variable 'flag'"):
        render(loader, base, "{{if flag}}x{{endif}}")
    with pytest.raises(PromptError, match=r"prompt 't\.md': unknown variable 'flag'"):
        render(loader, base, "{{if not flag}}x{{endif}}")


def test_unclosed_if(loader: PromptLoader, base: Path) -> None:
    with pytest.raises(PromptError, match=r"prompt 't\.md': unclosed \{\{if a\}\}.*line 2"):
        render(loader, base, "x\n{{if a}}{{if b}}{{endif}}\n", a=1, b=1)


def test_structure_is_checked_even_when_branch_not_taken(loader: PromptLoader, base: Path) -> None:
    with pytest.raises(PromptError, match="unclosed"):
        render(loader, base, "{{if a}}{{if b}}{{endif}}", a=False, b=False)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("a{{endif}}", r"prompt 't\.md': \{\{endif\}\} without \{\{if\}\}"),
        ("a\n{{else}}", r"prompt 't\.md': \{\{else\}\} without \{\{if\}\} \(line 2\)"),
        ("{{if a}}{{else}}{{else}}{{endif}}", r"prompt 't\.md': second \{\{else\}\}"),
        ("{{if a}}{{endif}}{{endif}}", r"\{\{endif\}\} without"),
    ],
)
def test_stray_block_tags(loader: PromptLoader, base: Path, text: str, pattern: str) -> None:
    with pytest.raises(PromptError, match=pattern):
        render(loader, base, text, a=1)


# --- companions ----------------------------------------------------------------------


def test_companion_variables_merged_over_callers(loader: PromptLoader, base: Path) -> None:
    write(base, "t.py", "def get_variables(context, **variables):\n    return {'x': 'mine'}\n")
    assert render(loader, base, "{{x}} {{y}}", x="caller", y="kept") == "mine kept"


def test_companion_sees_context_and_caller_variables(loader: PromptLoader, base: Path) -> None:
    write(
        base,
        "t.py",
        "def get_variables(context, **variables):\n"
        "    return {'summary': f\"{context.name}:{variables['n'] * 2}\"}\n",
    )

    class FakeAgent:
        name = "agent0"

    assert render(loader, base, "{{summary}}", context=FakeAgent(), n=21) == "agent0:42"


def test_companion_of_included_file_runs(loader: PromptLoader, base: Path) -> None:
    write(base, "part.md", "{{tool_list}}")
    write(
        base,
        "part.py",
        "def get_variables(context, **variables):\n"
        "    return {'tool_list': ', '.join(variables['tools'])}\n",
    )
    assert render(loader, base, '{{include "part.md"}}', tools=["a", "b"]) == "a, b"


def test_companion_only_from_the_folder_the_md_was_found_in(tmp_path: Path) -> None:
    profile, shared = tmp_path / "profile", tmp_path / "shared"
    write(shared, "t.md", "shared {{x}}")
    write(shared, "t.py", "def get_variables(context, **variables):\n    return {'x': 1}\n")
    write(profile, "t.md", "profile {{x}}")
    with pytest.raises(PromptError, match="unknown variable 'x'"):
        PromptLoader([profile, shared]).render("t.md")


def test_companion_edit_is_picked_up(loader: PromptLoader, base: Path) -> None:
    companion = write(
        base, "t.py", "def get_variables(context, **variables):\n    return {'v': 'one'}\n"
    )
    assert render(loader, base, "{{v}}") == "one"
    # Same length on purpose: only the mtime tells the two versions apart.
    companion.write_text("def get_variables(context, **variables):\n    return {'v': 'two'}\n")
    bump_mtime(companion)
    assert loader.render("t.md") == "two"
    assert not (base / "__pycache__").exists()  # no bytecode littered into prompt folders


def test_prompt_edit_is_picked_up(loader: PromptLoader, base: Path) -> None:
    path = write(base, "t.md", "one")
    assert loader.render("t.md") == "one"
    path.write_text("two")
    bump_mtime(path)
    assert loader.render("t.md") == "two"


def test_unchanged_files_are_served_from_cache(base: Path) -> None:
    path = write(base, "t.md", "cached")
    write(base, "t.py", "CALLS = []\ndef get_variables(context, **v):\n    return {}\n")
    # Settled files only: one written within the last seconds is read again each time.
    bump_mtime(path, -60)
    bump_mtime(base / "t.py", -60)
    cache = PromptCache()
    loader = PromptLoader([base], cache)
    assert loader.render("t.md") == "cached"
    first_template = cache.template(path)
    first_companion = cache.companion(base / "t.py")
    loader.render("t.md")
    assert cache.template(path) is first_template
    assert cache.companion(base / "t.py") is first_companion


def test_companion_removed_is_no_longer_used(loader: PromptLoader, base: Path) -> None:
    companion = write(base, "t.py", "def get_variables(context, **v):\n    return {'x': 1}\n")
    assert render(loader, base, "{{if x}}x{{endif}}", x=0) == "x"
    companion.unlink()
    assert loader.render("t.md", x=0) == ""


@pytest.mark.parametrize(
    ("source", "pattern"),
    [
        ("def get_variables(context, **v):\n    raise ValueError('boom')\n", "ValueError: boom"),
        ("def get_variables(context, **v):\n    return ['x']\n", "must return a dict"),
        ("def get_variables(context, **v):\n    return {1: 'x'}\n", "must return a dict"),
        ("def get_variables(:\n", "failed to load: SyntaxError"),
        ("raise RuntimeError('at import')\n", "failed to load: RuntimeError: at import"),
        ("VALUE = 1\n", "must define get_variables"),
    ],
)
def test_companion_errors_name_the_companion(
    loader: PromptLoader, base: Path, source: str, pattern: str
) -> None:
    write(base, "t.py", source)
    with pytest.raises(PromptError) as info:
        render(loader, base, "x")
    assert str(base / "t.py") in str(info.value)
    assert pattern in str(info.value)


# --- lookup --------------------------------------------------------------------------


def test_first_folder_wins(tmp_path: Path) -> None:
    usr, shipped, default = tmp_path / "usr", tmp_path / "agents", tmp_path / "prompts"
    write(default, "a.md", "default a")
    write(default, "b.md", "default b")
    write(default, "c.md", "default c")
    write(shipped, "a.md", "shipped a")
    write(shipped, "b.md", "shipped b")
    write(usr, "a.md", "usr a")
    loader = PromptLoader([usr, shipped, default])
    assert [loader.render(n) for n in ("a.md", "b.md", "c.md")] == [
        "usr a",
        "shipped b",
        "default c",
    ]
    assert loader.find("b.md") == shipped / "b.md"


def test_missing_folders_are_skipped_and_later_created_ones_used(tmp_path: Path) -> None:
    later, default = tmp_path / "not-yet", tmp_path / "prompts"
    write(default, "a.md", "default")
    loader = PromptLoader([tmp_path / "never", later, default])
    assert loader.render("a.md") == "default"
    assert loader.names("*.md") == ["a.md"]
    write(later, "a.md", "later")
    assert loader.render("a.md") == "later"


def test_missing_file_error_lists_folders(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    loader = PromptLoader([one, two])
    with pytest.raises(PromptError) as info:
        loader.find("nope.md")
    assert str(info.value) == f"prompt file 'nope.md' not found in: {one}, {two}"
    with pytest.raises(PromptError, match="not found in"):
        loader.render("nope.md")


def test_exists(loader: PromptLoader, base: Path) -> None:
    write(base, "a.md", "")
    (base / "dir.md").mkdir()
    assert loader.exists("a.md")
    assert not loader.exists("b.md")
    assert not loader.exists("dir.md")  # a folder is not a prompt file


def test_empty_file_renders_empty(loader: PromptLoader, base: Path) -> None:
    assert render(loader, base, "") == ""


@pytest.mark.parametrize(
    "bad", ["../x.md", "/etc/passwd", "a/b.md", "a\\b.md", "..", ".", "", "x\0.md"]
)
def test_hostile_names_refused(tmp_path: Path, bad: str) -> None:
    # A real file one level up makes sure refusal is not just "not found".
    write(tmp_path, "x.md", "secret")
    loader = PromptLoader([tmp_path / "prompts"])
    for call in (loader.find, loader.exists, loader.render, loader.names):
        with pytest.raises(PromptError, match="plain file name"):
            call(bad)


def test_names_glob_across_folders_deduplicated_and_sorted(tmp_path: Path) -> None:
    profile, default = tmp_path / "profile", tmp_path / "prompts"
    write(default, "agent.system.tool.response.md", "")
    write(default, "agent.system.tool.call_subordinate.md", "")
    write(default, "agent.system.main.md", "")
    write(default, "agent.system.tool.response.py", "")
    write(profile, "agent.system.tool.response.md", "")
    write(profile, "agent.system.tool.browser.md", "")
    (profile / "agent.system.tool.folder.md").mkdir()
    loader = PromptLoader([profile, tmp_path / "missing", default])
    assert loader.names("agent.system.tool.*.md") == [
        "agent.system.tool.browser.md",
        "agent.system.tool.call_subordinate.md",
        "agent.system.tool.response.md",
    ]
    assert loader.names("fw.*.md") == []


def test_crlf_files_render_like_lf(loader: PromptLoader, base: Path) -> None:
    (base / "t.md").write_bytes(b"a\r\n{{if x}}\r\nb\r\n{{endif}}\r\nc\r\n")
    assert loader.render("t.md", x=True) == "a\nb\nc"
