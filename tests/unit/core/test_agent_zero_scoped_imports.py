"""Agent Zero 1.x's `helpers.*` names answer only inside the Agent Zero files Cadre loads:
every import form, an import inside a function, many files at once in threads, and a
tool written for Cadre in the same folders keeps Cadre's own `helpers`."""

from __future__ import annotations

import importlib
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import helpers
import helpers.errors
from core.tool import Response
from core.tooling.agent_zero.extension import Extension
from core.tooling.agent_zero.extension_files import load_extension_class
from core.tooling.agent_zero.print_style import PrintStyle
from core.tooling.agent_zero.tool import Tool as AgentZeroTool
from core.tooling.tool_loader import load_tool_class
from helpers.errors import UserError

FORMS = """
import helpers.tool
from helpers import print_style, errors
from helpers.tool import Tool, Response


class Forms(Tool):
    async def execute(self, **kwargs):
        from helpers.files import get_abs_path  # only when called

        return Response(message=get_abs_path("x"), break_loop=False)


SEEN = (helpers.tool.Tool, print_style.PrintStyle, errors.RepairableException, Response)
"""

CADRE_TOOL = """
from core.tool import Response, Tool
from helpers import files
from helpers.errors import RepairableException


class Native(Tool):
    async def execute(self, args):
        return Response(message="native")


SEEN = (files, RepairableException)
"""


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def _tools(usr: Path) -> Path:
    return usr / "agents" / "smith" / "tools"


def test_every_import_form_gets_the_stand_ins(usr_dir):
    tool_class = load_tool_class(_write(_tools(usr_dir), "forms.py", FORMS))
    seen = sys.modules[tool_class.__module__].SEEN
    assert seen == (AgentZeroTool, PrintStyle, helpers.errors.RepairableException, Response)
    assert issubclass(tool_class, AgentZeroTool)


async def test_an_unoffered_import_inside_a_function_is_named_when_it_runs(usr_dir):
    tool_class = load_tool_class(_write(_tools(usr_dir), "forms.py", FORMS))
    with pytest.raises(ModuleNotFoundError, match="'helpers.files' is not part of Cadre"):
        await tool_class.execute(object.__new__(tool_class))


def test_from_helpers_import_an_unoffered_module_fails_to_load(usr_dir):
    text = "from helpers import tool, files\n\nclass T(tool.Tool):\n    pass\n"
    with pytest.raises(UserError, match="'helpers.files' is not part of Cadre"):
        load_tool_class(_write(_tools(usr_dir), "partly.py", text))


def test_a_tool_written_for_cadre_keeps_cadres_helpers(usr_dir):
    tool_class = load_tool_class(_write(_tools(usr_dir), "native.py", CADRE_TOOL))
    files, repairable = sys.modules[tool_class.__module__].SEEN
    assert files is sys.modules["helpers.files"]
    assert repairable is helpers.errors.RepairableException


def test_many_files_load_at_once_and_cadres_helpers_stay_the_same(usr_dir):
    before = {n: m for n, m in sys.modules.items() if n.startswith("helpers")}
    paths = [_write(_tools(usr_dir), f"forms{k}.py", FORMS) for k in range(6)]
    start = threading.Barrier(len(paths) + 2)
    loaded: list[object] = []
    errors: list[BaseException] = []

    def load(path: Path) -> None:
        start.wait()
        try:
            loaded.append(load_tool_class(path))
        except BaseException as exc:  # reported below, with the thread's result
            errors.append(exc)

    def cadre_import() -> None:
        start.wait()
        loaded.append(importlib.import_module("helpers.errors"))
        loaded.append(importlib.import_module("helpers.files"))

    threads = [threading.Thread(target=load, args=(p,)) for p in paths]
    threads += [threading.Thread(target=cadre_import) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sum(isinstance(x, type) and issubclass(x, AgentZeroTool) for x in loaded) == 6
    assert loaded.count(helpers.errors) == 2
    after = {n: m for n, m in sys.modules.items() if n.startswith("helpers")}
    assert all(after[name] is module for name, module in before.items())
    assert "helpers.tool" not in sys.modules and not hasattr(helpers, "tool")


def test_an_extension_file_needs_an_extension_class(usr_dir):
    folder = usr_dir / "extensions" / "monologue_start"
    path = _write(folder, "_10_nothing.py", "from helpers.extension import Extension\n")
    with pytest.raises(UserError, match="defines no class derived from"):
        load_extension_class(path)
    good = "from helpers.extension import Extension\n\nclass A(Extension):\n    pass\n"
    assert issubclass(load_extension_class(_write(folder, "_20_good.py", good)), Extension)
