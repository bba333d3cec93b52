"""Profiles and projects whose files are written to hurt the reader (aliases, deep nesting,
huge files): each refused with the reason, reported, and never costing the others."""

from __future__ import annotations

import logging

import pytest

from profiles.catalog import discover_profiles
from profiles.projects import load_project_settings
from tests.support.hostile_yaml import alias_bomb, deep_list


def write_profile(usr_dir, name: str, files: dict[str, str | bytes]):
    root = usr_dir / "agents" / name
    root.mkdir(parents=True)
    for file, content in files.items():
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(root / file, mode) as out:
            out.write(content)
    return root


HOSTILE = {
    "aliases": (
        {"agent.yaml": "title: Laughs\nextra:\n" + alias_bomb()},
        "agent.yaml uses a YAML alias, *a (line 4, column 10): Cadre does not expand aliases",
    ),
    "one alias": (
        {"agent.yaml": "title: &t Twice\ndescription: *t\n"},
        "agent.yaml uses a YAML alias, *t (line 2, column 14)",
    ),
    "deep yaml": (
        {"agent.yaml": f"title: Deep\nx: {deep_list()}\n"},
        "agent.yaml is 195 KB long; Cadre reads at most 64 KB of YAML",
    ),
    "deep yaml, small": (
        {"agent.yaml": "title: Deep\nx: " + deep_list(50) + "\n"},
        "agent.yaml nests lists or mappings deeper than 32 levels (line 2",
    ),
    "huge yaml": (
        {"agent.yaml": "title: Huge\n" + "#" * (2 * 2**20) + "\n"},
        "agent.yaml is larger than 256 KB, far more than such a file holds: shorten it",
    ),
    "huge number": (
        {"agent.yaml": "title: 0x" + "f" * 20_000 + "\n"},
        "agent.yaml has a number of 20002 characters (line 1, column 8)",
    ),
    "month 13": (
        {"agent.yaml": "title: T\ncreated: 2024-13-01\n"},
        "agent.yaml has a value that cannot be read (line 2, column 10): month must be in 1..12",
    ),
    "not utf-8": ({"agent.yaml": b"title: \xff\xfe\n"}, "agent.yaml is not UTF-8 text (byte 7)"),
    "deep agent.json": (
        {"agent.json": deep_list(100_000)},
        "agent.json is nested too deeply to be read: flatten it",
    ),
    "deep settings.json": (
        {"agent.yaml": "title: S\n", "settings.json": deep_list(50_000)},
        "settings.json is nested too deeply to be read: flatten it",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_profile_is_unavailable_with_the_reason_and_the_others_load(
    usr_dir, caplog, case
):
    files, says = HOSTILE[case]
    write_profile(usr_dir, "bad", files)
    write_profile(usr_dir, "good", {"agent.yaml": "title: Good\n"})
    with caplog.at_level(logging.ERROR, logger="profiles.catalog"):
        found = discover_profiles()
    assert found["good"].available and found["default"].available
    assert not found["bad"].available
    assert found["bad"].error.startswith(says)
    assert any("'bad'" in r.getMessage() and says in r.getMessage() for r in caplog.records)


def test_a_deep_project_settings_file_is_reported_and_ignored(usr_dir, caplog):
    folder = usr_dir / "projects" / "lab"
    folder.mkdir(parents=True)
    (folder / "settings.json").write_text(deep_list(100_000))
    with caplog.at_level(logging.ERROR, logger="profiles.projects"):
        settings = load_project_settings("lab")
    assert settings.subordinates == {} and settings.work_dir == ""
    assert any("nested too deeply" in r.getMessage() for r in caplog.records)
    assert discover_profiles("lab")["default"].available  # the project's agents still work


def test_an_anchor_without_an_alias_is_read(usr_dir):
    write_profile(usr_dir, "plain", {"agent.yaml": "title: &t Plain\ndescription: fine\n"})
    found = discover_profiles()["plain"]  # an anchor alone changes nothing: not refused
    assert found.available and found.title == "Plain"
