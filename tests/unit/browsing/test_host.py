"""Which Chromium the browser tool runs, and the error when there is none."""

from __future__ import annotations

import pytest

from browsing.host import DEBIAN_CHROMIUM, find_executable
from helpers.errors import UserError


def test_the_setting_wins_and_a_missing_program_says_what_to_install(tmp_path):
    program = tmp_path / "my-chromium"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert find_executable(str(program)) == str(program)
    with pytest.raises(UserError, match=r"install Chromium \(Debian: apt install chromium\)"):
        find_executable(str(tmp_path / "nowhere"))


def test_without_a_setting_debians_chromium_else_playwrights():
    from pathlib import Path

    expected = DEBIAN_CHROMIUM if Path(DEBIAN_CHROMIUM).is_file() else None
    assert find_executable("") == expected
