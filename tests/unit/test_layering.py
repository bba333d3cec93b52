"""Imports point one way: each package uses only the layers below it (a rule per package),
at run time and in type hints alike."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from helpers.files import BASE_DIR


def imports(path: Path) -> list[tuple[int, str, bool]]:
    """Every module a file imports: (line, module, for types only), the last True for an
    import under `if TYPE_CHECKING:`. The layers hold for both: a hint that names an upper
    layer ties the lower one to it as surely as an import that runs."""
    tree = ast.parse(path.read_text(), filename=str(path))
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            for child in node.body:
                type_only.update(id(n) for n in ast.walk(child))
    found = []
    for node in ast.walk(tree):
        for_types = id(node) in type_only
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, for_types) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                package = path.parent.relative_to(BASE_DIR).parts
                base = ".".join(package[: len(package) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
                found.append((node.lineno, module, for_types))
            elif node.module:
                found.append((node.lineno, node.module, for_types))
    return found


#: Each package and the Cadre packages its modules may import (besides itself), at run
#: time or for types only. Lower layers first: an arrow never points up
#: (docs/architecture.md).
LAYERS: dict[str, set[str]] = {
    "helpers": set(),
    "accounts": {"helpers"},
    "models": {"helpers"},
    "profiles": {"helpers"},
    "execution": {"helpers"},
    "browsing": {"helpers"},
    "memory": {"helpers", "models"},
    "mcp_client": {"helpers"},
    "cluster": {"helpers"},  # the node and its Redis; the server asks it, never the reverse
    "core": {"helpers", "models", "profiles", "execution", "browsing", "memory", "mcp_client",
             "accounts"},
    "agent": {"core"},  # the loop's public face: it re-exports core's names
    "store": {"helpers", "models", "profiles", "memory", "mcp_client", "core", "agent",
              "accounts"},
    "initialize": {"helpers", "models", "profiles", "memory", "mcp_client", "core", "agent",
                   "store", "accounts"},
    "scheduler": {"helpers", "models", "profiles", "memory", "mcp_client", "core", "agent",
                  "store", "initialize", "accounts"},
    "tools": {"helpers", "models", "profiles", "execution", "memory", "mcp_client", "core",
              "store", "agent", "initialize", "browsing", "scheduler", "accounts"},
    # Evaluations run suites on a chat store: the CLI's own, or the server's (its panel).
    "evals": {"helpers", "models", "profiles", "memory", "mcp_client", "core", "agent",
              "store", "initialize", "accounts"},
    "server": {"helpers", "models", "profiles", "execution", "memory", "mcp_client", "core",
               "store", "agent", "initialize", "scheduler", "accounts", "cluster", "evals"},
    # Cadre's own features shipped as plugins: they use the plugins' seam (the run events,
    # the chat they are handed, tools' RunContext), as a user's plugin would, and no more.
    "plugins": {"helpers", "models", "profiles", "core"},
}  # fmt: skip
#: Every first-party top-level name; imports of anything else (stdlib, packages) are free.
OURS = set(LAYERS) | {"run_ui", "cadre", "bench", "tests"}


def _modules(layer: str) -> list[Path]:
    """The files of a layer: a package's modules, or a top-level module (agent.py)."""
    single = BASE_DIR / f"{layer}.py"
    return [single] if single.is_file() else sorted((BASE_DIR / layer).rglob("*.py"))


def wrong_arrows(package: str) -> list[str]:
    allowed = LAYERS[package] | {package}
    return [
        f"{path.relative_to(BASE_DIR)}:{line} imports {module}{' (for types)' if for_types else ''}"
        for path in _modules(package)
        for line, module, for_types in imports(path)
        if module.split(".")[0] in OURS - allowed
    ]


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_each_package_imports_only_the_layers_below_it(package: str):
    assert wrong_arrows(package) == []


def test_every_python_folder_has_a_rule():
    """A new package must say where it stands before it is used."""
    folders = {p.parent.name for p in BASE_DIR.glob("*/__init__.py")}
    assert folders - set(LAYERS) - {"bench", "tests", "webui"} == set()


def test_the_checker_sees_a_wrong_arrow():
    bad = BASE_DIR / "helpers" / "_layering_probe.py"
    bad.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from core.agent import Agent\n"
        "if not TYPE_CHECKING:\n    import run_ui\n"
        "def f():\n    import agent\n"
        "from . import errors\n"
    )
    try:
        found = [(module, for_types) for _, module, for_types in imports(bad)]
    finally:
        bad.unlink()
    assert sorted(found) == [
        ("agent", False), ("core.agent", True), ("helpers", False), ("run_ui", False),
        ("typing", False),
    ]  # fmt: skip


def _own_modules(outside: str) -> list[Path]:
    """Cadre's modules outside the package `outside` (the tests and benchmarks left out)."""
    skip = {outside, "tests", "bench", "usr", "webui", ".venv"}
    return [
        path
        for path in sorted(BASE_DIR.rglob("*.py"))
        if path.relative_to(BASE_DIR).parts[0] not in skip
    ]


def test_only_core_reaches_behind_a_run_context():
    """Tools, memory, execution and the layers above get a RunContext (core/run_context.py);
    the agent behind it is core's own (`agent_of`)."""
    reaching = [
        str(path.relative_to(BASE_DIR))
        for path in _own_modules("core")
        if "agent_of(" in (text := path.read_text()) or "._agent" in text
    ]
    assert reaching == []


def test_cadres_own_tools_use_the_run_context():
    """`Tool.agent` is kept for tools written before the run context, not for Cadre's own."""
    using = [
        str(path.relative_to(BASE_DIR))
        for path in sorted((BASE_DIR / "tools").glob("*.py"))
        if "self.agent" in path.read_text()
    ]
    assert using == []


#: Modules outside core that may name the Agent, each with why.
NAMES_THE_AGENT = {
    # The public face of the loop re-exports it for programs that embed Cadre.
    "agent.py",
}
#: Ways to an agent from a chat that only core takes: outside it, `chat.agent0.ctx`,
#: `chat.contexts()`, `chat.working` and `chat.tree()` give run contexts and typed rows.
TO_THE_AGENT = re.compile(
    r"\.agent0\b(?!\.ctx\b)|\bagents_on_record\(|\bworking_agents\(|\.working_agent\b"
)


def test_no_module_outside_core_names_the_agent():
    """Outside the loop, code is given a RunContext (or a Chat), never the Agent: not at
    run time, not for types."""
    naming = []
    for path in _own_modules("core"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in ("agent", "core.agent"):
                if any(alias.name == "Agent" for alias in node.names):
                    naming.append(str(path.relative_to(BASE_DIR)))
    assert sorted(set(naming) - NAMES_THE_AGENT) == []


def reaching_the_agent(text: str) -> list[str]:
    return [match.group(0) for match in TO_THE_AGENT.finditer(text)]


def test_no_module_outside_core_reaches_an_agent_through_its_chat():
    reaching = [
        f"{path.relative_to(BASE_DIR)}: {', '.join(found)}"
        for path in _own_modules("core")
        if (found := reaching_the_agent(path.read_text()))
    ]
    assert reaching == []


def test_the_checker_sees_a_chat_handing_out_its_agent():
    assert reaching_the_agent("chat.agent0.config.profile; c.agents_on_record()") == [
        ".agent0",
        "agents_on_record(",
    ]
    assert reaching_the_agent("chat.agent0.ctx.profile; chat.working; chat.contexts()") == []
