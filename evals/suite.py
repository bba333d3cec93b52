"""An evaluation suite: a YAML file of tasks, each a message, optional files for the work folder
and checks on the outcome. Read with `load_suite`; whatever is wrong with the file is a
`SuiteError` in plain words naming the task and the line.

    tasks:
      - name: capital
        message: What is the capital of France?
        files: {notes.txt: "some text"}          # optional: laid in the work folder first
        checks:
          - contains: Paris                      # the answer holds it (ignoring case)
          - regex: "\\bParis\\b"                  # the answer matches (Python's re, searched)
          - file: notes.txt                      # a file in the work folder exists...
            contains: text                       # ...and holds this (optional)
          - command: "test -f notes.txt"         # a shell command in the work folder...
            exit_code: 0                         # ...exits with this (default 0)
          - tool_called: text_editor             # a tool was called (`text_editor:write` too)
          - tool_not_called: code_execution_tool # a tool was not called
          - max_calls: 5                         # at most this many model calls
          - max_cost: 0.01                       # at most this many US dollars
          - judge: The answer names Paris and nothing else.  # the utility model grades it
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

#: Longest suite file read (a suite is a handful of tasks, not a data set).
MAX_SUITE_BYTES = 1_000_000


class SuiteError(ValueError):
    """A suite that cannot be run, and why, in plain words."""


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def kind(self) -> str:
        return KIND_OF[type(self)]

    def describe(self) -> str:
        """The check as a person reads it in a report."""
        raise NotImplementedError


class Contains(_Check):
    contains: str = Field(min_length=1)

    def describe(self) -> str:
        return f"answer contains {self.contains!r}"


class Regex(_Check):
    regex: str = Field(min_length=1)

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    def describe(self) -> str:
        return f"answer matches /{self.regex}/"


class FileHas(_Check):
    file: str = Field(min_length=1)
    contains: str | None = None

    @field_validator("file")
    @classmethod
    def _inside(cls, value: str) -> str:
        return _relative(value)

    def describe(self) -> str:
        held = f" containing {self.contains!r}" if self.contains is not None else ""
        return f"file {self.file} exists{held}"


class Command(_Check):
    command: str = Field(min_length=1)
    exit_code: int = 0

    def describe(self) -> str:
        return f"`{self.command}` exits with {self.exit_code}"


class ToolCalled(_Check):
    tool_called: str = Field(min_length=1)

    def describe(self) -> str:
        return f"tool {self.tool_called} was called"


class ToolNotCalled(_Check):
    tool_not_called: str = Field(min_length=1)

    def describe(self) -> str:
        return f"tool {self.tool_not_called} was not called"


class MaxCalls(_Check):
    max_calls: int = Field(ge=0)

    def describe(self) -> str:
        return f"at most {self.max_calls} model calls"


class MaxCost(_Check):
    max_cost: float = Field(ge=0)

    def describe(self) -> str:
        return f"cost at most {self.max_cost:g} USD"


class Judge(_Check):
    judge: str = Field(min_length=1)

    def describe(self) -> str:
        return f"judge: {self.judge}"


Check = (
    Contains | Regex | FileHas | Command | ToolCalled | ToolNotCalled | MaxCalls | MaxCost | Judge
)
#: Each check's kind: the key that names it in a suite.
KIND_OF: dict[type, str] = {
    Contains: "contains", Regex: "regex", FileHas: "file", Command: "command",
    ToolCalled: "tool_called", ToolNotCalled: "tool_not_called", MaxCalls: "max_calls",
    MaxCost: "max_cost", Judge: "judge",
}  # fmt: skip
#: The key a check is told by, in the order they are tried (`file` before `contains`).
_BY_KEY = sorted(KIND_OF.items(), key=lambda pair: pair[1] != "file")


def _relative(value: str) -> str:
    """A path inside the work folder: relative, without `..`."""
    path = PurePosixPath(value.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"{value!r} must be a path inside the work folder (relative, no '..')")
    return str(path)


def _check_of(raw: Any) -> Check:
    if not isinstance(raw, dict):
        raise ValueError("a check is a mapping such as {contains: Paris}")
    for cls, key in _BY_KEY:
        if key in raw:
            return cls.model_validate(raw)
    kinds = ", ".join(KIND_OF.values())
    raise ValueError(f"unknown check {sorted(map(str, raw))}: use one of {kinds}")


class Task(BaseModel):
    """One task: the message (or messages, sent one after the other in the same chat), the
    files laid in the work folder first, and the checks its outcome must pass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=200)
    message: str | list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    files: dict[str, str] = Field(default_factory=dict)
    checks: list[Annotated[Check, Field()]] = Field(min_length=1)

    @field_validator("checks", mode="before")
    @classmethod
    def _checks(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        checks = []
        for number, item in enumerate(value, 1):
            try:
                checks.append(item if isinstance(item, _Check) else _check_of(item))
            except ValidationError as exc:
                raise ValueError(f"check {number}: {_first_problem(exc)}") from exc
            except ValueError as exc:
                raise ValueError(f"check {number}: {exc}") from exc
        return checks

    @field_validator("files")
    @classmethod
    def _files(cls, value: dict[str, str]) -> dict[str, str]:
        return {_relative(path): content for path, content in value.items()}

    @property
    def messages(self) -> list[str]:
        return [self.message] if isinstance(self.message, str) else list(self.message)


class Suite(BaseModel):
    """A suite's tasks (names unique), with its name (the file's, unless it says one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: str = ""
    tasks: list[Task] = Field(min_length=1)

    @field_validator("tasks")
    @classmethod
    def _unique(cls, tasks: list[Task]) -> list[Task]:
        seen: set[str] = set()
        for task in tasks:
            if task.name in seen:
                raise ValueError(f"two tasks are named {task.name!r}: give each its own name")
            seen.add(task.name)
        return tasks


def load_suite(path: Path) -> Suite:
    """The suite in `path`; SuiteError saying what is wrong (and where) otherwise."""
    try:
        if path.stat().st_size > MAX_SUITE_BYTES:
            raise SuiteError(f"{path} is over {MAX_SUITE_BYTES // 1000} KB: not a suite")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read the suite {path}: {exc}") from exc
    suite = parse_suite(text, str(path))
    return suite if suite.name else suite.model_copy(update={"name": path.stem})


def parse_suite(text: str, source: str = "the suite") -> Suite:
    """The suite in `text` (from `source`, named in errors)."""
    try:
        data = yaml.safe_load(text)
        tree = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SuiteError(f"{source} is not valid YAML{where}: {problem}") from exc
    if not isinstance(data, dict) or "tasks" not in data:
        raise SuiteError(f"{source} must be a mapping with a `tasks:` list (see the README)")
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        raise SuiteError(_explain(exc, data, tree, source)) from exc


def _first_problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    if first["type"] == "extra_forbidden":
        return f"`{field}` is not a known field of this check"
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"`{field}`: {message}" if field else message


def _explain(exc: ValidationError, data: Any, tree: yaml.Node | None, source: str) -> str:
    """The first problem of `exc` in plain words: which task, which check, which line."""
    first = exc.errors()[0]
    loc = [part for part in first["loc"] if not (isinstance(part, str) and "[" in part)]
    where: list[str] = []
    if len(loc) >= 2 and loc[0] == "tasks" and isinstance(loc[1], int):
        task = data["tasks"][loc[1]] if loc[1] < len(data.get("tasks") or []) else None
        name = task.get("name") if isinstance(task, dict) else None
        where.append(f"task {loc[1] + 1}" + (f" ({name!r})" if name else ""))
        if len(loc) >= 4 and loc[2] == "checks" and isinstance(loc[3], int):
            where.append(f"check {loc[3] + 1}")
        elif len(loc) >= 3:
            where.append(f"field `{loc[2]}`")
    elif loc:
        where.append(f"field `{loc[0]}`")
    message = str(first["msg"]).removeprefix("Value error, ")
    check = re.match(r"check (\d+): ", message)
    if check and loc[-1:] == ["checks"]:  # a check's own problem: point at that check
        where[-1] = f"check {check.group(1)}"
        message = message[check.end() :]
        loc = [*loc, int(check.group(1)) - 1]
    line = _line_of(tree, loc)
    at = f" (line {line})" if line else ""
    if first["type"] == "missing":
        message = f"`{loc[-1]}` is missing"
    elif first["type"] == "extra_forbidden":
        message = f"`{loc[-1]}` is not a known field"
    elif first["type"] == "too_short":
        message = f"`{loc[-1]}` needs at least one entry"
    return f"{source}: {', '.join(where) or 'the suite'}{at}: {message}"


def _line_of(tree: yaml.Node | None, loc: list[Any]) -> int | None:
    """The line (1-based) of the deepest node `loc` reaches in the composed YAML."""
    node, line = tree, None
    for part in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            node = None
    if node is not None:
        line = node.start_mark.line + 1
    return line
