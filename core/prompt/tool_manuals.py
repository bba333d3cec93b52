"""What the system prompt says of each tool: a line, and its manual once the agent needs it.

Every call of every chat pays for its system prompt, and small models drown in
a long one: with every tool's whole manual (its methods, arguments and an
example call) Agent 0's took 4,100 tokens. So the prompt lists each tool on
one line, its *brief*: what it does and the arguments a plain call needs. A
tool's whole manual joins the agent's system prompt, in place of its line,
once the agent needs it, and stays there (history may be compressed; the
prompt is not):

- after the agent's first call of the tool (`after_first_call`);
- after a call whose arguments were wrong (its error says so: `with_manual`);
- when the agent asks for it (the `manual` tool).

Nothing of it enters the history, so the tool's result is the tool's alone. A
tool's prompt file (`agent.system.tool.<name>.md`) holds both, rendered with
`brief` true for the line and false for the manual (`{{if brief}}...{{else}}
...{{endif}}`); a file that does not say (a profile's own, a tool written
before) gives its first line of text as its brief. `ALWAYS` keep their whole
manual in the prompt. Which manuals an agent has read is kept in its `data`
(saved with the chat): a restored chat's agents keep them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.run_context import RunContext

#: Tools whose whole manual stays in the system prompt: every turn ends with `response`.
ALWAYS = ("response",)
#: Tools whose line says all: their manual never takes its place (asking for manuals).
LINE_ONLY = ("manual",)
#: Where an agent's `data` keeps the tools whose manuals it has read.
READ = "manuals_read"


def file_of(name: str) -> str:
    return f"agent.system.tool.{name}.md"


def brief(ctx: RunContext, name: str) -> str:
    """The tool's line in the system prompt (without its name)."""
    text = ctx.read_prompt(file_of(name), brief=True).strip()
    full = ctx.read_prompt(file_of(name), brief=False).strip()
    if text != full:
        return text
    # A file that has no brief of its own: its first line of text.
    lines = [line for line in full.splitlines() if line.strip() and not line.startswith("#")]
    return lines[0].strip() if lines else ""


def manual(ctx: RunContext, name: str) -> str:
    """The tool's whole manual: methods, arguments, an example call."""
    return ctx.read_prompt(file_of(name), brief=False).strip()


def index(ctx: RunContext, tools: list[str]) -> list[str]:
    """The system prompt's part for `tools`: a line each (its brief's further lines, such
    as the profiles a delegation may name, under it), those the agent has read and the
    `ALWAYS` ones whole."""
    lines, whole = [], []
    for name in tools:
        if has_read(ctx, name):
            whole.append(manual(ctx, name))
            continue
        first, *rest = brief(ctx, name).splitlines() or [""]
        lines.append("\n".join([f"- `{name}`: {first}", *(f"  {line}" for line in rest)]))
    return ["\n".join(lines), *whole] if lines else whole


def has_read(ctx: RunContext, name: str) -> bool:
    return name in ALWAYS or name in ctx.data.get(READ, [])


def read(ctx: RunContext) -> tuple[str, ...]:
    """The tools whose manuals the agent has read (part of its prompt's cache key)."""
    return tuple(ctx.data.get(READ, ()))


def mark_read(ctx: RunContext, name: str) -> None:
    read = ctx.data.setdefault(READ, [])
    if name not in read:
        read.append(name)


def with_manual(ctx: RunContext, name: str, error: str) -> str:
    """`error` (a call of `name` whose arguments were wrong), saying that the tool's manual
    is in the agent's instructions from its next step on (the first time)."""
    if has_read(ctx, name) or not ctx.prompt_exists(file_of(name)):
        return error
    mark_read(ctx, name)
    return error + "\n" + ctx.read_prompt("fw.tool_manual.md", tool_name=name)


def after_first_call(ctx: RunContext, name: str) -> None:
    """The first call of `name` went through: its manual is in the prompt from now on."""
    if name not in LINE_ONLY and not has_read(ctx, name) and ctx.prompt_exists(file_of(name)):
        mark_read(ctx, name)
