"""The compatibility layer for Agent Zero tools: what its imports resolve to, and what not."""

from __future__ import annotations

import importlib
import sys

import pytest

from core.tool import Response as CadreResponse
from core.tooling.agent_zero import imports
from core.tooling.agent_zero.tool import Tool as AgentZeroTool
from helpers.errors import RepairableException


def test_agent_zero_imports_resolve_to_cadres_stand_ins():
    imports.install()
    imports.install()  # once only
    from python.helpers.errors import RepairableException as Repairable
    from python.helpers.tool import Response, Tool

    assert Tool is AgentZeroTool and Response is CadreResponse
    assert Repairable is RepairableException
    assert sum(isinstance(f, imports.AgentZeroImports) for f in sys.meta_path) == 1


def test_a_module_cadre_lacks_is_named_with_what_cadre_offers():
    imports.install()
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module("python.helpers.browser_use")
    assert info.value.name == "python.helpers.browser_use"
    assert "'python.helpers.browser_use' is not part of Cadre" in str(info.value)
    assert "python.helpers.tool (Tool, Response)" in str(info.value)
