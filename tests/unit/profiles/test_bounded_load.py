"""The bounded YAML and JSON reader every file from outside goes through: the same values as
a safe loader for what people write, and a plain refusal for what is written to hurt."""

from __future__ import annotations

import pytest
import yaml

from profiles import bounded_load
from profiles.bounded_load import DataRefused, load_json, load_yaml, read_limited
from tests.support.hostile_yaml import alias_bomb, deep_list

LOADERS = [bounded_load._PureLoader]
if bounded_load.CParser is not None:
    LOADERS.append(bounded_load._LibyamlLoader)


@pytest.fixture(params=LOADERS, ids=lambda loader: loader.__name__)
def loader(request, monkeypatch):
    """Each loader in turn: libyaml's where it is built in, and the pure-Python one."""
    monkeypatch.setattr(bounded_load, "_Loader", request.param)
    return request.param


WRITTEN = """\
title: Researcher
description: >
  Finds sources
  and cites them.
enabled: yes
anchored: &kept 3
version: 1.2
count: 0x1f
when: 2024-05-01
nothing: ~
tags: [a, "b c", 'd']
workflow:
  parallel: [a, b]
  aggregate: judge
merged:
  <<: {x: 1}
  y: 2
"""


def test_what_people_write_reads_as_a_safe_loader_reads_it(loader):
    assert load_yaml(WRITTEN, "agent.yaml") == yaml.safe_load(WRITTEN)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("x:\n" + alias_bomb(), "agent.yaml uses a YAML alias, *a (line 3, column 10)"),
        ("a: &m {x: 1}\nb:\n  <<: *m\n", "uses a YAML alias, *m (line 3, column 7)"),
        (
            "a: " + deep_list(40),
            "nests lists or mappings deeper than 32 levels (line 1, column 35)",
        ),
        ("a: " + "{b: " * 40 + "1" + "}" * 40, "deeper than 32 levels (line 1, column"),
        (
            "".join(" " * i + "k:\n" for i in range(40)),
            "deeper than 32 levels (line 32, column 32)",
        ),
        ("n: " + "9" * 65, "has a number of 65 characters (line 1, column 4); at most 64"),
        ("n: 1:2:3:" + "1:" * 40 + "1", "has a number of"),
        ("d: 2024-02-30", "has a value that cannot be read (line 1, column 4): day is out"),
        ("a: b: c", "is not valid YAML (line 1, column 5): mapping values are not allowed"),
        ("a: \x01", "is not valid YAML: unacceptable character #x0001"),
        ("a: !!python/object:os.system x", "could not determine a constructor"),
        ("? [a]\n: b", "found unhashable key"),
        ("a\n---\nb", "but found another document"),
        ("a: " + "x" * bounded_load.MAX_YAML_CHARS, "is 64 KB long; Cadre reads at most 64 KB"),
    ],
)
def test_what_is_written_to_hurt_is_refused_saying_where_and_what_to_do(loader, text, says):
    with pytest.raises(DataRefused) as refused:
        load_yaml(text, "agent.yaml")
    assert says in str(refused.value)
    assert str(refused.value).startswith("agent.yaml ")
    assert "\n" not in str(refused.value)


def test_a_deep_flow_list_is_refused_by_either_loader_without_recursion(loader):
    with pytest.raises(DataRefused, match="nests lists or mappings .*: flatten it$"):
        load_yaml("a: " + deep_list(20_000), "agent.yaml")


def test_lines_are_counted_from_the_texts_first_line_in_its_file():
    with pytest.raises(DataRefused, match=r"\(line 12, column 4\)"):
        load_yaml("a: 1\nb: *x", "SKILL.md's front matter", first_line=11)


def test_json_deep_or_broken_is_a_refusal_not_a_recursion_error():
    assert load_json('{"a": [1, {"b": null}]}', "x.json") == {"a": [1, {"b": None}]}
    with pytest.raises(DataRefused, match="^agent.json is nested too deeply to be read"):
        load_json(deep_list(100_000), "agent.json")
    with pytest.raises(DataRefused, match=r"^agent.json is not valid JSON \(line 2\)"):
        load_json('{\n"a": }', "agent.json")


def test_a_file_is_read_only_up_to_its_limit_and_as_utf8(tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_bytes(b"title: x\n" * 1000)
    assert read_limited(path, 9000).startswith("title: x")
    with pytest.raises(DataRefused, match="agent.yaml is larger than 8 KB"):
        read_limited(path, 8 * 1024)
    path.write_bytes(b"title: \xc3(")
    with pytest.raises(DataRefused, match=r"agent.yaml is not UTF-8 text \(byte 7\)"):
        read_limited(path)
