"""A persistent Python session for `code_execution_tool` (run as a script in a terminal).

Reads one file path per line from stdin, runs the file's code in one shared
namespace (the value of a final expression is printed, as in the REPL), then
prints the session's readiness marker with 0 (ran) or 1 (raised). The
code's own `input()` reads the same terminal, so the agent can answer it.
"""

import ast
import os
import sys
import traceback

TOKEN = os.environ.pop("CADRE_READY_TOKEN")
namespace = {"__name__": "__main__", "__builtins__": __builtins__}


def ready(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write(f"__CADRE_READY_{TOKEN}_{code}__")
    sys.stdout.flush()


def run(path: str) -> int:
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except OSError as exc:
        print(f"cannot read the code to run: {exc}", file=sys.stderr)
        return 1
    try:
        tree = ast.parse(source, "<code>")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<code>", "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<code>", "eval"), namespace)
            if value is not None:
                print(repr(value))
        return 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:
        # The traceback without this driver's own frame.
        kind, error, trace = sys.exc_info()
        traceback.print_exception(kind, error, trace.tb_next if trace else None)
        return 1


ready(0)
while True:
    line = sys.stdin.readline()
    if not line:
        break
    if line.strip():
        ready(run(line.strip()))
