"""Reading YAML and JSON that come from outside (skills, profiles, projects), within bounds.

A skill's `SKILL.md`, a profile's `agent.yaml` or `agent.json`, a project's
`settings.json` can be dropped in by a person, a zip, an Agent Zero import or
an agent. Read plainly, a few hundred bytes of such a file can stall the
server or bring down every discovery that reads it:

- YAML aliases: nine levels of `&a [...]` / `[*a, *a, ...]` stand for billions
  of values (a "billion laughs"); anything that walks or prints the tree
  (`str()` of a metadata value) runs for minutes and takes gigabytes.
- Nesting: a 100k-deep `[[[[...` raises RecursionError, which no `except
  ValueError` catches.
- Values Python refuses late: an integer of 5,000 digits, a date like
  `2024-13-01` raise a bare ValueError while the tree is built.

So aliases are refused outright rather than counted: the files read here are
a few short fields written by hand, where an alias saves nothing, and a tree
without aliases is never larger than its text, so every later walk of it is
bounded by the size limit. An anchor alone (`&a`) changes nothing and is
allowed. Nesting is refused past `MAX_DEPTH` before it is built (the check is
made while descending, so no recursion limit is reached), numbers past
`MAX_NUMBER_CHARS` characters are refused, and every other failure of the
parser or of building a value becomes one `DataRefused` (a ValueError) whose
text names the file, the line, and what to change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import Node, ScalarNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

#: Largest YAML text read (a skill's front matter, an agent.yaml: a few short fields).
MAX_YAML_CHARS = 64 * 1024
#: Largest file of this kind read at all (agent.yaml, agent.json, settings.json).
MAX_FILE_BYTES = 256 * 1024
#: Deepest nesting of lists and mappings (the deepest Cadre's own files go is 3).
MAX_DEPTH = 32
#: Longest number: past this, Python's int() refuses the text or takes long to print it.
MAX_NUMBER_CHARS = 64

try:  # libyaml's parser where it is built in: the pure-Python one took ~9 ms a skill
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml
    CParser = None


class DataRefused(ValueError):
    """Why a file from outside was not read, in words that say what to change."""


class _Bound(yaml.MarkedYAMLError):
    """A bound of ours was reached: `before` and `after` go around where it was."""

    def __init__(self, before: str, after: str, mark: Any) -> None:
        super().__init__(problem=before + after, problem_mark=mark)
        self.before, self.after = before, after


class _BoundedComposer(Composer):
    """Builds the node tree from the parser's events, refusing aliases and deep nesting.

    Put before the parser in the loader's bases so these methods, not libyaml's own
    (compiled, and expanding aliases), build the tree."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(AliasEvent):
            event = self.get_event()
            raise _Bound(
                f"uses a YAML alias, *{event.anchor} (",
                "): Cadre does not expand aliases in files from outside (a few lines of them"
                " can stand for billions of values); write the value out in full",
                event.start_mark,
            )
        if self._depth >= MAX_DEPTH:
            raise _Bound(
                f"nests lists or mappings deeper than {MAX_DEPTH} levels (",
                "): flatten it",
                self.peek_event().start_mark,
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _BoundedConstructor(SafeConstructor):
    """The safe constructor, with numbers bounded and Python's late refusals made YAML errors."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as exc:  # a month 13, say
            raise _Bound(
                "has a value that cannot be read (", f"): {exc}", node.start_mark
            ) from None

    def construct_yaml_int(self, node: ScalarNode) -> int:
        if len(node.value) > MAX_NUMBER_CHARS:
            raise _Bound(
                f"has a number of {len(node.value)} characters (",
                f"); at most {MAX_NUMBER_CHARS} are read: put it in quotes if it is text",
                node.start_mark,
            )
        return super().construct_yaml_int(node)


_BoundedConstructor.add_constructor("tag:yaml.org,2002:int", _BoundedConstructor.construct_yaml_int)


class _PureLoader(Reader, Scanner, Parser, _BoundedComposer, _BoundedConstructor, Resolver):
    """The loader where PyYAML is built without libyaml (as SafeLoader is made)."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        _BoundedComposer.__init__(self)
        _BoundedConstructor.__init__(self)
        Resolver.__init__(self)


_Loader: type[_PureLoader] | type[Any] = _PureLoader
if CParser is not None:

    class _LibyamlLoader(_BoundedComposer, CParser, _BoundedConstructor, Resolver):
        """libyaml's parser, with our composer in front of its own."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _BoundedComposer.__init__(self)
            _BoundedConstructor.__init__(self)
            Resolver.__init__(self)

    _Loader = _LibyamlLoader


def load_yaml(text: str, what: str, *, first_line: int = 1) -> Any:
    """The value of the YAML `text` (one document), read safely and within bounds.

    `what` names the text in errors ("agent.yaml", "SKILL.md's front matter");
    `first_line` is the file's line number of the text's first line."""
    if len(text) > MAX_YAML_CHARS:
        raise DataRefused(
            f"{what} is {len(text) // 1024} KB long; Cadre reads at most"
            f" {MAX_YAML_CHARS // 1024} KB of YAML: keep it to short fields"
        )
    loader = None
    try:
        loader = _Loader(text)  # the pure-Python reader checks the characters here
        return loader.get_single_data()
    except _Bound as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + first_line}, column {mark.column + 1}"
        raise DataRefused(f"{what} {exc.before}{where}{exc.after}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + first_line}, column {mark.column + 1})" if mark else ""
        # A reader's error says where in a second line of its own: the first says what.
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if problem == "exceeded maximum nesting depth":  # libyaml's own bound, met first
            raise DataRefused(
                f"{what} nests lists or mappings too deeply{where}: flatten it"
            ) from None
        raise DataRefused(f"{what} is not valid YAML{where}: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_json(text: str, what: str) -> Any:
    """The value of the JSON `text`; too deep a nesting is a DataRefused like a syntax error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataRefused(f"{what} is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    except RecursionError:
        raise DataRefused(f"{what} is nested too deeply to be read: flatten it") from None


def read_limited(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the file `path`, refused when larger than `limit` bytes (never read
    whole: only `limit` + 1 bytes are)."""
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise DataRefused(
            f"{path.name} is larger than {limit // 1024} KB, far more than such a file holds:"
            " shorten it"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataRefused(
            f"{path.name} is not UTF-8 text (byte {exc.start}): save it as UTF-8"
        ) from None
