"""Find and render the prompt files that hold every text the model sees.

Prompts live as markdown files in an ordered list of folders, first wins, e.g.
``[usr/agents/<p>/prompts, agents/<p>/prompts, prompts/]``, so a profile
overrides single files by name. `PromptLoader` looks files up through those
folders and renders them with a deliberately tiny, strict template syntax:

- ``{{name}}`` / ``{{ name }}``: ``str()`` of the variable;
- ``{{include "file.md"}}``: another prompt file, looked up through the same
  folders and rendered with the same variables;
- ``{{if name}}…{{else}}…{{endif}}`` (nestable, ``{{if not name}}`` too):
  Python truthiness of the variable;
- ``{{ns.key}}`` and ``{{if ns.key}}``: the value ``key`` of the namespace ``ns``
  (one the loader was given, such as ``ctx``: a chat's context variables). A
  namespace is read from the render's ``context`` (the agent), so a render
  inside ``file_snapshot.snapshot()`` records each value it read, and a prompt
  built from them is rebuilt once one changes. A key the namespace lacks is a
  `PromptError` in ``{{ns.key}}`` and false in ``{{if ns.key}}`` (guard an
  optional one with it).

An unknown variable, an unbalanced ``{{if}}`` or an include cycle raises
`PromptError`; a template never silently leaves a ``{{tag}}`` in place. An
include of a file no folder has raises too, unless the loader was made with
``missing_includes="warn"`` (an agent's: a profile written for Agent Zero
includes files only Agent Zero ships): then it renders as nothing, with one
warning in the log per including file and name (`missing_includes` lists them
for a profile's status). Only
``{{`` followed by optional spaces and an identifier, ``include "``, ``if``,
``else`` or ``endif`` and closed by ``}}`` is a tag, so JSON examples such as
``{"tool_args": {"text": "hi"}}`` pass through untouched.

A block tag (``if``/``else``/``endif``) alone on its line removes that whole
line, as Mustache's standalone tags do, so conditional sections leave no blank
lines behind. A file's single final newline is its terminator, not content
(Jinja's default): ``{{include "x.md"}}`` does not add a line break of its own.

``foo.md`` may have a companion ``foo.py`` in the same folder that defines
``get_variables(context, **variables) -> dict``; its result is merged over the
caller's variables before ``foo.md`` is rendered; one in a person's own folder
(helpers/folders.py `in_personal_space`) is never loaded: the prompt renders without
it, and the log says so once (profiles/personal.py). Files and companions are
cached by path and revalidated by ``stat`` so edits under ``usr/`` are seen
without a restart while repeated renders stay cheap.

Why one module past 400 lines (docs/architecture.md, "Module size"): it is one
small template language: the parser's node types, the strict scope and the
renderer share private types and the rules above, and the cache serves only
them. Split, each part would import the others' internals.

Inside ``with file_snapshot.snapshot():`` each folder is listed and each
file stat'ed once, however many lookups ask (see `helpers.file_snapshot`).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import logging
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from helpers import file_snapshot
from helpers.errors import PromptError
from helpers.folders import in_personal_space
from profiles.personal import NO_PYTHON

__all__ = ["PromptCache", "PromptLoader"]

logger = logging.getLogger(__name__)

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
#: A variable, or a namespace's key (`ctx.name`).
_NAME = rf"{_IDENT}(?:\.{_IDENT})?"
# Alternatives are tried in order and the whole tag must close with `}}`, so
# `{{elsewhere}}` falls through to a variable and `{{"a": 1}}` is no tag at all.
_TAG = re.compile(
    r"\{\{[ \t]*(?:"
    r'include[ \t]+"(?P<include>[^"\n]*)"'
    rf"|if[ \t]+(?P<negate>not[ \t]+)?(?P<cond>{_NAME})"
    r"|(?P<else>else)"
    r"|(?P<endif>endif)"
    rf"|(?P<var>{_NAME})"
    r")[ \t]*\}\}"
)

_Stamp = file_snapshot.FileStamp  # changes whenever the file is edited or replaced
#: (folders, including file, missing name) already warned of: one log line each, not one
#: per render (a system prompt is built again for every new agent).
_warned: set[tuple[tuple[Path, ...], str, str]] = set()
WARNED_KEPT = 1024
GetVariables = Callable[..., object]
#: A namespace's values for a render's `context` (the agent it renders for).
Namespace = Callable[[object], Mapping[str, object]]


# --- parsed template -------------------------------------------------------


@dataclass(frozen=True)
class _Text:
    text: str


@dataclass(frozen=True)
class _Var:
    name: str
    line: int


@dataclass(frozen=True)
class _Include:
    name: str
    line: int


@dataclass(frozen=True)
class _If:
    name: str
    negate: bool
    line: int
    then: tuple[_Node, ...]
    otherwise: tuple[_Node, ...]


_Node = _Text | _Var | _Include | _If


@dataclass
class _OpenIf:
    """An `{{if}}` whose `{{endif}}` the parser has not reached yet."""

    name: str
    negate: bool
    line: int
    then: list[_Node] = field(default_factory=list)
    otherwise: list[_Node] | None = None

    @property
    def body(self) -> list[_Node]:
        return self.then if self.otherwise is None else self.otherwise

    def close(self) -> _If:
        return _If(self.name, self.negate, self.line, tuple(self.then), tuple(self.otherwise or ()))


def _check_name(name: str, what: str = "prompt name") -> str:
    """Refuse anything but a plain file name: names can come from user-dropped folders."""
    if not name or name == "." or ".." in name or any(c in name for c in "/\\\0"):
        raise PromptError(f"invalid {what} {name!r}: expected a plain file name like 'x.md'")
    return name


def _standalone(text: str, start: int, end: int, pos: int) -> tuple[int, int]:
    """Span to consume for a block tag: its whole line if it stands alone, else the tag."""
    line_start = text.rfind("\n", 0, start) + 1
    # `line_start < pos` means another tag shares the line, so it is not standalone.
    if line_start < pos or text[line_start:start].strip(" \t"):
        return start, end
    after = end
    while after < len(text) and text[after] in " \t":
        after += 1
    if after == len(text):
        return line_start, after
    for newline in ("\n", "\r\n"):
        if text.startswith(newline, after):
            return line_start, after + len(newline)
    return start, end


class _Parser:
    """Builds the node tree of one template; structural errors are found here, once."""

    def __init__(self, text: str, source: str) -> None:
        self._text = text
        self._source = source
        self._root: list[_Node] = []
        self._stack: list[_OpenIf] = []
        self._pos = 0  # end of what has been consumed so far

    def parse(self) -> tuple[_Node, ...]:
        for match in _TAG.finditer(self._text):
            self._tag(match, self._text.count("\n", 0, match.start()) + 1)
        if self._stack:
            opened = self._stack[-1]
            raise self._error(
                "unclosed {{if " + opened.name + "}}: add {{endif}}", opened.line, "opened at line"
            )
        if self._pos < len(self._text):
            self._root.append(_Text(self._text[self._pos :]))
        return tuple(self._root)

    def _body(self) -> list[_Node]:
        return self._stack[-1].body if self._stack else self._root

    def _error(self, message: str, line: int, at: str = "line") -> PromptError:
        return PromptError(f"prompt {self._source!r}: {message} ({at} {line})")

    def _tag(self, match: re.Match[str], line: int) -> None:
        start, end = match.start(), match.end()
        if match["cond"] or match["else"] or match["endif"]:
            start, end = _standalone(self._text, start, end, self._pos)
        if start > self._pos:
            self._body().append(_Text(self._text[self._pos : start]))
        self._pos = end
        if match["var"]:
            self._body().append(_Var(match["var"], line))
        elif match["include"] is not None:
            try:
                self._body().append(_Include(_check_name(match["include"], "include"), line))
            except PromptError as exc:
                raise self._error(str(exc), line) from None
        elif match["cond"]:
            self._stack.append(_OpenIf(match["cond"], bool(match["negate"]), line))
        elif match["else"]:
            if not self._stack:
                raise self._error("{{else}} without {{if}}", line)
            if self._stack[-1].otherwise is not None:
                raise self._error("second {{else}} for {{if " + self._stack[-1].name + "}}", line)
            self._stack[-1].otherwise = []
        else:
            if not self._stack:
                raise self._error("{{endif}} without {{if}}", line)
            closed = self._stack.pop().close()
            self._body().append(closed)


# --- caches ----------------------------------------------------------------


def _still_says(
    get_variables: GetVariables, context: object, variables: Mapping[str, object], said: object
) -> bool:
    try:
        return bool(get_variables(context, **variables) == said)
    except Exception:  # noqa: BLE001 - a companion failing now: build again, and say why then
        return False


def _stamp(path: Path) -> _Stamp | None:
    return file_snapshot.regular_file(path)


def _read_template(path: Path) -> str:
    try:
        # Universal newlines: a prompt saved with CRLF renders like one saved with LF.
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"prompt {path.name!r}: cannot read {path}: {exc}") from exc
    return text.removesuffix("\n")


#: Companions in a person's own folder already said to be left out (one log line each).
_left_out_said: set[Path] = set()


def _left_out(path: Path) -> None:
    if path not in _left_out_said and len(_left_out_said) < WARNED_KEPT:
        _left_out_said.add(path)
        logger.warning("prompt companion %s is not run: %s", path, NO_PYTHON)


def _load_companion(path: Path) -> GetVariables:
    module_name = "_cadre_prompt_companion_" + re.sub(r"\W", "_", str(path))
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None:
        raise PromptError(f"prompt companion '{path}': not loadable as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        # Compile the source ourselves instead of `spec.loader.exec_module`: the
        # bytecode cache keys on whole-second mtime and size, so an edit within
        # the same second could run a stale .pyc, and it would also litter
        # __pycache__ folders into user prompt folders.
        code = compile(path.read_bytes(), str(path), "exec")
        # Registered while the body runs: dataclasses and typing look the
        # module up in sys.modules by name.
        sys.modules[module_name] = module
        exec(code, module.__dict__)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise PromptError(
            f"prompt companion '{path}': failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    get_variables = getattr(module, "get_variables", None)
    if not callable(get_variables):
        raise PromptError(
            f"prompt companion '{path}': must define get_variables(context, **variables) -> dict"
        )
    logger.debug("loaded prompt companion %s", path)
    return get_variables


@dataclass
class PromptCache:
    """Parsed prompt files and loaded companions, keyed by path, revalidated by stat.

    One cache can be shared by the loaders of several profiles, since keys are
    paths. Entries are replaced whole, so concurrent use can at worst load a
    file twice. It holds at most `MAX_ENTRIES` files of each kind (then starts
    over): prompt files are few, but a long-lived cache must not grow without end.
    """

    MAX_ENTRIES: ClassVar[int] = 2048

    _templates: dict[Path, tuple[_Stamp, tuple[_Node, ...]]] = field(default_factory=dict)
    _companions: dict[Path, tuple[_Stamp, GetVariables]] = field(default_factory=dict)

    def template(self, path: Path) -> tuple[_Node, ...]:
        # Stat before reading: if the file changes in between, the stored stamp
        # is the older one and the next render reloads, never the reverse.
        stamp = _stamp(path)
        cached = self._templates.get(path)
        if stamp is not None and cached is not None and cached[0] == stamp:
            return cached[1]
        nodes = _Parser(_read_template(path), path.name).parse()
        if stamp is not None and file_snapshot.settled(stamp):
            if len(self._templates) >= self.MAX_ENTRIES:
                self._templates.clear()
            self._templates[path] = (stamp, nodes)
        return nodes

    def companion(self, path: Path) -> GetVariables | None:
        """The companion's `get_variables`, or None when there is no companion file."""
        stamp = _stamp(path)
        if stamp is None:
            self._companions.pop(path, None)
            return None
        if in_personal_space(path):  # a person's own Python is not run on the server
            _left_out(path)
            return None
        cached = self._companions.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        get_variables = _load_companion(path)
        if file_snapshot.settled(stamp):
            if len(self._companions) >= self.MAX_ENTRIES:
                self._companions.clear()
            self._companions[path] = (stamp, get_variables)
        return get_variables


# --- loader ----------------------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """What rendering one file needs to know."""

    source: str  # the file being rendered, for error messages
    chain: tuple[str, ...]  # include chain, outermost first, for cycle detection
    variables: Mapping[str, object]
    context: object

    def where(self, line: int) -> str:
        """`line N`, plus the including file when there is one."""
        if len(self.chain) > 1:
            return f"line {line}, included from {self.chain[-2]!r}"
        return f"line {line}"


class PromptLoader:
    """Look prompt files up through ordered folders (first wins) and render them."""

    def __init__(
        self,
        folders: Iterable[Path],
        cache: PromptCache | None = None,
        namespaces: Mapping[str, Namespace] | None = None,
        missing_includes: Literal["error", "warn"] = "error",
    ) -> None:
        # Folders are checked at lookup time, not here, so a profile folder
        # created later (e.g. under usr/agents/) is used without a restart.
        self._folders = tuple(Path(folder) for folder in folders)
        self._cache = cache if cache is not None else PromptCache()
        self._missing_includes = missing_includes
        #: What `{{ns.key}}` reads: name → the namespace's values for a render's context.
        self._namespaces = dict(namespaces or {})

    @property
    def folders(self) -> tuple[Path, ...]:
        return self._folders

    def find(self, name: str) -> Path:
        """Path of the first folder's `name`; PromptError listing the folders if none has it."""
        path = self._locate(name)
        if path is None:
            raise PromptError(self._not_found(name))
        return path

    def exists(self, name: str) -> bool:
        return self._locate(name) is not None

    def names(self, pattern: str) -> list[str]:
        """Distinct file names matching the glob `pattern` across all folders, sorted."""
        _check_name(pattern, "name pattern")
        found: set[str] = set()
        for folder in self._folders:
            if not folder.is_dir():
                continue
            found.update(
                entry.name
                for entry in folder.iterdir()
                if entry.is_file() and fnmatch.fnmatchcase(entry.name, pattern)
            )
        return sorted(found)

    def render(self, name: str, /, context: object = None, **variables: object) -> str:
        """Render prompt file `name`; `context` is handed to companions untouched."""
        return self._render_file(self.find(name), name, context, variables, chain=()).strip()

    def missing_includes(self, name: str) -> list[str]:
        """The files `name` includes (in any branch of its `{{if}}`s) that no folder has."""
        missing: list[str] = []
        pending = list(self._cache.template(self.find(name)))
        while pending:
            node = pending.pop()
            if isinstance(node, _If):
                pending += [*node.then, *node.otherwise]
            elif isinstance(node, _Include) and self._locate(node.name) is None:
                missing.append(node.name)
        return sorted(set(missing))

    # --- internals ---

    def _locate(self, name: str) -> Path | None:
        _check_name(name)
        return next((folder / name for folder in self._folders if _stamp(folder / name)), None)

    def _not_found(self, name: str) -> str:
        searched = ", ".join(str(folder) for folder in self._folders) or "(no folders)"
        return f"prompt file {name!r} not found in: {searched}"

    def _render_file(
        self,
        path: Path,
        name: str,
        context: object,
        variables: Mapping[str, object],
        chain: tuple[str, ...],
    ) -> str:
        if name in chain:
            raise PromptError(f"prompt include cycle: {' -> '.join((*chain, name))}")
        nodes = self._cache.template(path)
        if path.suffix == ".md":
            variables = self._with_companion(path.with_suffix(".py"), context, variables)
        return self._render_nodes(nodes, _Scope(name, (*chain, name), variables, context))

    def _with_companion(
        self, path: Path, context: object, variables: Mapping[str, object]
    ) -> Mapping[str, object]:
        get_variables = self._cache.companion(path)
        if get_variables is None:
            return variables
        try:
            extra = get_variables(context, **variables)
        except Exception as exc:
            raise PromptError(
                f"prompt companion '{path}': get_variables failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(extra, dict):
            raise PromptError(
                f"prompt companion '{path}': get_variables must return a dict, "
                f"got {type(extra).__name__}"
            )
        if bad_keys := [key for key in extra if not isinstance(key, str)]:
            raise PromptError(
                f"prompt companion '{path}': get_variables must return a dict with str keys, "
                f"got {bad_keys!r}"
            )
        seen = file_snapshot.current()
        if seen is not None:
            # What the companion says is an input of whatever this render builds; asked
            # again for another subject (an agent given a prompt built for another), it
            # must say the same for that one.
            seen.depends_on(
                lambda subject: _still_says(
                    get_variables, context if subject is None else subject, variables, extra
                )
            )
        return {**variables, **extra}

    def _lookup(self, name: str, line: int, scope: _Scope, *, condition: bool = False) -> object:
        if "." in name:
            return self._lookup_key(name, line, scope, condition)
        try:
            return scope.variables[name]
        except KeyError:
            known = ", ".join(sorted(scope.variables)) or "none"
            raise PromptError(
                f"prompt {scope.source!r}: unknown variable {name!r} "
                f"({scope.where(line)}; known variables: {known})"
            ) from None

    def _lookup_key(self, name: str, line: int, scope: _Scope, condition: bool) -> object:
        """`ns.key`: the key's value, recorded as an input of the snapshot's result; a key the
        namespace lacks is None in a condition and a PromptError in text."""
        space, key = name.split(".")
        read = self._namespaces.get(space)
        if read is None:
            known = ", ".join(sorted(self._namespaces)) or "none"
            raise PromptError(
                f"prompt {scope.source!r}: unknown namespace {space!r} in {{{{{name}}}}} "
                f"({scope.where(line)}; known namespaces: {known})"
            )
        value = read(scope.context).get(key)
        seen = file_snapshot.current()
        if seen is not None:
            # Asked for another agent (a prompt built for one serves another), the value
            # must be the same in that agent's namespace.
            context = scope.context
            seen.depends_on(
                lambda subject: read(context if subject is None else subject).get(key) == value
            )
        if value is None and not condition:
            raise PromptError(
                f"prompt {scope.source!r}: {{{{{name}}}}} is not set ({scope.where(line)}): "
                f"set {key!r}, or write {{{{if {name}}}}}…{{{{endif}}}} around it"
            )
        return value

    def _render_nodes(self, nodes: Iterable[_Node], scope: _Scope) -> str:
        parts: list[str] = []
        for node in nodes:
            if isinstance(node, _Text):
                parts.append(node.text)
            elif isinstance(node, _Var):
                parts.append(str(self._lookup(node.name, node.line, scope)))
            elif isinstance(node, _If):
                # Only the taken branch is rendered, so a variable or include
                # used only under a false condition need not exist (as in Jinja).
                value = self._lookup(node.name, node.line, scope, condition=True)
                taken = bool(value) != node.negate
                parts.append(self._render_nodes(node.then if taken else node.otherwise, scope))
            else:
                parts.append(self._render_include(node, scope))
        return "".join(parts)

    def _render_include(self, node: _Include, scope: _Scope) -> str:
        path = self._locate(node.name)
        if path is None:
            # Name the file holding the tag, or the reader cannot tell where it is.
            problem = f"prompt {scope.source!r}: {self._not_found(node.name)} "
            problem += f"({scope.where(node.line)})"
            if self._missing_includes == "error":
                raise PromptError(problem)
            key = (self._folders, scope.source, node.name)
            if key not in _warned:
                if len(_warned) >= WARNED_KEPT:  # folders come from outside: stay bounded
                    _warned.clear()
                _warned.add(key)
                logger.warning("%s; it renders as nothing", problem)
            return ""
        return self._render_file(path, node.name, scope.context, scope.variables, scope.chain)
