"""The tool policy: which tool calls run, which wait for a person's yes, which are refused.

One list of rules (the `tool_rules` setting, environment `CADRE_TOOL_RULES`) covers every
tool, MCP tools included:

    [{"tool": "text_editor:write", "rule": "ask"},
     {"tool": "browser", "rule": "deny", "profile": "researcher"},
     {"tool": "mcp:github:create_issue", "rule": "ask", "project": "site"}]

A rule names a tool (`browser`), a tool's method (`browser:open`), an MCP server's tool
(`mcp:<server>:<tool>`), every tool of a server (`mcp:<server>`), every MCP tool (`mcp`)
or every tool (`*`). The most specific rule that matches a call wins: its tool part
first (a method over its tool over `*`), then a rule limited to a profile or a project over
one that is not (both over one). Among equally specific rules the strictest wins (deny,
then ask, then allow), so adding a rule never quietly loosens another of the same rank.
No rule: allow (what Cadre did before rules). The setting `code_exec_confirm` is the rule
`{"tool": "code_execution_tool", "rule": "ask"}`, kept as a setting of its own; a rule of
the list that names code_execution_tool itself outranks it (so "allow always" can be saved).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

Rule = Literal["allow", "ask", "deny"]
RULES: tuple[Rule, ...] = ("allow", "ask", "deny")
#: Higher is stricter: the tie-break between equally specific rules.
STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
#: What a tool name in a rule may look like: names, `:` between their parts, or `*`.
TOOL_PATTERN = r"^(\*|[A-Za-z0-9_.\-]+(:[A-Za-z0-9_.\-]+)*)$"


class ToolRule(BaseModel):
    """One rule of the policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1, max_length=200, pattern=TOOL_PATTERN)
    rule: Rule
    #: Only for agents of this profile (None: every profile).
    profile: str | None = Field(default=None, min_length=1, max_length=64)
    #: Only in chats of this project (None: in and outside every project).
    project: str | None = Field(default=None, min_length=1, max_length=64)

    @model_serializer(mode="wrap")
    def _without_nulls(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Saved as written: {"tool": ..., "rule": ...}, no "profile": null for every rule.
        return {key: value for key, value in handler(self).items() if value is not None}

    def same_place(self, other: ToolRule) -> bool:
        """Whether `other` is a rule for the same tool, profile and project."""
        return (self.tool, self.profile, self.project) == (other.tool, other.profile,
                                                           other.project)  # fmt: skip


#: The rule the setting `code_exec_confirm` stands for.
CONFIRM_CODE = ToolRule(tool="code_execution_tool", rule="ask")


def call_names(tool: str, method: str | None = None, mcp_server: str | None = None) -> list[str]:
    """The names rules may give a call, the most specific first: `browser:open`,
    `browser`, `*`; for the MCP tool `tool` of `mcp_server`: `mcp:<server>:<tool>`,
    `mcp:<server>`, `mcp`, `*`."""
    if mcp_server is not None:
        return [f"mcp:{mcp_server}:{tool}", f"mcp:{mcp_server}", "mcp", "*"]
    return ([f"{tool}:{method}"] if method else []) + [tool, "*"]


def matching(rules: Iterable[ToolRule], names: Sequence[str], profile: str,
             project: str | None) -> ToolRule | None:  # fmt: skip
    """The rule that decides a call known by `names` (most specific first) of an agent of
    `profile` in `project`; None when no rule matches."""
    best: tuple[int, int, int] | None = None
    found: ToolRule | None = None
    for rule in rules:
        if rule.tool not in names:
            continue
        if rule.profile is not None and rule.profile != profile:
            continue
        if rule.project is not None and rule.project != project:
            continue
        rank = (len(names) - names.index(rule.tool),
                (rule.profile is not None) + (rule.project is not None),
                STRICTNESS[rule.rule])  # fmt: skip
        if best is None or rank > best:
            best, found = rank, rule
    return found


def decide(rules: Iterable[ToolRule], names: Sequence[str], profile: str,
           project: str | None, confirm_code: bool = False) -> Rule:  # fmt: skip
    """allow, ask or deny for a call (see `matching`); `confirm_code`: the setting
    code_exec_confirm, one more rule."""
    found = matching(rules, names, profile, project)
    decided: Rule = found.rule if found is not None else "allow"
    if confirm_code and CONFIRM_CODE.tool in names:
        own = names.index(CONFIRM_CODE.tool)
        named = found is not None and names.index(found.tool) <= own
        if not named and STRICTNESS[decided] < STRICTNESS["ask"]:
            return "ask"
    return decided


def stricter(one: Rule, other: Rule) -> Rule:
    """The stricter of two decisions (deny, then ask, then allow)."""
    return one if STRICTNESS[one] >= STRICTNESS[other] else other


def with_rule(rules: Sequence[ToolRule], new: ToolRule) -> list[ToolRule]:
    """`rules` with `new` in place of the rule for the same tool, profile and project (at
    its place), or added at the end: a rule saved from an answer ("allow always") wins
    over the rule that asked, which an added rule of the same rank would not."""
    kept = [new if rule.same_place(new) else rule for rule in rules]
    return kept if any(rule.same_place(new) for rule in rules) else [*kept, new]
