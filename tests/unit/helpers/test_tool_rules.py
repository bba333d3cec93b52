"""The tool policy's rules (helpers/tool_rules.py): which rule decides a call, and the
setting `tool_rules` read from the environment (`CADRE_TOOL_RULES`)."""

from __future__ import annotations

import json

import pytest

from helpers.errors import UserError
from helpers.settings import load_settings
from helpers.tool_rules import ToolRule, call_names, decide, with_rule


def rules(*entries: dict) -> list[ToolRule]:
    return [ToolRule.model_validate(entry) for entry in entries]


WRITE = call_names("text_editor", "write")
OPEN = call_names("browser", "open")
ADD = call_names("add", mcp_server="calc")
CODE = call_names("code_execution_tool")


def test_names_a_call_goes_by_most_specific_first():
    assert WRITE == ["text_editor:write", "text_editor", "*"]
    assert call_names("response") == ["response", "*"]
    assert ADD == ["mcp:calc:add", "mcp:calc", "mcp", "*"]


def test_no_rule_allows_as_before():
    assert decide([], WRITE, "default", None) == "allow"
    assert decide(rules({"tool": "browser", "rule": "deny"}), WRITE, "default", None) == "allow"


def test_a_method_outranks_its_tool_and_a_tool_outranks_every_tool():
    policy = rules({"tool": "*", "rule": "deny"}, {"tool": "text_editor", "rule": "ask"},
                   {"tool": "text_editor:write", "rule": "allow"})  # fmt: skip
    assert decide(policy, WRITE, "default", None) == "allow"
    assert decide(policy, call_names("text_editor", "read"), "default", None) == "ask"
    assert decide(policy, OPEN, "default", None) == "deny"


def test_mcp_rules_by_tool_server_and_all():
    policy = rules({"tool": "mcp", "rule": "deny"}, {"tool": "mcp:calc", "rule": "ask"},
                   {"tool": "mcp:calc:add", "rule": "allow"})  # fmt: skip
    assert decide(policy, ADD, "default", None) == "allow"
    assert decide(policy, call_names("sub", mcp_server="calc"), "default", None) == "ask"
    assert decide(policy, call_names("add", mcp_server="other"), "default", None) == "deny"
    # An MCP rule never reaches a tool of Cadre's own by the same name.
    assert decide(policy, call_names("add"), "default", None) == "allow"


def test_a_rule_for_a_profile_or_project_outranks_one_for_all_of_the_same_tool():
    policy = rules(
        {"tool": "browser:open", "rule": "ask"},
        {"tool": "browser:open", "rule": "allow", "profile": "researcher"},
        {"tool": "browser:open", "rule": "deny", "project": "bank"},
        {"tool": "browser:open", "rule": "allow", "profile": "researcher", "project": "bank"},
    )
    assert decide(policy, OPEN, "default", None) == "ask"
    assert decide(policy, OPEN, "researcher", None) == "allow"
    assert decide(policy, OPEN, "default", "bank") == "deny"
    assert decide(policy, OPEN, "researcher", "bank") == "allow"  # both given: most specific
    assert decide(policy, OPEN, "developer", "shop") == "ask"


def test_the_tool_part_counts_before_profile_and_project():
    policy = rules({"tool": "browser", "rule": "deny", "profile": "researcher"},
                   {"tool": "browser:open", "rule": "allow"})  # fmt: skip
    assert decide(policy, OPEN, "researcher", None) == "allow"
    assert decide(policy, call_names("browser", "click"), "researcher", None) == "deny"


def test_equally_specific_rules_the_strictest_wins_whatever_their_order():
    for order in (
        [{"tool": "browser", "rule": "allow"}, {"tool": "browser", "rule": "ask"}],
        [{"tool": "browser", "rule": "ask"}, {"tool": "browser", "rule": "allow"}],
    ):
        assert decide(rules(*order), OPEN, "default", None) == "ask"
    both = rules({"tool": "browser", "rule": "ask", "profile": "researcher"},
                 {"tool": "browser", "rule": "deny", "project": "bank"})  # fmt: skip
    assert decide(both, OPEN, "researcher", "bank") == "deny"


def test_code_exec_confirm_is_an_ask_rule_a_named_rule_outranks():
    assert decide([], CODE, "default", None, confirm_code=True) == "ask"
    assert decide([], WRITE, "default", None, confirm_code=True) == "allow"
    every = rules({"tool": "*", "rule": "allow"})
    assert decide(every, CODE, "default", None, confirm_code=True) == "ask"
    assert (
        decide(rules({"tool": "*", "rule": "deny"}), CODE, "d", None, confirm_code=True) == "deny"
    )
    named = rules({"tool": "code_execution_tool", "rule": "allow"})
    assert decide(named, CODE, "default", None, confirm_code=True) == "allow"


def test_a_saved_allow_replaces_the_rule_of_its_place_else_comes_last():
    policy = rules({"tool": "browser:open", "rule": "ask"}, {"tool": "*", "rule": "ask"})
    allow = ToolRule(tool="browser:open", rule="allow")
    assert with_rule(policy, allow) == [allow, policy[1]]
    assert decide(with_rule(policy, allow), OPEN, "default", None) == "allow"
    other = ToolRule(tool="text_editor:write", rule="allow", project="site")
    assert with_rule(policy, other) == [*policy, other]


@pytest.mark.parametrize(
    "entry",
    [{"tool": "browser", "rule": "maybe"}, {"tool": "", "rule": "ask"},
     {"tool": "browser open", "rule": "ask"}, {"tool": "browser", "rule": "ask", "who": "x"},
     {"rule": "ask"}],
)  # fmt: skip
def test_a_wrong_rule_is_refused(entry):
    with pytest.raises(ValueError):
        ToolRule.model_validate(entry)


def test_the_environment_sets_the_rules_as_a_json_list(monkeypatch):
    given = [
        {"tool": "text_editor:write", "rule": "ask"},
        {"tool": "mcp:calc:add", "rule": "deny", "profile": "researcher", "project": "p"},
    ]
    monkeypatch.setenv("CADRE_TOOL_RULES", json.dumps(given))
    loaded = load_settings().tool_rules
    assert [rule.model_dump(exclude_none=True) for rule in loaded] == given
    monkeypatch.setenv("CADRE_TOOL_RULES", "[]")
    assert load_settings().tool_rules == []


@pytest.mark.parametrize(
    ("value", "said"),
    [("[{", "CADRE_TOOL_RULES must be a JSON array"),
     ('[{"tool": "browser", "rule": "never"}]', "tool_rules"),
     ('{"tool": "browser", "rule": "ask"}', "CADRE_TOOL_RULES must be a JSON array")],
)  # fmt: skip
def test_a_wrong_environment_value_is_said_plainly(monkeypatch, value, said):
    monkeypatch.setenv("CADRE_TOOL_RULES", value)
    with pytest.raises(UserError, match=said):
        load_settings()
