"""The shape of the code, measured from its imports: `python -m bench.structure`.

Prints the figures docs/architecture.md's rules are about: who imports the `Agent`
outside the loop (`core/`), import cycles, imports that point up the layers, the
longest chain of floors inside `core/`, modules per package and functions over 80
lines. Nothing of Cadre is imported or run; the files are read as text (ast).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Folders that are not Cadre's code (tests, benchmarks, the user's data, the page).
SKIP = {"tests", "bench", "usr", "webui", ".venv", "node_modules", "agents", "skills", "docs"}
LONG_FUNCTION = 80


@dataclass
class Module:
    """One file: its dotted name and what it imports, at run time and for types only."""

    name: str
    path: Path
    runtime: dict[str, set[str]] = field(default_factory=dict)  # module -> names
    typing: dict[str, set[str]] = field(default_factory=dict)


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, name: str) -> Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    typed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            typed.update(id(n) for child in node.body for n in ast.walk(child))
    module = Module(name, path)
    package = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
    for node in ast.walk(tree):
        where = module.typing if id(node) in typed else module.runtime
        if isinstance(node, ast.Import):
            for alias in node.names:
                where.setdefault(alias.name, set())
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            where.setdefault(base, set()).update(alias.name for alias in node.names)
    return module


def load(root: Path = ROOT) -> dict[str, Module]:
    """Every module of Cadre's own code, by dotted name."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if rel[0] in SKIP or "__pycache__" in rel or rel[0].startswith("."):
            continue
        modules[_name(path)] = _imports(path, _name(path))
    return modules


def _target(modules: dict[str, Module], imported: str, names: set[str]) -> list[str]:
    """The modules of ours an import statement reaches (a package's submodules by name)."""
    found = [f"{imported}.{n}" for n in names if f"{imported}.{n}" in modules]
    if imported in modules:
        found.append(imported)
    return found


def graph(modules: dict[str, Module], with_types: bool) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for module in modules.values():
        tables = [module.runtime, module.typing] if with_types else [module.runtime]
        for table in tables:
            for imported, names in table.items():
                edges[module.name].update(t for t in _target(modules, imported, names)
                                          if t != module.name)  # fmt: skip
    return edges


def cycles(modules: dict[str, Module], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for start in modules:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return groups


def longest_chain(edges: dict[str, set[str]], inside: str) -> list[str]:
    """The longest path of run-time imports among the modules of one package."""
    members = set(edges) | {t for ts in edges.values() for t in ts}
    members = {m for m in members if m.startswith(inside + ".")}
    memo: dict[str, list[str]] = {}

    def chain(node: str, seen: frozenset[str]) -> list[str]:
        if node in memo:
            return memo[node]
        best: list[str] = []
        for child in edges.get(node, ()):
            if child in members and child not in seen:
                candidate = chain(child, seen | {child})
                if len(candidate) > len(best):
                    best = candidate
        memo[node] = [node, *best]
        return memo[node]

    return max((chain(m, frozenset({m})) for m in sorted(members)), key=len, default=[])


def agent_importers(modules: dict[str, Module], loop: set[str]) -> tuple[list[str], list[str]]:
    """Files outside the loop that import the name `Agent`: at run time, for types only."""
    runtime, typing = [], []
    for module in modules.values():
        if module.name in loop or module.name.split(".")[0] in loop:
            continue
        if any("Agent" in names for names in module.runtime.values()):
            runtime.append(module.name)
        elif any("Agent" in names for names in module.typing.values()):
            typing.append(module.name)
    return runtime, typing


def long_functions(modules: dict[str, Module]) -> list[str]:
    found = []
    for module in modules.values():
        tree = ast.parse(module.path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONG_FUNCTION:
                    found.append(f"{module.name}.{node.name} ({length})")
    return found


def packages(modules: dict[str, Module]) -> dict[str, int]:
    """Modules per package (sub-packages counted on their own)."""
    count: dict[str, int] = defaultdict(int)
    for module in modules.values():
        if module.path.name == "__init__.py":
            continue
        parent = module.path.parent.relative_to(ROOT)
        if str(parent) != ".":
            count[str(parent)] += 1
    return dict(sorted(count.items()))


def upward(modules: dict[str, Module], layers: dict[str, set[str]]) -> list[str]:
    """Imports of ours (for types too) that point to a package the layer table forbids."""
    found = []
    for module in modules.values():
        top = module.name.split(".")[0]
        if top not in layers:
            continue
        for table in (module.runtime, module.typing):
            for imported in table:
                other = imported.split(".")[0]
                if other in layers and other != top and other not in layers[top]:
                    found.append(f"{module.name} -> {imported}")
    return found


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from tests.unit.test_layering import LAYERS  # the rules as the test holds them

    modules = load()
    loop = {"core", "agent"}
    runtime, typing = agent_importers(modules, loop)
    both = cycles(modules, graph(modules, with_types=True))
    run_only = cycles(modules, graph(modules, with_types=False))
    chain = longest_chain(graph(modules, with_types=False), "core")
    rows = [
        ("files importing Agent outside the loop, at run time", len(runtime)),
        ("files importing Agent outside the loop, for types", len(typing)),
        ("import cycles (types included)", len(both)),
        ("files in import cycles (types included)", sum(len(g) for g in both)),
        ("import cycles at run time", len(run_only)),
        ("upward imports (types included)", len(upward(modules, LAYERS))),
        ("longest chain of floors in core/", len(chain)),
        (f"functions over {LONG_FUNCTION} lines", len(long_functions(modules))),
    ]
    width = max(len(label) for label, _ in rows)
    print(f"{'figure':<{width}}  value")
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    print()
    print(f"{'package':<{width}}  modules")
    for package, count in packages(modules).items():
        print(f"{package:<{width}}  {count}")
    if "-v" in sys.argv:
        print("\nAgent at run time:", *runtime, "\nAgent for types:", *typing, sep="\n  ")
        print("\ncycles:", *(" ".join(g) for g in both), sep="\n  ")
        print("\nupward:", *upward(modules, LAYERS), sep="\n  ")
        print("\ncore chain:", " -> ".join(chain))
        print("\nlong functions:", *long_functions(modules), sep="\n  ")


if __name__ == "__main__":
    main()
