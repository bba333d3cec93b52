"""Workflow declarations in agent.yaml: read, checked, and a bad one makes its profile unusable."""

from __future__ import annotations

import pytest

from profiles import catalog
from profiles.workflow import Workflow, parse_workflow
from tests.support.agents import make_profile, project_settings


def test_both_kinds_are_read():
    assert parse_workflow({"sequential": ["researcher", " default "]}) == Workflow(
        "sequential", ("researcher", "default")
    )
    flow = parse_workflow({"parallel": ["researcher", "default"], "aggregate": "default"})
    assert flow == Workflow("parallel", ("researcher", "default"), "default")
    assert flow.profiles == ("researcher", "default", "default")
    assert parse_workflow(None) is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"sequential": []}, "sequential is empty"),
        ({"sequential": ["a"], "parallel": ["b", "c"]}, "exactly one of sequential or parallel"),
        ({}, "exactly one of sequential or parallel"),
        ({"parallel": ["a", "b"]}, "parallel needs aggregate"),
        ({"parallel": ["a"], "aggregate": "j"}, "parallel needs two steps at least"),
        ({"sequential": ["a"], "aggregate": "j"}, "aggregate goes with parallel"),
        ({"sequential": "a"}, "must be a list of profile names"),
        ({"sequential": ["a"], "then": ["b"]}, "unknown key(s) then"),
        (["a", "b"], "must be a mapping"),
    ],
)
def test_a_bad_declaration_says_what_is_wrong(value, reason):
    with pytest.raises(ValueError, match="workflow") as caught:
        parse_workflow(value)
    assert reason in str(caught.value)


def profile(usr_dir, name: str, workflow: str) -> None:
    make_profile(usr_dir, name, yaml=f"title: {name}\ndescription: d\nworkflow: {workflow}\n")


def test_bad_workflows_make_their_profile_unusable_with_the_reason(usr_dir):
    profile(usr_dir, "unknown_step", "{sequential: [researcher, nobody]}")
    profile(usr_dir, "empty", "{sequential: []}")
    profile(usr_dir, "both", "{sequential: [default], parallel: [default, researcher]}")
    profile(usr_dir, "itself", "{sequential: [researcher, itself]}")
    profile(usr_dir, "ping", "{sequential: [pong]}")  # through another workflow
    profile(usr_dir, "pong", "{sequential: [ping]}")
    profile(usr_dir, "on_broken", "{sequential: [empty]}")  # a step that is unusable
    profile(usr_dir, "fine", "{parallel: [researcher, default], aggregate: default}")
    found = catalog.discover_profiles()
    errors = {n: found[n].error for n in
              ("unknown_step", "empty", "both", "itself", "ping", "pong", "on_broken")}  # fmt: skip
    assert "nobody is not an available subordinate profile" in errors["unknown_step"]
    assert "sequential is empty" in errors["empty"]
    assert "exactly one of sequential or parallel" in errors["both"]
    assert "includes itself" in errors["itself"]
    assert "includes itself" in errors["ping"] and "includes itself" in errors["pong"]
    assert "empty is not an available subordinate profile" in errors["on_broken"]
    available = catalog.get_available_agents_dict()
    assert not set(errors) & set(available)
    assert available["fine"].workflow == Workflow("parallel", ("researcher", "default"), "default")
    assert catalog.profile_workflow("fine") == available["fine"].workflow
    assert catalog.profile_workflow("researcher") is None


def test_the_shipped_panel_is_a_usable_mixture():
    panel = catalog.get_available_agents_dict()["panel"]
    assert panel.title == "Panel" and panel.description
    assert panel.workflow == Workflow("parallel", ("researcher", "default"), "default")


def test_a_workflow_may_only_step_through_profiles_it_may_call(usr_dir):
    """A workflow's `subordinates:` (or its project's rule) that leaves out a step used to
    make the profile look fine and fail only when it ran; now it is unusable at once."""
    steps = "workflow: {sequential: [researcher, default]}\n"
    make_profile(usr_dir, "narrow", yaml=f"title: n\n{steps}subordinates: [researcher]\n")
    make_profile(usr_dir, "wide", yaml=f"title: w\n{steps}")
    found = catalog.discover_profiles()
    assert found["narrow"].error == (
        "agent.yaml: workflow: default is not among the profiles it may call (subordinates:)"
    )
    assert found["wide"].available
    project_settings(usr_dir, "lab", {"subordinates": {"wide": ["researcher"]}})
    in_lab = catalog.discover_profiles("lab")
    assert "default is not among the profiles it may call" in in_lab["wide"].error
    assert catalog.discover_profiles()["wide"].available


def test_a_parallel_workflows_aggregate_is_a_profile_it_must_be_able_to_call(usr_dir):
    steps = "workflow: {parallel: [researcher, developer], aggregate: default}\n"
    callable_ones = "subordinates: [researcher, developer]\n"  # the steps, not the aggregate
    make_profile(usr_dir, "no_judge", yaml=f"title: n\n{steps}{callable_ones}")
    make_profile(usr_dir, "ghost_judge", yaml="title: g\nworkflow: {parallel: [researcher, "
                 "developer], aggregate: nobody}\n")  # fmt: skip
    found = catalog.discover_profiles()
    assert found["no_judge"].error == (
        "agent.yaml: workflow: default is not among the profiles it may call (subordinates:)"
    )
    assert "nobody is not an available subordinate profile" in found["ghost_judge"].error
