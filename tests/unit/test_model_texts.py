"""Every text the model reads is a prompt file: no prose written in Python where the model
reads it (a repairable error, a tool's `Response`, an entry of the history, a hint).

The rule (docs/architecture.md, "How to add a tool"): the words are a file in `prompts/`,
rendered with the agent's prompt renderer, or, below the loop, named as a `Told` for the
tool layer to render (helpers/told.py). This scan of Cadre's code fails on a string literal
or f-string of prose handed to what the model reads.
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers.files import BASE_DIR

#: Cadre's own code (tests, benchmarks and the browser's code are not Cadre's runtime).
CODE = ["agent.py", "initialize.py", "cadre.py", "run_ui.py", "agents", "browsing", "core",
        "execution", "helpers", "mcp_client", "memory", "models", "profiles", "scheduler",
        "server", "store", "tools"]  # fmt: skip
#: Calls whose text arguments the model reads.
TOLD_TO_MODEL = {"RepairableException", "BudgetExhausted", "Response", "add_tool_result",
                 "add_warning", "add_reply", "add_user_message"}  # fmt: skip
#: Keyword arguments the model reads, whatever the call (a tool result's hint).
TOLD_KEYWORDS = {"hint"}
#: Places allowed to keep prose, each with its reason.
EXCEPTIONS: dict[str, str] = {}


def _called(call: ast.Call) -> str:
    func = call.func
    return (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )


def is_prose(node: ast.AST) -> bool:
    """A string literal of words (letters and a space), an f-string whose own text has a
    letter, or text built from either (`+`, `%`, `.format`, `.join`, `or`, a list)."""
    if isinstance(node, ast.Constant):
        text = node.value
        return isinstance(text, str) and " " in text and any(c.isalpha() for c in text)
    if isinstance(node, ast.JoinedStr):
        return any(
            isinstance(part, ast.Constant) and any(c.isalpha() for c in str(part.value))
            for part in node.values
        )
    if isinstance(node, ast.BinOp):
        return is_prose(node.left) or is_prose(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in ("format", "join"):
            return is_prose(node.func.value) or any(is_prose(a) for a in node.args)
    if isinstance(node, ast.IfExp):
        return is_prose(node.body) or is_prose(node.orelse)
    if isinstance(node, ast.BoolOp):
        return any(is_prose(value) for value in node.values)
    if isinstance(node, ast.List | ast.Tuple):
        return any(is_prose(element) for element in node.elts)
    return False


def prose_for_the_model(source: str, name: str) -> list[str]:
    """`name:line: call` for each text of prose handed to what the model reads."""
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if not isinstance(node, ast.Call):
            continue
        called = _called(node)
        told = list(node.args) + [k.value for k in node.keywords]
        if not (called in TOLD_TO_MODEL or called.startswith("hist_add_")):  # Agent Zero's
            told = [k.value for k in node.keywords if k.arg in TOLD_KEYWORDS]
        if any(is_prose(arg) for arg in told):
            found.append(f"{name}:{node.lineno}: {ast.unparse(node)[:120]}")
    return found


def cadre_files() -> list[Path]:
    files: list[Path] = []
    for entry in CODE:
        path = BASE_DIR / entry
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def test_no_prose_for_the_model_is_written_in_python():
    found = [
        hit
        for path in cadre_files()
        for hit in prose_for_the_model(path.read_text(), str(path.relative_to(BASE_DIR)))
        if EXCEPTIONS.get(hit.split(":", 1)[0], "\0") not in hit
    ]
    assert found == [], "move these texts to prompts/ (docs/architecture.md):\n" + "\n".join(found)


def test_the_scan_sees_prose_and_lets_names_through():
    bad = """
raise RepairableException(f"{path} does not exist")
raise RepairableException("no tab is open: use browser:open first")
return Response(message="Wrote " + name)
agent.hist_add_warning("; ".join(["a b", c]))
agent.hist_add_tool_result("t", text, hint=f"read it again")
ctx.add_warning("you did it wrong")
ctx.add_tool_result("t", "Wrote the file")
"""
    good = """
raise RepairableException(agent.read_prompt("fw.tool_error.md", error=f"{kind}: {exc}"))
raise RepairableException(str(exc)) from None
raise RepairableTold("fw.text_editor.missing.md", shown_as=f"{path}")
return Response(message=text, break_loop=True, additional={"images": loaded})
agent.hist_add_tool_result(name, "", hint=hint)
ctx.add_tool_result(name, text, hint)
log.info("a line for the server log %s", name)
"""
    assert len(prose_for_the_model(bad, "bad")) == 7
    assert prose_for_the_model(good, "good") == []
