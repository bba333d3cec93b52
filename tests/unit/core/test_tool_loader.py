"""Finding tools: profile first, shared after; names from models are never paths."""

from __future__ import annotations

import os

import pytest

from core.tooling.tool_loader import find_tool_file, load_tool_class, tool_names
from helpers.errors import UserError
from tests.support.agents import make_profile

SOURCE = """
from core.tool import Response, Tool

class {name}(Tool):
    async def execute(self, args):
        return Response(message="{message}")
"""


def test_shared_tools_are_found():
    assert "response" in tool_names("agent0")
    path = find_tool_file("agent0", "response")
    assert path is not None and path.parent.name == "tools"


def test_profile_tools_add_and_override(usr_dir):
    make_profile(
        usr_dir,
        "custom",
        tools={
            "extra": SOURCE.format(name="Extra", message="extra"),
            "response": SOURCE.format(name="MyResponse", message="mine"),
        },
    )
    assert {"extra", "response"} <= set(tool_names("custom"))
    assert "extra" not in tool_names("agent0")
    assert find_tool_file("custom", "response").is_relative_to(usr_dir)
    assert load_tool_class(find_tool_file("custom", "response")).__name__ == "MyResponse"
    assert load_tool_class(find_tool_file("agent0", "response")).__name__ == "ResponseTool"


@pytest.mark.parametrize("name", ["../response", "/etc/passwd", "a/b", "", "response.py", "_x"])
def test_hostile_or_odd_names_are_not_found(name):
    assert find_tool_file("agent0", name) is None


def test_an_edited_tool_is_reloaded(usr_dir):
    root = make_profile(usr_dir, "live", tools={"t": SOURCE.format(name="One", message="1")})
    path = root / "tools" / "t.py"
    assert load_tool_class(path).__name__ == "One"
    path.write_text(SOURCE.format(name="Two", message="2"))
    stamp = path.stat().st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(stamp, stamp))
    assert load_tool_class(path).__name__ == "Two"


def test_a_broken_tool_file_is_a_clear_error(usr_dir):
    root = make_profile(usr_dir, "broken", tools={"bad": "def oops(:\n"})
    with pytest.raises(UserError, match="failed to load"):
        load_tool_class(root / "tools" / "bad.py")
    root2 = make_profile(usr_dir, "empty", tools={"none": "x = 1\n"})
    with pytest.raises(UserError, match="exactly one Tool subclass"):
        load_tool_class(root2 / "tools" / "none.py")


def test_profile_name_must_be_a_folder_name():
    with pytest.raises(UserError, match="invalid agent profile name"):
        tool_names("../../etc")
