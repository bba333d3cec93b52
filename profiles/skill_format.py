"""The open `SKILL.md` format: YAML front matter, then the skill's instructions.

A skill is a folder holding `SKILL.md` and any other files it needs
(scripts, references, templates). `SKILL.md` opens with a front matter block
between `---` lines: `name` and `description` are required; `license`,
`compatibility`, `metadata` (a mapping of texts) and `allowed-tools` (names
separated by spaces) are optional. The Markdown after the block is what an
agent reads when it loads the skill.

Reading is strict where a skill could not be used (no front matter, invalid
YAML, no name or description: a `SkillFormatError` saying what to fix) and
lenient where other tools differ: Agent Zero writes `version`, `author`,
`tags` and `enabled` at the top level, so unknown top-level values are kept
as metadata and `enabled: false` is honoured. A name that breaks the
format's rules (lowercase letters, digits, single hyphens, at most 64
characters, the same as its folder) is a warning, not a refusal: the skill
is known by its folder's name.

A SKILL.md comes from outside (a zip, a folder dropped into `usr/skills/`):
its front matter is read by profiles/bounded_load.py (no YAML aliases, bounded
size and nesting), and metadata values are cut to short texts, so neither
reading nor showing a skill can take more than its few kilobytes.
"""

from __future__ import annotations

import re
import reprlib
from dataclasses import dataclass, field

from profiles.bounded_load import DataRefused, load_yaml

#: The file that makes a folder a skill.
SKILL_FILE = "SKILL.md"
#: The format's limits (agentskills.io): a description longer than this is cut for the prompt.
NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
#: Longest metadata value kept (a version, an author, a few tags: short texts for the UI).
METADATA_VALUE_MAX = 200

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_DELIMITER = re.compile(r"^(?:---|\.\.\.)[ \t]*$")
_KNOWN = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
#: How a list or mapping given as a metadata value is shown: a few items of a few levels,
#: however large it is (the work is bounded by these, not by the value).
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxstring = 3, 10, 10, 60


class SkillFormatError(ValueError):
    """Why a SKILL.md cannot be used, in words that say what to change."""


@dataclass(frozen=True)
class SkillHead:
    """What `SKILL.md` says of its skill, and its instructions."""

    name: str
    description: str
    body: str
    license: str = ""
    compatibility: str = ""
    allowed_tools: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    #: What is off but does not stop the skill from working (shown in the UI).
    warnings: tuple[str, ...] = ()


def name_problem(name: str) -> str:
    """Why `name` breaks the format's naming rule ("" when it keeps it)."""
    if len(name) > NAME_MAX:
        return f"the name is {len(name)} characters long; the format allows {NAME_MAX}"
    if not _NAME.match(name):
        return (
            f"the name {name!r} should be lowercase letters and digits joined by single"
            " hyphens, like 'csv-data'"
        )
    return ""


def split_front_matter(text: str) -> tuple[str, str]:
    """(front matter, body) of a SKILL.md's text; refused when it has no front matter."""
    lines = text.removeprefix("\ufeff").splitlines()
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start == len(lines) or lines[start].strip() != "---":
        raise SkillFormatError(
            f"{SKILL_FILE} must start with a front matter block: a line '---', then"
            " 'name: ...' and 'description: ...', then another '---'"
        )
    for end in range(start + 1, len(lines)):
        if _DELIMITER.match(lines[end]):
            return "\n".join(lines[start + 1 : end]), "\n".join(lines[end + 1 :]).strip()
    raise SkillFormatError(f"{SKILL_FILE}'s front matter is not closed: add a line '---' after it")


def _text(data: dict[object, object], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str | int | float):
        raise SkillFormatError(f"{SKILL_FILE}: {key} must be text, not a {type(value).__name__}")
    return str(value).strip()


def _short_text(value: object) -> str:
    """A metadata value as text: a scalar as written, a list or mapping abridged."""
    if isinstance(value, str | int | float | bool):
        return str(value)
    return _SHORT.repr(value)


def _metadata(data: dict[object, object]) -> tuple[dict[str, str], list[str]]:
    """`metadata` plus the plain top-level values other tools write (version, author...),
    each cut to `METADATA_VALUE_MAX` characters, and a warning for each value cut."""
    found = {
        str(key): _short_text(value)
        for key, value in data.items()
        if key not in _KNOWN and key != "enabled" and isinstance(value, str | int | float | bool)
    }
    given = data.get("metadata")
    if given is not None and not isinstance(given, dict):
        raise SkillFormatError(f"{SKILL_FILE}: metadata must be a mapping of names to texts")
    found.update({str(k): _short_text(v) for k, v in (given or {}).items() if v is not None})
    warnings = []
    for key, value in found.items():
        if len(value) > METADATA_VALUE_MAX:
            found[key] = value[: METADATA_VALUE_MAX - 1] + "…"
            warnings.append(f"metadata {key} is cut to {METADATA_VALUE_MAX} characters")
    return found, warnings


def _tools(data: dict[object, object]) -> tuple[str, ...]:
    value = data.get("allowed-tools")
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)  # a list, as some tools write it
    raise SkillFormatError(f"{SKILL_FILE}: allowed-tools must be tool names separated by spaces")


def parse_skill(text: str, folder: str) -> SkillHead:
    """The skill `text` (a SKILL.md) describes; `folder` is the name of the folder holding it."""
    front, body = split_front_matter(text)
    try:
        # Line numbers of the file: the front matter starts on its second line.
        data = load_yaml(front, f"{SKILL_FILE}'s front matter", first_line=2)
    except DataRefused as exc:
        raise SkillFormatError(str(exc)) from None
    if not isinstance(data, dict):
        raise SkillFormatError(f"{SKILL_FILE}'s front matter must be 'name: ...' lines, not a list")
    name, description = _text(data, "name"), _text(data, "description")
    if not name:
        raise SkillFormatError(
            f"{SKILL_FILE} has no name: add 'name: {folder}' to its front matter"
        )
    if not description:
        raise SkillFormatError(
            f"{SKILL_FILE} has no description: add 'description: what it does and when to use it'"
        )
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise SkillFormatError(f"{SKILL_FILE}: enabled must be true or false, not {enabled!r}")
    warnings = [problem for problem in (name_problem(name),) if problem]
    if name != folder:
        warnings.append(f"its name {name!r} differs from its folder; it is known as {folder!r}")
    if len(description) > DESCRIPTION_MAX:
        warnings.append(
            f"the description is {len(description)} characters long; agents see its first"
            f" {DESCRIPTION_MAX}"
        )
    compatibility = _text(data, "compatibility")
    if len(compatibility) > COMPATIBILITY_MAX:
        warnings.append(f"compatibility is longer than {COMPATIBILITY_MAX} characters")
    metadata, cut = _metadata(data)
    return SkillHead(
        name=name,
        description=description,
        body=body,
        license=_text(data, "license"),
        compatibility=compatibility,
        allowed_tools=_tools(data),
        metadata=metadata,
        enabled=enabled,
        warnings=(*warnings, *cut),
    )
